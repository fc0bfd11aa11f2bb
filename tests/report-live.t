#!/usr/bin/env luajit
-- HEAP SUMMARY is the truth: the blocks live at the end by the source that
-- allocated or last resized them, adding up to info's live exactly, in
-- text, json, --leak-only and diff --leak-only, on every profile at hand
-- (the fixtures, the fuzzing seeds, recorded ones with and without call
-- stacks, sampled, merged, cut short). The phantom program of issue 17:
-- line 2 makes tables that line 3 grows, and the GC frees them all; the
-- accounting of Tarantool's parser (--accounting tarantool) said line 2
-- held 40000 bytes of them, while nothing of the program was live.
package.path = "tests/lib/?.lua;" .. package.path
local t = require("tap")
local cjson = require("cjson")

local TMP = assert(io.popen("mktemp -d \"${TMPDIR:-/tmp}/ljmp-live.XXXXXX\""))
  :read("*l")
local MP = t.build_abs() .. "/ljmemprof"

local function write(path, text)
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
end

-- Run a shell command in TMP; its stdout and exit status.
local function sh(cmd)
  local f = assert(io.popen(t.timeout("cd '" .. TMP .. "' && " .. cmd) ..
                            " 2>/dev/null; echo \"rc=$?\""))
  local out = f:read("*a")
  f:close()
  local rc = tonumber(out:match("rc=(%d+)\n$"))
  return (out:gsub("rc=%d+\n$", "")), rc
end

local ENV = "LUA_CPATH='" .. t.build_abs() .. "/?.so;;' "

-- -- The phantom program ------------------------------------------------------

write(TMP .. "/phantom.lua", [[
jit.off()
local function mk() local t = {}; t[1] = 1; return t end -- line 2
local function grow(t) for i = 2, 64 do t[i] = i end end -- line 3
for i = 1, 1000 do grow(mk()) end
]])
local _, rc = sh(ENV .. MP .. " run -o ph.ljm phantom.lua")
t.is(rc, 0, "the phantom program runs")
local info = cjson.decode((sh(MP .. " info --format json ph.ljm")))
local out = sh(MP .. " report --leak-only ph.ljm")
local lb, ln = info.live.bytes, info.live.blocks
local fc = info.final_collection or {}
-- Only the VM's own blocks are live (a buffer the final collection
-- resized): no line of the program holds anything; NOTES says what the
-- final collection freed of the program's blocks, as info does, and the
-- line (2 or 3) whose blocks it freed the most bytes of.
local notes = out:match("\nNOTES:\n.-\n(the final collection freed [^\n]*)\n\n$")
t.is(out:gsub("the final collection freed [^\n]*\n", ""), string.format([[
HEAP SUMMARY: %dB in %d blocks live at the end, by the source that allocated or last resized them
INTERNAL holds %dB in %d blocks (100.0%%)

NOTES:
a full garbage collection ran before the end: what is held is reachable

]], lb, ln, lb, ln), "--leak-only: the program's lines hold nothing; " ..
     "what is live (" .. lb .. "B in " .. ln .. " blocks) is the VM's")
t.ok(notes and fc.freed_bytes and
     notes:find(("the final collection freed %dB in %d blocks made within " ..
                 "the profile (the most by @phantom.lua:"):format(fc.freed_bytes,
                 fc.freed_blocks), 1, true) == 1 and
     notes:match("%(the most by @phantom%.lua:[23] %(%a+%): %d+B in %d+%): " ..
                 "garbage, or what only the main chunk's locals held, which " ..
                 "ends when the chunk returns$"),
     "NOTES: the final collection freed what info says (" ..
     tostring(fc.freed_bytes) .. "B in " .. tostring(fc.freed_blocks) ..
     " blocks), the most by line 2 or 3", notes)
t.ok(ln > 0 and lb > 0, "info: something is live (the VM's)")
out = sh(MP .. " report --leak-only --accounting tarantool ph.ljm")
t.ok(out:match("^HEAP SUMMARY:\n@phantom%.lua:2 %(mk%) " ..
               "holds [1-9]%d*B: 3000 allocs, 2000 frees\n\n"),
     "--accounting tarantool: the phantom of Tarantool's parser, line 2 " ..
     "charged 3000 allocations and growths, credited 2000", out)
local js = cjson.decode((sh(MP .. " report --format json --leak-only ph.ljm")))
t.is(cjson.encode(js.heap_summary), cjson.encode({
  { source = { kind = "internal", label = "INTERNAL" }, bytes = lb,
    blocks = ln } }), "json: the same one row, accounting " ..
     tostring(js.accounting))

-- -- Every profile at hand: the rows add up to info's live -------------------

-- A program with call stacks, traces and strings, run a few ways.
write(TMP .. "/mix.lua", [[
local keep = {}
local function mk(i) return { i, tostring(i) } end
local function grow(t) for j = 1, 40 do t[#t + 1] = j end end
for i = 1, 3000 do
  local x = mk(i)
  if i % 7 == 0 then grow(x); keep[#keep + 1] = x end
  if i % 100 == 0 then keep[#keep + 1] = string.rep("y", i) end
end
]])
local profiles = {}
local function add(name, cmd)
  local _, r = sh(cmd)
  t.is(r, 0, "recorded: " .. name)
  profiles[#profiles + 1] = { name = name, files = { TMP .. "/" .. name } }
end
add("mix.ljm", ENV .. MP .. " run -o mix.ljm mix.lua")
add("mix-off.ljm", ENV .. MP .. " run -o mix-off.ljm -- luajit -joff mix.lua")
add("mix-stacks.ljm", ENV .. MP .. " run --stacks 8 -o mix-stacks.ljm mix.lua")
add("mix-sampled.ljm", ENV .. MP .. " run --sample 2048 -o mix-sampled.ljm mix.lua")
add("ph.ljm", "true")
-- A prefix: the profile cut in the middle of its events.
do
  local f = assert(io.open(TMP .. "/mix-off.ljm", "rb"))
  local data = f:read("*a")
  f:close()
  write(TMP .. "/cut.ljm", data:sub(1, math.floor(#data / 2)))
  profiles[#profiles + 1] = { name = "cut.ljm", files = { TMP .. "/cut.ljm" } }
end
for _, dir in ipairs({ "tests/fixtures", "tests/fuzz/seeds" }) do
  local ls = assert(io.popen("ls " .. dir .. "/*.ljm"))
  for path in ls:lines() do
    profiles[#profiles + 1] = { name = path, files = { os.getenv("PWD") ..
                                                       "/" .. path } }
  end
  ls:close()
end
-- Merged: two profiles of one program, one sampled and one not.
profiles[#profiles + 1] = { name = "merge of mix.ljm, mix-off.ljm, mix-sampled.ljm",
  files = { TMP .. "/mix.ljm", TMP .. "/mix-off.ljm", TMP .. "/mix-sampled.ljm" } }

local function q(files)
  local s = {}
  for i, f in ipairs(files) do s[i] = "'" .. f .. "'" end
  return table.concat(s, " ")
end

local checked, bad = 0, {}
for _, p in ipairs(profiles) do
  -- info's live, summed over the files of a merge.
  local want = { bytes = 0, blocks = 0 }
  for _, f in ipairs(p.files) do
    local ok, i = pcall(cjson.decode, (sh(MP .. " info --format json '" .. f .. "'")))
    if ok then
      want.bytes, want.blocks = want.bytes + i.live.bytes, want.blocks + i.live.blocks
    end
  end
  local ok, doc = pcall(cjson.decode, (sh(MP .. " report --format json " .. q(p.files))))
  local text = sh(MP .. " report --leak-only --top 0 " .. q(p.files))
  local sum = { bytes = 0, blocks = 0 }
  for _, r in ipairs(ok and doc.heap_summary or {}) do
    sum.bytes, sum.blocks = sum.bytes + r.bytes, sum.blocks + r.blocks
  end
  local tsum = { bytes = 0, blocks = 0 }
  for b, n in text:gmatch("\n[^\n]- holds (%d+)B in (%d+) blocks? %(") do
    tsum.bytes, tsum.blocks = tsum.bytes + b, tsum.blocks + n
  end
  local hb, hn = text:match("HEAP SUMMARY: (%d+)B in (%d+) blocks? live")
  local fig = string.format("info %d/%d, json %s %d/%d, text %d/%d, header %s/%s",
    want.bytes, want.blocks, ok and tostring(doc.accounting) or "?", sum.bytes,
    sum.blocks, tsum.bytes, tsum.blocks, tostring(hb), tostring(hn))
  if ok and doc.accounting == "live" and sum.bytes == want.bytes and
     sum.blocks == want.blocks and doc.live.bytes == want.bytes and
     tsum.bytes == want.bytes and tsum.blocks == want.blocks and
     tonumber(hb) == want.bytes and tonumber(hn) == want.blocks then
    checked = checked + 1
  else
    bad[#bad + 1] = p.name .. ": " .. fig
  end
  if p.name == "mix-sampled.ljm" then
    t.ok(ok and doc.sampled and sum.bytes > 0, "the sampled profile's " ..
         "estimates add up the same way (" .. fig .. ")")
  end
end
t.ok(#bad == 0 and checked == #profiles, "on all " .. #profiles ..
     " profiles the heap summary's rows, in json and text, add up to " ..
     "info's live, bytes and blocks", table.concat(bad, "\n"))

-- The text's CALL STACKS view says how many sources --top left out too.
do
  local all = sh(MP .. " report --top 0 --stacks-per-source 1 mix-stacks.ljm")
  local one = sh(MP .. " report --top 1 --stacks-per-source 1 mix-stacks.ljm")
  local n = 0
  for _ in (all:match("CALL STACKS.-\n\n\n") or ""):gmatch("\n[^\t\n][^\n]*\tin %d+ stacks?\n") do
    n = n + 1
  end
  local v = one:match("\n(CALL STACKS.*)$") or ""
  local _, groups = v:gsub("\n[^\t\n][^\n]*\tin %d+ stacks?\n", "")
  t.ok(n > 2 and groups == 1 and v:find("\n\n... and " .. (n - 1) ..
       " more sources (--top 0 prints all)\n\n", 1, true),
       "CALL STACKS with --top 1: one of " ..
       n .. " sources, and a line for the " .. (n - 1) .. " more", one)
end

-- diff --leak-only holds the same at the end on each side.
do
  local d = cjson.decode((sh(MP .. " diff --format json --leak-only ph.ljm mix-off.ljm")))
  local i2 = cjson.decode((sh(MP .. " info --format json mix-off.ljm")))
  t.ok(d.totals.base.live_bytes == lb and d.totals.base.live_blocks == ln and
       d.totals.new.live_bytes == i2.live.bytes and
       d.totals.new.live_blocks == i2.live.blocks,
       "diff --leak-only: what each side holds at the end is its info's live",
       cjson.encode(d.totals))
end
local _, drc = sh(MP .. " diff --accounting tarantool ph.ljm mix-off.ljm")
t.is(drc, 2, "diff --accounting: an error (diff compares the live blocks)")
local _, arc = sh(MP .. " report --accounting other ph.ljm")
t.is(arc, 2, "--accounting other: an error")

os.execute("rm -rf '" .. TMP .. "'")
t.done()
