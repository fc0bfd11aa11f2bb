#!/usr/bin/env luajit
-- Every kind of frame LuaJIT makes leads the walker to the right Lua line:
-- builtins that compiled code calls through trace stitching (a
-- continuation frame), builtins called as metamethods (continuation), as a
-- debug hook (called from C while a Lua function runs), through xpcall,
-- from vararg functions, from FFI callbacks and inside coroutines; objects
-- rebuilt at trace exits go to the trace that exited; the JIT compiler's
-- work while recording a C call is not billed to that C function.
package.path = "tests/lib/?.lua;" .. package.path
local T = require("mp_test")
local t = require("tap")

-- Allocations and reallocations by label.
local function by_label(evs)
  return T.count(evs, function(e) return e.label end,
                 function(e) return e.event ~= "free" end)
end

-- Allocations in chunk, by line.
local function by_line(evs, chunk)
  return T.count(evs, function(e) return e.line end, function(e)
    return e.event ~= "free" and e.chunk == chunk
  end)
end

-- Count of the allocations whose source kind is src.
local function of_source(evs, src)
  local n = 0
  for _, e in ipairs(evs) do
    if e.event ~= "free" and e.source == src then n = n + 1 end
  end
  return n
end

local function with_jit(on, fn)
  if on then jit.on(); jit.flush(); jit.opt.start("hotloop=2") else jit.off() end
  local evs, complete, delta = fn()
  jit.on()
  jit.opt.start("hotloop=56", "hotexit=10")
  return evs, complete, delta
end

-- 1. The issue's reproduction: gmatch and gsub called from compiled loops
-- (trace stitching) are billed to their lines, as with the JIT off.
local stitch = assert(load([[
local words = ...
local n = 0
for i = 1, 3000 do
  for w in words[i]:gmatch("%a%d+") do n = n + #w end
end
for i = 1, 3000 do
  words[i] = words[i]:gsub("x", "yy")
end
return n
]], "@stitch.lua"))
local function words()
  local w = {}
  for i = 1, 3000 do w[i] = ("w%d x%d"):format(i, i * 7) end
  return w
end
-- Each mode twice, the second counted: the first run grows buffers that
-- the VM keeps (string buffers, the stack).
local evs_off, evs_on, complete, delta
for _ = 1, 2 do
  evs_off = with_jit(false, function()
    local w = words()
    return T.profile(function() stitch(w) end)
  end)
  evs_on, complete, delta = with_jit(true, function()
    local w = words()
    return T.profile(function() stitch(w) end)
  end)
end
local off, on = by_line(evs_off, "@stitch.lua"), by_line(evs_on, "@stitch.lua")
t.ok(complete, "JIT on: stream is complete")
t.is(T.net(evs_on), delta, "JIT on: allocated - freed equals the VM's counter delta")
t.ok((off[4] or 0) >= 9000, "JIT off: gmatch's 3000 iterators and 6000 matches "
     .. "(and the growth of a string buffer) on line 4", off[4])
t.is(on[4], off[4], "JIT on: the same on line 4")
t.is(off[7], 3000, "JIT off: gsub's strings on line 7")
t.is(on[7], off[7], "JIT on: the same on line 7")
t.is(of_source(evs_on, "cfunc"), 0, "JIT on: nothing billed to a C function")
local traced = 0
for _, e in ipairs(evs_on) do
  if e.source == "trace" and e.event ~= "free" then traced = traced + 1 end
end
t.is(traced, 0, "JIT on: nothing billed to the stitched traces")

-- 2. Builtins called as metamethods through a continuation frame.
jit.off()
local meta = assert(load([[
local t = setmetatable({ "a", "b", "c" }, { __index = table.concat,
                                            __concat = table.concat })
local s1 = t.sep
local s2 = t .. "+"
return s1, s2
]], "@meta.lua"))
local evs = T.profile(function() meta() end)
local c = by_line(evs, "@meta.lua")
t.is(c[3], 1, "__index = table.concat: its string on the indexing line")
t.is(c[4], 1, "__concat = table.concat: its string on the concatenating line")

-- 3. A builtin as a debug hook: called from C while a Lua function runs,
-- so the Lua function's pc is found in the C frames. string.rep("line",
-- n) allocates a new string for lines 2 to 4 ("line" itself exists).
local hooked = assert(load([[
local a = 1
local b = 2
local c = a + b
return c
]], "@hook.lua"))
evs = T.profile(function()
  debug.sethook(string.rep, "l")
  hooked()
  debug.sethook()
end)
c = by_line(evs, "@hook.lua")
t.same(c, { [2] = 1, [3] = 1, [4] = 1 }, "hook on lines 2, 3, 4: one string each")

-- 4. xpcall, vararg functions, coroutines.
local misc = assert(load([[
local ok, s = xpcall(string.rep, debug.traceback, "ab", 40)
local function va(...)
  local s = string.rep("v", select("#", ...) * 20)
  return s
end
local s2 = va(1, 2, 3)
local co = coroutine.wrap(function(n)
  local s3 = string.rep("c", n)
  coroutine.yield(s3)
end)
local s3 = co(50)
local body = coroutine.wrap(string.rep)
local s4 = body("w", 70)
return s, s2, s3, s4
]], "@misc.lua"))
evs = T.profile(function() misc() end)
c = by_line(evs, "@misc.lua")
t.is(c[1], 1, "xpcall(string.rep): on the xpcall line")
t.is(c[3], 1, "string.rep in a vararg function: on its line")
t.is(c[8], 1, "string.rep in a coroutine: on its line in the coroutine")
-- LuaJIT records no link from a coroutine to its resumer: a builtin that
-- is a coroutine's main function is billed to INTERNAL.
local rep70 = 0
for _, e in ipairs(evs) do
  if e.event == "alloc" and e.source == "internal" then rep70 = rep70 + 1 end
end
t.ok(c[13] == nil and rep70 >= 1, "coroutine.wrap(string.rep): INTERNAL",
     "line 13: " .. tostring(c[13]) .. ", internal: " .. rep70)

-- 5. A builtin called from an FFI callback: on the callback's line, JIT on
-- and off.
local ffi = require("ffi")
ffi.cdef("typedef int (*ljmp_cmp)(const void *, const void *);" ..
         "void qsort(void *, size_t, size_t, ljmp_cmp);")
local cb = assert(load([[
local ffi, n = ...
local arr = ffi.new("int[?]", n)
for i = 0, n - 1 do arr[i] = (i * 7919) % n end
local made = 0
local cmp = ffi.cast("ljmp_cmp", function(a, b)
  local x, y = ffi.cast("int *", a)[0], ffi.cast("int *", b)[0]
  if x == 3 then made = made + #string.rep("q", 30 + y) end
  return x - y
end)
ffi.C.qsort(arr, n, 4, cmp)
cmp:free()
return made
]], "@ffi.lua"))
for _, on in ipairs({ false, true }) do
  local made
  evs = with_jit(on, function()
    return T.profile(function() made = cb(ffi, 64) end)
  end)
  c = by_line(evs, "@ffi.lua")
  local calls = 0
  for _, e in ipairs(evs) do
    if e.event == "alloc" and e.chunk == "@ffi.lua" and e.line == 7 then
      calls = calls + 1
    end
  end
  t.ok(made > 0 and calls >= 1 and of_source(evs, "cfunc") == 0,
       "JIT " .. (on and "on" or "off") .. ": string.rep in an FFI callback " ..
       "on the callback's line", "line 7: " .. calls)
end

-- 6. Objects that a trace sank are rebuilt at its exits (VM state EXIT):
-- billed to the trace that exited, not INTERNAL. Side traces are kept
-- from forming, so the 10 escaping tables come from exits only.
local exitc = assert(load([[
local out = {}
for i = 1, 1000 do
  local t = { i, i + 1 }
  if i % 100 == 0 then out[#out + 1] = t end
end
return out
]], "@exit.lua"))
local ref = with_jit(false, function() return T.profile(function() exitc() end) end)
local tsize
for _, e in ipairs(ref) do
  if e.chunk == "@exit.lua" and e.line == 3 then tsize = e.nsize end
end
jit.on(); jit.flush(); jit.opt.start("hotloop=2", "hotexit=100000")
evs = T.profile(function() exitc() end)
jit.opt.start("hotloop=56", "hotexit=10")
local at_exits, internal = 0, 0
for _, e in ipairs(evs) do
  if e.event == "alloc" and e.nsize == tsize then
    if e.source == "trace" and e.start_chunk == "@exit.lua" then
      at_exits = at_exits + 1
    elseif e.source == "internal" then
      internal = internal + 1
    end
  end
end
t.is(at_exits, 10, "the 10 escaping tables rebuilt at exits: billed to the trace")
t.is(internal, 0, "none of them INTERNAL")

-- 7. The recorder's work while it records a call of a C function is the
-- JIT compiler's, not the C function's: with the JIT on, cjson.encode is
-- billed exactly what it allocates with the JIT off.
local ok, cjson = pcall(require, "cjson")
t.ok(ok, "lua-cjson is installed (a dependency of the tests)")
if ok then
  local cj = assert(load([[
local cjson = ...
local out = {}
for i = 1, 500 do
  out[i] = cjson.encode(i)
end
return out
]], "@cj.lua"))
  with_jit(false, function() return T.profile(function() cj(cjson) end) end)
  local a = by_label(with_jit(false, function()
    return T.profile(function() cj(cjson) end)
  end))
  local b = by_label(with_jit(true, function()
    return T.profile(function() cj(cjson) end)
  end))
  t.is(a["cjson.encode"], 500, "JIT off: 500 strings by cjson.encode")
  t.is(b["cjson.encode"], 500, "JIT on: the same 500")
end
t.done()
