-- bench/jitlines.lua: do the JIT's allocations land on the lines that make
-- them? (issue 17, point 2; bench/README.md, "Lines inside traces")
--
-- usage: luajit bench/jitlines.lua [--size quick|small|default]
--                                  [--only NAME[,NAME]] [--agent DIR]
--                                  [--luajit PATH] [--lines] [--keep]
--                                  [--jitopt OPT]
--
-- Each workload (the four benchmarks and examples/example.lua) is profiled
-- with call stacks (stacks = 64) twice, with the JIT off and on. A line's
-- bytes are those of the events whose innermost Lua line it is (the line
-- in a trace, or the line calling a builtin or a C function), allocations
-- and reallocations (their new sizes: the report's alloc-bytes). Printed
-- per workload: the lines holding more than 1% of the bytes of either run,
-- the worst of their JIT-on / JIT-off ratios, the bytes on lines none of
-- whose instructions can allocate (tests/lib/bcalloc.lua), and the bytes
-- of traces billed no line. --lines prints every line above 1%.
-- --jitopt -sink runs the JIT-on profile with `luajit -O-sink` (the JIT
-- then makes every table and cdata it would sink), to tell the
-- allocations the JIT removes from those billed elsewhere.
-- Exit status 1 when a workload misses the goal (a line above 1% outside
-- 0.95-1.05, or bytes on a line that cannot allocate), 2 on an error.
package.path = "tests/lib/?.lua;" .. package.path
local B = require("bcalloc")

local WORKLOADS = {
  { name = "binary-trees", script = "bench/binary_trees.lua",
    size = { quick = 10, small = 15, default = 17 } },
  { name = "strings", script = "bench/strings.lua",
    size = { quick = 5, small = 100, default = 400 } },
  { name = "tables", script = "bench/tables.lua",
    size = { quick = 30, small = 400, default = 1500 } },
  { name = "json", script = "bench/json.lua",
    size = { quick = 5, small = 120, default = 500 } },
  { name = "example", script = "examples/example.lua", size = {} },
}

local opt = { size = "small", agent = "build", luajit = "luajit" }
do
  local i = 1
  while arg[i] do
    local a = arg[i]
    local function val()
      i = i + 1
      if not arg[i] then io.stderr:write("jitlines: ", a, " needs a value\n"); os.exit(2) end
      return arg[i]
    end
    if a == "--size" then opt.size = val()
    elseif a == "--only" then opt.only = val()
    elseif a == "--agent" then opt.agent = val()
    elseif a == "--luajit" then opt.luajit = val()
    elseif a == "--lines" then opt.lines = true
    elseif a == "--keep" then opt.keep = true
    elseif a == "--jitopt" then opt.jitopt = val()
    else io.stderr:write("jitlines: unknown option ", a, "\n"); os.exit(2) end
    i = i + 1
  end
  if opt.size ~= "quick" and opt.size ~= "small" and opt.size ~= "default" then
    io.stderr:write("jitlines: --size must be quick, small or default\n")
    os.exit(2)
  end
end

local OUT = "build/bench"
os.execute("mkdir -p " .. OUT)

-- Quote s for the shell.
local function q(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

-- Run a command, die if it fails; its output.
local function sh(cmd)
  local f = assert(io.popen(cmd))
  local out = f:read("*a")
  local ok, _, code = f:close()
  if not ok then
    io.stderr:write("jitlines: failed (", tostring(code), "): ", cmd, "\n", out:sub(1, 2000), "\n")
    os.exit(2)
  end
  return out
end

-- Profile w with stacks, the JIT on or off; the profile's path.
local function profile(w, jit_on)
  local path = ("%s/jitlines-%s-%s.ljm"):format(OUT, w.name, jit_on and "on" or "off")
  local start = ('package.cpath = %q .. "/?.so;" .. package.cpath; ' ..
    'assert(require"ljmemprof".start{ path = %q, stacks = 64 })'):format(opt.agent, path)
  sh(("%s %s -e %s %s %s 2>&1 >/dev/null"):format(q(opt.luajit),
    jit_on and (opt.jitopt and "-O" .. q(opt.jitopt) or "") or "-joff",
    q(start), q(w.script), w.size[opt.size] or ""))
  return path
end

-- Bytes per innermost Lua line (keyed "@chunk:line") of a profile, the bytes of
-- traces billed no line, and the total.
local function lines_of(path)
  local out = sh(("%s/ljmemprof report --format collapsed %s"):format(q(opt.agent), q(path)))
  local by, bare, total = {}, 0, 0
  for stack, n in out:gmatch("([^\n]*) (%d+)\n") do
    n = tonumber(n)
    total = total + n
    local line
    for frame in stack:gmatch("[^;]+") do
      -- A Lua frame reads "name (chunk:line)" or "@chunk:line".
      local chunk, l = frame:match("^@(.-):(%d+)$")
      if not chunk and not frame:find("^TRACE %[") then
        chunk, l = frame:match(" %(([^()]-):(%d+)%)$")
      end
      if chunk then line = "@" .. chunk .. ":" .. l
      elseif frame:find("^TRACE %[") then line = false end
    end
    if line then by[line] = (by[line] or 0) + n
    elseif line == false then bare = bare + n end
  end
  return by, bare, total
end

-- Whether line "@chunk:line" can allocate (nil: not a file we can read).
local can = {}
local function can_alloc(key)
  local chunk, l = key:match("^@(.-):(%d+)$")
  if can[chunk] == nil then
    local f = loadfile(chunk)
    can[chunk] = f and B.chunk_lines(f) or false
  end
  if not can[chunk] then return nil end
  return can[chunk][tonumber(l)] == true
end

local failed = false
io.write(("ljmemprof jitlines: agent %s, size %s%s, %s\n\n"):format(opt.agent, opt.size,
  opt.jitopt and ", JIT on with -O" .. opt.jitopt or "", (sh(q(opt.luajit) .. " -v"):gsub(" %-%-.*", ""))))
io.write(("%-13s %5s %7s %-28s %9s %9s %7s %9s %9s\n"):format("workload", "size", "lines",
  "worst line (>1%)", "off B", "on B", "on/off", "cannot B", "no line B"))
for _, w in ipairs(WORKLOADS) do
  if not opt.only or ("," .. opt.only .. ","):find("," .. w.name .. ",", 1, true) then
    local poff, pon = profile(w, false), profile(w, true)
    local off, _, toff = lines_of(poff)
    local on, bare, ton = lines_of(pon)
    if not opt.keep then os.remove(poff); os.remove(pon) end
    local keys, seen = {}, {}
    for k in pairs(off) do keys[#keys + 1] = k; seen[k] = true end
    for k in pairs(on) do if not seen[k] then keys[#keys + 1] = k end end
    table.sort(keys)
    local big, worst, wr, cannot = 0, nil, 1, 0
    local rows = {}
    for _, k in ipairs(keys) do
      local a, b = off[k] or 0, on[k] or 0
      if b > 0 and can_alloc(k) == false then cannot = cannot + b end
      if a > 0.01 * toff or b > 0.01 * ton then
        big = big + 1
        local r = a > 0 and b / a or math.huge
        rows[#rows + 1] = { k, a, b, r }
        if math.abs(r - 1) >= math.abs(wr - 1) then worst, wr = k, r end
      end
    end
    if cannot > 0 or math.abs(wr - 1) > 0.05 then failed = true end
    io.write(("%-13s %5s %7d %-28s %9d %9d %7.3f %9d %9d\n"):format(w.name,
      tostring(w.size[opt.size] or "-"), big, worst or "-", worst and off[worst] or 0,
      worst and on[worst] or 0, wr, cannot, bare))
    if opt.lines then
      for _, r in ipairs(rows) do
        io.write(("    %-36s %11d %11d %7.3f\n"):format(r[1], r[2], r[3], r[4]))
      end
    end
  end
end
os.exit(failed and 1 or 0)
