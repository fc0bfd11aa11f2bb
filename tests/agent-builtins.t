#!/usr/bin/env luajit
-- Builtins (fast functions, whether their assembler fast path or their C
-- fallback allocates) are attributed to the Lua line that called them,
-- including through pcall.
package.path = "tests/lib/?.lua;" .. package.path
local T = require("mp_test")
local t = require("tap")
jit.off()
local tnew = require("table.new")

local src = [[
local tnew = ...
local parts = { "a", "b", "c" }
local s1 = string.rep("ab", 50)
local s2 = table.concat(parts, ",")
local s3 = tostring(12.5)
local t1 = tnew(8, 0)
local s4 = string.format("%d-%s", 7, s3)
local s5 = s1:sub(3, 40)
local co = coroutine.create(print)
local ok, s6 = pcall(string.rep, "xy", 30)
local s7 = ("%5.1f"):format(3.25)
return s1, s2, s3, t1, s4, s5, co, s6, s7
]]
-- A thread's size differs between flavours (OpenResty's lua_State is
-- larger): the VM's own counter tells it, less its first stack, whose
-- size is a constant of LuaJIT's (LJ_STACK_START + LJ_STACK_EXTRA slots).
local STACK = 376
collectgarbage()
collectgarbage("stop")
local c0 = collectgarbage("count")
local co0 = coroutine.create(print)
local THREAD = (collectgarbage("count") - c0) * 1024 - STACK
collectgarbage("restart")
local chunk = assert(load(src, "@builtins.lua"))
local evs, complete, delta = T.profile(function() chunk(tnew) end)
t.ok(complete, "stream is complete")
t.is(T.net(evs), delta, "allocated - freed equals the VM's counter delta")

local got = {}
for _, e in ipairs(evs) do
  got[#got + 1] = e.event .. " " .. e.label .. " " .. e.nsize
end
local want = {
  "alloc @builtins.lua:2 104",	-- table constructor with 3 array slots
  "alloc @builtins.lua:3 128",	-- string.rep (C fallback): 100 bytes
  "alloc @builtins.lua:4 32",	-- table.concat: "a,b,c"
  "alloc @builtins.lua:5 32",	-- tostring(12.5) (fast path): "12.5"
  "alloc @builtins.lua:6 136",	-- table.new(8, 0)
  "alloc @builtins.lua:7 32",	-- string.format: "7-12.5"
  "alloc @builtins.lua:8 64",	-- string.sub: 38 bytes
  "alloc @builtins.lua:9 " .. THREAD,	-- coroutine.create: the thread...
  "alloc @builtins.lua:9 " .. STACK,	-- ...and its stack
  "alloc @builtins.lua:10 88",	-- pcall(string.rep, ...): 60 bytes
  "alloc @builtins.lua:11 32",	-- method call of string.format
}
t.is(table.concat(got, "\n"), table.concat(want, "\n"), "events in order")
t.done()
