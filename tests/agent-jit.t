#!/usr/bin/env luajit
-- With the JIT on, a hot loop's allocations are attributed to the trace
-- compiled for it, whose symbol carries the loop's start line; after
-- jit.flush() trace numbers are reused and resolve to their new start,
-- when the flushed trace is still alive (call stacks) and when a new trace
-- takes the address of a flushed one the collector freed.
-- The iteration interpreted while the trace is recorded (the VM state then
-- says RECORD) is attributed to its line, not to the JIT compiler.
package.path = "tests/lib/?.lua;" .. package.path
local T = require("mp_test")
local t = require("tap")
jit.on()
jit.flush()
jit.opt.start("hotloop=2")

local loop1 = assert(load([[
local out = {}
for i = 1, 200 do
  out[i] = { i }
end
return out
]], "@loop1.lua"))
local loop2 = assert(load([[
local out = {}
local x = 0
for i = 1, 200 do
  out[i] = "s" .. i
end
return out
]], "@loop2.lua"))

local evs, complete, delta = T.profile(function()
  loop1()
  jit.flush()
  loop2()
end)
t.ok(complete, "stream is complete")
t.is(T.net(evs), delta, "allocated - freed equals the VM's counter delta")

-- Split the events at the flush: loop1's come before loop2's first event.
local split
for i, e in ipairs(evs) do
  if e.chunk == "@loop2.lua" or e.start_chunk == "@loop2.lua" then
    split = i
    break
  end
end
local tables, traced, exits, starts = 0, 0, 0, {}
for i = 1, split - 1 do
  local e = evs[i]
  if e.event == "alloc" and e.nsize == 88 then	-- the { i } tables
    if e.source == "trace" then
      traced = traced + 1
      starts[e.trace .. " " .. e.start_chunk .. ":" .. e.start_line] = true
    elseif e.chunk == "@loop1.lua" and e.line == 3 then
      tables = tables + 1
    elseif e.source == "internal" then
      exits = exits + 1
    end
  end
end
t.is(tables + traced, 200, "200 tables of loop 1, by line 3 or its trace")
t.is(exits, 0, "none internal: the iteration being recorded is line 3's")
t.ok(traced >= 190, "most of them from JIT-compiled code",
     "traced: " .. traced)
local keys = {}
for k in pairs(starts) do keys[#keys + 1] = k end
t.is(table.concat(keys, ","), "1 @loop1.lua:2", "trace 1 started at the loop's line")

local strings, reused = 0, {}
for i = split, #evs do
  local e = evs[i]
  if e.source == "trace" and e.event == "alloc" then
    strings = strings + 1
    reused[e.trace .. " " .. e.start_chunk .. ":" .. e.start_line] = true
  end
end
t.ok(strings >= 150, "loop 2's strings come from its traces", strings)
t.ok(reused["1 @loop2.lua:3"], "trace number 1, reused after jit.flush(), "
     .. "resolves to loop 2's line")

-- Loops of one shape in three chunks: their traces are the same size, so
-- once the collector has freed a flushed trace, the next one may take its
-- address (it did, with the same number, and kept the old symbol).
local same = {}
for k = 1, 3 do
  same[k] = assert(load([[
local out = {}
for i = 1, 2000 do out[i] = { i } end
return out
]], "@same" .. k .. ".lua"))
end
evs = T.profile(function()
  for k = 1, 3 do
    same[k]()
    jit.flush()
    collectgarbage()
    collectgarbage()
  end
end)
local by = T.count(evs, function(e) return e.start_chunk end,
		   function(e) return e.source == "trace" and e.event == "alloc" and e.nsize == 88 end)
t.ok((by["@same1.lua"] or 0) >= 1500 and (by["@same2.lua"] or 0) >= 1500 and
     (by["@same3.lua"] or 0) >= 1500,
     "a trace at a freed trace's address resolves to its own start",
     T.count(evs, function(e) return e.source == "trace" and e.trace .. " " .. e.start_chunk end))

-- With call stacks, a trace number flushed while its trace is alive: the
-- nodes of the new trace are not those of the old one.
local path = T.tmpname("flushstacks")
collectgarbage()
collectgarbage("stop")
assert(T.mp.start({ path = path, stacks = 8 }))
for k = 1, 3 do
  same[k]()
  jit.flush()
end
assert(T.mp.stop())
collectgarbage("restart")
evs = T.events(path)
os.remove(path)
local starts3 = T.count(evs, function(e)
  for _, f in ipairs(e.stack or {}) do
    local c = f:match("^TRACE %[%d+%] started at @(same%d).lua:")
    if c then return c end
  end
end, function(e) return e.event == "alloc" and e.nsize == 88 end)
t.ok((starts3.same1 or 0) >= 1500 and (starts3.same2 or 0) >= 1500 and
     (starts3.same3 or 0) >= 1500,
     "stacks: each flushed loop's tables under its own trace", starts3)
t.done()
