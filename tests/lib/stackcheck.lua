-- stackcheck.lua: run programs under a checked build of the agent
-- (build/stackcheck/ljmemprof.so: every stack it records is found again
-- the long way, and a difference aborts the process), for
-- tests/agent-stacks-check.t.
--
--   luajit [-joff] tests/lib/stackcheck.lua DIR DEPTHS [--native] PROGRAM...
--
-- DIR holds the agent's ljmemprof.so; DEPTHS is a comma-separated list of
-- depth limits; --native records native memory too (native = true: the
-- stacks of malloc and free calls are checked as well); a PROGRAM is a Lua file (run with no arguments), FILE=ARG
-- (a script and its one argument) or gen:A-B (the programs luagen.lua
-- makes of seeds A to B). Each program runs once per depth, profiled with
-- stacks = depth. Prints "checked N" (the runs) at the end, after a line
-- for each run of a file that raised an error (generated programs may
-- raise errors: the check is what counts there); a difference is an
-- abort.

local dir, depths = arg[1], arg[2]
local native, first = arg[3] == "--native", arg[3] == "--native" and 4 or 3
package.path = "tests/gen/?.lua;tests/lib/?.lua;" .. package.path
package.cpath = dir .. "/?.so;" .. package.cpath
local mp = require("ljmemprof")
local jit_on = jit.status()
local path = string.format("%s/ljmp-stackcheck-%d.bin",
  os.getenv("TMPDIR") or "/tmp", math.random(1, 1e9) + os.time() % 1000)

-- The runs: { name, function, hotloop } for each program argument.
local runs = {}
for i = first, #arg do
  local a, b = arg[i]:match("^gen:(%d+)%-(%d+)$")
  if a then
    local gen = require("luagen")
    local env = gen.env()
    for seed = tonumber(a), tonumber(b) do
      local prog = gen.generate(seed)
      local f = assert(load(prog.src, prog.chunk))
      runs[#runs + 1] = { prog.chunk, function() return f(env) end, prog.hotloop, true }
    end
  else
    local file, farg = arg[i]:match("^([^=]+)=?(.*)$")
    local f = assert(loadfile(file))
    runs[#runs + 1] = { file, function()
      _G.arg = { [0] = file, farg ~= "" and farg or nil }
      return f(farg ~= "" and farg or nil)
    end, 2 }
  end
end

local out, null = io.output(), assert(io.open("/dev/null", "w"))
local n = 0
for depth in depths:gmatch("%d+") do
  for _, r in ipairs(runs) do
    if jit_on then jit.flush(); jit.opt.start("hotloop=" .. r[3]) end
    assert(mp.start({ path = path, stacks = tonumber(depth), native = native }))
    io.output(null)
    local ok, err = pcall(r[2])
    io.output(out)
    if not ok and not r[4] then out:write("error in ", r[1], ": ", tostring(err), "\n") end
    assert(mp.stop())
    os.remove(path)
    n = n + 1
  end
end
out:write("checked ", n, "\n")
