#!/usr/bin/env luajit
-- Our report of a profile written by Tarantool agrees with what Tarantool's
-- own parser printed for it (tests/fixtures/tarantool-v3-tiny.*): every
-- source's events and bytes in each section, the sources listed under
-- "Overrides:", and the heap summary of --accounting tarantool, by default
-- and with --leak-only. The default heap summary is the truth instead: the
-- blocks live at the end, adding up to info's live.
-- Labels of code loaded from strings differ in spelling (we print an alias,
-- or [string "name"] for a short name, where Tarantool prints the source
-- text); they are mapped back to the text before comparing.
package.path = "tests/lib/?.lua;" .. package.path
local t = require("tap")

local FIX = "tests/fixtures/tarantool-v3-tiny"

local function slurp(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

-- Run a command; return its output and exit status.
local function run(cmd)
  local f = assert(io.popen(t.timeout(cmd) .. "; echo \"rc=$?\""))
  local out = f:read("*a")
  f:close()
  local rc = tonumber(out:match("rc=(%d+)\n$"))
  return out:gsub("rc=%d+\n$", ""), rc
end

-- Parse a report: { sections = {NAME = {label = "N events +A -F"}},
-- overrides = {NAME = {label = "sorted, owners"}}, heap = {label = "..."},
-- aliases = {function_alias_N = text} }.
local function parse(text)
  local r = { sections = {}, overrides = {}, heap = {}, aliases = {} }
  local section, current, alias, lines
  for line in (text .. "\n"):gmatch("(.-)\n") do
    if line == "ALLOCATIONS" or line == "REALLOCATIONS" or
       line == "DEALLOCATIONS" then
      section = line
      r.sections[section], r.overrides[section] = {}, {}
    elseif line == "HEAP SUMMARY:" then
      section = "HEAP"
    elseif line == "ALIASES:" then
      section = "ALIASES"
    elseif section == "HEAP" then
      local label, rest = line:match("^(.-) holds (.*)$")
      if label then r.heap[label] = rest end
    elseif section == "ALIASES" then
      local name = line:match("^(function_alias_%d+):$")
      if name then
        alias, lines = name, {}
        r.aliases[alias] = lines
      elseif alias and line:match("^%d+\t| ") then
        lines[#lines + 1] = line:match("^%d+\t| (.*)$")
      end
    elseif section then
      local label, n, plus, minus =
        line:match("^(.-): (%d+) events\t%+(%d+)B\t%-(%d+)B$")
      if label then
        current = label
        r.sections[section][label] = n .. " events +" .. plus .. " -" .. minus
      elseif line:match("^\t\t") and current then
        local o = r.overrides[section]
        o[current] = o[current] or {}
        table.insert(o[current], line:sub(3))
      end
    end
  end
  return r
end

-- Replace our aliases in labels by their source text (one-line sources),
-- and a short chunk name shown as Lua shows it ([string "return {}"]) by
-- the name.
local function unalias(r, label)
  label = label:gsub('^%[string "(.-)"%]:', "%1:")
  label = label:gsub(' started at %[string "(.-)"%]:', " started at %1:")
  return (label:gsub("function_alias_%d+", function(name)
    local lines = r.aliases[name]
    return lines and table.concat(lines, "\n") or name
  end))
end

-- A table keyed by label with labels unaliased.
local function relabel(r, tab)
  local out = {}
  for label, v in pairs(tab) do
    if type(v) == "table" then
      local l = {}
      for i, x in ipairs(v) do l[i] = unalias(r, x) end
      table.sort(l)
      v = table.concat(l, " | ")
    end
    out[unalias(r, label)] = v
  end
  return out
end

local function flat_overrides(tab)
  local out = {}
  for label, list in pairs(tab) do
    local l = {}
    for i, x in ipairs(list) do l[i] = x end
    table.sort(l)
    out[label] = table.concat(l, " | ")
  end
  return out
end

local want = parse(slurp(FIX .. ".report.txt"))
local out, rc = run(t.build .. "/ljmemprof report --accounting tarantool " ..
                    FIX .. ".ljm 2>&1")
t.is(rc, 0, "report of the fixture exits 0")
local got = parse(out)
for _, s in ipairs({ "ALLOCATIONS", "REALLOCATIONS", "DEALLOCATIONS" }) do
  t.same(relabel(got, got.sections[s] or {}), want.sections[s],
         s .. ": every source's events and bytes")
  t.same(relabel(got, got.overrides[s] or {}),
         flat_overrides(want.overrides[s]), s .. ": Overrides of each source")
end
t.same(relabel(got, got.heap), want.heap, "HEAP SUMMARY")
t.ok(out:find('\n%[string "return {}"%]:1: 1 events\t%+32B\t%-0B\n') and
     not out:find("ALIASES"),
     "code loaded from a string with a short name is labelled by it, as " ..
     "Lua names it; it gets no alias")

local wleak = parse(slurp(FIX .. ".leakonly.txt"))
out, rc = run(t.build .. "/ljmemprof report --leak-only --accounting tarantool " ..
              FIX .. ".ljm 2>&1")
t.is(rc, 0, "--leak-only exits 0")
local gleak = parse(out)
t.same(relabel(gleak, gleak.heap), wleak.heap, "--leak-only: HEAP SUMMARY")
t.ok(not out:find("ALLOCATIONS"), "--leak-only prints no event sections")
t.is(out, slurp(FIX .. ".leakonly.txt"), "--leak-only --accounting tarantool: " ..
     "byte for byte what Tarantool's parser prints")

-- The same numbers in the heap summary come in the same order (by bytes;
-- Tarantool sorts it by bytes too).
local order = {}
for line in out:gmatch("([^\n]*) holds ") do order[#order + 1] = line end
t.is(table.concat(order, ", "), "INTERNAL, @tiny.lua:6, @tiny.lua:5",
     "heap summary sorted by bytes held")

-- By default the heap summary lists the blocks live at the end by the
-- source that allocated or last resized them: 8 blocks of 1615 bytes, as
-- info says (Tarantool's accounting sums to 1623 bytes, @tiny.lua:5
-- holding 72).
out, rc = run(t.build .. "/ljmemprof report --leak-only " .. FIX .. ".ljm 2>&1")
t.is(out, [[
HEAP SUMMARY: 1615B in 8 blocks live at the end, by the source that allocated or last resized them
INTERNAL holds 1448B in 5 blocks (89.7%)
@tiny.lua:6 holds 103B in 2 blocks (6.4%)
@tiny.lua:5 holds 64B in 1 block (4.0%)

NOTES:
the profile notes no full garbage collection before its end: what is held may be garbage never collected (to see only what is reachable, record with mp.stop{collect = true} or 'ljmemprof run', whose collection runs as the Lua state closes: a script that ends with os.exit(code) skips it, os.exit(code, true) closes the state)

]], "--leak-only: the live blocks by owner, their sum info's live; " ..
     "Tarantool's profile notes no final collection, and NOTES says so")
t.ok(run(t.build .. "/ljmemprof info " .. FIX .. ".ljm"):find(
       "\nlive:       8 blocks, 1615B allocated", 1, true), "info: 8 blocks, 1615B live")
t.done()
