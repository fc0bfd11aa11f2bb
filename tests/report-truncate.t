#!/usr/bin/env luajit
-- A profile cut short (the process was killed) is still reported: record a
-- real profile with the agent, cut it at every byte offset and report each
-- prefix. A prefix shorter than the 7-byte prologue is not a profile (exit
-- 2, one error line, no output); every longer one must exit 3 with one
-- warning line on stderr naming the file and an offset within the prefix,
-- print valid JSON, and never count more events or bytes for any source
-- than the whole profile; counts grow with the prefix. The whole profile
-- exits 0 with nothing on stderr.
package.path = "tests/lib/?.lua;" .. package.path
local t = require("tap")
local cjson = require("cjson")

local TMP = assert(io.popen("mktemp -d \"${TMPDIR:-/tmp}/ljmp-cut.XXXXXX\""))
  :read("*l")
local CLI = t.build .. "/ljmemprof"

local function write(path, text)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end

local function slurp(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

write(TMP .. "/cut.lua", [[
jit.opt.start("hotloop=2")
local mp = require("ljmemprof")
collectgarbage(); collectgarbage("stop")
assert(mp.start(arg[1]))
local keep = {}
for i = 1, 30 do keep[i] = { i } end
local f = loadstring("return 'x' .. ...")
for i = 1, 5 do keep[i] = f(i) end
local s = string.rep("ab", 100)
keep = nil
collectgarbage()
keep = { s }	-- After it: no note, so no trailer after the epilogue.
assert(mp.stop())
]])
local prof = TMP .. "/cut.ljm"
assert(os.execute(t.timeout("LUA_CPATH='" .. t.build .. "/?.so;;' luajit " .. TMP ..
                            "/cut.lua " .. prof)) == 0, "recording failed")
local data = slurp(prof)

-- Report path as JSON; returns the decoded object (or nil), exit status,
-- stderr.
local function report(path)
  local f = assert(io.popen(t.timeout(CLI .. " report --format json '" ..
                                      path .. "' 2>'" .. TMP .. "/err'") ..
                            "; echo \"rc=$?\""))
  local out = f:read("*a")
  f:close()
  local rc = tonumber(out:match("rc=(%d+)\n$"))
  local okj, obj = pcall(cjson.decode, (out:gsub("rc=%d+\n$", "")))
  return okj and obj or nil, rc, slurp(TMP .. "/err")
end

-- Events and bytes by section and label.
local function counts(obj)
  local c = {}
  for _, s in ipairs({ "allocations", "reallocations", "deallocations" }) do
    for _, row in ipairs(obj[s]) do
      c[s .. " " .. row.source.label] = row
    end
  end
  return c
end

local full, rc, err = report(prof)
t.is(rc, 0, "the whole profile exits 0")
t.is(err, "", "and warns about nothing")
t.ok(full and full.complete == true, "and is complete")
local fc = counts(full)

-- The note that opens NOTES of a profile cut at byte at.
local function cut_note(at, tot)
  local n = tot.alloc_events + tot.realloc_events + tot.free_events
  return "the profile is cut short at byte " .. at .. ", after " .. n ..
         " event" .. (n == 1 and "" or "s") .. ": its frees after that " ..
         "are missing, so what is held is an upper bound (the blocks made " ..
         "before the cut that the program still held, and those it freed " ..
         "later)"
end
t.is(full.notes[1]:match("^the profile is cut"), nil,
     "the whole profile has no note of a cut")

local bad, first = 0, nil
local function fail(len, why)
  bad = bad + 1
  first = first or ("prefix of " .. len .. " bytes: " .. why)
end
local last = { alloc_events = 0, realloc_events = 0, free_events = 0 }
local cut = TMP .. "/prefix.ljm"
for len = 0, #data - 1 do
  write(cut, data:sub(1, len))
  local obj, prc, perr = report(cut)
  local esc = cut:gsub("%p", "%%%0")
  if len < 7 then
    if prc ~= 2 or obj or not perr:match("^ljmemprof: " .. esc ..
       ": not a memprof profile: [^\n]+\n$") then
      fail(len, "not refused as no profile: status " .. tostring(prc) ..
           ", stderr " .. perr)
    end
    goto next
  end
  local at = perr:match("^ljmemprof: " .. cut:gsub("%p", "%%%0") ..
                        ": warning: data ends at byte (%d+) before the end " ..
                        "of the profile %(expected [^\n]+%); reporting what " ..
                        "came before\n$")
  if prc ~= 3 then fail(len, "exit status " .. tostring(prc))
  elseif not at or tonumber(at) ~= len then fail(len, "stderr " .. perr)
  elseif not obj then fail(len, "output is not JSON")
  elseif obj.complete ~= false or obj.truncated_at ~= tonumber(at) then
    fail(len, "complete/truncated_at wrong")
  elseif obj.notes[1] ~= cut_note(len, obj.totals) then
    fail(len, "first note " .. tostring(obj.notes[1]))
  else
    for k, row in pairs(counts(obj)) do
      local f = fc[k]
      if not f or row.events > f.events or row.alloc_bytes > f.alloc_bytes or
         row.free_bytes > f.free_bytes then
        fail(len, k .. " exceeds the whole profile's")
      end
    end
    for k, v in pairs(last) do
      if obj.totals[k] < v or obj.totals[k] > full.totals[k] then
        fail(len, "totals." .. k .. " not between the shorter prefix's and " ..
             "the whole profile's")
      end
      last[k] = obj.totals[k]
    end
  end
  ::next::
end
t.ok(bad == 0, "each of the " .. #data .. " proper prefixes is refused " ..
     "(below 7 bytes) or reported, exits 3, warns once, counts no more " ..
     "than the whole", 
     bad .. " bad; first: " .. tostring(first))
t.is(last.alloc_events + last.realloc_events + last.free_events,
     full.totals.alloc_events + full.totals.realloc_events +
     full.totals.free_events,
     "the longest prefix (without the epilogue) has every event")

-- Text output of a prefix: the report, then the warning (exit 3).
write(cut, data:sub(1, #data - 1))
local f = assert(io.popen(t.timeout(CLI .. " report '" .. cut ..
                                    "' 2>/dev/null")))
local text = f:read("*a")
f:close()
t.ok(text:find("^ALLOCATIONS\n") and text:find("\nHEAP SUMMARY: "),
     "a prefix gets the full text report", text)

-- A prefix's report written to a file, text or HTML, and check: the cut
-- is said there too (not only on stderr), with its status 3 kept.
local half = math.floor(#data / 2)
write(cut, data:sub(1, half))
local hobj = report(cut)
local note = cut_note(half, hobj.totals)
local function run(cmd)
  local h = assert(io.popen(t.timeout(cmd .. " 2>'" .. TMP .. "/err'") ..
                            "; echo \"rc=$?\""))
  local out = h:read("*a")
  h:close()
  return out:gsub("rc=%d+\n$", ""), tonumber(out:match("rc=(%d+)\n$")),
         slurp(TMP .. "/err")
end
local _, orc, oerr = run(CLI .. " report -o '" .. TMP .. "/r.txt' '" .. cut ..
                         "'")
t.is(orc .. ":" .. (oerr:match("warning: data ends at byte %d+") or oerr),
     "3:warning: data ends at byte " .. half, "report -o: status 3, warned")
t.ok(("\n" .. slurp(TMP .. "/r.txt")):find("\nNOTES:\n" .. note:gsub("%p", "%%%0") ..
                                          "\n", 1),
     "report -o: NOTES opens with the cut", slurp(TMP .. "/r.txt"))
run(CLI .. " report --format html -o '" .. TMP .. "/r.html' '" .. cut .. "'")
t.ok(slurp(TMP .. "/r.html"):find('"cut_note":' .. cjson.encode(note), 1, true),
     "report --format html: the summary's cut_note is the note")
local cout, crc = run(CLI .. " check --max-leak none '" .. cut .. "'")
t.ok(crc == 3 and cout:find("\nnote: " .. note .. "\n", 1, true),
     "check: status 3, and the note", cout)

-- In-process: every prefix of the Tarantool fixture and of this profile
-- through the profile pass (tests/c/report_cut.c).
local fixture = "tests/fixtures/tarantool-v3-tiny.ljm"
for _, p in ipairs({ prof, fixture }) do
  local h = assert(io.popen(t.timeout(t.build .. "/tests/report_cut '" .. p ..
                                      "' 2>&1", 120)))
  local msg = h:read("*a")
  local okc = h:close()
  t.ok(msg:match("^ok"), "every prefix of " .. p:match("[^/]*$") ..
       " in process", msg)
end

os.execute("rm -rf '" .. TMP .. "'")
t.done()
