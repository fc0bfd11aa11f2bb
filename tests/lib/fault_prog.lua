-- fault_prog.lua: the program of the agent's fault loop
-- (tests/agent-fault.t). Five recordings of one workload: the one-frame
-- stream, stacks (8 frames) with hot loops compiled into traces, sampling,
-- a heap snapshot, native mode (FFI malloc/free). Prints only the
-- workload's checksums on stdout, so that a run without the profiler
-- prints the same.
--
-- FAULT_DIR=DIR: profile into DIR/{one,stacks,sample,native}.ljm and
-- DIR/heap.snap, and say on stderr how each profiler call returned, one
-- line each: "call WHAT ok", "call WHAT fail ERRNO MESSAGE" (nil,
-- message, errno), "call WHAT RAISED ..." or "call WHAT BAD ..." (neither:
-- a defect). Without FAULT_DIR the profiler is never loaded.
local ffi = require("ffi")
ffi.cdef("void *malloc(size_t); void free(void *);")
local dir = os.getenv("FAULT_DIR")
local mp = dir and require("ljmemprof")

local function say(what, ok, a, b, c)
  local line
  if not ok then line = "RAISED " .. tostring(a)
  elseif a == true and b == nil then line = "ok"
  elseif a == nil and type(b) == "string" and type(c) == "number" then line = "fail " .. c .. " " .. b
  else line = "BAD " .. tostring(a) .. " " .. tostring(b) .. " " .. tostring(c) end
  io.stderr:write("call ", what, " ", line, "\n")
end

-- A profiler call, protected: it must return, never raise.
local function call(what, f, arg)
  if mp then say(what, pcall(f, arg)) end
end

local sum = 0
local function add(x) sum = (sum + x) % 1000000007 end

-- Tables, strings, closures; loops hot enough to be compiled.
local function work(k)
  local keep = {}
  for i = 1, 400 do
    local s = string.rep("ab", i % 13) .. tostring(i * k)
    keep[i % 50 + 1] = { s, #s, function() return i end }
    add(#s + #table.concat({ s, "x" }, ","))
  end
  for i = 1, 50 do add(keep[i][2] + keep[i][3]()) end
  local function deep(n) if n == 0 then return { k } end return deep(n - 1) end
  for i = 1, 30 do add(#deep(12)) end
end

-- Native blocks that C code (here through the FFI) allocates.
local function native(k)
  for i = 1, 200 do
    local p = ffi.C.malloc(16 + i % 7)
    add(p ~= nil and 1 or 0)
    ffi.C.free(p)
  end
  work(k)
end

local function rec(name, opts, f, k)
  if dir then opts.path = dir .. "/" .. name .. ".ljm" end
  call(name .. ".start", mp and mp.start, opts)
  f(k)
  call(name .. ".stop", mp and mp.stop)
  io.write(name, " ", sum, "\n")
end

rec("one", {}, work, 1)
rec("stacks", { stacks = 8 }, work, 2)
rec("sample", { sample = 256, seed = 7 }, work, 3)
work(4)
call("snapshot", mp and mp.snapshot, dir and dir .. "/heap.snap")
io.write("snapshot ", sum, "\n")
rec("native", { native = true, stacks = 8 }, native, 5)
