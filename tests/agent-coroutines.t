#!/usr/bin/env luajit
-- Profiling survives coroutines, errors thrown and caught, metamethods and
-- collectgarbage(), and attributes their allocations to the right lines.
package.path = "tests/lib/?.lua;" .. package.path
local T = require("mp_test")
local t = require("tap")
jit.off()

local chunk = assert(load([[
local co = coroutine.create(function(n)
  local a = { n }
  local b = coroutine.yield(a)
  local c = { b, b }
  return c
end)
local _, a = coroutine.resume(co, 1)
local _, c = coroutine.resume(co, 2)
local ok, e = pcall(function()
  local big = { 1, 2, 3, 4, 5 }
  error({ big })
end)
local mt = setmetatable({}, { __index = function(t, k)
  return { k }
end })
local v = mt.x
return a, c, e, v
]], "@co.lua"))

local evs, complete, delta = T.profile(function() chunk() end)
t.ok(complete, "stream is complete")
t.is(T.net(evs), delta, "allocated - freed equals the VM's counter delta")
local c = T.count(evs, function(e) return e.line end,
                  function(e) return e.chunk == "@co.lua" and e.event == "alloc" end)
t.is(c[2], 1, "line 2: table made inside the coroutine")
t.is(c[4], 1, "line 4: table made after resuming")
t.is(c[10], 1, "line 10: table in the function that throws")
t.is(c[11], 1, "line 11: the error value, thrown")
t.is(c[14], 1, "line 14: table made in an __index metamethod")
t.ok(c[1] and c[1] >= 2, "line 1: the coroutine (closure, thread, stack)",
     tostring(c[1]))

-- collectgarbage() while profiling: its frees are internal and conserve.
local evs2, complete2 = T.profile(function()
  local junk = {}
  for i = 1, 1000 do junk[i] = { i } end
  junk = nil
  collectgarbage("restart")
  collectgarbage()
  collectgarbage("stop")
end)
local freed = 0
for _, e in ipairs(evs2) do
  if e.event == "free" and e.source == "internal" and e.osize == 88 then
    freed = freed + 1
  end
end
t.ok(complete2, "complete after a full GC cycle inside the profile")
t.ok(freed >= 1000, "the GC's frees of the 1000 tables are recorded", freed)
t.done()
