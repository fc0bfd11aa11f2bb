#!/usr/bin/env luajit
-- The differential test of the agent's attribution (issue 7, point 4):
-- generated programs (tests/gen/luagen.lua), each profiled with the JIT off
-- (the oracle) and with it on, in this process; the properties compared are
-- described in tests/gen/README.md. First the checker itself: that it fails
-- on profiles that break each property, and that the generator covers what
-- it should; then one test per program.
--
-- LJMP_DIFF_PROGRAMS (default 300) and LJMP_DIFF_FIRST (default 1) choose
-- the seeds; LJMP_AGENT_DIR=/path/to/build tests another build.
package.path = "tests/gen/?.lua;tests/lib/?.lua;" .. package.path
local t = require("tap")
local D = require("difftest")
local gen = require("luagen")

local N = tonumber(os.getenv("LJMP_DIFF_PROGRAMS")) or 300
local FIRST = tonumber(os.getenv("LJMP_DIFF_FIRST")) or 1
local runner = D.new({})

-- -- The checker fails where it must ---------------------------------------

t.ok(runner.sizes ~= nil, "object kinds are read correctly (objkind self-test)",
     runner.objkind_error)

-- A tiny program and hand-made results: the checker must accept the
-- consistent ones and name the property each broken one violates.
local prog = {
  chunk = "@fake.lua", cfuncs = { ["package.seeall"] = true },
  text = { "local t = {}", "for i = 1, 100 do", "  t[i] = 'x' .. i", "end", "return #t" },
  lines = { { kind = "table" }, { kind = "none" }, { kind = "alloc" }, { kind = "none" }, { kind = "none" } },
}
local function runs()
  local tr = { starts = 1, stops = 1, aborts = 0, by = { [1] = { lines = { [2] = true, [3] = true },
    cover = { [2] = true, [3] = true } } } }
  local off = { ok = true, res = 100, delta = 1000, stopped = true, strings = {},
    traces = { starts = 0, stops = 0, aborts = 0, by = {} } }
  local on = { ok = true, res = 100, delta = 900, stopped = true, traces = tr,
    internal = { { kind = "trace", event = { nsize = 500 } } } }
  local poff = { complete = true, net = 1000, lines = { [1] = { a = 1, r = 0 }, [3] = { a = 100, r = 7 } },
    traces = {}, internal = { a = 0, r = 0 }, cfuncs = {}, host = {} }
  local pon = { complete = true, net = 900, lines = { [1] = { a = 1, r = 0 }, [3] = { a = 10, r = 2 } },
    traces = { [1] = { a = 90, r = 5, start = 2 } }, internal = { a = 1, r = 0 }, cfuncs = {}, host = {} }
  return off, on, poff, pon
end
local function props(fails)
  local ps = {}
  for _, f in ipairs(fails) do ps[#ps + 1] = f.prop end
  return table.concat(ps, " ")
end
local cases = {
  { "consistent runs pass", "", function() end },
  { "a different checksum fails B", "B", function(off, on) on.res = 7 end },
  { "allocated - freed off the VM's counter fails C", "C", function(off, on, poff, pon) pon.net = 901 end },
  { "a host line fails H", "H", function(off, on, poff, pon)
    pon.host["@runner.lua:9"] = { a = 1, r = 0, kind = "lua" } end },
  { "a C function the program did not call fails H", "H", function(off, on, poff, pon)
    pon.host["luajit+0x92c0"] = { a = 2, r = 0, kind = "cfunc" } end },
  { "INTERNAL with the JIT off fails P0", "P0", function(off, on, poff, pon)
    poff.internal.a = 1 end },
  { "a line that allocates nothing billed with the JIT off fails P0", "P0", function(off, on, poff, pon)
    poff.lines[2] = { a = 1, r = 0 }; pon.lines[2] = { a = 1, r = 0 } end },
  { "a C function billed differently fails P3", "P3", function(off, on, poff, pon)
    poff.cfuncs["package.seeall"] = { a = 2, r = 0 }; pon.cfuncs["package.seeall"] = { a = 1, r = 0 } end },
  { "a line billed more with the JIT on fails P1", "P1", function(off, on, poff, pon)
    pon.lines[3].a = 101; pon.traces[1].a = 0 end },
  { "events lost by a line and on no trace fail P2", "P2", function(off, on, poff, pon)
    pon.traces[1].a = 80; pon.internal.a = 11 end },
  { "a loss explained by a string the compiler made passes", "", function(off, on, poff, pon)
    pon.traces[1].a = 89; off.strings[3] = { ["\1x7"] = true }
    on.internal[2] = { kind = "str", text = "\1x7", event = { nsize = 28 } }; pon.internal.a = 2 end },
  { "a loss the compiler's strings do not match fails P2", "P2", function(off, on, poff, pon)
    pon.traces[1].a = 89; off.strings[3] = { ["\1x7"] = true }
    on.internal[2] = { kind = "str", text = "\1x8", event = { nsize = 28 } }; pon.internal.a = 2 end },
  { "a table billed INTERNAL with the JIT on fails P4", "P4", function(off, on)
    on.internal[2] = { kind = "tab", event = { nsize = 64 } } end },
}
for _, c in ipairs(cases) do
  local off, on, poff, pon = runs()
  c[3](off, on, poff, pon)
  local got = props(D.check(prog, off, on, poff, pon, runner))
  local want = c[2]
  t.ok(want == "" and got == "" or got:find(want, 1, true) == 1 and not got:find("[^" .. want .. " ]"),
       "checker: " .. c[1], "properties failed: '" .. got .. "', expected: '" .. want .. "'")
end

-- -- The generator --------------------------------------------------------

local a, b = gen.generate(FIRST), gen.generate(FIRST)
t.is(a.src, b.src, "a seed gives the same program every time")
local all = {}
for s = FIRST, FIRST + 99 do all[#all + 1] = gen.generate(s).src end
all = table.concat(all, "\n")
local missing = {}
for _, what in ipairs({ "coroutine.wrap(", "coroutine.create(", "coroutine.yield(", "pcall(",
  "xpcall(", "error(", "select('#', ...)", ":gmatch(", ":gsub(", "string.format(", "%q",
  "table.concat(", "table.sort(", "table.insert(", "table.remove(", "unpack(", "setmetatable(",
  "pairs(", "ipairs(", "tostring(", "tonumber(", "string.rep(", ":sub(", "string.char(",
  "bit.tohex(", "os.date(", "load(", "string.dump(", "debug.getinfo(", "package.seeall(",
  "require", "package.searchpath(", "table.move(", "null:write(", "= function(", "return f", "math.random(" }) do
  if not all:find(what, 1, true) then missing[#missing + 1] = what end
end
t.is(table.concat(missing, " "), "", "the first 100 programs use every construct of the generator")

-- -- The programs ---------------------------------------------------------

local stats = { traces = 0, trace_events = 0, aborts = 0, with_traces = 0 }
local failed = {}
for seed = FIRST, FIRST + N - 1 do
  local res = runner:run(seed)
  local diag = {}
  for i, f in ipairs(res.failures) do
    if i <= 4 then diag[#diag + 1] = f.prop .. ": " .. f.msg:sub(1, 600) end
  end
  if #res.failures > 4 then diag[#diag + 1] = (#res.failures - 4) .. " more" end
  diag[#diag + 1] = "reproduce: scripts/difftest.sh --seed " .. seed .. " --explain"
  if #res.failures > 0 then failed[#failed + 1] = seed end
  t.ok(#res.failures == 0, "seed " .. seed, table.concat(diag, "\n"))
  if res.on then
    local n = 0
    for _, x in pairs(res.pon.traces) do n = n + x.a + x.r end
    stats.trace_events = stats.trace_events + n
    stats.traces = stats.traces + res.on.traces.stops
    stats.aborts = stats.aborts + res.on.traces.aborts
    if n > 0 then stats.with_traces = stats.with_traces + 1 end
  end
end
io.write(string.format("# %d programs: %d traces completed, %d aborted; %d programs with events " ..
  "on traces (%d events)\n", N, stats.traces, stats.aborts, stats.with_traces, stats.trace_events))
if #failed > 0 then
  io.write("# failing seeds: ", table.concat(failed, " "), "\n")
end
t.done()
