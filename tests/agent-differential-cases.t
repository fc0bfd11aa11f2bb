#!/usr/bin/env luajit
-- The smallest programs that show each kind of failure the differential
-- test found (tests/agent-differential.t, tests/gen/README.md), run through
-- the same two runs (JIT off and on) and the same checks, plus the exact
-- attribution each one expects. Line kinds: "none" allocates nothing,
-- "table" only tables (the JIT may sink them), "alloc" anything.
package.path = "tests/gen/?.lua;tests/lib/?.lua;" .. package.path
local t = require("tap")
local D = require("difftest")
local runner = D.new({})

local cases = {
  {
    -- Builtins the JIT does not compile are called from a trace through a
    -- continuation frame (trace stitching); the string.gmatch iterator's
    -- strings belong to line 3.
    name = "stitched builtin (gmatch) in a loop",
    src = [[
local n = 0
for i = 1, 100 do
  for w in ("ab cd ef"):gmatch("%a+") do n = n + #w end
end
return n]],
    kinds = { "none", "none", "alloc", "none", "none" },
  },
  {
    -- The same through a function inlined into the caller's trace: with the
    -- JIT on, debug.getinfo's table belongs to line 2, not to the caller's
    -- line 6.
    name = "stitched builtin (debug.getinfo) in an inlined function",
    src = [[
local function f(x)
  return debug.getinfo(1, "l").currentline + x
end
local acc = 0
for i = 1, 100 do
  acc = acc + f(i)
end
return acc]],
    kinds = { "none", "alloc", "alloc", "none", "none", "none", "none", "none" },
  },
  {
    -- A table sunk in the trace and rebuilt at the side exit where it
    -- escapes (VM state EXIT): the rebuilt tables are the program's, made
    -- for line 3 by the trace; they must not be INTERNAL.
    name = "sunk table rebuilt at a trace exit",
    src = [[
local keep = {}
for i = 1, 200 do
  local t = { x = i }
  if i % 20 == 0 then keep[#keep + 1] = t end
end
return #keep]],
    kinds = { "table", "none", "table", "alloc", "none", "none" },
  },
  {
    -- The JIT compiler folds string.char of constants while it records the
    -- call: "Q" and "q" are the compiler's (INTERNAL), only "Qq" is line
    -- 3's, made once (then interned).
    name = "strings the compiler folds while recording a builtin",
    src = [[
local n = 0
for i = 1, 50 do
  n = n + #string.char(81, 113)
end
return n]],
    kinds = { "none", "none", "alloc", "none", "none" },
  },
  {
    -- Builtins used directly as metamethods are called through a
    -- continuation frame, with the JIT off too: rawset's new hash part is
    -- line 3's, table.concat's string line 4's.
    name = "builtins as metamethods (JIT off too)",
    src = [[
local mt = { __concat = table.concat, __newindex = rawset }
local function f(o)
  o.k = 1
  local s = o .. "-"
  return s
end
local o = setmetatable({ "a", "b" }, mt)
local s = f(o)
return #s]],
    kinds = { "table", "none", "alloc", "alloc", "none", "alloc", "table", "none", "none" },
  },
  {
    -- LuaJIT writes table.move (and table.remove, string.len, math.deg...)
    -- in Lua (lib_table.c, LJLIB_LUA): a builtin all the same, billed to
    -- the line that calls it, not to its own prototype ("move", line -1).
    name = "a builtin written in Lua (table.move), JIT off too",
    src = [[
local a = { "x", "y", "z", "w" }
local b = {}
for i = 1, 30 do
  table.move(a, 1, 4, #b + 1, b)
end
return #b]],
    kinds = { "table", "table", "none", "alloc", "none", "none" },
  },
}

t.plan(#cases)
for i, c in ipairs(cases) do
  local prog = D.program(c.src, "@case" .. i .. ".lua", c.kinds, c)
  prog.seed = i
  local res = runner:run_prog(prog)
  local diag = {}
  for _, f in ipairs(res.failures) do diag[#diag + 1] = f.prop .. ": " .. f.msg end
  t.ok(#res.failures == 0, c.name, table.concat(diag, "\n"))
end
t.done()
