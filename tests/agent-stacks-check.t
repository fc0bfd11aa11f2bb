#!/usr/bin/env luajit
-- The stack recorder's shortcuts give the stacks the long way gives: the
-- checked build (build/stackcheck/ljmemprof.so, make all) records every
-- stack with its caches of the last stack, of nodes and of trace lines and
-- its quick path for the common shapes, then finds it again by walking
-- every frame with no cache, and aborts at the first difference. Run on
-- shapes made to trip a shortcut (callers that change below frames that
-- do not, error unwinding through cached frames, metamethods, finalisers,
-- coroutines, vararg functions, C functions and builtins calling Lua, FFI
-- callbacks, tail calls, recursion that grows past the depth limit, debug
-- hooks, hooks and callbacks that interrupt a function at changing lines),
-- on the benchmarks' workloads and on generated programs
-- (tests/gen/luagen.lua), with the JIT off and on, at several depth limits.
package.path = "tests/lib/?.lua;" .. package.path
local t = require("tap")

local DIR = os.getenv("LJMP_STACKCHECK_DIR") or t.build .. "/stackcheck"
if not io.open(DIR .. "/ljmemprof.so") then
  t.ok(false, DIR .. "/ljmemprof.so is built (make all builds it)")
  t.done()
end

local shapes = [=[
local ffi = require("ffi")
-- Callers that change below frames that do not: c under b under a, and a
-- called from x or from y at the same slot.
local function c(n) return { n } end
local function b(n) local r = c(n) return r end
local function a(n) local r = b(n) return r end
local function x(n) local r = a(n) return r end
local function y(n) local r = a(n) return r end
local keep = {}
for i = 1, 200 do keep[i % 7 + 1] = (i % 3 == 0) and x(i) or y(i) end
-- A metamethod (called through a continuation frame, whose link does not
-- name its caller) called from either of two functions, at one slot and
-- from one call site.
local idx = setmetatable({}, { __index = function(t, k) return { k } end })
local function g1(o) local r = o.x return r end
local function g2(o) local r = o.y return r end
for i = 1, 200 do local g = i % 2 == 0 and g1 or g2; keep[1] = g(idx) end
-- Errors unwinding through cached frames; pcall and xpcall.
local function deep(n, f) if n == 0 then return f() end local r = deep(n - 1, f) return r end
for i = 1, 100 do
  pcall(deep, i % 9, function() local t = { i } if i % 2 == 0 then error(t) end return t end)
  xpcall(deep, function(e) return { e } end, i % 5, function() error("x" .. i) end)
end
-- Metamethods.
local mt = {}
mt.__index = function(t, k) return { k } end
mt.__newindex = function(t, k, v) rawset(t, k, { v }) end
mt.__add = function(p, q) return setmetatable({ 1 }, mt) end
mt.__concat = function(p, q) return setmetatable({ 2 }, mt) end
mt.__call = function(self, ...) return { ... } end
mt.__len = function(t) return #{ 1, 2 } end
mt.__eq = function() return #{} == 0 end
mt.__lt = function() return #{} == 0 end
mt.__tostring = function() return "x" .. tostring({}) end
for i = 1, 200 do
  local o = setmetatable({}, mt)
  local _ = o[i]; o[i] = i; _ = o + o; _ = o .. o; _ = o(i, i); _ = #o
  _ = (o == setmetatable({}, mt)); _ = o < o; _ = tostring(o)
end
-- Finalisers: Lua called from C by the garbage collector.
for i = 1, 200 do
  local u = newproxy(true)
  getmetatable(u).__gc = function() local t = { i } end
  if i % 50 == 0 then collectgarbage() end
end
collectgarbage()
-- Coroutines: generators made and dropped, one coroutine resumed often.
local function gen(n)
  return coroutine.wrap(function() for i = 1, n do coroutine.yield({ i }) end end)
end
for i = 1, 60 do for v in gen(i % 6) do end end
local co = coroutine.create(function(v) while true do v = coroutine.yield({ v }) end end)
for i = 1, 200 do coroutine.resume(co, i); local t = { i } end
-- Vararg functions, on top and below.
local function va(...) local t = { ... } return t end
local function vb(...) return va(...), { select("#", ...) } end
local function vc(n, ...) if n == 0 then return vb(...) end return vc(n - 1, n, ...) end
for i = 1, 200 do vc(i % 7, i) end
-- C functions and builtins that call Lua.
for i = 1, 200 do
  table.sort({ 3, 1, 2 }, function(p, q) local t = { p } return p < q end)
  local s = string.gsub("abc", "%w", function(ch) return ch .. i end)
  s = string.rep("x", i % 20) .. tostring(i) .. table.concat({ "a", "b", i }, ",")
  for w in s:gmatch("%a+") do local t = { w } end
end
-- FFI calls into C that allocates, from two lines and two callers at
-- one slot: with native = true, events whose top frame is a builtin
-- (ffi.meta.__call) with no pc of its own.
ffi.cdef[[void *malloc(size_t); void *realloc(void *, size_t); void free(void *);]]
local function fm(n) local p = ffi.C.malloc(n) p = ffi.C.realloc(p, 2 * n) return p end
local function f1(n) local p = fm(n) return p end
local function f2(n) local p = fm(n + 1) return p end
for i = 1, 200 do
  local p = (i % 3 == 0 and f1 or f2)(i)
  if i % 2 == 0 then ffi.C.free(p) else ffi.C.realloc(p, 0) end
end
-- FFI callbacks.
ffi.cdef[[void qsort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));]]
local cmp = ffi.cast("int (*)(const void *, const void *)", function(p, q)
  local t = { 1 }
  return ffi.cast("const int *", p)[0] - ffi.cast("const int *", q)[0]
end)
for i = 1, 20 do
  local arr = ffi.new("int[8]", 5, 3, 7, 1, i, 2, 8, 4)
  ffi.C.qsort(arr, 8, 4, cmp)
end
cmp:free()
-- Tail calls.
local function tl(n) if n == 0 then return { n } end return tl(n - 1) end
local function tm(n) local t = { n } return tl(n % 5) end
for i = 1, 200 do tm(i) end
-- Recursion that grows past the depth limit, one frame per event.
local function down(n) local t = { n } if n > 0 then t[2] = down(n - 1) end return { t } end
for i = 1, 5 do down(20 + i) end
-- Stacks deeper than the limit, cached at the limit: a recursion whose
-- frames below the cut change (called from two functions, through pcall,
-- in a coroutine) while the top ones do not, and whose depth moves about
-- the limit, one frame more or less, at the same slots.
local function rr(n) if n == 0 then return { n } end local r = rr(n - 1) r[2] = { n } return r end
local function via1(n) local r = rr(n) return r end
local function via2(n) local r = via1(n) return r end
for i = 1, 300 do
  local n = i % 70
  if i % 3 == 0 then via1(n) elseif i % 3 == 1 then via2(n) else pcall(rr, n) end
  coroutine.wrap(via2)(n)
end
-- A debug hook that allocates, while chunks are loaded and run.
debug.sethook(function() local t = {} end, "", 1000)
for i = 1, 300 do local f = load("return { " .. i .. " }"); f() end
debug.sethook()
-- A hook that allocates and nothing else does: the interrupted function's
-- line (read from a C frame, not from the stack) moves between events.
local sink = {}
local function spin()
  local x = 0
  for i = 1, 300 do x = x + i end
  for i = 1, 300 do x = x + i end
  for i = 1, 300 do x = x + i end
  return x
end
debug.sethook(function() sink[#sink % 10 + 1] = {} end, "", 37)
for i = 1, 20 do spin() end
debug.sethook()
-- The same for FFI callbacks: one array sorted from two lines in turn.
local cb = ffi.cast("int (*)(const void *, const void *)", function(p, q)
  sink[1] = { 1 }
  return ffi.cast("const int *", p)[0] - ffi.cast("const int *", q)[0]
end)
local arr = ffi.new("int[8]")
for i = 1, 20 do
  for k = 0, 7 do arr[k] = (k * i) % 8 end
  ffi.C.qsort(arr, 8, 4, cb)
  for k = 0, 7 do arr[k] = (k * (i + 3)) % 8 end
  ffi.C.qsort(arr, 8, 4, cb)
end
cb:free()
]=]

local file = string.format("%s/ljmp-stack-shapes-%d.lua", os.getenv("TMPDIR") or "/tmp",
                           math.floor(os.time() % 100000))
local fh = assert(io.open(file, "w"))
fh:write(shapes)
fh:close()

-- Run the programs under the checked build; its output and status.
local function check(jit_flag, depths, programs)
  local cmd = string.format("luajit %s tests/lib/stackcheck.lua %s %s %s 2>&1",
                            jit_flag, DIR, depths, programs)
  local f = assert(io.popen(t.timeout(cmd, 600) .. "; echo status $?"))
  local out = f:read("*a")
  f:close()
  return out
end

for _, mode in ipairs({ { "-joff", "JIT off" }, { "-jon", "JIT on" } }) do
  local flag, name = mode[1], mode[2]
  local out = check(flag, "2,5,64", file)
  t.is(out, "checked 3\nstatus 0\n", name .. ": the tricky shapes, at depths 2, 5, 64")
  out = check(flag, "3,64",
    "bench/binary_trees.lua=8 bench/strings.lua=3 bench/tables.lua=8 bench/json.lua=3 " ..
    "bench/deep.lua=300 bench/deep.lua=overflow")
  t.is(out, "checked 12\nstatus 0\n", name .. ": the benchmarks' workloads, at depths 3 and 64")
  out = check(flag, "4,64", "gen:1-300")
  t.is(out, "checked 600\nstatus 0\n", name .. ": 300 generated programs, at depths 4 and 64")
  out = check(flag, "2,5,64", "--native " .. file .. " bench/json.lua=3")
  t.is(out, "checked 6\nstatus 0\n", name ..
       ": native = true, the tricky shapes and the JSON workload, at depths 2, 5, 64")
end

-- FFI calls from the interpreter find their stacks in the memo of stacks
-- met before, as Lua frames do (their top frame, ffi.meta.__call, has no
-- pc of its own: the memo knew none of them, and every native event and
-- cdata walked its stack): after a first pass, no event of a pass of
-- 2000 malloc/free pairs (6000 events: the cdata, the malloc, the free)
-- misses, counted by the checked build (mp_check_unmet).
local prog = string.format([=[
package.cpath = %q .. "/?.so;" .. package.cpath
local ffi = require("ffi")
local mp = require("ljmemprof")
ffi.cdef"void *malloc(size_t); void free(void *); extern uint32_t mp_check_unmet;"
local lib = ffi.load(%q .. "/ljmemprof.so")
local C = ffi.C
local function loop(n) for i = 1, n do local p = C.malloc(100) C.free(p) end end
local got = { 0, 0, 0, 0 }
assert(mp.start{ path = %q, native = true })
for k = 1, 3 do
  got[k] = lib.mp_check_unmet
  loop(2000)
end
got[4] = lib.mp_check_unmet
assert(mp.stop())
io.write(got[3] - got[2], " ", got[4] - got[3], "\n")
]=], DIR, DIR, file .. ".ljm")
fh = assert(io.open(file, "w"))
fh:write(prog)
fh:close()
local f = assert(io.popen(t.timeout("luajit -joff " .. file, 120) .. " 2>&1; echo status $?"))
t.is(f:read("*a"), "0 0\nstatus 0\n",
     "JIT off: passes 2 and 3 of 2000 ffi.C.malloc/free pairs: 0 events missed the memo")
f:close()
os.remove(file .. ".ljm")
os.remove(file)
t.done()
