#!/usr/bin/env luajit
-- Attribution with the JIT off: every allocation made by a Lua function is
-- reported on the line that made it, in order, with exact sizes.
package.path = "tests/lib/?.lua;" .. package.path
local T = require("mp_test")
local t = require("tap")
jit.off()

local src = [[
local out = {}
local function make(n)
  local r = {}
  for i = 1, n do
    r[i] = { i }
  end
  return r
end
out.a = make(3)
out.s = "x" .. out.a[1][1]
out.f = function() return 1 end
return out
]]
local chunk = assert(load(src, "@lines.lua"))

local evs, complete, delta = T.profile(function() chunk() end)
t.ok(complete, "stream is complete")
t.is(T.net(evs), delta, "allocated - freed equals the VM's counter delta")

local got = {}
for _, e in ipairs(evs) do
  got[#got + 1] = e.event .. " " .. e.label .. " " .. e.osize .. ">" .. e.nsize
end
-- GC64 sizes: empty table 64, table with a 1-slot array 88, closure 40.
-- The closure `make` is created on line 8, the line of its `end`.
local want = {
  "alloc @lines.lua:1 0>64",	-- out
  "alloc @lines.lua:8 0>40",	-- closure make
  "alloc @lines.lua:3 0>64",	-- r
  "alloc @lines.lua:5 0>88",	-- { 1 }
  "alloc @lines.lua:5 0>24",	-- r's array part
  "alloc @lines.lua:5 0>88",	-- { 2 }
  "alloc @lines.lua:5 0>88",	-- { 3 }
  "realloc @lines.lua:5 24>40",	-- r's array part grows
  "alloc @lines.lua:9 0>48",	-- out's hash part
  "alloc @lines.lua:10 0>28",	-- the string "x1" (GCstr + 2 + NUL, rounded)
  "alloc @lines.lua:11 0>40",	-- the closure
  "alloc @lines.lua:11 0>96",	-- out's hash part grows...
  "free INTERNAL 48>0",		-- ...and the old one is freed
}
t.is(table.concat(got, "\n"), table.concat(want, "\n"), "events in order")
t.done()
