-- deep.lua: allocations deep in a recursion (ljmemprof benchmark).
--
-- usage: luajit bench/deep.lua [DEPTH [ALLOCS]]   (default 9000 50)
--        luajit bench/deep.lua overflow            (recursion until the
--                                                   stack overflows)
--
-- Each level of a recursion DEPTH frames deep makes ALLOCS small tables,
-- then calls the next level: the stacks of its allocations are as deep as
-- the recursion, far past the stacks option's depth (64 by default), so
-- the stacks mode must find each one without walking it. With
-- "overflow", one table per level until LuaJIT raises "stack overflow",
-- caught by pcall. Prints a checksum.

local depth, allocs = tonumber(arg and arg[1]) or 9000, tonumber(arg and arg[2]) or 50
local sum = 0

local function level(n)
  local keep
  for i = 1, allocs do keep = { n, i } end
  sum = (sum + keep[1] + keep[2]) % 1000000007
  if n < depth then level(n + 1) end
  return keep
end

local reached = 0
local function down(n)
  local t = { n }
  reached = t[1]
  return down(n + 1) + 1	-- Not a tail call: every level stays.
end

if arg and arg[1] == "overflow" then
  -- Where the stack overflows depends on the frames' sizes, which the JIT
  -- may change: the checksum says only that it did, deep enough.
  local ok, err = pcall(down, 1)
  assert(not ok and tostring(err):find("stack overflow"), err)
  sum = reached > 10000 and 1 or 0
else
  level(1)
end
io.write(("checksum %d\n"):format(sum))
