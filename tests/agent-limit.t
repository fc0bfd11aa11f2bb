#!/usr/bin/env luajit
-- max_size: recording stops before the profile grows past the limit; the
-- stream is ended (at the next allocation, at stop or at exit) with the
-- note "stopped" = "size limit", so it stays complete; running() is then
-- false, stop() succeeds and start() may begin another profile.
package.path = "tests/lib/?.lua;" .. package.path
local T = require("mp_test")
local t = require("tap")
local mp = T.mp
jit.off()

local function items(path)
  local f = assert(io.popen(t.timeout(t.build .. "/tests/stream_items '" .. path .. "'", 60)))
  local out = "\n" .. f:read("*a")
  f:close()
  return out
end
local function size(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local n = f:seek("end")
  f:close()
  return n
end
local function churn(n)
  local keep = {}
  for i = 1, n do keep[i] = { i, tostring(i) } end
  return keep
end

-- 1. Version 3: the limit, the note in the trailer, the states.
local p1 = T.tmpname("limit")
assert(mp.start({ path = p1, max_size = 65536 }))
churn(20000)	-- About 600 KB of events.
t.is(mp.running(), false, "running() is false once the limit is reached")
local it = items(p1)
t.ok(size(p1) <= 65536 and it:find("\nend\n") and
     it:find("\nnote stopped=size limit\n"), "the stream was ended at the next " ..
     "allocation: " .. tostring(size(p1)) .. " bytes, complete, with the note", it:sub(-120))
local _, complete = T.events(p1)
t.is(complete, true, "the events read to the end")
t.is(mp.stop(), true, "stop() then succeeds")
t.is(select(2, mp.stop()), "profiler is not running", "and a second stop() says not running")
local before = size(p1)
local pa = T.tmpname("again")
assert(mp.start({ path = pa }))
t.is(mp.running(), true, "start() again after the limit")
assert(mp.stop())
t.is(size(p1), before, "the limited profile is left as it was")

-- 2. With stacks: the note comes before the epilogue.
local p2 = T.tmpname("limitstacks")
assert(mp.start({ path = p2, max_size = 100000, stacks = 8 }))
churn(30000)
t.is(mp.running(), false, "stacks: stopped at the limit")
assert(mp.stop())
local i2 = items(p2)
t.ok(size(p2) <= 100000 and i2:find("\ninfo stopped=size limit\nversion 76\nend\n"), "stacks: " ..
     tostring(size(p2)) .. " bytes, the note, then the epilogue", i2:sub(-120))

-- 3. A limit start() can start again while stopped, and a start() that
-- begins while the first is stopped at the limit leaves it complete.
local p3, p4 = T.tmpname("l3"), T.tmpname("l4")
assert(mp.start({ path = p3, max_size = 65536 }))
churn(20000)
assert(mp.start({ path = p4 }))	-- No stop() in between.
churn(10)
assert(mp.stop())
t.ok(items(p3):find("\nnote stopped=size limit\n") and items(p4):find("\nend\n"),
     "start() while stopped at the limit: the first profile complete, the second too")

-- 4. A process that exits after the limit without stop(): complete.
local p5 = T.tmpname("exit")
local code = "local mp = require('ljmemprof') assert(mp.start{ path = os.getenv('P'), " ..
             "max_size = 65536 }) local k = {} for i = 1, 20000 do k[i] = { i } end " ..
             "os.exit(0)"
local rc = os.execute(t.timeout("P=" .. t.shq(p5) .. " LUA_CPATH='" .. t.build .. "/?.so;;' " ..
                                "luajit -joff -e " .. t.shq(code), 60))
local i5 = items(p5)
t.ok(rc == 0 and size(p5) <= 65536 and i5:find("\nnote stopped=size limit\n"),
     "os.exit() after the limit: complete, with the note", i5:sub(-120))

-- 5. ljmemprof run --max-size.
local p6 = T.tmpname("run")
local script = T.tmpname("script") .. ".lua"
local f = assert(io.open(script, "w"))
f:write("local k = {} for i = 1, 20000 do k[i] = { i } end\n")
f:close()
rc = os.execute(t.timeout(t.build .. "/ljmemprof run -o " .. p6 .. " --max-size 64K " ..
                          script .. " >/dev/null", 60))
t.ok(rc == 0 and size(p6) <= 65536 and items(p6):find("\nnote stopped=size limit\n"),
     "run --max-size 64K", size(p6))
local out = io.popen(t.timeout(t.build .. "/ljmemprof run --max-size 1000 " .. script ..
                               " 2>&1; echo $?", 60)):read("*a")
t.is(out, "ljmemprof run: --max-size 1000: bytes expected, at least 64K (e.g. 100M)\n2\n",
     "run --max-size below 64K is refused")
out = io.popen(t.timeout(t.build .. "/ljmemprof run --max-size 1X " .. script ..
                         " 2>&1; echo $?", 60)):read("*a")
t.is(out, "ljmemprof run: --max-size 1X: bytes expected, at least 64K (e.g. 100M)\n2\n",
     "run --max-size with a bad unit is refused")

-- 6. Bad values.
local function err_of(opts)
  local ok, err = pcall(mp.start, opts)
  return ok and "started" or err
end
local pb = T.tmpname("bad")
t.is(err_of({ path = pb, max_size = 4096 }), "bad argument #1 to 'start' " ..
     "(options.max_size must be an integer from 65536 to 9007199254740992)",
     "max_size below 64 KiB")
t.is(err_of({ path = pb, max_size = "100M" }), "bad argument #1 to 'start' " ..
     "(options.max_size must be a number)", "max_size as a string")
t.ok(not mp.running() and not io.open(pb), "nothing started, no file")
for _, p in ipairs({ p1, pa, p2, p3, p4, p5, p6, script }) do os.remove(p) end
t.done()
