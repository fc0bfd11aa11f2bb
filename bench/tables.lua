-- tables.lua: table and closure churn (ljmemprof benchmark).
--
-- usage: luajit bench/tables.lua [STEPS]     (default 1500)
--
-- A toy particle simulation written in the allocation-happy style much
-- real Lua code has: immutable 2-D vectors as fresh {x, y} tables for every
-- intermediate result, a record table per particle and per collision, a
-- callback closure per scheduled event, iterator closures, varargs packed
-- into tables, and a growing/shrinking queue. Nearly every object dies
-- within one step, while the particle set itself lives for the whole run.
-- Prints a checksum of the final state.

local steps = tonumber(arg and arg[1]) or 1500
local NPART = 2000
local floor = math.floor

-- Deterministic pseudo-random numbers (a 31-bit LCG), the same everywhere.
local seed = 4242
local function rand()
  seed = (seed * 1103515245 + 12345) % 2147483648
  return seed / 2147483648
end

-- Vectors: every operation returns a new table.
local function vec(x, y) return { x = x, y = y } end
local function add(a, b) return vec(a.x + b.x, a.y + b.y) end
local function scale(a, k) return vec(a.x * k, a.y * k) end
local function wrap(a)
  return vec(a.x - floor(a.x), a.y - floor(a.y))
end

-- A closure over its own counter: a small object per call site.
local function counter()
  local n = 0
  return function(k) n = n + (k or 1); return n end
end

-- Iterator closure over the particles of one grid cell.
local function each_in(cell)
  local i = 0
  return function()
    i = i + 1
    return cell[i]
  end
end

-- Varargs into a fresh record.
local function record(...)
  return { n = select("#", ...), ... }
end

local parts = {}
for i = 1, NPART do
  parts[i] = { pos = vec(rand(), rand()), vel = vec(rand() - 0.5, rand() - 0.5),
               id = i, hits = 0 }
end

local GRID = 16
local events, ev_head, ev_tail = {}, 1, 0
local hits_total = counter()
local checksum = 0

for step = 1, steps do
  -- Move: three temporary vectors per particle.
  local dt = 0.01
  for i = 1, NPART do
    local p = parts[i]
    local g = vec(0, -0.1)
    p.vel = add(p.vel, scale(g, dt))
    p.pos = wrap(add(p.pos, scale(p.vel, dt)))
  end

  -- Bin into a fresh grid of fresh cell tables.
  local grid = {}
  for i = 1, NPART do
    local p = parts[i]
    local key = floor(p.pos.x * GRID) * GRID + floor(p.pos.y * GRID)
    local cell = grid[key]
    if not cell then cell = {}; grid[key] = cell end
    cell[#cell + 1] = p
  end

  -- Collide neighbours in a cell; schedule a closure per collision.
  for _, cell in pairs(grid) do
    local prev
    for p in each_in(cell) do
      if prev and (p.id + prev.id + step) % 7 == 0 then
        local a, b = prev, p
        local rec = record(a.id, b.id, step)
        ev_tail = ev_tail + 1
        events[ev_tail] = function()
          a.hits = a.hits + 1
          b.hits = b.hits + 1
          a.vel, b.vel = b.vel, a.vel
          return rec.n + rec[1] - rec[2]
        end
      end
      prev = p
    end
  end

  -- Run the scheduled closures, leaving a tail for the next step.
  local keep = step % 3
  while ev_tail - ev_head + 1 > keep do
    local f = events[ev_head]
    events[ev_head] = nil
    ev_head = ev_head + 1
    checksum = (checksum + f()) % 1000000007
    hits_total()
  end
end

local sx, sy, hits = 0, 0, 0
for i = 1, NPART do
  local p = parts[i]
  sx, sy, hits = sx + p.pos.x, sy + p.pos.y, hits + p.hits
end
io.write(("steps %d particles %d collisions %d\n"):format(steps, NPART, hits_total(0)))
io.write(("checksum %d %d %.6f %.6f\n"):format(checksum, hits, sx, sy))
