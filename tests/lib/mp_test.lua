-- mp_test.lua: helpers for the agent's tests: profile a piece of code and
-- read the stream back with the project's own decoder (`ljmemprof events`).

package.path = "tests/lib/?.lua;" .. package.path
local BUILD = os.getenv("BUILD") or "build"
package.cpath = BUILD .. "/?.so;" .. package.cpath

local cjson = require("cjson")
local M = {}

M.mp = require("ljmemprof")
M.tmp = os.getenv("TMPDIR") or "/tmp"
M.cli = BUILD .. "/ljmemprof"

-- A fresh file name for a profile. Names are unique to this process (the
-- random part of an os.tmpname()), so that suites run at the same time
-- (two flavours, two trees) never remove each other's files: a name made
-- of the time and a counter alone was shared by two tests started within
-- the same second.
local seq, uniq = 0, nil
function M.tmpname(tag)
  if not uniq then
    local n = os.tmpname()
    os.remove(n)
    uniq = n:match("([^/]+)$"):gsub("[^%w]", "")
  end
  seq = seq + 1
  local name = string.format("%s/ljmp-test-%s-%s-%d.bin", M.tmp, uniq,
    tag or "p", seq)
  os.remove(name)
  return name
end

-- Decode a profile: returns the list of events and whether it is complete.
function M.events(path)
  local f = assert(io.popen(M.cli .. " events '" .. path .. "' 2>/dev/null"))
  local evs, complete = {}, nil
  for line in f:lines() do
    local e = cjson.decode(line)
    if e.complete ~= nil then complete = e.complete else evs[#evs + 1] = e end
  end
  f:close()
  return evs, complete
end

-- Profile fn() with the GC stopped; returns events, complete, and the change
-- of the VM's own counter in bytes over the profiled interval.
function M.profile(fn, path)
  path = path or M.tmpname()
  collectgarbage()
  collectgarbage("stop")
  assert(M.mp.start(path))
  local before = collectgarbage("count")
  fn()
  local after = collectgarbage("count")
  assert(M.mp.stop())
  collectgarbage("restart")
  local evs, complete = M.events(path)
  os.remove(path)
  return evs, complete, (after - before) * 1024
end

-- Net bytes of a list of events: allocated minus freed.
function M.net(evs)
  local n = 0
  for _, e in ipairs(evs) do n = n + e.nsize - e.osize end
  return n
end

-- Count events by a key function: returns {key = count}.
function M.count(evs, keyf, filter)
  local c = {}
  for _, e in ipairs(evs) do
    if not filter or filter(e) then
      local k = keyf(e)
      if k ~= nil then c[k] = (c[k] or 0) + 1 end
    end
  end
  return c
end

-- Key "event label" for allocations and reallocations of a chunk.
function M.by_label(e) return e.event .. " " .. e.label end

-- Events whose Lua location is in the chunk named chunk.
function M.in_chunk(chunk)
  return function(e) return e.chunk == chunk or e.start_chunk == chunk end
end

return M
