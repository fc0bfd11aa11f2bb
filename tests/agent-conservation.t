#!/usr/bin/env luajit
-- Conservation: over a profiled interval with the GC running, allocated
-- minus freed bytes in the events equal the change of the VM's own counter,
-- exactly, with the JIT on and with it off. The workload also runs
-- coroutines, errors, metamethods, collectgarbage() and jit.flush().
package.path = "tests/lib/?.lua;" .. package.path
local T = require("mp_test")
local t = require("tap")

local function workload(n)
  local keep = {}
  for i = 1, n do
    local t1 = { i, tostring(i), string.rep("a", i % 50) }
    keep[i % 100 + 1] = t1
    local co = coroutine.wrap(function(a)
      local x = coroutine.yield({ a })
      return x .. "!"
    end)
    co(i)
    co("v" .. i)
    pcall(error, { code = i })
    local mt = setmetatable({}, { __index = function(_, k) return k .. i end })
    local _ = mt.key
    if i % 500 == 0 then collectgarbage() end
    if i % 700 == 0 and jit.status() then jit.flush() end
  end
  return keep
end

for _, mode in ipairs({ "off", "on" }) do
  if mode == "on" then jit.on() else jit.off() end
  collectgarbage()
  local path = T.tmpname("cons-" .. mode)
  assert(T.mp.start(path))
  local before = collectgarbage("count")
  workload(3000)
  local after = collectgarbage("count")
  assert(T.mp.stop())
  local evs, complete = T.events(path)
  os.remove(path)
  t.ok(complete, "JIT " .. mode .. ": stream is complete")
  t.is(T.net(evs), (after - before) * 1024,
       "JIT " .. mode .. ": allocated - freed equals the counter delta")
  local frees, traces = 0, 0
  for _, e in ipairs(evs) do
    if e.event == "free" then frees = frees + 1 end
    if e.source == "trace" then traces = traces + 1 end
  end
  t.ok(frees > 1000, "JIT " .. mode .. ": the GC freed memory meanwhile", frees)
  if mode == "on" then
    t.ok(traces > 0, "JIT on: some events come from traces", traces)
  end
end
t.done()
