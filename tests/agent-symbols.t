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

-- A chunk name longer than the buffer (code loaded from a string is named
-- by its text) is written across several flushes and read back whole.
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
-- `events` cuts names at 4 KiB; the report lists the whole text once.
local rf = assert(io.popen(T.cli .. " report --format json '" .. path ..
                           "' 2>/dev/null"))
local rep = require("cjson").decode(rf:read("*a"))
rf:close()
os.remove(path)
local got = rep.aliases[1] and rep.aliases[1].text
t.ok(complete2, "complete with a 4 KiB buffer and a long chunk name")
t.is(got and #got, #text, "the chunk name is the whole text (" .. #text .. " bytes)")
t.ok(got == text, "byte for byte")
t.done()
