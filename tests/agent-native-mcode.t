#!/usr/bin/env luajit
-- Native memory and the JIT's machine code: LuaJIT mmaps its mcode areas
-- itself (lj_mcode.c, from the assembler), which is neither a C leak nor
-- the VM's heap. They are no native events (no source, no stack, no
-- leak, check passes), and every memory view names them once, as "JIT
-- machine code", the bytes the JIT has mapped (J->szallmcarea), out of
-- the rest. A jit.flush() unmaps them again: still no event, nothing
-- counted as a free of a block not seen, for areas mapped before the
-- start too.
package.path = "tests/lib/?.lua;" .. package.path
local T = require("mp_test")
local t = require("tap")
local cjson = require("cjson")
local mp = T.mp

-- Whether s matches pattern p, as a test.
local function like(s, p, name)
  t.ok(s:match(p) ~= nil, name, "got: " .. s)
end

-- Run a command: its output and exit status.
local function run(cmd)
  local f = assert(io.popen(cmd .. "; echo \"rc=$?\""))
  local out = f:read("*a")
  f:close()
  local rc = tonumber(out:match("rc=(%d+)\n$"))
  return out:gsub("rc=%d+\n$", ""), rc
end

-- Record code (a chunk named @work.lua) with native memory.
-- The machine code made before is unmapped first (jit.flush()), so that
-- the areas at the end are the chunk's alone.
local function record(code, name)
  local path = T.tmpname(name)
  local fn = assert(loadstring(code, "@work.lua"))
  collectgarbage()
  jit.flush()
  assert(mp.start{ path = path, native = true })
  fn()
  assert(mp.stop())
  return path
end

-- The native events of a profile, and the count of frees of blocks not
-- seen allocated (the note native_unseen: key and value, each after its
-- length byte, in the raw stream; nil when there is none).
local function native(path)
  local f = assert(io.popen(T.cli .. " events " .. t.shq(path)))
  local n = 0
  for line in f:lines() do
    if cjson.decode(line).heap == "native" then n = n + 1 end
  end
  f:close()
  f = assert(io.open(path, "rb"))
  local raw = f:read("*a")
  f:close()
  return n, raw:match("native_unseen.(%d+)")
end

-- The chunk: one area of 128 KiB (sizemcode) holds the loop's trace. No
-- other native call: no print, no C module.
local CODE = [[
jit.on()
jit.opt.start("sizemcode=128", "maxmcode=1024")
local s = 0
for i = 1, 100000 do s = s + i % 7 end
MCODE_LOOP = s
]]
local AREA = 128 * 1024

do
  local path = record(CODE, "mcode")
  local n, unseen = native(path)
  t.is(n, 0, "the mcode area's mmap is no native event")
  t.is(unseen, "0", "no free of a block not seen")

  local out = run(T.cli .. " report --leak-only --heap native --format json " ..
		  t.shq(path))
  local r = cjson.decode(out)
  t.is(#r.heap_summary, 0, "report --leak-only --heap native: no C leak")
  out = run(T.cli .. " report --heap native --format collapsed " .. t.shq(path))
  t.is(out, "", "collapsed --heap native: no stack")
  out = run(T.cli ..
	    " report --format pprof -o - " .. t.shq(path) .. " | zcat | tr -c '[:print:]' '\\n' | grep -c 'mmap'")
  t.is(out, "0\n", "pprof: no mmap frame")

  local info = cjson.decode((run(T.cli .. " info --format json " .. t.shq(path))))
  local m = info.memory
  t.is(m.jit_mcode_bytes, AREA, "info: the machine code mapped, one area")
  t.is(m.native_live_bytes, 0, "info: no native bytes live")
  t.is(m.rest_bytes, m.rss_bytes - m.vm_live_bytes - m.native_live_bytes - AREA,
       "info: the rest is what RSS has beyond the three")
  r = cjson.decode((run(T.cli .. " report --format json " .. t.shq(path))))
  t.is(cjson.encode(r.memory), cjson.encode(m), "report json: the same memory")

  out = run(T.cli .. " report " .. t.shq(path))
  local line = out:match("\nMEMORY: ([^\n]*)") or ""
  like(line, "native 0B live %(allocated within the profile%), JIT machine " ..
	 "code 131072B mapped, the rest " .. m.rest_bytes .. "B %(allocator " ..
	 "caches and fragmentation, stacks, mapped files", "text: MEMORY names it")
  t.ok(not out:match("luajit%+0x"), "text: no address of LuaJIT's as a source")

  local html = T.tmpname("mcode-html")
  run(T.cli .. " report --format html -o " .. t.shq(html) .. " " .. t.shq(path))
  local f = assert(io.open(html))
  local page = f:read("*a")
  f:close()
  os.remove(html)
  like(page, '"jit_mcode_bytes":131072,"rest_bytes":' .. m.rest_bytes,
	 "html: the page's data has it")

  out, n = run(T.cli .. " check " .. t.shq(path))
  t.is(n, 0, "check: machine code is no leak")
  like(out, "^ok: leaked 0B in 0 blocks", "check: nothing leaked")
  os.remove(path)
end

-- A flush while recording unmaps the area made within it: no event, no
-- free of a block not seen, and no machine code at the end.
do
  local path = record(CODE .. "jit.flush()\n", "mcode-flush")
  local n, unseen = native(path)
  t.is(n, 0, "flushed: no native event")
  t.is(unseen, "0", "flushed: no free of a block not seen")
  local m = cjson.decode((run(T.cli .. " info --format json " ..
			     t.shq(path)))).memory
  t.is(m.jit_mcode_bytes, 0, "flushed: no machine code mapped at the end")
  os.remove(path)
end

-- Machine code made before the start, flushed while recording: LuaJIT
-- unmaps its areas (and frees their unwind tables, registered with
-- libgcc), which are no blocks of the program's: no event, not counted
-- in native_unseen; the two frees of blocks ffi.C.malloc made before the
-- start alone are. Then a trace made within the recording and flushed in
-- turn: still none. Sampled, nothing is counted.
do
  local ffi = require("ffi")
  ffi.cdef [[
void *malloc(size_t);
void free(void *);
]]
  for _, opts in ipairs({ {}, { sample = 256, seed = 5 } }) do
    local how = opts.sample and "sampled: " or ""
    local path = T.tmpname("mcode-old")
    jit.flush()
    OLD = { ffi.C.malloc(100), ffi.C.malloc(200) }
    local fn = assert(loadstring(CODE, "@work.lua"))
    fn()	-- The loop's trace, in an area mapped before the start.
    collectgarbage()
    opts.path = path
    opts.native = true
    assert(mp.start(opts))
    assert(loadstring([[
local C = require("ffi").C
C.free(OLD[1])
C.free(OLD[2])
jit.flush()
MCODE_LOOP2 = 0
for i = 1, 100000 do MCODE_LOOP2 = MCODE_LOOP2 + i % 5 end
jit.flush()
]], "@flush.lua"))()
    assert(mp.stop())
    local n, unseen = native(path)
    t.is(n, 0, how .. "old machine code flushed: no native event")
    t.is(unseen, not opts.sample and "2" or nil,
	 how .. "old machine code flushed: only the two frees not seen counted")
    local info = cjson.decode((run(T.cli .. " info --format json " ..
				   t.shq(path))))
    t.is(info.native_unseen, opts.sample and 0 or 2,
	 how .. "info json: native_unseen")
    t.is(info.memory.jit_mcode_bytes, 0,
	 how .. "old machine code flushed: none mapped at the end")
    os.remove(path)
  end
end

t.done()
