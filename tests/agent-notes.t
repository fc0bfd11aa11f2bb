#!/usr/bin/env luajit
-- What the agent writes beyond events: a full collection before the end
-- (stop{collect = true}, start{collect = true} at lua_close), recorded
-- like any frees and noted (in a version-3 stream, in the trailer after
-- its epilogue, which memprof readers never reach); time marks in the
-- extension every 4096 events and at the end; option errors.
package.path = "tests/lib/?.lua;" .. package.path
local T = require("mp_test")
local t = require("tap")
local mp = T.mp
jit.off()

-- The records of a profile (tests/c/stream_items), as a list of lines.
local function items(path)
  local f = assert(io.popen(t.timeout(t.build .. "/tests/stream_items '" .. path .. "'", 60)))
  local out = {}
  for line in f:lines() do out[#out + 1] = line end
  f:close()
  return out
end
local function has(list, line)
  for _, l in ipairs(list) do if l == line then return true end end
  return false
end
local function count(list, pattern)
  local n = 0
  for _, l in ipairs(list) do if l:find(pattern) then n = n + 1 end end
  return n
end

-- 1. stop{collect = true}: the garbage made while recording is freed in
-- the profile, and the note says so; without it, no note.
local function garbage_run(path, collect)
  collectgarbage()
  collectgarbage("stop")
  assert(mp.start(path))
  for i = 1, 500 do local g = { i } end	-- garbage
  local keep = {}
  for i = 1, 50 do keep[i] = { i } end
  collectgarbage("restart")
  assert(mp.stop(collect and { collect = true } or nil))
  return keep
end
local pc, pn = T.tmpname("collect"), T.tmpname("nocollect")
garbage_run(pc, true)
garbage_run(pn, false)
local ic, inn = items(pc), items(pn)
t.ok(has(ic, "end") and has(ic, "note collect=1"), "stop{collect = true}: "
     .. "the note follows the epilogue (a version-3 stream's trailer)", table.concat(ic, "\n"))
t.is(count(inn, "^note"), 0, "without collect: no note, no trailer")
local evs = T.events(pc)
local freed = 0
for _, e in ipairs(evs) do
  if e.event == "free" and e.source == "internal" then freed = freed + 1 end
end
t.ok(freed >= 500, "the collection's frees are recorded (the 500 garbage tables)", freed)

-- 2. start{collect = true}: the collection also runs when the stream ends
-- at lua_close (a script that just ends).
local pl = T.tmpname("close")
local src = [[
local mp = require("ljmemprof")
assert(mp.start{ path = os.getenv("P"), collect = true })
keep = {}
for i = 1, 300 do local g = { i }; if i % 3 == 0 then keep[#keep + 1] = g end end
]]
local f = assert(io.popen(t.timeout("P='" .. pl .. "' LUA_CPATH='" .. t.build .. "/?.so;;' luajit -joff -e '" ..
                                    src:gsub("'", "'\\''") .. "'; echo $?", 60)))
local rc = f:read("*a")
f:close()
t.is(rc, "0\n", "a script started with collect = true ends normally")
local il = items(pl)
t.ok(has(il, "note collect=1"), "and its profile notes the collection at lua_close",
     table.concat(il, "\n"))
local h = assert(io.popen(t.timeout(t.build .. "/ljmemprof info --format json '" .. pl .. "'", 60)))
local info = h:read("*a")
h:close()
t.is(tonumber(info:match('"live_blocks":(%d+)')) >= 100 and
     tonumber(info:match('"live_blocks":(%d+)')) < 200, true,
     "what is live at the end is about the 100 kept tables, not the 300 made")

-- 2b. start{collect = true} in a script that ends with os.exit(0): the
-- Lua state is never closed, so the collection cannot run; the stream
-- says so ("uncollected" = "exit"), and the report's note names why.
local function exit_run(path, collect)
  local code = 'local mp = require("ljmemprof")\n' ..
    'assert(mp.start{ path = os.getenv("P"), collect = ' .. tostring(collect) .. ' })\n' ..
    'keep = {} for i = 1, 100 do keep[i] = { i } end\nos.exit(0)\n'
  local f = assert(io.popen(t.timeout("P='" .. path .. "' LUA_CPATH='" .. t.build .. "/?.so;;' luajit -e '" ..
                                      code:gsub("'", "'\\''") .. "'; echo $?", 60)))
  local rc = f:read("*a")
  f:close()
  return rc
end
local px, py = T.tmpname("exit"), T.tmpname("exitnc")
t.is(exit_run(px, true) .. exit_run(py, false), "0\n0\n", "scripts that end with os.exit(0) exit 0")
t.ok(has(items(px), "note uncollected=exit") and not has(items(px), "note collect=1"),
     "collect = true, then os.exit: noted that the collection could not run", table.concat(items(px), "\n"))
t.ok(not has(items(py), "note uncollected=exit"), "without collect: no such note")
local hx = assert(io.popen(t.timeout(t.build .. "/ljmemprof info '" .. px .. "'", 60)))
local ix = hx:read("*a")
hx:close()
t.is(ix:match("\ncollected:  ([^\n]*)"), "no (asked for, but the process exited without closing " ..
     "its Lua state, so it could not run: what is live may be garbage not yet collected)",
     "info says why it did not run")
hx = assert(io.popen(t.timeout(t.build .. "/ljmemprof report '" .. px .. "'", 60)))
ix = hx:read("*a")
hx:close()
t.ok(ix:find("\nNOTES:\na full garbage collection was asked for before the end, but the process exited " ..
             "without closing its Lua state", 1, true), "and so do the report's NOTES", ix)
hx = assert(io.popen(t.timeout(t.build .. "/ljmemprof report --format json '" .. px .. "'", 60)))
t.ok(hx:read("*a"):find('"collected":false,"uncollected":"exit"', 1, true), "JSON: uncollected exit")
hx:close()
os.remove(px)
os.remove(py)

-- 3. The extension: time marks every 4096 events and one at the end, the
-- note before the epilogue.
local pe = T.tmpname("marks")
collectgarbage()
assert(mp.start({ path = pe, stacks = 4 }))
local keep = {}
for i = 1, 20000 do keep[i] = { i } end
assert(mp.stop({ collect = true }))
local ie = items(pe)
local marks, last, ordered = 0, -1, true
for _, l in ipairs(ie) do
  local ns = tonumber(l:match("^time (%d+)$"))
  if ns then
    marks = marks + 1
    if ns < last then ordered = false end
    last = ns
  end
end
t.ok(marks >= 20000 / 4096 and marks <= 40000 / 4096 + 2,
     "a time mark every 4096 events and one at the end", marks)
t.ok(ordered, "time marks never go back")
t.is(ie[#ie - 3], "info collect=1", "the note is the last record before the epilogue",
     table.concat(ie, "\n", #ie - 4))
t.is(ie[#ie - 1], "end", "then the epilogue, and no trailer")

-- 4. Bad options of stop() are errors, never ignored.
local pb = T.tmpname("bad")
assert(mp.start(pb))
local ok, err = pcall(mp.stop, { colect = true })
t.is(err, "bad argument #1 to 'stop' (unknown option 'colect'; options are collect, snapshot)",
     "a misspelt stop option")
ok, err = pcall(mp.stop, { collect = "yes" })
t.is(err, "bad argument #1 to 'stop' (options.collect must be a boolean)",
     "collect of the wrong type")
ok, err = pcall(mp.stop, "now")
t.ok(not ok and err:find("options table expected"), "stop with a string", err)
t.ok(mp.running(), "still running after the refused calls")
assert(mp.stop())
for _, p in ipairs({ pc, pn, pl, pe, pb }) do os.remove(p) end
-- 5. The program's own collection: a stop without collect right after
-- collectgarbage() finds the heap as that cycle left it, and notes it
-- ("settled"); anything allocated after the collection, or a stop that
-- collects, and there is no such note.
local function run_out(cmd)
  local h = assert(io.popen(t.timeout(cmd, 60)))
  local s = h:read("*a")
  h:close()
  return s
end
local function settle_run(path, after)
  collectgarbage()
  assert(mp.start(after == "sampled" and { path = path, sample = 64 } or path))
  local keep = {}
  for i = 1, 500 do local g = { i }; if i % 5 == 0 then keep[#keep + 1] = g end end
  -- Strings that die: the collection shrinks the string table, which
  -- lowers the VM's total below its estimate.
  if after == "shrink" then for i = 1, 60000 do local s = tostring(i) end end
  if after ~= "collect" then collectgarbage() end
  if after == "alloc" or after == "shrink" then keep.more = { 1 } end
  assert(mp.stop(after == "collect" and { collect = true } or nil))
  return keep
end
local ps, pa, pk = T.tmpname("settled"), T.tmpname("alloc"), T.tmpname("stopgc")
local ph, pm = T.tmpname("shrink"), T.tmpname("sampled")
settle_run(ps)
settle_run(pa, "alloc")
settle_run(pk, "collect")
settle_run(ph, "shrink")
settle_run(pm, "sampled")
local is_, ia, ik = items(ps), items(pa), items(pk)
t.ok(not has(items(ph), "note settled=1"), "an allocation after a collection that shrank the "
     .. "string table: no such note", table.concat(items(ph), "\n"))
t.ok(not has(items(pm), "note settled=1"), "sampled (its hook sees few allocations): never noted")
t.ok(has(is_, "note settled=1") and not has(is_, "note collect=1"),
     "collectgarbage() then stop(): noted settled, not collected", table.concat(is_, "\n"))
t.ok(not has(ia, "note settled=1"), "an allocation after the collection: no such note",
     table.concat(ia, "\n"))
t.ok(has(ik, "note collect=1") and not has(ik, "note settled=1"),
     "stop{collect = true}: collected, not settled", table.concat(ik, "\n"))
local cli = t.build .. "/ljmemprof "
t.is(run_out(cli .. "info '" .. ps .. "'"):match("\ncollected:  ([^\n]*)"),
     "before the stop (the collector had just finished a cycle, as after the program's " ..
     "collectgarbage(), and nothing was allocated after it: what is live survived it)",
     "info says the heap was collected before the stop")
t.is(run_out(cli .. "info '" .. pa .. "'"):match("\ncollected:  ([^\n]*)"),
     "no (what is live may be garbage not yet collected)", "and not after an allocation")
local settled_note = "no collection ran at the stop, but the collector had just finished a " ..
  "cycle and nothing was allocated after it (as after the program's own collectgarbage()): " ..
  "what is held survived that collection"
local rep = run_out(cli .. "report '" .. ps .. "'")
t.ok(rep:find("\nNOTES:\n" .. settled_note .. "\n", 1, true), "the report's NOTES say so", rep)
t.ok(not rep:find("may be garbage never collected", 1, true), "instead of the note that it may be garbage")
local js = run_out(cli .. "report --format json '" .. ps .. "'")
t.ok(js:find('"collected":false,"settled":true', 1, true), "JSON: collected false, settled true")
t.ok(not run_out(cli .. "report --format json '" .. pa .. "'"):find('"settled"', 1, true),
     "JSON: no settled key when it was not")
local chk = run_out(cli .. "check --max-leak none '" .. ps .. "'")
t.ok(chk:find("^ok: ") and not chk:find("note: the profile notes no full", 1, true),
     "check: no note that the leaked may be garbage", chk)
t.ok(run_out(cli .. "check --max-leak none '" .. pa .. "'"):find("note: the profile notes no full", 1, true),
     "but after an allocation, the note")
t.ok(run_out(cli .. "report '" .. ps .. "' '" .. pk .. "'"):find("\n" .. settled_note .. "\n", 1, true),
     "a merge of a settled and a collected profile: settled")
t.ok(run_out(cli .. "report '" .. ps .. "' '" .. pa .. "'"):find("may be garbage never collected", 1, true),
     "a merge with an unsettled one: may be garbage")
for _, p in ipairs({ ps, pa, pk, ph, pm }) do os.remove(p) end
t.done()
