#!/usr/bin/env luajit
-- Native memory (start{native = true}): the malloc family, free and
-- anonymous mmap/munmap/mremap of C modules and FFI calls, billed to the
-- Lua line and stack that made them (a native frame on top), apart from
-- the VM's heap (sources labelled [native]). Exact counts and bytes from
-- a C module of the tests (tests/cmod/native_mod.c) called from
-- interpreted and compiled loops, ffi.C.malloc/free with the JIT off and
-- on, a C leak found by --leak-only, a mapping mremapped; lua-cjson's VM
-- allocations are not counted twice; the program behaves as without:
-- threads allocating while recording starts and stops, fork, a module
-- unloaded before stop. The notes native_unseen (frees of blocks made
-- before the start) and native_lost in every view.
package.path = "tests/lib/?.lua;" .. package.path
local T = require("mp_test")
local t = require("tap")
local ffi = require("ffi")
local mp = T.mp
local BUILD = os.getenv("BUILD") or "build"
package.cpath = BUILD .. "/tests/cmod/?.so;" .. package.cpath
local nm = require("native_mod")
ffi.cdef [[
void *malloc(size_t);
void free(void *);
int fork(void);
int waitpid(int, int *, int);
void _exit(int);
int native_unload_churn(size_t);
void *realloc(void *, size_t);
void *mmap(void *, size_t, int, int, int, long);
int munmap(void *, size_t);
int open(const char *, int, ...);
int close(int);
]]

-- The collapsed stacks of a profile (report options opts): stack -> bytes.
local function collapsed(path, opts)
  local f = assert(io.popen(T.cli .. " report --format collapsed " ..
			    (opts or "") .. " " .. t.shq(path)))
  local st = {}
  for line in f:lines() do
    local s, n = line:match("^(.*) (%d+)$")
    st[s] = (st[s] or 0) + tonumber(n)
  end
  f:close()
  return st
end

-- Bytes of the stacks that match pattern.
local function bytes(st, pattern)
  local n = 0
  for s, b in pairs(st) do if s:match(pattern) then n = n + b end end
  return n
end

-- The JSON report's sources of a section, by label.
local function sources(path, section, opts)
  local f = assert(io.popen(T.cli .. " report --format json " ..
			    (opts or "") .. " " .. t.shq(path)))
  local r = require("cjson").decode(f:read("*a"))
  f:close()
  local by = {}
  for _, e in ipairs(r[section]) do by[e.source.label] = e end
  return by, r
end

-- Run code (a chunk named @work.lua) while recording with options opts.
local function record(code, opts, name)
  local path = T.tmpname(name or "native")
  local fn = assert(loadstring(code, "@work.lua"))
  opts = opts or {}
  opts.path = path
  if opts.native == nil then opts.native = true end
  collectgarbage()
  assert(mp.start(opts))
  fn()
  assert(mp.stop())
  return path
end

-- 1. A C module from interpreted and compiled loops.
for _, mode in ipairs({ "off", "on" }) do
  local path = record("jit." .. mode .. "()\n" .. [[
local nm = require("native_mod")
for i = 1, 300 do
  nm.churn(1000)
end
nm.resize(3, 100, 5000)
nm.map(65536)
]])
  local al = sources(path, "allocations")
  local fr = sources(path, "deallocations")
  local re = sources(path, "reallocations")
  local c = al["native_mod.churn [native]"] or {}
  t.is(c.events, 300, "JIT " .. mode .. ": 300 mallocs in native_mod.churn")
  t.is(c.alloc_bytes, 300000, "JIT " .. mode .. ": of 300000 bytes")
  t.is(c.source and c.source.heap, "native", "JIT " .. mode ..
       ": the JSON source says heap = native")
  c = fr["native_mod.churn [native]"] or {}
  t.is(c.events, 300, "JIT " .. mode .. ": 300 frees in native_mod.churn")
  t.is(c.free_bytes, 300000, "JIT " .. mode .. ": of 300000 bytes")
  local st = collapsed(path)
  t.is(bytes(st, "main chunk %(work%.lua:4%);native_mod%.churn;malloc %[native%]$"), 300000,
       "JIT " .. mode .. ": the calling line 4 in the stacks")
  t.is(bytes(st, "main chunk %(work%.lua:6%);native_mod%.resize;calloc %[native%]$"), 300,
       "JIT " .. mode .. ": calloc(3, 100) at line 6")
  t.is(bytes(st, "main chunk %(work%.lua:6%);native_mod%.resize;realloc %[native%]$"), 5000,
       "JIT " .. mode .. ": its realloc to 5000 bytes")
  c = re["native_mod.resize [native]"] or {}
  t.is(c.events, 1, "JIT " .. mode .. ": one reallocation")
  t.is(bytes(st, "main chunk %(work%.lua:7%);native_mod%.map;mmap %[native%]$"), 65536,
       "JIT " .. mode .. ": an anonymous mapping of 65536 bytes at line 7")
  c = fr["native_mod.map [native]"] or {}
  t.is(c.free_bytes, 65536, "JIT " .. mode .. ": unmapped")
  local leak = sources(path, "heap_summary")
  t.is(leak["native_mod.churn [native]"], nil,
       "JIT " .. mode .. ": nothing of churn's is held at the end")
  -- --heap: each heap alone.
  local vm = collapsed(path, "--heap vm")
  t.is(bytes(vm, "%[native%]"), 0, "JIT " .. mode ..
       ": --heap vm shows no native source")
  local nat = collapsed(path, "--heap native")
  t.is(bytes(nat, "%[native%]$"), bytes(st, "%[native%]$"), "JIT " .. mode ..
       ": --heap native shows the native stacks, all of them")
  t.is(bytes(nat, "[^%]]$"), 0, "JIT " .. mode .. ": and nothing else")
  os.remove(path)
end

-- 2. ffi.C.malloc and free in a loop, JIT off and on: resolved through
-- dlsym while recording (the FFI caches the wrapper).
for _, mode in ipairs({ "off", "on" }) do
  local path = record("jit." .. mode .. "()\n" .. [[
local ffi = require("ffi")
local C = ffi.C
for i = 1, 1000 do
  local p = C.malloc(100)
  C.free(p)
end
]])
  local st = collapsed(path)
  if mode == "off" then
    -- Each call's top frame is the builtin ffi.meta.__call, whose stack
    -- the memo of stacks met before finds (tests/agent-stacks-check.t):
    -- every event on the line that made it, with that frame.
    t.is(bytes(st, ";main chunk %(work%.lua:5%);ffi%.meta%.__call;malloc %[native%]$"),
         100000, "JIT off: 1000 ffi.C.malloc(100) billed to line 5, under ffi.meta.__call")
    t.is(bytes(st, "%[native%]$"), 100000, "JIT off: no other native stack")
    local al, fr = sources(path, "allocations"), sources(path, "deallocations")
    local a, f = al["@work.lua:5 [native]"] or {}, fr["@work.lua:6 [native]"] or {}
    t.is(string.format("%s %s %s %s", a.events, a.alloc_bytes, f.events, f.free_bytes),
         "1000 100000 1000 100000", "JIT off: 1000 frees of 100 bytes on line 6")
  else
    -- Compiled, lines 5 and 6 both call C between two snapshots: the
    -- trace-line map cannot tell which call allocated and bills the trace
    -- alone (never line 6, which frees).
    t.is(bytes(st, "main chunk %(work%.lua:5%);.*malloc %[native%]$") +
         bytes(st, ";TRACE %[%d+%] started at @work%.lua:%d+;malloc %[native%]$"),
         100000, "JIT on: 1000 ffi.C.malloc(100) billed to line 5, or to its trace alone")
    t.is(bytes(st, "work%.lua:6%)[^;]*;malloc %[native%]$"), 0,
         "JIT on: none to line 6")
  end
  local held = sources(path, "heap_summary", "--heap native")
  local n = 0
  for label in pairs(held) do
    if label:match("work%.lua:5") then n = n + 1 end
  end
  t.is(n, 0, "JIT " .. mode .. ": every block freed (line 6)")
  os.remove(path)
end

-- 3. A C leak, found by --leak-only on the calling line.
do
  local path = record([[
local nm = require("native_mod")
for i = 1, 3 do nm.churn(64) end
nm.leak(4242)
]])
  local st = collapsed(path, "--leak-only --heap native")
  t.is(bytes(st, "main chunk %(work%.lua:3%);native_mod%.leak;malloc %[native%]$"), 4242,
       "--leak-only: the 4242 bytes leaked at line 3")
  t.is(bytes(st, "native_mod%.churn"), 0, "--leak-only: churn held nothing")
  local f = assert(io.popen(T.cli .. " report --leak-only " .. t.shq(path)))
  local text = f:read("*a")
  f:close()
  t.ok(text:find("native_mod.leak [native] holds 4242B in 1 block (100.0%)",
		 1, true), "the text's heap summary says so", text)
  -- `ljmemprof events`: native events say so, the VM's do not.
  local nat, vm, leak = 0, 0, 0
  for _, e in ipairs((T.events(path))) do
    if e.heap == "native" then
      nat = nat + 1
      if e.nsize == 4242 and e.stack[2] == "native_mod.leak" then
	leak = leak + 1
      end
    elseif e.label and e.label:find("[native]", 1, true) then
      vm = vm + 1
    end
  end
  t.is(leak, 1, "events: the leak's malloc, heap = native, under its C function")
  t.ok(nat >= 7, "events: the six of churn and the leak's are native", nat)
  t.is(vm, 0, "events: no native frame without heap = native")
  -- info: where the memory is, from the RSS written at stop.
  local f2 = assert(io.popen(T.cli .. " info --format json " .. t.shq(path)))
  local info = require("cjson").decode(f2:read("*a"))
  f2:close()
  local m = info.memory or {}
  local held = sources(path, "heap_summary", "--heap native")
  local nb = 0
  for _, h in pairs(held) do nb = nb + h.bytes end
  t.is(m.native_live_bytes, nb, "info: the native bytes live, as the "
       .. "native heap summary holds them (" .. nb .. ")")
  t.ok(m.native_live_bytes and m.native_live_bytes >= 4242,
       "info: the leak among them")
  t.ok(m.rss_bytes and m.rss_bytes > 1000000 and m.rss_max_bytes >= m.rss_bytes
       and m.rest_bytes == m.rss_bytes - m.vm_live_bytes - m.native_live_bytes
				- m.jit_mcode_bytes,
       "info: the RSS at the end, the largest, and the rest",
       m.rss_bytes and (m.rss_bytes .. " " .. m.rest_bytes))
  os.remove(path)
end

-- 4. lua-cjson: its encode buffer is native memory; the VM's strings it
-- makes are the same with native on as off (nothing counted twice).
do
  local cjson = require("cjson")
  local big = { string.rep("x", 100000) }
  local code = [[
local cjson = require("cjson")
local big = ...
local s = cjson.encode(big)
]]
  local function run(native)
    local path = T.tmpname("cjson")
    local fn = assert(loadstring(code, "@work.lua"))
    collectgarbage()
    assert(mp.start{ path = path, stacks = 64, native = native })
    fn(big)
    assert(mp.stop())
    return path
  end
  -- A buffer per call (malloc'd and freed), the same work twice.
  cjson.encode_keep_buffer(false)
  cjson.encode(big)
  local p0, p1 = run(false), run(true)
  cjson.encode_keep_buffer(true)
  local vm0 = sources(p0, "allocations")["cjson.encode"]
  local vm1 = sources(p1, "allocations")["cjson.encode"]
  t.ok(vm0 and vm1 and vm0.events == vm1.events and
       vm0.alloc_bytes == vm1.alloc_bytes,
       "cjson.encode's VM allocations are the same with native on",
       vm0 and vm1 and (vm0.alloc_bytes .. " vs " .. vm1.alloc_bytes))
  local st = collapsed(p1, "--heap native")
  t.ok(bytes(st, "main chunk %(work%.lua:3%);cjson%.encode;[a-z]+ %[native%]$") >= 100000,
       "cjson.encode's buffer is native memory, billed to line 3")
  local held = sources(p1, "heap_summary", "--heap native")
  t.is(held["cjson.encode [native]"], nil, "and freed by the end")
  os.remove(p0)
  os.remove(p1)
end

-- 4b. The agent's work naming a C module's functions, when require()
-- loads it while recording, is not the program's native memory: libc's
-- calls of malloc (strdup's, qsort's buffer) are ones native patches.
do
  local path = T.tmpname("names")
  local fn = assert(loadstring('local lpeg = require("lpeg")\n' ..
			       'return lpeg.match(lpeg.C(1), "x")', "@req.lua"))
  package.loaded.lpeg = nil
  assert(mp.start{ path = path, stacks = 64, native = true })
  t.is(fn(), "x", "lpeg loaded and ran while recording")
  assert(mp.stop())
  local st = collapsed(path, "--heap native")
  t.ok(bytes(st, "req%.lua:1%);require;.*%[native%]$") > 0,
       "require's own native memory (the loaders': dlopen) on its line")
  t.is(bytes(st, "req%.lua:1%);[%w_]+ %[native%]$"), 0,
       "none from the agent naming lpeg's functions (strdup, qsort)")
  os.remove(path)
end

-- 5. Options: native goes with stacks (and with sampling, section 9).
do
  local ok, err = pcall(mp.start, { path = T.tmpname(), native = 1 })
  t.ok(not ok and err:find("native", 1, true) and err:find("boolean", 1, true),
       "native = 1 is refused", err)
  ok, err = pcall(mp.start, { path = T.tmpname(), native = true, stacks = 0 })
  t.ok(not ok and err:find("cannot go with native", 1, true),
       "stacks = 0 is refused with native", err)
  -- The stream's revision: 2 with native, 1 without.
  local function minor(path)
    local f = assert(io.open(path, "rb"))
    local s = f:read("*a")
    f:close()
    os.remove(path)
    return s:byte(13)
  end
  t.is(minor(record("local x = {}", { stacks = 8, native = false })), 1,
       "a stacks profile without native is revision 1")
  t.is(minor(record("local x = {}")), 2, "with native: revision 2")
end

-- 6. Threads allocating while recording starts and stops; a stop while
-- they are inside the wrappers. Their blocks stay intact, and their events
-- are billed to their native caller (the module's worker).
do
  nm.threads_start()
  local t0 = os.time()
  while nm.threads_rounds() < 1000 and os.time() - t0 < 20 do end
  local paths = {}
  for round = 1, 20 do
    local path = T.tmpname("threads")
    assert(mp.start{ path = path, native = true })
    for i = 1, 200 do nm.churn(10) end
    -- Until the threads made 100 rounds more (a few ms), at most 10 s.
    local r0, c0 = nm.threads_rounds(), os.clock()
    while nm.threads_rounds() < r0 + 100 and os.clock() - c0 < 10 do end
    assert(mp.stop())
    paths[#paths + 1] = path
  end
  local rounds, bad = nm.threads_stop()
  t.ok(rounds > 1000, "the threads ran", rounds)
  t.is(bad, 0, "no block of theirs was corrupted")
  local worker, churn, complete = 0, 0, 0
  local tids, unmarked = {}, 0
  for _, path in ipairs(paths) do
    for s in pairs(collapsed(path, "--heap native")) do
      if s:find("native_mod_worker", 1, true) then
	local tid = s:match("^%[thread (%d+)%];native_mod_worker%+0x%x+;")
	if tid then tids[tid] = true else unmarked = unmarked + 1 end
      end
    end
    local al, r = sources(path, "allocations")
    if r.complete then complete = complete + 1 end
    for label, e in pairs(al) do
      if label:match("^native_mod_worker%+0x%x+ %[native%]$") then
	worker = worker + e.events
      end
    end
    churn = churn + (al["native_mod.churn [native]"] or {}).events
    os.remove(path)
  end
  local ntid = 0
  for _ in pairs(tids) do ntid = ntid + 1 end
  t.is(unmarked, 0, "every stack of theirs starts at its thread, [thread TID]")
  t.ok(ntid >= 1 and ntid <= 4, "at most the four threads", ntid)
  t.is(complete, 20, "the 20 profiles are complete")
  t.is(churn, 20 * 200, "the VM's thread's 4000 mallocs, exactly")
  t.ok(worker > 0, "the other threads' billed to their caller, "
       .. "native_mod_worker+offset", worker)
end

-- 6b. Lua idle while the threads allocate: the queue of their events
-- holds 65536; once full, a thread waits for the VM's thread at most
-- 20 ms, then what does not fit is lost, counted, until stop takes the
-- queue. Before the bound, the queue grew as long as Lua was idle. The
-- loop is interpreted and allocates nothing, so nothing takes the queue
-- before stop.
do
  nm.threads_start()
  local t0 = os.time()
  while nm.threads_rounds() < 1000 and os.time() - t0 < 20 do end
  local path = T.tmpname("idle")
  local function idle()
    local r0, c0 = nm.threads_rounds(), os.clock()
    while nm.threads_rounds() < r0 + 50000 and os.clock() - c0 < 60 do end
    return nm.threads_rounds() - r0, os.clock() - c0
  end
  jit.off(idle)
  assert(mp.start{ path = path, native = true })
  local made, took = idle()
  assert(mp.stop())
  local rounds, bad = nm.threads_stop()
  t.is(bad, 0, "idle Lua: no block of theirs was corrupted")
  t.ok(made >= 50000, "idle Lua: each thread made 50000 rounds (150000 " ..
       "events) while recording, in " .. string.format("%.1f", took) .. " s",
       made)
  local al, r = sources(path, "allocations", "--heap native")
  local kept = 0
  for _, section in ipairs{ "allocations", "reallocations", "deallocations" } do
    for _, e in ipairs(r[section]) do
      if e.source.label:match("^native_mod_worker%+0x%x+ %[native%]$") then
	kept = kept + e.events
      end
    end
  end
  t.ok(kept > 0 and kept <= 65536, "idle Lua: what the queue held, at " ..
       "most 65536 events, is in the profile", kept)
  local f = assert(io.popen(T.cli .. " info --format json " .. t.shq(path)))
  local j = require("cjson").decode(f:read("*a"))
  f:close()
  t.ok(j.native_lost >= 4 * 50000, "idle Lua: the events " ..
       "that did not fit are counted lost (native_lost)", j.native_lost)
  t.is(r.complete, true, "idle Lua: the profile is complete")
  os.remove(path)
end

-- 7. fork: the child records nothing and runs as without.
do
  local path = T.tmpname("fork")
  assert(mp.start{ path = path, native = true })
  local C = ffi.C
  local pid = C.fork()
  if pid == 0 then
    local ok = pcall(function()
      for i = 1, 100 do C.free(C.malloc(50)) end
      nm.churn(10)
    end)
    C._exit(ok and 7 or 1)
  end
  local st = ffi.new("int[1]")
  C.waitpid(pid, st, 0)
  t.is(math.floor(st[0] / 256), 7, "the child allocates and exits as asked")
  nm.churn(77)
  assert(mp.stop())
  local al = sources(path, "allocations")
  t.is((al["native_mod.churn [native]"] or {}).events, 1,
       "the parent's malloc alone is in the profile")
  os.remove(path)
end

-- 8. A library loaded (ffi.load) and unloaded (dlclose) while recording:
-- patched when loaded, left alone by stop.
do
  local so = BUILD .. "/tests/cmod/native_unload.so"
  local function mapped()
    local f = assert(io.open("/proc/self/maps"))
    local s = f:read("*a")
    f:close()
    return s:find("native_unload.so", 1, true) ~= nil
  end
  local path = T.tmpname("unload")
  assert(mp.start{ path = path, native = true })
  local lib = ffi.load(so)
  local line = debug.getinfo(1, "l").currentline + 1
  for i = 1, 10 do lib.native_unload_churn(123) end
  lib = nil
  collectgarbage()
  collectgarbage()
  t.ok(not mapped(), "the library is unloaded before stop")
  t.ok(mp.stop(), "stop leaves the unloaded library alone")
  t.is(bytes(collapsed(path), ":" .. line .. "%);.*malloc %[native%]$"), 1230,
       "its 10 mallocs of 123 bytes, billed to the line calling it")
  os.remove(path)
end

-- The native events of a profile (ljmemprof events), as tables.
local function native_events(path)
  local cjson = require("cjson")
  local f = assert(io.popen(T.cli .. " events " .. t.shq(path)))
  local evs = {}
  for line in f:lines() do
    local e = cjson.decode(line)
    if e.heap == "native" then evs[#evs + 1] = e end
  end
  f:close()
  return evs
end

-- Events of kind ev whose old (o) or new (n) size is size.
local function count(evs, ev, field, size)
  local n = 0
  for _, e in ipairs(evs) do
    if e.event == ev and e[field] == size then n = n + 1 end
  end
  return n
end

-- 9. Sampled native events (sample = R): every allocated byte has the
-- same chance, as for the VM's; a block of more than 37 R bytes is always
-- recorded (the longest gap drawn is 36.7 R), weighing 1: exact counts and
-- bytes; only the frees of recorded blocks are recorded; a recorded block
-- resized into one not sampled leaves the sample (not live, not freed).
for _, mode in ipairs({ "off", "on" }) do
  local path = record("jit." .. mode .. "()\n" .. [[
local C = require("ffi").C
local big = {}
for i = 1, 200 do big[i] = C.malloc(70000) end
for i = 1, 100 do C.free(big[i]) end
for i = 1, 20000 do C.free(C.malloc(16)) end
]], { sample = 1024, seed = 5 }, "sampled")
  local evs = native_events(path)
  t.is(count(evs, "alloc", "nsize", 70000), 200,
       "JIT " .. mode .. ": the 200 blocks of 70000 bytes (> 37 R) are all recorded")
  t.is(count(evs, "free", "osize", 70000), 100,
       "JIT " .. mode .. ": and the 100 frees of them")
  local small, freed = count(evs, "alloc", "nsize", 16), count(evs, "free", "osize", 16)
  t.is(freed, small, "JIT " .. mode .. ": every recorded block of 16 bytes has its free recorded, no other (" ..
       small .. ")")
  -- p(16) = 1 - exp(-16/1024): 310 expected of 20000 (sd 17.5).
  t.ok(small >= 200 and small <= 420, "JIT " .. mode .. ": about 1 in 64 blocks of 16 bytes recorded (" ..
       small .. ")")
  local _, r = sources(path, "allocations", "--heap native")
  t.ok(r.sampled and r.sampled.rate == 1024, "JIT " .. mode .. ": the report says it is sampled at 1024")
  local held = sources(path, "heap_summary", "--heap native")
  local live = 0
  for label, e in pairs(held) do
    if label:match("work%.lua:4") or label:match("started at @work%.lua:4") then
      live = live + e.bytes
    end
  end
  t.is(live, 7000000, "JIT " .. mode .. ": 100 blocks of 70000 bytes held by line 4 (weight 1)")
  os.remove(path)
end
do
  -- R = 64 KiB: 4 MiB blocks are always sampled; resized to 1 byte, each
  -- is sampled again with a chance of 1.5e-5: they leave the sample.
  local path = record([[
local C = require("ffi").C
local b = {}
for i = 1, 10 do b[i] = C.malloc(4194304) end
for i = 1, 10 do b[i] = C.realloc(b[i], 1) end
for i = 1, 10 do C.free(b[i]) end
]], { sample = 65536, seed = 3 }, "sampled-drop")
  local evs = native_events(path)
  t.is(count(evs, "alloc", "nsize", 4194304), 10, "the 10 blocks of 4 MiB are recorded")
  t.is(count(evs, "realloc", "osize", 4194304) + count(evs, "free", "osize", 4194304) +
       count(evs, "free", "osize", 1), 0,
       "their resizes into 1 byte are not sampled, and their frees not recorded")
  local held = sources(path, "heap_summary", "--heap native")
  local n = 0
  for label in pairs(held) do if label:match("work%.lua:3") then n = n + 1 end end
  t.is(n, 0, "the blocks that left the sample are not live")
  os.remove(path)
end

-- 10. A munmap of part of a mapping: the part unmapped is freed, the
-- rest stays live (a resize to what is left; a cut inside the mapping
-- leaves two blocks). Five pages: the second unmapped, then the first,
-- then the fifth: two pages live, three freed.
do
  local page = 4096
  local path = record([[
local ffi = require("ffi")
local C = ffi.C
local p = ffi.cast("char *", C.mmap(nil, 5 * 4096, 3, 0x22, -1, 0))
C.munmap(p + 4096, 4096)
C.munmap(p, 4096)
C.munmap(p + 4 * 4096, 4096)
ADDR = tonumber(ffi.cast("uintptr_t", p))
]], {}, "munmap")
  local base = ADDR
  local evs = native_events(path)
  local live, freed, n = {}, 0, 0
  for _, e in ipairs(evs) do
    local inside = function(a) return a >= base and a < base + 5 * page end
    if (e.oaddr ~= 0 and inside(e.oaddr)) or (e.naddr ~= 0 and inside(e.naddr)) then
      n = n + 1
      if e.oaddr ~= 0 then live[e.oaddr] = nil; freed = freed + e.osize end
      if e.naddr ~= 0 then live[e.naddr] = e.nsize; freed = freed - e.nsize end
    end
  end
  local held = 0
  for a, size in pairs(live) do held = held + size end
  t.is(held, 2 * page, "two pages live at the end")
  t.is(live[base + 2 * page], 2 * page, "the third and fourth pages, one block")
  t.is(freed, 3 * page - 5 * page, "net: 5 pages mapped, 3 unmapped")
  t.is(n, 5, "the mapping, the cut (a resize and a new block), a free, a resize")
  local st = collapsed(path, "--heap native")
  t.is(bytes(st, "main chunk %(work%.lua:3%);.*mmap %[native%]$"), 5 * page,
       "the mapping billed to its line")
  local lo = sources(path, "heap_summary", "--heap native")
  local h = 0
  for label, e in pairs(lo) do
    if label:match("work%.lua:%d") then h = h + e.bytes end
  end
  t.is(h, 2 * page, "the heap summary holds the two pages left")
  os.remove(path)
end

-- 11. A MAP_FIXED mmap over recorded mappings replaces what was mapped in
-- its range: the part it covers is freed, as by munmap, billed to the
-- mmap's line. Five anonymous pages at A; four pages over the second to
-- the fifth (anonymous, recorded); one page of /dev/zero (a file mapping,
-- not recorded) over the first. Then only the four pages of line 4 are
-- live, and the mapping of line 3 is freed whole, 5 pages: 4 by line 4,
-- 1 by line 6. Sampled too: each mapping is more than 37 times the
-- sampling rate, always recorded (see 9), and the file mapping's unmap
-- is applied though it allocates nothing to sample.
for _, opts in ipairs({ {}, { sample = 256, seed = 5 } }) do
  local page = 4096
  local how = opts.sample and "sampled: " or ""
  local path = record([[
local ffi = require("ffi")
local C = ffi.C
local p = ffi.cast("char *", C.mmap(nil, 5 * 4096, 3, 0x22, -1, 0))
local q = C.mmap(p + 4096, 4 * 4096, 3, 0x32, -1, 0)
local fd = C.open("/dev/zero", 0)
local z = C.mmap(p, 4096, 3, 0x12, fd, 0)
C.close(fd)
ADDR = tonumber(ffi.cast("uintptr_t", p))
OK = q == ffi.cast("void *", p + 4096) and z == ffi.cast("void *", p)
]], opts, "mapfixed")
  t.is(OK, true, how .. "the fixed mappings are where they were asked")
  local base = ADDR
  local evs = native_events(path)
  local live, ev = {}, {}
  for _, e in ipairs(evs) do
    local inside = function(a) return a >= base and a < base + 5 * page end
    if (e.oaddr ~= 0 and inside(e.oaddr)) or (e.naddr ~= 0 and inside(e.naddr)) then
      if e.oaddr ~= 0 then live[e.oaddr] = nil end
      if e.naddr ~= 0 then live[e.naddr] = e.nsize end
      ev[#ev + 1] = string.format("%s %d+%d %d+%d", e.event,
        e.oaddr ~= 0 and e.oaddr - base or 0, e.osize or 0,
        e.naddr ~= 0 and e.naddr - base or 0, e.nsize or 0)
    end
  end
  t.is(table.concat(ev, ", "), "alloc 0+0 0+20480, realloc 0+20480 0+4096, " ..
       "alloc 0+0 4096+16384, free 0+4096 0+0",
       how .. "the mapping, cut to its first page by the fixed one (then mapped), " ..
       "freed by the file mapping")
  local held = 0
  for a, size in pairs(live) do held = held + size end
  t.is(held, 4 * page, how .. "four pages live at the end")
  t.is(live[base + page], 4 * page, how .. "the fixed mapping's")
  local fr = sources(path, "deallocations", "--heap native")
  local f6 = fr["@work.lua:6 [native]"] or {}
  t.is(string.format("%s %s", f6.events, f6.free_bytes), "1 4096",
       how .. "line 6 (the file mapping) frees the first page")
  local re = sources(path, "reallocations", "--heap native")
  local r4 = re["@work.lua:4 [native]"] or {}
  t.is(string.format("%s %s %s", r4.events, r4.free_bytes, r4.alloc_bytes),
       "1 20480 4096", how .. "line 4 cuts the mapping to its first page")
  local lo = sources(path, "heap_summary", "--heap native")
  local h = {}
  for label, e in pairs(lo) do
    if label:match("work%.lua:%d") then h[#h + 1] = label .. " " .. e.bytes end
  end
  table.sort(h)
  t.is(table.concat(h, ", "), "@work.lua:4 [native] 16384",
       how .. "the heap summary holds line 4's four pages")
  os.remove(path)
end

-- 12. mremap of a known mapping (native_mod.remap): four pages shrunk to
-- two and grown back to four in place, grown to sixteen with
-- MREMAP_MAYMOVE (where the kernel puts it), then shrunk to three and
-- kept. Each is a resize of the one block at its new address, billed to
-- the C function (reallocations: what it added, what it gave back); at
-- the end three pages live, at the peak sixteen. Sampled too (each
-- mapping more than 37 times the rate: always recorded).
for _, opts in ipairs({ {}, { sample = 256, seed = 5 } }) do
  local page = 4096
  local how = opts.sample and "sampled: " or ""
  local path = record([[
local nm = require("native_mod")
ADDRS = { nm.remap() }
]], opts, "mremap")
  nm.remap_free()
  local a = ADDRS
  local name = {}
  for i, v in ipairs(a) do name[v] = name[v] or (i == 1 and "A" or "B") end
  local ev = {}
  for _, e in ipairs(native_events(path)) do
    ev[#ev + 1] = string.format("%s %s %s %s %s %s", e.event,
      e.oaddr ~= 0 and name[e.oaddr] or "0", e.osize, e.naddr ~= 0 and
      name[e.naddr] or "0", e.nsize, e.stack[1])
  end
  local moved = a[4] ~= a[3] and "B" or "A"
  t.is(table.concat(ev, ", "),
       "alloc 0 0 A 16384 mmap [native], realloc A 16384 A 8192 mremap [native], " ..
       "realloc A 8192 A 16384 mremap [native], realloc A 16384 " .. moved ..
       " 65536 mremap [native], realloc " .. moved .. " 65536 " .. moved ..
       " 12288 mremap [native]",
       how .. "the mapping, then four resizes of it, at its address")
  t.is(a[2] == a[1] and a[3] == a[1] and a[5] == a[4], true,
       how .. "shrunk and grown back in place, shrunk in place")
  local lo = sources(path, "heap_summary", "--heap native")
  local h = lo["native_mod.remap [native]"] or {}
  t.is(string.format("%s %s", h.bytes, h.blocks), "12288 1",
       how .. "three pages live at the end, one block")
  local re = sources(path, "reallocations", "--heap native")
  local r = re["native_mod.remap [native]"] or {}
  t.is(string.format("%s %s %s", r.events, r.alloc_bytes, r.free_bytes),
       "4 102400 106496", how .. "four resizes: 8+16+64+12 KiB for 16+8+16+64")
  local pk, doc = sources(path, "peak_sources", "--heap native --peak")
  local ps = pk["native_mod.remap [native]"] or {}
  t.is(string.format("%s %s %s", doc.peak.bytes, ps.bytes, ps.blocks),
       "65536 65536 1", how .. "sixteen pages at the peak")
  os.remove(path)
end


-- 13. Frees and resizes of blocks made before the start (ffi.C.malloc
-- before it; free and realloc while recording): no event, counted in the
-- note native_unseen, which every view says: info (text, JSON), the
-- report (text under MEMORY, JSON), the HTML page's data. Not written when
-- sampling (0); a profile without native has no such field.
local cjson = require("cjson")

-- The output of a command of the CLI on path.
local function cli(args, path)
  local f = assert(io.popen(T.cli .. " " .. args .. " " .. t.shq(path)))
  local out = f:read("*a")
  f:close()
  return out
end

-- The HTML page of path's report.
local function html(path)
  local out = T.tmpname("html")
  cli("report --format html -o " .. t.shq(out), path)
  local f = assert(io.open(out))
  local page = f:read("*a")
  f:close()
  os.remove(out)
  return page
end

do
  local UNSEEN = "4 frees or resizes of native blocks allocated before " ..
		 "the recording started (not counted)"
  local C = ffi.C
  for _, opts in ipairs({ {}, { sample = 256, seed = 5 } }) do
    local how = opts.sample and "sampled: " or ""
    OLD = { C.malloc(100), C.malloc(200), C.malloc(300), C.malloc(400) }
    local path = record([[
jit.off()
local C = require("ffi").C
C.free(OLD[1])
C.free(OLD[2])
C.free(OLD[3])
OLD[4] = C.realloc(OLD[4], 5000)
C.free(OLD[4])
]], opts, "unseen")
    local n = opts.sample and 0 or 4
    local info = cli("info", path)
    t.is(info:match("\nunseen: +([^\n]*)"), not opts.sample and UNSEEN or nil,
	 how .. "info: unseen: says the four")
    t.is(info:match("\nlost:"), nil, how .. "info: no line lost:")
    local j = cjson.decode(cli("info --format json", path))
    t.is(string.format("%s %s", j.native_unseen, j.native_lost), n .. " 0",
	 how .. "info json: native_unseen, native_lost")
    local r = cli("report", path)
    local mem = (r:match("\n(MEMORY: .-)\n\n") or "?"):match("^[^\n]*\n?(.*)$")
    t.is(mem, not opts.sample and "  " .. UNSEEN or "",
	 how .. "report: under MEMORY")
    t.is(r:match("native events? lost"), nil, how .. "report: nothing lost")
    j = cjson.decode(cli("report --format json", path))
    t.is(string.format("%s %s", j.native_unseen, j.native_lost), n .. " 0",
	 how .. "report json: native_unseen, native_lost")
    local page = html(path)
    t.ok(page:find('"native_unseen":' .. n .. ',"native_lost":0', 1, true),
	 how .. "html: the page's data has them")
    os.remove(path)
  end
  local path = record("local x = {}", { native = false }, "unseen-vm")
  local j = cjson.decode(cli("report --format json", path))
  t.is(tostring(j.native_unseen) .. " " .. tostring(j.native_lost), "nil nil",
       "without native: no field")
  j = cjson.decode(cli("info --format json", path))
  t.is(tostring(j.native_unseen) .. " " .. tostring(j.native_lost), "nil nil",
       "without native: no field in info")
  os.remove(path)
end

-- 14. native_lost: events the agent could not keep (out of memory cannot
-- be provoked here; a full queue is, in 6b): a stream made by hand with
-- the notes, as the agent
-- writes them at stop. Every view says it, NOTES too (the native figures
-- are wrong by it); a merge of two sums both notes.
do
  local P = dofile("tests/lib/mkprof.lua")
  local LOST = "3 native events lost: the agent could not keep them " ..
	       "(out of memory, or other threads' queue full while the " ..
	       "VM's thread took none); native figures are short by them"
  -- A native profile of one VM allocation and the two notes.
  local function crafted(unseen, lost, name)
    local path = T.tmpname(name)
    local f = assert(io.open(path, "wb"))
    f:write(P.head_ext(), P.info("native", "1"), P.alloc_ext(4096, 32),
	    P.info("native_unseen", tostring(unseen)),
	    P.info("native_lost", tostring(lost)), P.final())
    f:close()
    return path
  end
  local path = crafted(0, 3, "lost")
  local info = cli("info", path)
  t.is(info:match("\nlost: +([^\n]*)"), LOST, "crafted: info: lost:")
  t.is(info:match("\nunseen:"), nil, "crafted: info: no unseen: for 0")
  local j = cjson.decode(cli("info --format json", path))
  t.is(string.format("%s %s", j.native_unseen, j.native_lost), "0 3",
       "crafted: info json")
  local r = cli("report", path)
  t.is(r:match("\nMEMORY:\n(.-)\n\n"), "  " .. LOST,
       "crafted: report: under MEMORY (no RSS: a heading alone)")
  t.is(r:match("\nNOTES:\n.*\n(" .. LOST:gsub("%p", "%%%0") .. ")\n"), LOST,
       "crafted: report: a line of NOTES")
  j = cjson.decode(cli("report --format json", path))
  local noted = 0
  for _, l in ipairs(j.notes) do if l == LOST then noted = noted + 1 end end
  t.is(string.format("%s %s %d", j.native_unseen, j.native_lost, noted),
       "0 3 1", "crafted: report json: the fields and a note")
  t.ok(html(path):find('"native_unseen":0,"native_lost":3', 1, true),
       "crafted: html: the page's data")
  local two = crafted(5, 4, "lost2")
  j = cjson.decode(cli("report --format json " .. t.shq(two), path))
  t.is(string.format("%s %s", j.native_unseen, j.native_lost), "5 7",
       "crafted: a merge sums them")
  r = cli("report " .. t.shq(two), path)
  t.is(r:match("\nMEMORY:\n(.-)\n\n"), "  5 frees or resizes of native " ..
       "blocks allocated before the recording started (not counted)\n" ..
       "  7 native events lost: the agent could not keep them (out of " ..
       "memory, or other threads' queue full while the VM's thread took " ..
       "none); native figures are short by them", "crafted: a merge's MEMORY")
  os.remove(two)
  os.remove(path)
end

t.done()
