#!/usr/bin/env luajit
-- Symbols are never stale: prototypes collected while profiling and new
-- ones allocated at the same addresses get fresh symbols, so every event
-- resolves to the function that really allocated.
package.path = "tests/lib/?.lua;" .. package.path
local T = require("mp_test")
local t = require("tap")
jit.off()

local N = 300
local evs, complete = T.profile(function()
  collectgarbage("restart")
  for i = 1, N do
    local f = load("local t = {} return t", "=chunk" .. i)
    f()
    f = nil
    collectgarbage()	-- frees the prototype: its address is reused
  end
  collectgarbage("stop")
end)
t.ok(complete, "stream is complete")

local k, wrong, seen, reused = 0, {}, {}, 0
for _, e in ipairs(evs) do
  if e.event == "alloc" and e.source == "lua" and e.line == 1 and
     e.chunk and e.chunk:match("^=chunk") then
    k = k + 1
    if e.chunk ~= "=chunk" .. k then wrong[#wrong + 1] = k .. "->" .. e.chunk end
  end
  if e.event == "alloc" then
    if seen[e.naddr] then reused = reused + 1 end
    seen[e.naddr] = true
  end
end
t.is(k, N, "one table per loaded chunk")
t.is(#wrong, 0, "each resolves to its own chunk", table.concat(wrong, " "))
t.ok(reused > N, "addresses were reused meanwhile", reused)

-- The same while sampling (a sample every byte: every block made while
-- recording is sampled, with its stack). The sampled hook sees the free of
-- a block that is not sampled only through its filter, which must hold
-- the prototypes the stream names: here prototypes made before start
-- (not sampled) are named, freed, and their addresses taken by new ones.
do
  local path = T.tmpname("symsample")
  local old = {}
  for i = 1, N do old[i] = load("local t = {} return t", "=old" .. i) end
  collectgarbage()
  collectgarbage("restart")
  assert(T.mp.start({ path = path, sample = 1, seed = 1 }))
  for i = 1, N do old[i]() end
  old = nil
  collectgarbage()	-- frees the old prototypes...
  local new = {}
  for i = 1, N do	-- ...and some new ones take their addresses
    new[i] = load("local t = {} return t", "=new" .. i)
    new[i]()
  end
  new = nil
  assert(T.mp.stop())
  collectgarbage("stop")
  local p = assert(io.popen(t.timeout(t.build .. "/ljmemprof report --format collapsed '" ..
                                      path .. "'", 60)))
  local out = p:read("*a")
  p:close()
  os.remove(path)
  local got, bad = { old = {}, new = {} }, {}
  for kind, i, bytes in out:gmatch(";main chunk %(=(%a+)(%d+):1%) (%d+)\n") do
    local seen = got[kind]
    if not seen or seen[i] or bytes ~= "64" then bad[#bad + 1] = kind .. i .. ":" .. bytes end
    if seen then seen[i] = true end
  end
  for i = 1, N do
    for _, kind in ipairs({ "old", "new" }) do
      if not got[kind][tostring(i)] then bad[#bad + 1] = "no " .. kind .. i end
    end
  end
  t.is(table.concat(bad, " ", 1, math.min(#bad, 10)), "", "sampled: each chunk's " ..
       "table under its own chunk, once, old prototypes freed meanwhile")
end

-- A chunk name longer than MP_NAME_MAX (4096; code loaded from a string is
-- named by its text) is cut to its first bytes and a marker with its
-- length, written across flushes of a 4 KiB buffer, and read back whole.
local body = { "local t = {}" }
for i = 1, 6000 do body[#body + 1] = "-- padding line " .. i end
body[#body + 1] = "return t"
local text = table.concat(body, "\n")
local f = assert(loadstring(text))
local path = T.tmpname("longname")
collectgarbage("stop")
assert(T.mp.start({ path = path, bufsize = 4096 }))
f()
assert(T.mp.stop())
collectgarbage("restart")
local evs2, complete2 = T.events(path)
os.remove(path)
local got
for _, e in ipairs(evs2) do
  if e.source == "lua" and e.line == 1 then got = e.chunk end
end
local marker = " [... cut by ljmemprof: " .. #text .. " bytes in all]"
t.ok(complete2, "complete with a 4 KiB buffer and a long chunk name")
t.is(got and #got, 4096, "the chunk name is cut to 4096 bytes")
t.ok(got == text:sub(1, 4096 - #marker) .. marker,
     "its first bytes, then the marker with the full length", got and got:sub(-60))

-- Every function of a long source repeats its chunk name: 400 functions
-- of a 600 KB source made a 240 MB profile before names were cut.
local src = { "local f = {}" }
for i = 1, 400 do
  src[#src + 1] = ("f[%d] = function() return { %d } end"):format(i, i)
end
for i = 1, 600 do src[#src + 1] = ("-- %s"):format(("pad"):rep(330)) end
src[#src + 1] = "for i = 1, #f do f[i]() end"
local big = table.concat(src, "\n")
local path3 = T.tmpname("bigsource")
assert(T.mp.start(path3))
assert(loadstring(big))()
assert(T.mp.stop())
local size = assert(io.open(path3, "rb")):seek("end")
os.remove(path3)
t.ok(#big > 600000 and size < 401 * 4096 + 200000,
     "a " .. #big .. "-byte source with 400 functions: " .. size .. "-byte profile")
t.done()
