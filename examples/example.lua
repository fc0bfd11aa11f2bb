-- examples/example.lua: a small program with a few kinds of allocations,
-- for `make example` (see README). The garbage collector runs a full
-- cycle after each round instead of stepping by itself: LuaJIT seeds its
-- string hashing at random, which moves its own collection steps, and the
-- README's report must come out the same every time.
local cjson = require("cjson")
collectgarbage("stop")

local function make_records(n)
  local out = {}
  for i = 1, n do
    out[i] = { id = i, name = "user" .. i, tags = { "a", "b" } }
  end
  return out
end

local function render(records)
  local parts = {}
  for i, r in ipairs(records) do
    parts[#parts + 1] = string.format("%d:%s", r.id, r.name)
  end
  return table.concat(parts, ",")
end

local cache = {}
for round = 1, 20 do
  local recs = make_records(500)
  local s = render(recs)
  cache[round] = cjson.encode(recs[round])
  if #s == 0 then error("empty") end
  collectgarbage()
end
print(("example: cached %d encoded records"):format(#cache))
