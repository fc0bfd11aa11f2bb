-- snapheap.lua: heaps for bench/snapsame.c (arg[1] shape, arg[2] size):
-- tables, a list, or mixed (every kind of object and reference the
-- snapshot names: string and number keys, closures, cdata, coroutines
-- with locals, userdata, weak tables, a table as a key), or cdata (small
-- cdata between tables, the objects that may be closer than 16 bytes), or
-- garbage (two thirds of the tables and strings made are unreached).
local shape, n = arg[1], tonumber(arg[2])
keep = {}
if shape == "tables" then
  for i = 1, n do keep[i] = { i } end
elseif shape == "list" then
  for _ = 1, n do keep = { next = keep } end
elseif shape == "mixed" then
  local ffi = require("ffi")
  for i = 1, n do
    local r = { id = i, name = "n" .. i, [1.5] = {}, [true] = "x",
		f = function() return i end, c = ffi.new("int[2]"),
		co = coroutine.create(function(a)
		  local q = { a }
		  coroutine.yield(q)
		end),
		u = newproxy(true), [keep] = i }
    coroutine.resume(r.co, r)
    if i % 7 == 0 then setmetatable(r, { __mode = "k" }) end
    keep[i] = r
  end
  keep.weak = setmetatable({}, { __mode = "v" })
  keep.weak[1] = {}
elseif shape == "cdata" then
  local ffi = require("ffi")
  for i = 1, n do
    keep[i] = i % 2 == 0 and ffi.new("uint8_t", i % 256) or { i }
  end
elseif shape == "garbage" then
  -- Unreached objects and strings (the collector stopped): the trailer's
  -- unreached count.
  collectgarbage("collect")
  collectgarbage("stop")
  for i = 1, n do
    local t = { "g" .. i }
    if i % 3 == 0 then keep[i] = t end
  end
  return
else
  error("unknown shape " .. tostring(shape))
end
collectgarbage("collect")
