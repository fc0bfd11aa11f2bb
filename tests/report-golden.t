#!/usr/bin/env luajit
-- Golden reports of small programs recorded with the agent: every number
-- can be checked by reading the program, and the programs measure their
-- own lines with the VM's counter, collectgarbage("count"), so the byte
-- counts are neither taken from ljmemprof nor written here (the sizes of
-- VM objects differ between LuaJIT builds). Only the lines of the VM's own
-- work (INTERNAL: the GC freeing what existed before recording, shrinking
-- its buffers) depend on the VM's state and are matched loosely.
package.path = "tests/lib/?.lua;" .. package.path
local t = require("tap")

local TMP = assert(io.popen("mktemp -d \"${TMPDIR:-/tmp}/ljmp-golden.XXXXXX\""))
  :read("*l")

local function write(path, text)
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
end

-- Run a shell command in TMP; returns stdout, exit status.
local function sh(cmd)
  local f = assert(io.popen(t.timeout("cd '" .. TMP .. "' && " .. cmd) ..
                            "; echo \"rc=$?\""))
  local out = f:read("*a")
  f:close()
  local rc = tonumber(out:match("rc=(%d+)\n$"))
  return (out:gsub("rc=%d+\n$", "")), rc
end

local LJ = "LUA_CPATH='" .. t.build_abs() .. "/?.so;;' luajit"
local CLI = t.build_abs() .. "/ljmemprof"

-- Compare text with a template line by line; a template line "~PATTERN"
-- is a Lua pattern, any other line must be equal.
local function like(got, want, name)
  local g, w = {}, {}
  for l in got:gmatch("([^\n]*)\n") do g[#g + 1] = l end
  for l in want:gmatch("([^\n]*)\n") do w[#w + 1] = l end
  for i = 1, math.max(#g, #w) do
    local a, b = g[i], w[i]
    local okl = a and b and (b:sub(1, 1) == "~" and a:match("^" .. b:sub(2) .. "$")
                             or a == b)
    if not okl then
      return t.ok(false, name, "line " .. i .. ": expected " ..
                  string.format("%q", b or "<end>") .. "\n  actual: " ..
                  string.format("%q", a or "<end>") .. "\nwhole output:\n" .. got)
    end
  end
  return t.ok(true, name)
end

-- 1. JIT off, GC stopped: tables, a duplicated template, array growth
-- across lines, and a full GC that frees part of it.
write(TMP .. "/prog.lua", [[
jit.off()
local mp = require("ljmemprof")
local new = require("table.new")
local keep = new(200, 0)
local function count() return collectgarbage("count") * 1024 end
local c, d9, d10, d11, d12, d13, grow, steps = nil, nil, nil, nil, nil, nil, nil, new(16, 0)
collectgarbage(); collectgarbage("stop")
assert(mp.start(arg[1]))
c = count(); for i = 1, 100 do keep[i] = {} end; d9 = count() - c
c = count(); for i = 1, 40 do keep[100 + i] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14} end; d10 = count() - c
c = count(); grow = {}; d11 = count() - c
c = count(); grow[1] = true; d12 = count() - c
c = count(); for i = 2, 100 do local s = count(); grow[i] = true; s = count() - s; if s ~= 0 then steps[#steps + 1] = s end end; d13 = count() - c
for i = 1, 100 do keep[i] = nil end
grow = nil
collectgarbage()
assert(mp.stop())
io.write(d9, " ", d10, " ", d11, " ", d12, " ", d13, " ", table.concat(steps, " "), "\n")
]])
local out, rc = sh(LJ .. " prog.lua prog.ljm")
t.is(rc, 0, "program 1 ran")
local d = {}
for n in out:gmatch("%d+") do d[#d + 1] = tonumber(n) end
-- What the VM counted per line (GC64 Debian LuaJIT: 6400 8000 64 24 1008):
-- 100 empty tables; 40 copies of a 14-element template, each a table and
-- a separate array part; one empty table; its first array part; then the
-- array growing by doubling, one step at a time (d[6] on).
t.ok(#d >= 6 and d[1] > 0 and d[1] % 100 == 0 and d[2] % 40 == 0 and
     d[3] == d[1] / 100 and d[4] > 0, "the VM's own counts per line",
     table.concat(d, " "))

-- Line 13 grows the array at each doubling (6 times in Debian's LuaJIT:
-- 3 -> 5 -> 9 -> 17 -> 33 -> 65 -> 129 slots); each step's new size is
-- the old one plus what the VM counted, the first old one being line 12's
-- block, the others its own. The full GC frees line 9's tables, the table
-- of line 11 and the array of line 13. Heap summary (Tarantool's
-- accounting): line 10 holds its 80 blocks; line 12 is charged its block,
-- then the growth when line 13 grew it: the first step's new size.
local nstep, plus, minus, first = #d - 5, 0, 0, nil
do
  local old = d[4]
  for i = 6, #d do
    plus, minus = plus + old + d[i], minus + old
    old = old + d[i]
    first = first or old
  end
end
-- Rows of a section ({label, events, bytes, shown as fmt}), sorted as
-- the report sorts them: by bytes, then by events, then by label.
local function rows(list)
  table.sort(list, function(a, b)
    if a[3] ~= b[3] then return a[3] > b[3] end
    if a[2] ~= b[2] then return a[2] > b[2] end
    return a[1] < b[1]
  end)
  local out = {}
  for _, r in ipairs(list) do out[#out + 1] = r[4] end
  return table.concat(out, "\n")
end
-- An allocation row and a heap summary row.
local function arow(label, n, bytes)
  return { label, n, bytes,
           string.format("%s: %d events\t+%dB\t-0B", label, n, bytes) }
end
local function hrow(label, n, bytes, frees, human)
  return { label, n, bytes, string.format("%s holds %s: %d allocs, %d frees",
    label, human and human(bytes) or bytes .. "B", n, frees) }
end
-- Sizes as -H prints them.
local function kib(n)
  if n < 1024 then return n .. "B" end
  local v = n / 1024
  return v == math.floor(v) and string.format("%dKiB", v) or
         string.format("%.2fKiB", v)
end
local alloc_rows = rows({ arow("@prog.lua:9", 100, d[1]),
  arow("@prog.lua:10", 80, d[2]), arow("@prog.lua:11", 1, d[3]),
  arow("@prog.lua:12", 1, d[4]) })
local held_rows = rows({ hrow("@prog.lua:10", 80, d[2], 0),
  hrow("@prog.lua:12", 2, first, 1) })
local want = string.format([[
ALLOCATIONS
%s

REALLOCATIONS
@prog.lua:13: %d events	+%dB	-%dB
	Overrides:
		@prog.lua:12
		@prog.lua:13

~INTERNAL: %%d+ events	%%+%%d+B	%%-%%d+B

DEALLOCATIONS
~INTERNAL: %%d+ events	%%+0B	%%-%%d+B
	Overrides:
		@prog.lua:11
		@prog.lua:13
		@prog.lua:9


HEAP SUMMARY:
%s

]], alloc_rows, nstep, plus, minus, held_rows)
t.is(plus - minus, d[5], "line 13's reallocations add up to the VM's count")
out, rc = sh(CLI .. " report --accounting tarantool prog.ljm")
t.is(rc, 0, "report exits 0")
like(out, want, "report of program 1 (--accounting tarantool)")

-- The default heap summary: the blocks live at the end by the source that
-- allocated or last resized them. Line 10's 80 blocks are live; line 12's
-- block belongs to line 13 once line 13 grew it, and the GC freed it; so
-- of the program's lines only line 10 holds anything. (INTERNAL may hold a
-- buffer the full GC shrank.) The rows add up to info's live.
out, rc = sh(CLI .. " report --leak-only prog.ljm")
do
  local total, blocks = out:match("^HEAP SUMMARY: (%d+)B in (%d+) blocks " ..
    "live at the end, by the source that allocated or last resized them\n")
  local sum, nsum, lines = 0, 0, {}
  for label, b, n in out:gmatch("\n([^\n]-) holds (%d+)B in (%d+) blocks? %(") do
    sum, nsum = sum + tonumber(b), nsum + tonumber(n)
    if label:match("^@") then lines[#lines + 1] = label .. " " .. b .. " " .. n end
  end
  local info = sh(CLI .. " info prog.ljm")
  local ln, lb = info:match("\nlive:       (%d+) blocks, (%d+)B")
  t.ok(rc == 0 and table.concat(lines, ", ") == "@prog.lua:10 " .. d[2] .. " 80"
       and out:find("\n@prog.lua:10 holds " .. d[2] .. "B in 80 blocks %(")
       and tonumber(total) == sum and tonumber(blocks) == nsum and
       tonumber(lb) == sum and tonumber(ln) == nsum,
       "heap summary: line 10's 80 blocks of the program's lines; the rows " ..
       "add up to the header and to info's live (" .. tostring(lb) .. "B in " ..
       tostring(ln) .. " blocks)", out)
end

out = sh(CLI .. " report --accounting tarantool --sort count --top 2 prog.ljm")
like(out, string.format([[
ALLOCATIONS
@prog.lua:9: 100 events	+%dB	-0B
@prog.lua:10: 80 events	+%dB	-0B
... and 2 more sources (--top 0 prints all)

REALLOCATIONS
@prog.lua:13: %d events	+%dB	-%dB
	Overrides:
		@prog.lua:12
		@prog.lua:13

~INTERNAL: 1 events	%%+%%d+B	%%-%%d+B

DEALLOCATIONS
~INTERNAL: %%d+ events	%%+0B	%%-%%d+B
	Overrides:
		@prog.lua:13
		@prog.lua:9
		... and 1 more


HEAP SUMMARY:
@prog.lua:10 holds %dB: 80 allocs, 0 frees
@prog.lua:12 holds %dB: 2 allocs, 1 frees

]], d[1], d[2], nstep, plus, minus, d[2], first),
     "--sort count --top 2: most events first, two lines a section, " ..
     "two sources under Overrides: those of the most blocks (line 9's " ..
     "100, then of line 11's and line 13's one each, line 13's of more " ..
     "bytes), in the order of their labels")

-- --top 1 by bytes: under line 13's reallocations, its own blocks (their
-- old sizes add up to more than line 12's one block); under the GC's
-- frees, line 9's 100 tables.
t.ok(minus - d[4] > d[4] and d[1] > d[3] and d[1] > plus - minus + d[4],
     "line 13 resized more bytes of its own than of line 12's; line 9's " ..
     "tables are more bytes than line 11's table or line 13's array",
     table.concat(d, " "))
out = sh(CLI .. " report --accounting tarantool --top 1 prog.ljm")
like(out, string.format([[
ALLOCATIONS
%s
... and 3 more sources (--top 0 prints all)

REALLOCATIONS
@prog.lua:13: %d events	+%dB	-%dB
	Overrides:
		@prog.lua:13
		... and 1 more

... and 1 more source (--top 0 prints all)

DEALLOCATIONS
~INTERNAL: %%d+ events	%%+0B	%%-%%d+B
	Overrides:
		@prog.lua:9
		... and 2 more


HEAP SUMMARY:
%s
... and 1 more source (--top 0 prints all)

]], alloc_rows:match("^[^\n]*"), nstep, plus, minus,
     held_rows:match("^[^\n]*")),
     "--top 1: one line a section, one source under each Overrides (the " ..
     "one of the most bytes) and how many more")

out = sh(CLI .. " report --accounting tarantool --leak-only -H prog.ljm")
like(out, "HEAP SUMMARY:\n" .. rows({ hrow("@prog.lua:10", 80, d[2], 0, kib),
  hrow("@prog.lua:12", 2, first, 1, kib) }) .. "\n\n",
     "--leak-only --human-readable")

out = sh(CLI .. " report --accounting tarantool --top 1 --leak-only prog.ljm")
like(out, "HEAP SUMMARY:\n" .. rows({ hrow("@prog.lua:10", 80, d[2], 0),
  hrow("@prog.lua:12", 2, first, 1) }):match("^[^\n]*") ..
  "\n... and 1 more source (--top 0 prints all)\n\n",
     "--top 1 limits the heap summary")

-- 2. Code loaded from strings gets an alias, listed with its text. The
-- program measures an empty table and a first array part.
write(TMP .. "/alias.lua", [[
jit.off()
local mp = require("ljmemprof")
local f = loadstring("local t = {}\nt[1] = {}\nreturn t")
local g = loadstring("return {}", "=inline")
local function count() return collectgarbage("count") * 1024 end
collectgarbage(); collectgarbage("stop")
local c = count(); local x = {}; local e = count() - c
c = count(); x[1] = true; local a1 = count() - c
assert(mp.start(arg[1]))
local a, b = f(), g()
assert(mp.stop())
io.write(e, " ", a1, "\n")
]])
out, rc = sh(LJ .. " alias.lua alias.ljm")
local e, a1 = out:match("^(%d+) (%d+)\n$")
e, a1 = tonumber(e), tonumber(a1)
t.ok(rc == 0 and e and a1, "program 2 ran", out)
out, rc = sh(CLI .. " report --accounting tarantool --leak-only alias.ljm")
-- f: an empty table on line 1, then on line 2 a table and the first array
-- part of t. g: its chunk name starts with '=', no alias. Equal sizes and
-- counts are ordered by label, bytewise.
like(out, "HEAP SUMMARY:\n" .. rows({
  hrow("function_alias_1:2", 2, (e or 0) + (a1 or 0), 0),
  hrow("=inline:1", 1, e or 0, 0), hrow("function_alias_1:1", 1, e or 0, 0),
}) .. [[


ALIASES:
function_alias_1:
1	| local t = {}
2	| t[1] = {}
3	| return t

]], "aliases for code loaded from strings")

-- 3. JIT on: allocations inside a compiled loop are the trace's, named
-- by where it started. (The recording iteration is not asserted: the
-- JIT compiler's own allocations are INTERNAL.)
write(TMP .. "/trace.lua", [[
jit.on()
jit.opt.start("hotloop=2")
local mp = require("ljmemprof")
local keep = require("table.new")(2000, 0)
collectgarbage(); collectgarbage("stop")
assert(mp.start(arg[1]))
for i = 1, 1000 do keep[i] = {} end
assert(mp.stop())
]])
out, rc = sh(LJ .. " trace.lua trace.ljm && " .. CLI ..
             " report trace.ljm")
t.is(rc, 0, "program 3 ran and was reported")
local n, bytes = out:match("\nTRACE %[1%] started at @trace.lua:7: (%d+) " ..
                           "events\t%+(%d+)B\t%-0B\n")
t.ok(n and tonumber(n) >= 990 and tonumber(bytes) == e * tonumber(n),
     "the trace started at line 7 allocates the loop's empty tables",
     out)
local ln, lbytes = out:match("\n@trace.lua:7: (%d+) events\t%+(%d+)B")
t.ok(ln and tonumber(ln) + tonumber(n) <= 1000 and
     tonumber(lbytes) == e * tonumber(ln),
     "the interpreted iterations are line 7's", out)
t.ok(out:find("\nTRACE %[1%] started at @trace.lua:7 holds " ..
              (bytes or "?") .. "B in " .. (n or "?") .. " blocks %("),
     "the trace holds what it allocated", out)

os.execute("rm -rf '" .. TMP .. "'")
t.done()
