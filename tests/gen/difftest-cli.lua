-- difftest-cli.lua: command line of the differential test (run by
-- scripts/difftest.sh from the repository's root).
--
--   --seed N          one program (repeatable)
--   --seeds A-B       programs A to B
--   --seconds S       random seeds for S seconds (the long run), printing
--                     every failing seed; with --seed-base B the seeds
--                     start at B (default: from the time)
--   --print           print the program (with --seed)
--   --explain         print the program with each line's counts, JIT off
--                     and on, and the traces (with --seed)
--   --keep            keep the profiles in $TMPDIR
--   --max-fail K      stop after K failing programs (default: no limit)
--   --quiet           only failures and the summary
-- Exit status: 0 when every program passes, 1 otherwise, 2 on bad usage.

package.path = "tests/gen/?.lua;tests/lib/?.lua;" .. package.path
local D = require("difftest")

local opts = { seeds = {} }
local i = 1
-- The value of option k (the next argument).
local function need(k)
  local v = arg[i + 1]
  if not v then io.stderr:write("difftest: ", k, " needs a value\n"); os.exit(2) end
  i = i + 1
  return v
end
while i <= #arg do
  local a = arg[i]
  if a == "--seed" then opts.seeds[#opts.seeds + 1] = tonumber(need(a))
  elseif a == "--seeds" then
    local lo, hi = need(a):match("^(%d+)%-(%d+)$")
    if not lo then io.stderr:write("difftest: --seeds A-B\n"); os.exit(2) end
    for s = tonumber(lo), tonumber(hi) do opts.seeds[#opts.seeds + 1] = s end
  elseif a == "--seconds" then opts.seconds = tonumber(need(a))
  elseif a == "--seed-base" then opts.base = tonumber(need(a))
  elseif a == "--print" then opts.print = true
  elseif a == "--explain" then opts.explain = true
  elseif a == "--keep" then opts.keep = true
  elseif a == "--quiet" then opts.quiet = true
  elseif a == "--max-fail" then opts.maxfail = tonumber(need(a))
  elseif a == "--budget" then opts.budget = tonumber(need(a))
  else io.stderr:write("difftest: unknown argument ", a, "\n"); os.exit(2) end
  i = i + 1
end
if #opts.seeds == 0 and not opts.seconds then
  io.stderr:write("usage: scripts/difftest.sh --seed N [--print|--explain] | --seeds A-B | --seconds S\n")
  os.exit(2)
end

local gen = require("luagen")
if opts.print then
  for _, s in ipairs(opts.seeds) do io.write(gen.generate(s, { budget = opts.budget }).src) end
  os.exit(0)
end

local runner = D.new({ budget = opts.budget })
runner.keep = opts.keep

-- The program with each line's counts in both runs, then the traces.
local function explain(res)
  local p = res.prog
  local i = 0
  local function c(b) return b and string.format("%3d/%-2d", b.a, b.r) or "      " end
  io.write(string.format("-- seed %d: hotloop=%d hotexit=%d; columns: line, kind, " ..
    "JIT off allocs/reallocs, JIT on allocs/reallocs, source\n", p.seed, p.hotloop, p.hotexit))
  for line in p.src:gmatch("([^\n]*)\n") do
    i = i + 1
    io.write(string.format("%4d %-5s %s %s  %s\n", i, p.lines[i].kind,
      c(res.poff and res.poff.lines[i]), c(res.pon and res.pon.lines[i]), line))
  end
  if not res.pon then return end
  local tr = res.on.traces
  io.write(string.format("-- traces: %d started, %d completed, %d aborted\n", tr.starts, tr.stops, tr.aborts))
  local ts = {}
  for t in pairs(res.pon.traces) do ts[#ts + 1] = t end
  for t in pairs(tr.by) do if not res.pon.traces[t] then ts[#ts + 1] = t end end
  table.sort(ts)
  for _, t in ipairs(ts) do
    local b, rec = res.pon.traces[t], tr.by[t]
    local ls = {}
    for l in pairs(rec and rec.lines or {}) do ls[#ls + 1] = l end
    table.sort(ls)
    io.write(string.format("-- trace %d: start line %s, billed %s; recorded lines %s%s\n", t,
      b and tostring(b.start) or "?", c(b), table.concat(ls, ","),
      rec and rec.outside and " and code outside the chunk" or ""))
  end
  io.write(string.format("-- INTERNAL: JIT off %s, JIT on %s\n", c(res.poff.internal), c(res.pon.internal)))
  for _, x in ipairs({ { "off", res.poff }, { "on", res.pon } }) do
    for name, b in pairs(x[2].cfuncs) do
      io.write(string.format("-- C function %s (JIT %s): %s\n", name, x[1], c(b)))
    end
    for label, b in pairs(x[2].host) do
      io.write(string.format("-- host %s (JIT %s): %s\n", label, x[1], c(b)))
    end
  end
end

local nprog, nfail, byprop = 0, 0, {}
-- Print a program's failures and count them.
local function report(res)
  nprog = nprog + 1
  if #res.failures == 0 then
    if not opts.quiet and #opts.seeds > 0 and #opts.seeds <= 20 then
      io.write("seed ", res.seed, ": ok\n")
    end
    return
  end
  nfail = nfail + 1
  local seen = {}
  for _, f in ipairs(res.failures) do
    io.write(string.format("seed %d: %s: %s\n", res.seed, f.prop, f.msg))
    if not seen[f.prop] then
      byprop[f.prop] = (byprop[f.prop] or 0) + 1
      seen[f.prop] = true
    end
  end
  io.write(string.format("  reproduce: scripts/difftest.sh --seed %d --explain\n", res.seed))
  io.flush()
end

local t0 = os.time()
if opts.seconds then
  local seed = opts.base or (os.time() % 100000) * 10000
  io.write(string.format("difftest: random seeds from %d for %d s\n", seed, opts.seconds))
  while os.time() - t0 < opts.seconds do
    report(runner:run(seed))
    seed = seed + 1
    if opts.maxfail and nfail >= opts.maxfail then break end
  end
else
  for _, s in ipairs(opts.seeds) do
    local res = runner:run(s)
    if opts.explain then explain(res) end
    report(res)
    if opts.maxfail and nfail >= opts.maxfail then break end
  end
end
local props = {}
for k, v in pairs(byprop) do props[#props + 1] = k .. " " .. v end
table.sort(props)
io.write(string.format("difftest: %d programs, %d failed%s, %d s\n", nprog, nfail,
  #props > 0 and " (" .. table.concat(props, ", ") .. ")" or "", os.time() - t0))
os.exit(nfail == 0 and 0 or 1)
