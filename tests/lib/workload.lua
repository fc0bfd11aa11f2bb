-- workload.lua: a little of everything the agent's frame walker meets,
-- for hosts that check its reads of VM memory (tests/agent-sysalloc.t):
-- builtins called from Lua and from compiled code (stitched), C functions,
-- closures with and without upvalues, varargs, metamethods, finalisers,
-- coroutines, pcall and errors, require, deep and mutual recursion, FFI
-- callbacks; loops hot enough to be compiled. Prints a checksum.
local ffi = require("ffi")
local sum = 0
local function add(x) sum = (sum + x) % 1000000007 end

-- Builtins and their C fallbacks, hot.
for i = 1, 300 do
  local s = string.rep("ab", i % 17) .. tostring(i)
  add(#s + #string.format("%d:%s", i, s))
  add(#table.concat({ s, s, "x" }, ","))
  for w in s:gmatch("a") do add(#w) end
  add(#(s:gsub("b", "cc")))
  add(#s:sub(2, 5) + #s:upper())
end

-- Closures with no upvalues, with upvalues, varargs.
local function noup(n) return { n } end
local function mk(k) return function(x) return { x, k } end end
local function va(...) local t = { ... } return select("#", ...) + #t end
for i = 1, 200 do
  add(noup(i)[1] + mk(i)(i)[2] + va(i, i, i))
end

-- Metamethods and finalisers.
local mt = {
  __index = function(t, k) return k * 2 end,
  __add = function(a, b) return setmetatable({ v = a.v + b.v }, getmetatable(a)) end,
  __concat = function(a, b) return tostring(a.v) .. tostring(b) end,
}
for i = 1, 200 do
  local a = setmetatable({ v = i }, mt)
  local b = a + a
  add(b.v + a[i] + #(b .. "z"))
  local p = newproxy(true)
  getmetatable(p).__gc = function() add(1) end
end
collectgarbage()

-- Coroutines, wrapped and resumed.
local gen = coroutine.wrap(function()
  for i = 1, 100 do coroutine.yield({ i }, tostring(i)) end
end)
for _ = 1, 100 do local t, s = gen() add(t[1] + #s) end
local co = coroutine.create(function(a)
  while true do a = coroutine.yield(string.rep("y", a % 9)) end
end)
for i = 1, 100 do local _, s = coroutine.resume(co, i) add(#s) end

-- pcall, xpcall, errors with tables and strings.
for i = 1, 100 do
  local ok, e = pcall(function() error({ code = i }) end)
  add(e.code)
  ok, e = xpcall(function() error("boom " .. i) end, function(m) return m .. "!" end)
  add(#e)
end

-- require (the agent wraps it), a module made on the way.
package.preload["wl_mod"] = function() return { f = function(x) return { x } end } end
for i = 1, 50 do add(require("wl_mod").f(i)[1] + #require("string").rep("q", 3)) end

-- Recursion: deep, mutual, with allocation at every level.
local function deep(n) if n == 0 then return {} end local t = deep(n - 1) t[#t + 1] = { n } return t end
add(#deep(300))
local odd
local function even(n) if n == 0 then return { 0 } end return odd(n - 1) end
function odd(n) if n == 0 then return { 1 } end return even(n - 1) end
for i = 1, 50 do add(even(i)[1]) end

-- An FFI callback: C (qsort) calls Lua, which allocates.
ffi.cdef [[ void qsort(void *b, size_t n, size_t sz, int (*cmp)(const void *, const void *)); ]]
local arr = ffi.new("int[64]")
for i = 0, 63 do arr[i] = (i * 37) % 64 end
local cmp = ffi.cast("int (*)(const void *, const void *)", function(a, b)
  local x, y = ffi.cast("const int *", a)[0], ffi.cast("const int *", b)[0]
  local t = { x, y }
  return t[1] - t[2]
end)
ffi.C.qsort(arr, 64, 4, cmp)
cmp:free()
for i = 0, 63 do add(arr[i] * i) end

print("checksum " .. sum)
