#!/usr/bin/env luajit
-- Call stacks (start{stacks = N}): each allocation carries its whole
-- stack, read back through the reader's stack tree (tests/c/stack_dump):
-- exact stacks and counts for known call chains from several callers,
-- recursion and the depth limit, coroutines, pcall, metamethods, builtins
-- (stitched ones with the JIT on), C functions; the report of a stack
-- profile bills every site as the one-frame mode does; conservation; the
-- format refused by version-3 readers and cut at every byte.
package.path = "tests/lib/?.lua;" .. package.path
local T = require("mp_test")
local t = require("tap")
local mp = T.mp

-- Run chunk (JIT as given) under the profiler with stacks = depth; return
-- the tree's lines as { ["frame;frame"] = "allocs bytes live livebytes" },
-- the raw dump and the profile's path.
local function stacks(src, name, depth, jit_on, keep)
  local chunk = assert(load(src, "@" .. name))
  local path = T.tmpname("stacks")
  if jit_on then jit.on(); jit.flush(); jit.opt.start("hotloop=2") else jit.off() end
  collectgarbage()
  collectgarbage("stop")
  local before = collectgarbage("count")
  assert(mp.start({ path = path, stacks = depth }))
  local inside = collectgarbage("count")
  chunk()
  local after = collectgarbage("count")
  assert(mp.stop())
  collectgarbage("restart")
  jit.on()
  jit.opt.start("hotloop=56")
  local f = assert(io.popen(t.timeout(t.build .. "/tests/stack_dump '" .. path .. "'", 60)))
  local dump = f:read("*a")
  f:close()
  -- The frames below the chunk are this harness's: cut them off.
  local lines = {}
  for line in dump:gmatch("[^\n]+") do
    local stack, rest = line:match("^(.-)\t(.*)$")
    if stack then
      -- The chunk's first frame: "@chunk:N" or "fn (chunk:N)".
      local q = name:gsub("%p", "%%%0")
      local at = stack:find(";@" .. q .. ":")
      local fat = stack:find(";[^;]* %(" .. q .. ":%d+%)")
      if fat and (not at or fat < at) then at = fat end
      local tr = stack:find(";TRACE %[")	-- A trace the chunk's frame runs.
      if tr and (not at or tr < at) then at = tr end
      if at and not stack:find("^%[deeper") then stack = stack:sub(at + 1) end
      lines[stack] = (lines[stack] and lines[stack] .. "+" or "") ..
		     rest:gsub("\t", " ")
    end
  end
  if not keep then os.remove(path) end
  return lines, dump, path, (after - inside) * 1024
end

-- Allocation counts of the lines whose stack matches pattern, summed.
local function count(lines, pattern)
  local n = 0
  for stack, v in pairs(lines) do
    if stack:find(pattern) then n = n + tonumber(v:match("^(%d+)")) end
  end
  return n
end

-- 1. a -> b -> c from two callers; c allocates a table per call.
local chain = [[
local function c(n) return { n } end
local function b(n) local r = c(n) return r end
local function a(n) local r = b(n) return r end
local keep = {}
for i = 1, 30 do keep[#keep + 1] = a(i) end
for i = 1, 20 do keep[#keep + 1] = b(i) end
return keep
]]
local lines, dump = stacks(chain, "chain.lua", 64, false)
-- Lines 1 to 3 are each a function's and the main chunk's (which makes
-- the closure there): frames say which by the function's name.
t.is(count(lines, "^main chunk %(chain.lua:5%);a %(chain.lua:3%);" ..
               "b %(chain.lua:2%);c %(chain.lua:1%)$"), 30,
     "30 tables on main:5 -> a:3 -> b:2 -> c:1", dump)
t.is(count(lines, "^main chunk %(chain.lua:6%);b %(chain.lua:2%);" ..
               "c %(chain.lua:1%)$"), 20,
     "20 tables on main:6 -> b:2 -> c:1 (another caller)", dump)

-- 2. Recursion, and the depth limit: a stack deeper than 8 frames keeps
-- its 8 innermost and ends in a cut frame.
local rec = [[
local function r(n) if n == 0 then return { 0 } end local x = r(n - 1) return x end
local a = r(3)
local b = r(20)
return a, b
]]
lines, dump = stacks(rec, "rec.lua", 8, false)
local r1 = "r %(rec.lua:1%)"
t.is(count(lines, "^main chunk %(rec.lua:2%);" .. r1 .. ";" .. r1 .. ";" .. r1 .. ";" .. r1 .. "$"), 1,
     "r(3): 4 frames of r under the call", dump)
t.ok(count(lines, "^%[deeper than 8 frames%];" .. (r1 .. ";"):rep(7) .. r1 .. "$") >= 1,
     "r(20): its table (and the stack's growth) on the 8 innermost frames under a cut", dump)
local deepest = 0
for stack in pairs(lines) do
  local _, n = stack:gsub(";", ";")
  if n + 1 > deepest then deepest = n + 1 end
end
t.is(deepest, 9, "no stack has more than 8 frames and the cut", dump)

-- 2b. A recursion that allocates on its way down: every event's stack is
-- one frame deeper than the last one's, whose frames are all in place, so
-- the cache of the last stack would grow past the limit if the limit were
-- only checked on the frames walked.
local down = [[
local function g(n) local t = { n } if n > 0 then t[2] = g(n - 1) end return t end
return g(30)
]]
for _, jit_on in ipairs({ false, true }) do
  lines, dump = stacks(down, "down.lua", 8, jit_on)
  deepest = 0
  for stack in pairs(lines) do
    local _, n = stack:gsub(";", ";")
    if n + 1 > deepest then deepest = n + 1 end
  end
  if jit_on then	-- A trace, the call it inlined and its line come on top.
    t.ok(deepest <= 12, "JIT on: growing one frame per event, no stack passes 8 frames, the cut, a trace, an inlined call and its line", dump)
  else
    t.is(deepest, 9, "JIT off: growing one frame per event, no stack passes 8 frames and the cut", dump)
    t.ok(count(lines, "^%[deeper than 8 frames%];") >= 20,
         "JIT off: the tables deeper than the limit are under a cut", dump)
  end
end

-- 2c. An up-recursive trace: it pushes a frame each turn, storing the
-- frames' links, and moves its base up past the L->top the interpreter
-- left (wherever the last C call put it: deep enough, the recursion
-- passes any): every allocation of rec still has the frames below the
-- trace's base, down to the main chunk's call (its stacks were rooted at
-- the trace).
local up = [[
local keep = {}
local function rec(n) keep[#keep + 1] = {} if n == 0 then return end return rec(n - 1), 1 end
for i = 1, 20 do rec(300) end
return keep
]]
lines, dump = stacks(up, "up.lua", 1000, true)
local in_rec = "rec %(up.lua:2%)$"
-- (Events while the trace exits, when the stack is rebuilt and grows,
-- show the trace alone: no line of it, no frames.)
t.is(count(lines, "^TRACE %[%d+%] started at @up.lua:2;"), 0,
     "JIT on, up-recursion: no line of rec's trace is rooted at the trace", dump)
local all, below = count(lines, in_rec),
  count(lines, "^main chunk %(up.lua:3%);.*" .. in_rec) +
  count(lines, "^TRACE %[%d+%] started at @up.lua:3.*" .. in_rec)
t.ok(all >= 20 * 301 and below == all,
     "JIT on, up-recursion: all " .. all .. " allocations of rec are under the main chunk's call (" .. below .. ")", dump)

-- 3. Coroutines (the running coroutine's stack), pcall, a metamethod, a
-- builtin and a C function.
local misc = [[
local cjson = require("cjson")
local co = coroutine.wrap(function(n)
  local t = { n }
  coroutine.yield(t)
end)
local x = co(1)
local ok, y = pcall(function() return { 2 } end)
local m = setmetatable({}, { __index = function(t, k) return { k } end })
local z = m.key
local s = string.rep("ab", 40)
local j = cjson.encode({ 1, 2, 3 })
return x, y, z, s, j
]]
lines, dump = stacks(misc, "misc.lua", 64, false)
t.is(count(lines, "^@misc.lua:3$"), 1,
     "in a coroutine: its own stack (its function at its line)", dump)
t.is(count(lines, "^main chunk %(misc.lua:7%);pcall;@misc.lua:7 %(function at line 7%)$"), 1,
     "through pcall: the protected function under pcall", dump)
t.is(count(lines, "^main chunk %(misc.lua:9%);__index %(misc.lua:8%)$"), 1,
     "__index: the metamethod under the indexing line", dump)
t.is(count(lines, "^main chunk %(misc.lua:10%);string.rep$"), 1,
     "a builtin: by name, under its calling line", dump)
t.is(count(lines, "^main chunk %(misc.lua:11%);cjson.encode$"), 1,
     "a C function: by its Lua name, under its calling line", dump)

-- 4. Stitched builtins in compiled loops (JIT on): gmatch under its line,
-- and a trace's allocations under the trace, over the frames below its
-- base frame.
local jitsrc = [[
local function leaf(n) return { n, n } end
local out = {}
for i = 1, 300 do out[i] = leaf(i) end
local words = {}
for i = 1, 200 do words[i] = ("w%d x%d"):format(i, i) end
local n = 0
for i = 1, 200 do
  for w in words[i]:gmatch("%a%d+") do n = n + #w end
end
return out, n
]]
lines, dump = stacks(jitsrc, "jit.lua", 64, true)
t.is(count(lines, "^main chunk %(jit.lua:8%);string.gmatch$"), 200,
     "JIT on: gmatch's 200 iterators under line 8 (stitched)", dump)
t.ok(count(lines, "^main chunk %(jit.lua:8%);string.gmatch iterator$") >= 390,
     "JIT on: its 400 matches (some strings exist already) under line 8", dump)
-- The trace inlined leaf: its tables are at leaf's line inside the trace
-- (not at the loop's line, where the snapshot before them is), above the
-- main chunk at the trace's start.
local traced = count(lines, "^main chunk %(jit.lua:3%);TRACE %[%d+%] started at @jit.lua:3;leaf %(jit.lua:1%)$")
t.ok(traced >= 250, "JIT on: the loop's tables on its trace, at leaf's line in the trace", dump)
t.is(count(lines, "^main chunk %(jit.lua:3%);leaf %(jit.lua:1%)$") + traced, 300,
     "JIT on: 300 tables, interpreted (under leaf) or compiled (in the trace)", dump)
-- A line of a function the trace inlined: its snapshot's innermost frame
-- is found with 64-bit GC references too (the frame's flag is on the slot
-- of its link there, not on its function's).
local inlsrc = [[
local function pair(n)
  local a = { n }
  local b = { n, n, n }
  return a, b
end
local out = {}
for i = 1, 300 do
  local a, b = pair(i)
  out[i] = { a, b }
end
return out
]]
lines, dump = stacks(inlsrc, "inl.lua", 64, true)
-- The main chunk below it at its call of pair (line 8), as with the JIT
-- off, not at the loop's start (line 7).
local inl = count(lines, "^main chunk %(inl.lua:8%);TRACE %[%d+%] started at @inl.lua:7;pair %(inl.lua:3%)$")
t.ok(inl >= 250, "JIT on: a table of an inlined function on the trace, at its line, " ..
     "below it the call of the function", dump)
-- (pair may get a trace of its own first: a few of its tables are under
-- that one, at the same line.)
t.is(count(lines, ";pair %(inl.lua:3%)$"), 300,
     "JIT on: 300 tables of line 3, interpreted or compiled", dump)
-- Functions the trace inlined between its base frame (the loop's) and
-- the line's: each on the stack, at the line of its call (from the links
-- the snapshot holds), not only the line on the trace.
local chainsrc = [[
local function vec(x)
  local a = { x }
  local b = { x, x, x }
  return a, b
end
local function rec2(i) local a, b = vec(i) return b end
local function mk(i) local r = rec2(i) return r end
local out = {}
for i = 1, 2000 do out[i] = mk(i) end
return out
]]
lines, dump = stacks(chainsrc, "chain3.lua", 64, true)
t.is(count(lines, "started at @chain3.lua:9;vec %(chain3.lua:3%)$"), 0,
     "JIT on: no line of vec on the loop's trace without mk and rec2", dump)
t.ok(count(lines, "^main chunk %(chain3.lua:9%);TRACE %[%d+%] started at @chain3.lua:9;" ..
               "mk %(chain3.lua:7%);rec2 %(chain3.lua:6%);" ..
               "vec %(chain3.lua:3%)$") >= 1900,
     "JIT on: vec's tables on the loop's trace under mk at line 7 and rec2 at line 6", dump)
t.is(count(lines, ";vec %(chain3.lua:3%)$"), 2000, "JIT on: 2000 tables of line 3", dump)
-- A function inlined through pcall, whose snapshot is at its entry: the
-- line is its body's first, not its header's (which allocates nothing).
local hdrsrc = [[
local keep = {}
local function leaf(i)
  return {i, i}
end
for i = 1, 300 do
  local ok, v = pcall(leaf, i)
  keep[i] = v
end
return keep
]]
lines, dump = stacks(hdrsrc, "hdr.lua", 64, true)
t.is(count(lines, "^main chunk %(hdr.lua:5%);TRACE %[%d+%] started at @hdr.lua:5;leaf %(hdr.lua:2%)$"), 0,
     "JIT on: nothing at an inlined function's header line", dump)
t.is(count(lines, "^main chunk %(hdr.lua:5%);TRACE %[%d+%] started at @hdr.lua:5;leaf %(hdr.lua:3%)$") +
     count(lines, "^main chunk %(hdr.lua:6%);pcall;leaf %(hdr.lua:3%)$"), 300,
     "JIT on: 300 tables of line 3 under pcall or in the trace", dump)
-- The shape of a CSV pipeline (issue 17, point 2): lines that cannot
-- allocate (line 13) between a snapshot and the table of line 14, with no
-- snapshot between them. The table is billed to line 14, where the JIT
-- off bills it, not to the snapshot's line before it.
local csvsrc = [=[
local lines = {}
for i = 1, 2000 do lines[i] = "a" .. (i % 7) .. ",b,c" end
local header
local rows = {}
local function split(s)
  local t = {}
  for f in s:gmatch("[^,]+") do t[#t + 1] = f end
  return t
end
for i = 1, #lines do
  local t = split(lines[i])
  if not header then
    header = t end
  local row = {}
  for j = 1, #header do row[header[j]] = t[j] end
  rows[#rows + 1] = row
end
return rows
]=]
lines, dump = stacks(csvsrc, "csv.lua", 64, true)
local function at_line(l)
  return count(lines, "%(csv%.lua:" .. l .. "%)$") +
         count(lines, "@csv%.lua:" .. l .. "$")	-- A frame with no name.
end
t.is(at_line(12) + at_line(13), 0, "JIT on: nothing on lines 12-13, which cannot allocate", dump)
t.is(at_line(11), 0, "JIT on: nothing on line 11 (a call: split's tables are its line 6)", dump)
t.is(at_line(14), 2000, "JIT on: the 2000 rows of line 14 on line 14", dump)
t.is(count(lines, ";split %(csv%.lua:6%)$"), 2000, "JIT on: split's 2000 tables on line 6", dump)
-- Functions the trace entered and left between two snapshots (add and
-- scale call vec, whose table is made with no snapshot inside either):
-- their bodies are read from the calls (each callee found from the slot
-- its call loads, one of the trace's function constants), so vec's tables
-- are on vec's line, not on the trace alone (nor on the line of a call).
local vecsrc = [[
local function vec(x, y) return { x = x, y = y } end
local function add(a, b) return vec(a.x + b.x, a.y + b.y) end
local function scale(a, k) return vec(a.x * k, a.y * k) end
local keep = {}
local p = { pos = vec(0, 0), vel = vec(1, 1) }
for i = 1, 2000 do
  local g = vec(0, -0.1)
  p.vel = add(p.vel, scale(g, 0.01))
  keep[i] = p.vel
end
return keep
]]
lines, dump = stacks(vecsrc, "vec.lua", 64, true)
t.ok(count(lines, ";TRACE %[%d+%] started at @vec.lua:6;vec %(vec%.lua:1%)$") >= 3000,
     "JIT on: vec's tables (those not sunk) and their hash parts on vec's line in the trace", dump)
t.is(count(lines, "TRACE %[%d+%] started at @vec.lua:6$") +
     count(lines, "TRACE %[%d+%] started at @vec.lua:6;main chunk %(vec%.lua:[78]%)$"), 0,
     "JIT on: none on the trace alone or on the lines of the calls", dump)
-- A tail call from a trace's base frame (`return table.concat(...)`), in
-- a trace that returns below its base and whose loop calls ipairs'
-- iterator (which compiled code never allocates in): the interpreter
-- bills the tail-called builtin to the line of the call that made the
-- base frame, and so must the trace.
local tailsrc = [[
local function render(n)
  local parts = {}
  for i, v in ipairs(n) do
    parts[i] = v
  end
  return table.concat(parts, ",")
end
local keep, src = {}, {}
for i = 1, 40 do src[i] = i end
for round = 1, 300 do
  src[1] = round
  keep[round] = render(src)
end
return keep
]]
-- Bytes by the innermost Lua line of each stack (none under a trace
-- frame with no line above it).
local function by_line(lines, chunk)
  local by = {}
  chunk = (chunk or "tail.lua"):gsub("%.", "%%.")
  for stack, v in pairs(lines) do
    local line
    for frame in stack:gmatch("[^;]+") do
      if frame:find("^TRACE %[") then line = nil end
      line = frame:match("%((" .. chunk .. ":%d+)%)$") or
             frame:match("^@(" .. chunk .. ":%d+)$") or line
    end
    for one in v:gmatch("[^+]+") do	-- (Not the dump's header lines.)
      local k, n = line or "none", tonumber(one:match("^%d+ (%d+)"))
      if n then by[k] = (by[k] or 0) + n end
    end
  end
  return by
end
local off = by_line((stacks(tailsrc, "tail.lua", 64, false)))
lines, dump = stacks(tailsrc, "tail.lua", 64, true)
local on = by_line(lines)
t.ok(off["tail.lua:12"] > 300 * 100, "JIT off: table.concat's strings on line 12", off["tail.lua:12"])
t.is(on["tail.lua:12"], off["tail.lua:12"],
     "JIT on: the tail-called table.concat's bytes on line 12, as with the JIT off", dump)
t.ok(count(lines, "^TRACE %[%d+%] started at @tail%.lua:3;main chunk %(tail%.lua:12%)$") > 0,
     "JIT on: some of them made by the trace of render's loop, above it", dump)
-- A trace that starts after a builtin it does not compile (string.find
-- with a pattern: the trace before ends there, the next one starts at
-- the test of its result) has its first snapshot at the test, both of its
-- ways open: line 3's call beside line 4's string. The type the trace
-- gave the result (nil) says the way taken, so the strings are on line 4.
local isfsrc = [[
local find = string.find
local function f(s)
  if find(s, "[%c]") then s = s:gsub("%c", "?") end
  return s .. "!"
end
local keep = {}
for i = 1, 3000 do keep[i % 100 + 1] = f(tostring(i)) end
]]
off = by_line((stacks(isfsrc, "isf.lua", 64, false)), "isf.lua")
lines, dump = stacks(isfsrc, "isf.lua", 64, true)
on = by_line(lines, "isf.lua")
t.ok(off["isf.lua:4"] > 3000 * 24, "JIT off: f's strings on line 4", off["isf.lua:4"])
t.is(on["isf.lua:4"], off["isf.lua:4"],
     "JIT on: the strings of the trace that starts at line 3's test on line 4", dump)
t.is(count(lines, "TRACE %[%d+%] started at @isf%.lua:%d+$"), 0,
     "JIT on: none on a trace alone", dump)
-- Events a trace makes where the line cannot be told (the way from the
-- snapshot of line 3's comparison has the call of line 3 beside the
-- stores of lines 4-6) are billed to the trace alone, and its base frame
-- is not shown below it at the trace's start, which would read as the
-- line that allocated.
local nolinesrc = [[
local find = string.find
local function put(b, s)
  if find(s, "q") then s = s:gsub("q", "Q") end
  b[#b + 1] = '"'
  b[#b + 1] = s
  b[#b + 1] = '"'
end
local keep = {}
for r = 1, 300 do
  local b = {}
  for i = 1, 30 do put(b, "x" .. i) end
  keep[r] = b
end
]]
lines, dump = stacks(nolinesrc, "noline.lua", 64, true)
local bare, under = 0, 0
for stack, v in pairs(lines) do
  local start = stack:match("TRACE %[%d+%] started at @noline%.lua:(%d+)$")
  if start then
    bare = bare + tonumber(v:match("^(%d+)"))
    local below = stack:match("([^;]*);TRACE %[%d+%] started at [^;]*$")
    if below and below:find("%(noline%.lua:" .. start .. "%)$") then
      under = under + tonumber(v:match("^(%d+)"))
    end
  end
end
t.ok(bare > 0, "JIT on: some events on a trace alone", dump)
t.is(under, 0, "JIT on: none with the trace's base frame below it at the trace's start", dump)
-- A function's trace entered through xpcall after errors: L->top is
-- stale below the trace's base then (the VM does not keep it in compiled
-- code), and the frames below the trace are still read.
local pcsrc = [[
local keep = {}
local function thrower(i)
  if i % 2 == 0 then error({i}) end
  return {i, i}
end
for i = 1, 3000 do
  local ok, v = pcall(thrower, i)
  keep[#keep+1] = v
end
for i = 1, 3000 do
  local ok, v = xpcall(thrower, function(e) return {e} end, i)
  keep[#keep+1] = v
end
return keep
]]
lines, dump = stacks(pcsrc, "pcx.lua", 64, true)
local bare = 0
for line in dump:gmatch("[^\n]+") do
  if line:find("^TRACE ") then bare = bare + 1 end
end
t.is(bare, 0, "JIT on: no trace without the frames below it (xpcall)", dump)
t.ok(count(lines, "^main chunk %(pcx.lua:11%);xpcall;TRACE %[%d+%] started at @pcx.lua:2;thrower %(pcx.lua:3%)$") >= 1000,
     "JIT on: thrower's trace under xpcall under line 11", dump)

-- 5. Conservation with stacks, and the report of a stack profile equals
-- the one-frame report of the same program, site by site.
local evs, complete, delta = T.profile(function() assert(load(chain, "@chain.lua"))() end)
local _, _, path, d2 = stacks(chain, "chain.lua", 64, false, true)
local f = assert(io.popen(t.timeout(t.build .. "/ljmemprof info --format json '" .. path .. "'", 60)))
local info = f:read("*a")
f:close()
t.is(tonumber(info:match('"net_bytes":(%-?%d+)')), d2,
     "a stack profile conserves: allocated - freed = the VM's counter change")
local p1 = T.tmpname("oneframe")
local c1 = assert(load(chain, "@chain.lua"))
jit.off()
collectgarbage(); collectgarbage("stop")
assert(mp.start(p1)); c1(); assert(mp.stop())
collectgarbage("restart")
jit.on()
local function allocs(p)
  local h = assert(io.popen(t.timeout(t.build .. "/ljmemprof report '" .. p .. "'", 60)))
  local out = h:read("*a")
  h:close()
  return out:match("^ALLOCATIONS\n(.-)\n\n")
end
-- Site by site; a label may say which function where a frame of the stack
-- profile shares its line (line 2: b, and the main chunk making b).
local function plain(s) return (s:gsub(" %((main chunk)%)", ""):gsub(" %(function at line %d+%)", "")) end
t.is(plain(allocs(path)), plain(allocs(p1)), "the ALLOCATIONS section of a stack profile is the one-frame one")
os.remove(p1)

-- 6. The format: version 0x4c, which version-3 readers refuse by their
-- version check; a cut at every byte is read up to the cut.
local fh = assert(io.open(path, "rb"))
local bytes = fh:read("*a")
fh:close()
t.is(bytes:sub(9, 11) .. string.format("%02x", bytes:byte(12)), "ljm4c",
     "the event stream says version 0x4c")
t.is(bytes:sub(1, 4), "ljs\3", "the symtab is an (empty) version 3 one")
local cuts, bad = 0, 0
for n = 8, #bytes - 1, math.max(1, math.floor(#bytes / 300)) do
  local cut = path .. ".cut"
  local w = assert(io.open(cut, "wb"))
  w:write(bytes:sub(1, n))
  w:close()
  local h = assert(io.popen(t.timeout(t.build .. "/ljmemprof info '" .. cut .. "' >/dev/null 2>&1; echo $?", 60)))
  local rc = tonumber(h:read("*a"))
  h:close()
  cuts = cuts + 1
  if rc ~= 3 and not (n < 15 and rc == 2) then bad = bad + 1 end
  os.remove(cut)
end
t.is(bad, 0, "cut at " .. cuts .. " places: each read up to the cut (status 3)")
os.remove(path)
t.done()
