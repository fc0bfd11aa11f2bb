-- snapshot.lua: what writing a heap snapshot costs (issue 20's targets).
--
-- usage: luajit bench/snapshot.lua [--sizes 1e6,1e7] [--shapes LIST]
--                                  [--reps N] [--agent DIR]... [--keep]
--
-- For every heap shape and size, and for every agent (--agent DIR, DIR/
-- ljmemprof.so; several to compare builds side by side, default build/),
-- a fresh LuaJIT process builds the heap, collects it twice, then times
-- alternately, N times each, `collectgarbage("collect")` (the reference: a
-- full mark and sweep of the same heap) and `mp.snapshot(FILE)`, and
-- prints medians:
--
--   objects   objects in the snapshot (its trailer)
--   gc ms     a full collection;  snap ms  the snapshot (wall)
--   ns/obj    snapshot wall time per object;  x gc  snap ms / gc ms
--   cpu ns    CPU time per object of the whole process (the sink's writer
--             thread and the string table's second scanner included)
--   B/obj     file bytes per object
--   mem MB    the peak resident memory the snapshot added over the heap's
--             (/proc/self/clear_refs then VmHWM): what it takes outside the
--             VM;  mem B/obj  the same per object
--
-- Shapes: tables (big[i] = { i }), strings (big[i] = "s" .. i), list (a
-- linked list { next = l }), records (n/2 { id = i, name = "n" .. i } and
-- their strings). Agents run one after the other for each heap, so their
-- rows sit side by side. Not a test: it never fails on a time.

local ffi = require("ffi")
ffi.cdef[[
struct mp_ts { long tv_sec; long tv_nsec; };
int clock_gettime(int clk, struct mp_ts *ts);
]]

-- One struct for every reading: the clock makes no garbage, so that the
-- heap snapshotted is the heap collected.
local ts = ffi.new("struct mp_ts")

local function now(clk)
  ffi.C.clock_gettime(clk, ts)
  return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end

local function status(key)
  local f = assert(io.open("/proc/self/status"))
  local s = f:read("*a")
  f:close()
  return tonumber(s:match(key .. ":%s*(%d+) kB")) * 1024
end

local function median(t)
  table.sort(t)
  return t[math.floor((#t + 1) / 2)]
end

-- The child: build one heap, time gc and snapshot, print one line.
local function child(shape, n, reps, path)
  local mp = require("ljmemprof")
  local keep
  if shape == "tables" then
    keep = {}
    for i = 1, n do keep[i] = { i } end
  elseif shape == "strings" then
    keep = {}
    for i = 1, n do keep[i] = "s" .. i end
  elseif shape == "list" then
    for _ = 1, n do keep = { next = keep } end
  elseif shape == "records" then
    keep = {}
    for i = 1, n / 2 do keep[i] = { id = i, name = "n" .. i } end
  else
    error("unknown shape " .. shape)
  end
  collectgarbage("collect")
  collectgarbage("collect")
  local gc, snap, cpu, mem = {}, {}, {}, {}
  for _ = 1, reps do
    local rss = status("VmRSS")
    local f = io.open("/proc/self/clear_refs", "w")
    if f then f:write("5") f:close() end
    f = nil
    -- The collection last: what the lines above made is gone, and the
    -- snapshot finds nothing unreached.
    local t0 = now(1)
    collectgarbage("collect")
    gc[#gc + 1] = now(1) - t0
    local c0 = now(2)
    t0 = now(1)
    assert(mp.snapshot(path))
    snap[#snap + 1] = now(1) - t0
    cpu[#cpu + 1] = now(2) - c0
    mem[#mem + 1] = status("VmHWM") - rss
  end
  local f = assert(io.open(path, "rb"))
  local size = f:seek("end")
  f:close()
  -- The objects: the trailer's first number, read by the reader's info.
  print(("%d %.6f %.6f %.6f %d %d"):format(n, median(gc), median(snap),
    median(cpu), size, median(mem)))
  keep = nil
end

if arg[1] == "--child" then
  child(arg[2], tonumber(arg[3]), tonumber(arg[4]), arg[5])
  os.exit(0)
end

local sizes, shapes, reps, agents, keep = { 1e6, 1e7 },
  { "tables", "strings", "list", "records" }, 3, {}, false
local i = 1
while i <= #arg do
  local a, v = arg[i], arg[i + 1]
  if a == "--sizes" then
    sizes = {}
    for s in v:gmatch("[^,]+") do sizes[#sizes + 1] = assert(tonumber(s), "bad size " .. s) end
    i = i + 1
  elseif a == "--shapes" then
    shapes = {}
    for s in v:gmatch("[^,]+") do shapes[#shapes + 1] = s end
    i = i + 1
  elseif a == "--reps" then
    reps = assert(tonumber(v), "bad --reps")
    i = i + 1
  elseif a == "--agent" then
    agents[#agents + 1] = v
    i = i + 1
  elseif a == "--keep" then
    keep = true
  else
    io.stderr:write("bench/snapshot.lua: unknown option ", a, "\n")
    os.exit(2)
  end
  i = i + 1
end
if #agents == 0 then agents[1] = "build" end

local luajit = os.getenv("LUAJIT") or "luajit"
os.execute("mkdir -p build/bench")
local path = "build/bench/snap.ljh"

-- Objects in the snapshot at path: its trailer, through the reader.
local function objects(file)
  local p = io.popen("build/ljmemprof snapshot --format json " .. file ..
                     " 2>/dev/null")
  local s = p:read("*a")
  p:close()
  return tonumber(s:match('"objects"%s*:%s*(%d+)'))
end

print(("%-8s %9s  %-22s %8s %8s %7s %6s %7s %6s %7s %6s"):format("shape",
  "size", "agent", "gc ms", "snap ms", "ns/obj", "x gc", "cpu ns", "B/obj",
  "mem MB", "B/obj"))
for _, n in ipairs(sizes) do
  for _, shape in ipairs(shapes) do
    for _, agent in ipairs(agents) do
      local cmd = ("LUA_CPATH='%s/?.so;;' %s bench/snapshot.lua --child %s %d %d %s"):format(
        agent, luajit, shape, n, reps, path)
      local p = io.popen(cmd)
      local out = p:read("*a")
      local ok = p:close()
      local _, gc, snap, cpu, size, mem = out:match("(%d+) (%S+) (%S+) (%S+) (%d+) (%-?%d+)")
      if not gc then
        io.stderr:write("bench/snapshot.lua: ", shape, " ", n, " failed: ", out, "\n")
        os.exit(1)
      end
      gc, snap, cpu, size, mem = tonumber(gc), tonumber(snap), tonumber(cpu),
        tonumber(size), tonumber(mem)
      local objs = objects(path) or n
      print(("%-8s %9d  %-22s %8.1f %8.1f %7.1f %6.2f %7.1f %6.2f %7.1f %6.1f"):format(
        shape, n, agent:sub(-22), gc * 1e3, snap * 1e3, snap / objs * 1e9,
        snap / gc, cpu / objs * 1e9, size / objs, mem / 1e6, mem / objs))
      io.stdout:flush()
    end
  end
end
if not keep then os.remove(path) end
