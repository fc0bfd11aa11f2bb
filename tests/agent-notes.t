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
t.done()
