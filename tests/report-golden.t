#!/usr/bin/env luajit
-- Golden reports of small programs recorded with the agent: every number
-- can be checked by reading the program (and the program measures its own
-- lines with the VM's counter, collectgarbage("count"), so the byte counts
-- are not taken from ljmemprof). Only the lines of the VM's own work
-- (INTERNAL: the GC freeing what existed before recording, shrinking its
-- buffers) depend on the VM's state and are matched loosely.
package.path = "tests/lib/?.lua;" .. package.path
local t = require("tap")

local ROOT = assert(io.popen("pwd")):read("*l")
local TMP = assert(io.popen("mktemp -d \"${TMPDIR:-/tmp}/ljmp-golden.XXXXXX\""))
  :read("*l")

local function write(path, text)
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
end

-- Run a shell command in TMP; returns stdout, exit status.
local function sh(cmd)
  local f = assert(io.popen("cd '" .. TMP .. "' && " .. cmd ..
                            "; echo \"rc=$?\""))
  local out = f:read("*a")
  f:close()
  local rc = tonumber(out:match("rc=(%d+)\n$"))
  return (out:gsub("rc=%d+\n$", "")), rc
end

local LJ = "LUA_CPATH='" .. ROOT .. "/build/?.so;;' luajit"
local CLI = ROOT .. "/build/ljmemprof"

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
local c, d9, d10, d11, d12, d13, grow
collectgarbage(); collectgarbage("stop")
assert(mp.start(arg[1]))
c = count(); for i = 1, 100 do keep[i] = {} end; d9 = count() - c
c = count(); for i = 1, 40 do keep[100 + i] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14} end; d10 = count() - c
c = count(); grow = {}; d11 = count() - c
c = count(); grow[1] = true; d12 = count() - c
c = count(); for i = 2, 100 do grow[i] = true end; d13 = count() - c
for i = 1, 100 do keep[i] = nil end
grow = nil
collectgarbage()
assert(mp.stop())
io.write(d9, " ", d10, " ", d11, " ", d12, " ", d13, "\n")
]])
local out, rc = sh(LJ .. " prog.lua prog.ljm")
t.is(rc, 0, "program 1 ran")
local d = {}
for n in out:gmatch("%d+") do d[#d + 1] = tonumber(n) end
-- What the VM counted per line: 100 empty tables of 64 bytes (GC64);
-- 40 copies of a 14-element template, each a table and a separate array
-- part; one empty table; its first array part; then the array doubling
-- up to 128 slots.
t.is(table.concat(d, " "), "6400 8000 64 24 1008",
     "the VM's own counts per line")

-- Line 13 grows the array 6 times: 3 -> 5 -> 9 -> 17 -> 33 -> 65 -> 129
-- slots of 8 bytes, so +(40+72+136+264+520+1032) -(24+40+72+136+264+520);
-- the first block it grows is line 12's, the others its own. The full GC
-- frees line 9's tables, the table of line 11 and the array of line 13.
-- Heap summary (Tarantool's accounting): line 10 holds its 80 blocks;
-- line 12 is charged 24, then +40 -24 when line 13 grew its block: 40.
local want = string.format([[
ALLOCATIONS
@prog.lua:10: 80 events	+%dB	-0B
@prog.lua:9: 100 events	+%dB	-0B
@prog.lua:11: 1 events	+%dB	-0B
@prog.lua:12: 1 events	+%dB	-0B

REALLOCATIONS
@prog.lua:13: 6 events	+2064B	-1056B
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
@prog.lua:10 holds %dB: 80 allocs, 0 frees
@prog.lua:12 holds 40B: 2 allocs, 1 frees

]], d[2], d[1], d[3], d[4], d[2])
t.is(2064 - 1056, d[5], "line 13's reallocations add up to the VM's count")
out, rc = sh(CLI .. " report prog.ljm")
t.is(rc, 0, "report exits 0")
like(out, want, "report of program 1")

out = sh(CLI .. " report --sort count --top 2 prog.ljm")
like(out, [[
ALLOCATIONS
@prog.lua:9: 100 events	+6400B	-0B
@prog.lua:10: 80 events	+8000B	-0B

REALLOCATIONS
@prog.lua:13: 6 events	+2064B	-1056B
	Overrides:
		@prog.lua:12
		@prog.lua:13

~INTERNAL: 1 events	%+%d+B	%-%d+B

DEALLOCATIONS
~INTERNAL: %d+ events	%+0B	%-%d+B
	Overrides:
		@prog.lua:11
		@prog.lua:13
		@prog.lua:9


HEAP SUMMARY:
@prog.lua:10 holds 8000B: 80 allocs, 0 frees
@prog.lua:12 holds 40B: 2 allocs, 1 frees

]], "--sort count --top 2: most events first, two lines a section")

out = sh(CLI .. " report --leak-only -H prog.ljm")
like(out, [[
HEAP SUMMARY:
@prog.lua:10 holds 7.81KiB: 80 allocs, 0 frees
@prog.lua:12 holds 40B: 2 allocs, 1 frees

]], "--leak-only --human-readable")

out = sh(CLI .. " report --top 1 --leak-only prog.ljm")
like(out, "HEAP SUMMARY:\n@prog.lua:10 holds 8000B: 80 allocs, 0 frees\n\n",
     "--top 1 limits the heap summary")

-- 2. Code loaded from strings gets an alias, listed with its text.
write(TMP .. "/alias.lua", [[
jit.off()
local mp = require("ljmemprof")
local f = loadstring("local t = {}\nt[1] = {}\nreturn t")
local g = loadstring("return {}", "=inline")
collectgarbage(); collectgarbage("stop")
assert(mp.start(arg[1]))
local a, b = f(), g()
assert(mp.stop())
]])
out, rc = sh(LJ .. " alias.lua alias.ljm && " .. CLI ..
             " report --leak-only alias.ljm")
-- f: an empty table on line 1, then on line 2 a table (64) and the first
-- array part of t (24). g: its chunk name starts with '=', no alias.
-- Equal sizes and counts are ordered by label, bytewise.
like(out, [[
HEAP SUMMARY:
function_alias_1:2 holds 88B: 2 allocs, 0 frees
=inline:1 holds 64B: 1 allocs, 0 frees
function_alias_1:1 holds 64B: 1 allocs, 0 frees

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
t.ok(n and tonumber(n) >= 990 and tonumber(bytes) == 64 * tonumber(n),
     "the trace started at line 7 allocates the loop's 64-byte tables",
     out)
local ln, lbytes = out:match("\n@trace.lua:7: (%d+) events\t%+(%d+)B")
t.ok(ln and tonumber(ln) + tonumber(n) <= 1000 and
     tonumber(lbytes) == 64 * tonumber(ln),
     "the interpreted iterations are line 7's", out)
t.ok(out:find("\nTRACE %[1%] started at @trace.lua:7 holds " ..
              (bytes or "?") .. "B: " .. (n or "?") .. " allocs, 0 frees\n"),
     "the trace holds what it allocated", out)

os.execute("rm -rf '" .. TMP .. "'")
t.done()
