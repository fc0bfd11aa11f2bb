#!/usr/bin/env luajit
-- Sampling (start{sample = BYTES}): each allocated byte is sampled with
-- chance 1/BYTES, so an allocation of s bytes is recorded with probability
-- 1 - exp(-s/BYTES); only the frees of recorded blocks are recorded. The
-- stream is the extension with its "sample" setting and call stacks.
-- Checked against a full recording of the same deterministic workload
-- (JIT off): the mean number of recorded allocations over 20 seeds is
-- within 5% of the expectation computed from the full recording's sizes
-- (the standard deviation of that mean is about 1%), and the report's
-- scaled estimates of two lines' bytes are within 6% of the truth on
-- average over 20 seeds.
package.path = "tests/lib/?.lua;" .. package.path
local T = require("mp_test")
local t = require("tap")
local mp = T.mp
jit.off()

local R = 16384

-- The workload, run by a fresh luajit for each recording (so that every
-- recording starts from the same VM: the string table's size, the
-- collector's debt), with start options given as a Lua table constructor.
-- With gc_off the collector does not run while recording.
local child = [[
jit.off()
local mp = require("ljmemprof")
local opts = assert(loadstring("return " .. os.getenv("OPTS")))()
local gc_off = os.getenv("GC_OFF") == "1"
collectgarbage()
if gc_off then collectgarbage("stop") end
assert(mp.start(opts))
local keep = {}
for i = 1, 30000 do
  local s = string.rep("a", i % 200) .. i
  local x = { i, s }
  if i % 4 == 0 then keep[#keep + 1] = x end
end
local big = {}
for i = 1, 50 do big[i] = string.rep("b", 20000 + i) end
if not gc_off then keep, big = nil, nil collectgarbage() end
assert(mp.stop())
]]

-- Record the workload with these options (a string: the fields of a Lua
-- table); the events, whether complete, the file size and its records as
-- tests/c/stream_items lists them (after a newline). The file is removed.
local function record(opts, gc_off)
  local path = T.tmpname("sample")
  local cmd = "OPTS=" .. t.shq("{ path = '" .. path .. "', " .. opts .. " }") ..
              " GC_OFF=" .. (gc_off and "1" or "0") ..
              " LUA_CPATH='" .. t.build .. "/?.so;;' luajit -e " .. t.shq(child)
  local rc = os.execute(t.timeout(cmd, 60))
  assert(rc == 0, "the workload failed: " .. cmd)
  local f = assert(io.open(path, "rb"))
  local size = f:seek("end")
  f:close()
  local evs, complete = T.events(path)
  local p = assert(io.popen(t.timeout(t.build .. "/tests/stream_items " .. path, 60)))
  local items = "\n" .. p:read("*a")
  p:close()
  os.remove(path)
  return evs, complete, size, items
end

-- 1. The full recording, and what sampling should give.
local full, _, full_size = record("")
local expect = 0
for _, e in ipairs(full) do
  if e.event ~= "free" then expect = expect + (1 - math.exp(-e.nsize / R)) end
end
t.ok(#full > 60000 and expect > 300, "the full recording: " .. #full ..
     " events, " .. math.floor(expect) .. " samples expected at 16K")

-- sample = 0 (and false) is no sampling: every event (as many as the
-- full recording's within 1%: the collector's steps vary a little from
-- run to run), the one-frame stream (no settings, no stacks).
for _, off in ipairs({ "0", "false" }) do
  local evs, complete, _, items = record("sample = " .. off)
  t.is(string.format("%s %s %s", tostring(complete),
                     tostring(math.abs(#evs / #full - 1) < 0.01),
                     tostring(items:find("\ninfo ") ~= nil)),
       "true true false", string.format("sample = %s: every event " ..
       "recorded (%d, full %d), no sampling, no stacks", off, #evs, #full))
end

-- 2. Twenty seeds: counts, frees of sampled blocks only, stacks.
local sum, stray, unstacked, sizes = 0, 0, 0, 0
for seed = 1, 20 do
  local evs, complete, size, items = record("sample = " .. R .. ", seed = " .. seed)
  local live, n = {}, 0
  for _, e in ipairs(evs) do
    -- A reallocation may be of a block that was not recorded (it was
    -- sampled for its new block); a free or a drop may not.
    if e.event ~= "alloc" then
      if not live[e.oaddr] and e.event ~= "realloc" then stray = stray + 1 end
      live[e.oaddr] = nil
    end
    if e.event == "alloc" or e.event == "realloc" then
      n = n + 1
      live[e.naddr] = true
      if e.source ~= "stack" and e.source ~= "internal" then
        unstacked = unstacked + 1
      end
    end
  end
  sum = sum + n
  sizes = sizes + size
  if seed == 1 then
    t.ok(complete, "a sampled profile is complete")
    t.ok(items:find("\ninfo stacks=64\n") and items:find("\ninfo sample=16384\n")
         and items:find("\nversion 76\n"), "the extension, with its settings: "
         .. "stacks 64 (the default with sampling) and sample 16384", items:sub(1, 200))
  end
end
local mean = sum / 20
t.ok(math.abs(mean - expect) < 0.05 * expect, string.format(
     "mean recorded allocations over 20 seeds %.1f, expected %.1f", mean, expect))
t.is(stray, 0, "every recorded free, and every block that left the sample, is of a recorded block")
t.is(unstacked, 0, "recorded allocations carry their stack (or are the VM's)")
t.ok(sizes / 20 < full_size / 20, string.format(
     "the sampled file is small: %d bytes on average, the full one %d",
     sizes / 20, full_size))

-- 3. A seed gives the same samples again (the JIT is off, the workload the
-- same, the collector stopped).
local function shape(evs)
  local out = {}
  for i, e in ipairs(evs) do out[i] = e.event .. (e.nsize or 0) .. ":" .. (e.osize or 0) end
  return table.concat(out, ",")
end
local a = record("sample = " .. R .. ", seed = 7", true)
local b = record("sample = " .. R .. ", seed = 7", true)
local c = record("sample = " .. R .. ", seed = 8", true)
t.is(shape(a), shape(b), "the same seed samples the same allocations")
t.ok(shape(a) ~= shape(c), "another seed others")

-- 3b. Dense sampling (a sample every 64 bytes: most blocks are sampled,
-- over 10,000 live at once, so the 16,384 slots of the hook's filter of
-- live sampled blocks are shared): the final collection frees every block
-- the workload made, and every one of those frees is recorded. What stays
-- live is a part of what the full recording leaves live (the VM's own).
local function live_sizes(evs)
  local live, sizes, peak, n = {}, {}, 0, 0
  for _, e in ipairs(evs) do
    if e.event ~= "alloc" then
      if live[e.oaddr] then n = n - 1 end
      live[e.oaddr] = nil
    end
    if e.event == "alloc" or e.event == "realloc" then
      if not live[e.naddr] then n = n + 1 end
      live[e.naddr] = e.nsize
      if n > peak then peak = n end
    end
  end
  for _, size in pairs(live) do sizes[size] = (sizes[size] or 0) + 1 end
  return sizes, peak
end
local full_live = live_sizes(full)
local dense, dense_peak = live_sizes((record("sample = 64, seed = 5")))
local extra = {}
for size, k in pairs(dense) do
  if k > (full_live[size] or 0) then extra[#extra + 1] = k .. " of " .. size .. " B" end
end
t.ok(dense_peak > 10000, "dense sampling: " .. dense_peak .. " sampled blocks live at once")
t.is(table.concat(extra, ", "), "", "dense sampling: every sampled block the " ..
     "program freed has its free recorded (live at the end: only blocks the full recording leaves live)")

-- 4. sample = true is 512 KiB; stacks can be set with it.
local _, _, _, items = record("sample = true, stacks = 3, seed = 1")
t.ok(items:find("\ninfo stacks=3\n") and items:find("\ninfo sample=524288\n"),
     "sample = true: 524288 bytes; stacks = 3 with it", items:sub(1, 200))

-- 4b. The reader's estimates (ljmemprof report scales each sampled event
-- by 1/p(size)): over 20 seeds, each line's estimated allocated bytes
-- against the full recording's, which holds exactly what the program
-- allocated. Two lines of known shape: 40000 small tables (88 bytes each,
-- p about 0.5% at 16K, and the array that holds them) and 4000 strings of
-- about 1 KB (p about 6%).
local est_child = [[
jit.off()
local mp = require("ljmemprof")
local opts = assert(loadstring("return " .. os.getenv("OPTS")))()
collectgarbage()
assert(mp.start(opts))
local keep = {}
for i = 1, 40000 do keep[i] = { i, i, i } end
for i = 1, 4000 do keep[i] = string.rep("s", 1000) .. i end
assert(mp.stop())
]]
-- Run workload child (a chunk) recording with opts (the fields of a Lua
-- table, as in record()); the JSON report of its profile, decoded.
local function json_report(child, opts)
  local path = T.tmpname("est")
  local cmd = "OPTS=" .. t.shq("{ path = '" .. path .. "', " .. opts .. " }") ..
              " LUA_CPATH='" .. t.build .. "/?.so;;' luajit -e " .. t.shq(child)
  assert(os.execute(t.timeout(cmd, 60)) == 0, "the workload failed: " .. cmd)
  local f = assert(io.popen(t.timeout(T.cli .. " report --format json " .. path, 60)))
  local json = f:read("*a")
  f:close()
  os.remove(path)
  return require("cjson").decode(json)
end
local function line_bytes(opts)
  local r = json_report(est_child, opts)
  local by = {}
  for _, sec in ipairs({ "allocations", "reallocations" }) do
    for _, row in ipairs(r[sec]) do
      local line = row.source.line
      if row.source.chunk == "=(command line)" and (line == 7 or line == 8) then
        by[line] = (by[line] or 0) + row.alloc_bytes
      end
    end
  end
  return by, r.sampled
end
local truth, unsampled = line_bytes("")
t.ok(truth[7] and truth[8] and not unsampled, string.format(
     "the full recording: line 7 %d bytes, line 8 %d bytes", truth[7] or 0, truth[8] or 0))
local sum, worst, said = { [7] = 0, [8] = 0 }, { [7] = 0, [8] = 0 }, true
for seed = 1, 20 do
  local by, sampled = line_bytes("sample = 16384, seed = " .. seed)
  said = said and sampled ~= nil and sampled.rate == 16384
  for _, l in ipairs({ 7, 8 }) do
    local v = by[l] or 0
    sum[l] = sum[l] + v
    worst[l] = math.max(worst[l], math.abs(v / truth[l] - 1))
  end
end
t.ok(said, "every sampled report says it is sampled, at 16384 bytes")
for _, l in ipairs({ 7, 8 }) do
  local mean = sum[l] / 20
  -- One estimate's relative error (standard deviation) is about
  -- sqrt(16384 / bytes): 6% for either line (4.9 and 4.3 MB); the mean of
  -- 20 has a fifth of it. Bounds at about 5 deviations.
  t.ok(math.abs(mean / truth[l] - 1) < 0.06 and worst[l] < 0.3, string.format(
       "line %d: the mean of 20 estimates is within 6%% of the truth (%.1f%%), " ..
       "each within 30%% (worst %.1f%%)", l, 100 * (mean / truth[l] - 1), 100 * worst[l]))
end

-- 4c. Reallocations: a table grown to 1000 entries, 2000 times (an array
-- allocated, then resized 9 times). A sampled resize is a reallocation
-- whether or not its old block was sampled, and a sampled block resized
-- into one that is not leaves the sample without a free: over 20 seeds,
-- the mean estimates of the line's allocations, reallocations (count, new
-- and old bytes) and of all frees are near the truth. (Before, a sampled
-- resize of a block that was not sampled counted as an allocation: ten
-- times too many allocations, a tenth of the reallocations; and a sampled
-- block resized into one that was not, as a free.)
local grow_child = [[
jit.off()
local mp = require("ljmemprof")
local opts = assert(loadstring("return " .. os.getenv("OPTS")))()
collectgarbage()
assert(mp.start(opts))
for r = 1, 2000 do
  local t = {}
  for i = 1, 1000 do t[i] = i end
end
assert(mp.stop())
]]
local function grow_figures(opts)
  local r = json_report(grow_child, opts)
  local v = { alloc = 0, realloc = 0, rplus = 0, rminus = 0, free = 0 }
  local function line8(row)
    return row.source.chunk == "=(command line)" and row.source.line == 8
  end
  for _, row in ipairs(r.allocations) do
    if line8(row) then v.alloc = v.alloc + row.events end
  end
  for _, row in ipairs(r.reallocations) do
    if line8(row) then
      v.realloc = v.realloc + row.events
      v.rplus = v.rplus + row.alloc_bytes
      v.rminus = v.rminus + row.free_bytes
    end
  end
  for _, row in ipairs(r.deallocations) do v.free = v.free + row.events end
  v.held = 0
  for _, row in ipairs(r.heap_summary) do v.held = v.held + row.bytes end
  v.live = r.live.bytes
  return v
end
local gtruth = grow_figures("")
t.ok(gtruth.alloc == 2000 and gtruth.realloc == 18000, string.format(
     "the full recording: 2000 arrays (%d), resized 18000 times (%d), %d frees",
     gtruth.alloc, gtruth.realloc, gtruth.free))
local gsum = { alloc = 0, realloc = 0, rplus = 0, rminus = 0, free = 0 }
local unheld, live_sum = {}, 0
for seed = 1, 20 do
  local v = grow_figures("sample = 16384, seed = " .. seed)
  for k in pairs(gsum) do gsum[k] = gsum[k] + v[k] end
  if v.held ~= v.live then unheld[#unheld + 1] = seed .. ": " .. v.held .. " of " .. v.live end
  live_sum = live_sum + v.live
end
-- The heap summary holds what is live: a block that left the sample is
-- credited to its owner, and one that entered it by a resize charged.
t.ok(#unheld == 0 and live_sum > 0, "the heap summary holds the live heap's " ..
     "estimate, every seed (" .. (#unheld == 0 and "all equal" or table.concat(unheld, ", ")) .. ")")
-- Standard deviations of the mean of 20: about 13% for the 2000 arrays
-- of 24 bytes (3 samples a run), 2.5% for the resizes' count, under 1%
-- for their bytes, 3% for the frees. Bounds at about 4 of them.
for _, c in ipairs({ { "alloc", 0.5, "allocations" },
                     { "realloc", 0.1, "reallocations" },
                     { "rplus", 0.04, "reallocations' new bytes" },
                     { "rminus", 0.04, "reallocations' old bytes" },
                     { "free", 0.15, "frees (all lines)" } }) do
  local mean = gsum[c[1]] / 20
  t.ok(math.abs(mean / gtruth[c[1]] - 1) < c[2], string.format(
       "%s: the mean of 20 estimates %.0f, the truth %d (within %d%%)",
       c[3], mean, gtruth[c[1]], 100 * c[2]))
end

-- 5. Bad values are errors naming the option; nothing starts.
local function err_of(opts)
  local ok, err = pcall(mp.start, opts)
  return ok and "started" or err
end
local p = T.tmpname("bad")
t.is(err_of({ path = p, sample = -1 }), "bad argument #1 to 'start' " ..
     "(options.sample must be an integer from 0 to 1099511627776)", "sample = -1")
t.is(err_of({ path = p, sample = "1M" }), "bad argument #1 to 'start' " ..
     "(options.sample must be a number of bytes or a boolean)", "sample = '1M'")
t.is(err_of({ path = p, sample = 100.5 }), "bad argument #1 to 'start' " ..
     "(options.sample must be an integer from 0 to 1099511627776)", "sample = 100.5")
t.is(err_of({ path = p, seed = -3 }), "bad argument #1 to 'start' " ..
     "(options.seed must be an integer from 0 to 9007199254740992)", "seed = -3")
t.is(err_of({ path = p, sampel = 5 }), "bad argument #1 to 'start' (unknown " ..
     "option 'sampel'; options are path, bufsize, mode, stacks, sample, seed, " ..
     "max_size, collect, native, snapshot)", "a misspelt option")
t.ok(not mp.running() and not io.open(p), "nothing started, no file")
t.done()
