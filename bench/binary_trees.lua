-- binary_trees.lua: allocation-heavy tree building (ljmemprof benchmark).
--
-- usage: luajit bench/binary_trees.lua [DEPTH]     (default 17)
--
-- Builds one "stretch" tree of depth DEPTH+1 and drops it, keeps one
-- long-lived tree of depth DEPTH for the whole run, then for every even
-- depth d from 4 up to DEPTH builds and walks 2^(DEPTH-d+4) short-lived
-- trees of depth d. A node is a table holding its two children; a leaf is
-- an empty table, so almost every allocation is a small table (GC object
-- plus array part) that dies young -- the worst case for a per-allocation
-- hook. Prints one line per phase and a final checksum (total nodes
-- visited), which is the same with and without the JIT or the profiler.

local depth_arg = tonumber(arg and arg[1]) or 17
local MIN_DEPTH = 4
local max_depth = depth_arg
if max_depth < MIN_DEPTH + 2 then max_depth = MIN_DEPTH + 2 end

-- Tree of the given depth: a leaf is {}, an inner node is { left, right }.
local function grow(d)
  if d == 0 then return {} end
  d = d - 1
  return { grow(d), grow(d) }
end

-- Number of nodes in tree t, visiting every one.
local function count(t)
  local left = t[1]
  if left == nil then return 1 end
  return 1 + count(left) + count(t[2])
end

local checksum = 0
local out = {}

local stretch = max_depth + 1
local n = count(grow(stretch))
checksum = checksum + n
out[#out + 1] = ("stretch depth %d: %d nodes"):format(stretch, n)

local keep = grow(max_depth)

for d = MIN_DEPTH, max_depth, 2 do
  local iters = 2 ^ (max_depth - d + MIN_DEPTH)
  local sum = 0
  for _ = 1, iters do sum = sum + count(grow(d)) end
  checksum = checksum + sum
  out[#out + 1] = ("%d trees of depth %d: %d nodes"):format(iters, d, sum)
end

n = count(keep)
checksum = checksum + n
out[#out + 1] = ("long-lived depth %d: %d nodes"):format(max_depth, n)

io.write(table.concat(out, "\n"), "\n")
io.write(("checksum %d\n"):format(checksum))
