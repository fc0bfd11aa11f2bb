#!/usr/bin/env luajit
-- `ljmemprof report --format json` against its schema (docs/report.schema.json)
-- for profiles of every kind of source, and against the text report of the
-- same profile: the same sections, rows, labels, counts and bytes.
package.path = "tests/lib/?.lua;" .. package.path
local t = require("tap")
local cjson = require("cjson")

local TMP = assert(io.popen("mktemp -d \"${TMPDIR:-/tmp}/ljmp-json.XXXXXX\""))
  :read("*l")

local function slurp(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

local function write(path, text)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end

local function run(cmd)
  local f = assert(io.popen(t.timeout(cmd) .. "; echo \"rc=$?\""))
  local out = f:read("*a")
  f:close()
  return (out:gsub("rc=%d+\n$", "")), tonumber(out:match("rc=(%d+)\n$"))
end

-- -- A validator for the subset of JSON Schema the schema uses ----------------

local schema = cjson.decode(slurp("docs/report.schema.json"))

local function typeof(v)
  local ty = type(v)
  if ty == "table" then
    if next(v) == nil then return "empty" end
    return rawget(v, 1) ~= nil and "array" or "object"
  end
  if ty == "number" then return v == math.floor(v) and "integer" or "number" end
  return ty
end

-- Errors of value v against schema node s, appended to errs with a path.
local function check(v, s, path, errs)
  if s["$ref"] then
    s = schema["$defs"][s["$ref"]:match("^#/%$defs/(.+)$")]
  end
  local ty = typeof(v)
  local function err(msg) errs[#errs + 1] = path .. ": " .. msg end
  if s.oneOf then	-- Exactly one of the alternatives.
    local n = 0
    for _, alt in ipairs(s.oneOf) do
      local e = {}
      check(v, alt, path, e)
      if #e == 0 then n = n + 1 end
    end
    if n ~= 1 then err("matches " .. n .. " of oneOf, want 1") end
  end
  if s.const ~= nil and v ~= s.const then err("not " .. tostring(s.const)) end
  if s.enum then
    local found = false
    for _, e in ipairs(s.enum) do found = found or e == v end
    if not found then err("not one of the enum: " .. tostring(v)) end
  end
  if s.type then
    local want = s.type
    local okt = ty == want or (ty == "empty" and (want == "array" or
                                                  want == "object"))
      or (want == "number" and ty == "integer")
    if not okt then err("type " .. ty .. ", want " .. want) return end
  end
  if s.minimum and type(v) == "number" and v < s.minimum then
    err(v .. " below " .. s.minimum)
  end
  if s.pattern and type(v) == "string" then
    local lp = s.pattern:gsub("%[0%-9%]", "%%d")
    if not v:match(lp) then err("'" .. v .. "' does not match " .. s.pattern) end
  end
  if ty == "object" or (ty == "empty" and s.type == "object") then
    for _, k in ipairs(s.required or {}) do
      if v[k] == nil then err("missing " .. k) end
    end
    for k, x in pairs(v) do
      local ps = s.properties and s.properties[k]
      if ps then check(x, ps, path .. "." .. k, errs)
      elseif s.additionalProperties == false then err("unexpected " .. k) end
    end
  end
  if (ty == "array" or ty == "empty") and s.items then
    for i, x in ipairs(v) do check(x, s.items, path .. "[" .. i .. "]", errs) end
  end
end

local function validate(doc)
  local errs = {}
  check(doc, schema, "$", errs)
  return errs
end

-- -- Profiles ---------------------------------------------------------------

write(TMP .. "/kinds.lua", [[
jit.opt.start("hotloop=2")
local mp = require("ljmemprof")
local cjson = require("cjson")
local f = loadstring("return {}\n"); local g = loadstring("return {1}", "tbl")
collectgarbage(); collectgarbage("stop")
assert(mp.start(arg[1]))
local keep = {}
for i = 1, 50 do keep[i] = { i } end
keep.s = cjson.encode({ a = string.rep("x", 100) })
keep.f = f(); keep.g = g()
-- A builtin at the bottom of a coroutine: called from nowhere, internal.
keep.co = coroutine.wrap(string.rep)("z", 300)
keep = nil
collectgarbage()
assert(mp.stop())
]])
local kinds = TMP .. "/kinds.ljm"
assert(os.execute(t.timeout("cd '" .. TMP .. "' && LUA_CPATH='" ..
                            t.build_abs() .. "/?.so;;' luajit kinds.lua kinds.ljm")) == 0)

local profiles = { kinds, "tests/fixtures/tarantool-v3-tiny.ljm" }

-- The same program with call stacks: its report and its CALL STACKS view.
local stacks = TMP .. "/kinds-stacks.ljm"
write(TMP .. "/kinds-stacks.lua", (slurp(TMP .. "/kinds.lua"):gsub(
  "mp%.start%(arg%[1%]%)", "mp.start{ path = arg[1], stacks = 16 }")))
assert(os.execute(t.timeout("cd '" .. TMP .. "' && LUA_CPATH='" ..
                            t.build_abs() .. "/?.so;;' luajit kinds-stacks.lua " ..
                            "kinds-stacks.ljm")) == 0)
local _, info_rc = run(t.build .. "/ljmemprof info '" .. stacks .. "' 2>/dev/null")
t.is(info_rc, 0, "the stack profile reads")
profiles[#profiles + 1] = stacks

-- And with native memory (cjson's buffer): sources with heap = native.
-- JIT off: the JIT's machine code area made this profile's peak a tie
-- for --peak's rounded percentage (6.25%), which LuaJIT's string.format
-- and C's printf round apart.
local native = TMP .. "/kinds-native.ljm"
write(TMP .. "/kinds-native.lua", (slurp(TMP .. "/kinds.lua"):gsub(
  "mp%.start%(arg%[1%]%)", "mp.start{ path = arg[1], native = true }"):gsub(
  'jit%.opt%.start%("hotloop=2"%)', "jit.off()")))
assert(os.execute(t.timeout("cd '" .. TMP .. "' && LUA_CPATH='" ..
                            t.build_abs() .. "/?.so;;' luajit kinds-native.lua " ..
                            "kinds-native.ljm")) == 0)
profiles[#profiles + 1] = native

-- Parse the text report into comparable lines.
local function text_rows(text)
  local rows, section, sub = {}, nil, "over"
  for line in text:gmatch("([^\n]*)\n") do
    if not line:match("^\t\t") then sub = "over" end
    if line:match("^[A-Z][A-Z ]+:?$") then section = line
    elseif line:match("^HEAP SUMMARY: ") then section = "HEAP SUMMARY:"
    elseif line:match("^PEAK: ") then section = "PEAK"
    elseif line:match("^TEMPORARY: ") then section = "TEMPORARY"
    elseif line:match("^MEMORY: ") then  -- Native profiles: one line.
      section = "MEMORY"
      rows[#rows + 1] = line
    elseif line:match("^CALL STACKS") then section = "CALL STACKS"
    elseif section == "CALL STACKS" then  -- Not rows of the sections.
    elseif line == "\tLines in the trace (allocations and reallocations):" then
      sub = "in"	-- A trace's lines (with --stacks).
    elseif line:match("^\t\t") then
      rows[#rows + 1] = section .. " " .. sub .. " " .. line:sub(3)
    elseif line:match("^%.%.%. and %d+ more source") then
      -- What --top left out: JSON has no such row (checked elsewhere).
    elseif line ~= "" and not line:match("^\t") and
           section ~= "ALIASES:" and section ~= "NOTES:" then
      rows[#rows + 1] = section .. " " .. line
    end
  end
  return table.concat(rows, "\n")
end

-- The overrides of a row that the text shows with --top top (0: all):
-- JSON lists them all, in the text's order; past top, the text keeps the
-- top ones of the most bytes (by count: of the most blocks; then the
-- other measure, then that order), in that order, and says how many more.
local function shown_overrides(list, top, bycount)
  if top == 0 or #list <= top then return list end
  local idx = {}
  for i = 1, #list do idx[i] = i end
  local function key(i)
    local o = list[i]
    if bycount then return o.blocks, o.free_bytes end
    return o.free_bytes, o.blocks
  end
  table.sort(idx, function(a, b)
    local a1, a2 = key(a)
    local b1, b2 = key(b)
    if a1 ~= b1 then return a1 > b1 end
    if a2 ~= b2 then return a2 > b2 end
    return a < b
  end)
  local keep = {}
  for k = 1, top do keep[k] = idx[k] end
  table.sort(keep)
  local out = {}
  for k, i in ipairs(keep) do out[k] = list[i] end
  out[#out + 1] = { source = { label = "... and " .. (#list - top) .. " more" } }
  return out
end

-- The same lines from the JSON document (the text's options: top, sorted
-- by count).
local SECTIONS = { { "allocations", "ALLOCATIONS" },
                   { "reallocations", "REALLOCATIONS" },
                   { "deallocations", "DEALLOCATIONS" } }
local function json_rows(doc, top, bycount)
  local rows = {}
  for _, s in ipairs(SECTIONS) do
    for _, r in ipairs(doc[s[1]] or {}) do
      rows[#rows + 1] = string.format("%s %s: %d events\t+%dB\t-%dB", s[2],
        r.source.label, r.events, r.alloc_bytes, r.free_bytes)
      local tl = r.trace_lines or {}
      for i = 1, (top > 0 and #tl > 10) and 10 or #tl do
        rows[#rows + 1] = string.format("%s in %s: %d events\t+%dB", s[2],
          tl[i].line, tl[i].events, tl[i].alloc_bytes)
      end
      if top > 0 and #tl > 10 then rows[#rows + 1] = s[2] .. " in ... and " .. (#tl - 10) .. " more" end
      for _, o in ipairs(shown_overrides(r.overrides or {}, top, bycount)) do
        rows[#rows + 1] = s[2] .. " over " .. o.source.label
      end
    end
  end
  for _, h in ipairs(doc.heap_summary) do
    if doc.accounting == "tarantool" then
      rows[#rows + 1] = string.format("HEAP SUMMARY: %s holds %dB: %d allocs, %d frees",
        h.source.label, h.bytes, h.allocs, h.frees)
    else
      rows[#rows + 1] = string.format("HEAP SUMMARY: %s holds %dB in %d block%s (%.1f%%)",
        h.source.label, h.bytes, h.blocks, h.blocks == 1 and "" or "s",
        100 * h.bytes / doc.live.bytes)
    end
  end
  local m = doc.memory
  if m then
    local mc = m.jit_mcode_bytes ~= nil
    rows[#rows + 1] = string.format("MEMORY: RSS %dB at the end (at most %dB at a " ..
      "time mark): VM heap %dB and native %dB live (allocated within the profile), " ..
      "%sthe rest %dB (allocator caches and fragmentation, %sstacks, " ..
      "mapped files, and what was allocated before the start)", m.rss_bytes,
      m.rss_max_bytes, m.vm_live_bytes, m.native_live_bytes,
      mc and string.format("JIT machine code %dB mapped, ", m.jit_mcode_bytes) or "",
      m.rest_bytes, mc and "" or "machine code, ")
  end
  for _, h in ipairs(doc.peak_sources or {}) do
    rows[#rows + 1] = string.format("PEAK %s holds %dB in %d block%s (%.1f%%)",
      h.source.label, h.bytes, h.blocks, h.blocks == 1 and "" or "s",
      100 * h.bytes / doc.peak.bytes)
  end
  for _, h in ipairs(doc.temporary_sources or {}) do
    rows[#rows + 1] = string.format("TEMPORARY %s: %d of %d blocks\t%dB of %dB",
      h.source.label, h.blocks, h.made_blocks, h.bytes, h.made_bytes)
  end
  return table.concat(rows, "\n")
end

local seen_kinds = {}
for _, p in ipairs(profiles) do
  local name = p:match("[^/]*$")
  for _, opts in ipairs({ "", "--leak-only", "--sort count --top 2",
                          "--stacks-per-source --metric leak-count",
                          "--peak --temporary 5", "--peak --stacks-per-source",
                          "--stacks-per-source --metric peak-count",
                          "--accounting tarantool",
                          "--leak-only --accounting tarantool" }) do
    local js, rc = run(t.build .. "/ljmemprof report --format json " .. opts ..
                       " '" .. p .. "'")
    local okj, doc = pcall(cjson.decode, js)
    t.ok(rc == 0 and okj, name .. " " .. opts .. ": valid JSON, status 0",
         tostring(doc))
    if okj then
      local errs = validate(doc)
      t.ok(#errs == 0, name .. " " .. opts .. ": matches the schema",
           table.concat(errs, "\n"))
      -- JSON lists every row unless told; the text 20 a section.
      local text = run(t.build .. "/ljmemprof report " .. opts ..
                       (opts:match("%-%-top") and "" or " --top 0") ..
                       " '" .. p .. "'")
      t.is(json_rows(doc, tonumber(opts:match("%-%-top (%d+)")) or 0,
                     opts:match("%-%-sort count") ~= nil), text_rows(text),
           name .. " " .. opts .. ": same rows as the text report (its " ..
           "Overrides cut at --top)")
      for _, s in ipairs(SECTIONS) do
        for _, r in ipairs(doc[s[1]] or {}) do seen_kinds[r.source.kind] = true end
      end
      if opts == "--leak-only" then
        t.ok(doc.allocations == nil and doc.deallocations == nil,
             name .. " --leak-only: no event sections")
      end
      if opts == "--peak --temporary 5" then
        t.ok(#doc.peak_sources > 0 and doc.temporary.window == 5,
             name .. " --peak --temporary 5: both views, the window")
      end
    end
  end
end
t.ok(seen_kinds.lua and seen_kinds.cfunc and seen_kinds.trace and
     seen_kinds.internal, "the profiles cover every kind of source")

-- Several profiles in one report.
do
  local js, rc = run(t.build .. "/ljmemprof report --format json --peak '" ..
                     kinds .. "' '" .. stacks .. "'")
  local okj, doc = pcall(cjson.decode, js)
  t.ok(rc == 0 and okj and #validate(doc) == 0 and #doc.files == 2 and
       doc.peak.profiles == 2, "two profiles merged: valid, their names, "
       .. "the peak the sum of 2", okj and table.concat(validate(doc), "\n")
       or tostring(doc))
end

-- Details a program needs, from the recorded profile.
local doc = cjson.decode((run(t.build .. "/ljmemprof report --format json '" ..
                              kinds .. "'")))
local by = {}
for _, r in ipairs(doc.allocations) do by[r.source.label] = r.source end
local c = by["cjson.encode"]
t.ok(c and c.kind == "cfunc" and c.name == "cjson.encode" and c.offset == 0
     and c.address > 0, "C function source: name, address, offset",
     cjson.encode(c or {}))
local a = by["function_alias_1:1"]
t.ok(a and a.chunk == "return {}\n" and a.alias == "function_alias_1" and
     a.line == 1 and a.function_line == 0,
     "aliased source: chunk text, alias, line", cjson.encode(a or {}))
t.is(doc.aliases[1] and doc.aliases[1].text, "return {}\n",
     "aliases list the text")
local g = by['[string "tbl"]:1']
t.is(cjson.encode(g and { g.chunk, g.alias or false, #doc.aliases } or {}),
     '["tbl",false,1]', "a chunk with a short name: labelled as Lua names " ..
     "it, its chunk the name, no alias")
local sdoc = cjson.decode((run(t.build .. "/ljmemprof report --stacks-per-source " ..
                               "--format json '" .. stacks .. "'")))
local sframe
for _, r in ipairs(sdoc.call_stacks.sources) do
  if r.label == '[string "tbl"]:1' then sframe = r.paths[1].frames[1] end
end
t.is(cjson.encode(sframe and { sframe.file, sframe["function"] } or {}),
     '["[string \\"tbl\\"]","main chunk"]',
     "a frame of a chunk with a short name: its file as labels name it, " ..
     "its function the main chunk")
local tr
for _, r in ipairs(doc.allocations) do
  if r.source.kind == "trace" then tr = r.source end
end
t.ok(tr and tr.trace >= 1 and tr.start_chunk == "@kinds.lua" and
     tr.start_line == 8 and tr.label == "TRACE [" .. tr.trace ..
     "] started at @kinds.lua:8", "trace source: number and start",
     cjson.encode(tr or {}))
t.is(doc.totals.alloc_events + doc.totals.realloc_events +
     doc.totals.free_events,
     tonumber((run(t.build .. "/ljmemprof events '" .. kinds ..
                   "' | grep -c '\"event\"'"))),
     "totals count every event")

-- info --format json: the same counts.
local info = cjson.decode((run(t.build .. "/ljmemprof info --format json '" ..
                               kinds .. "'")))
t.ok(info.complete == true and info.versions.events == 3 and
     info.events.alloc == doc.totals.alloc_events and
     info.events.realloc == doc.totals.realloc_events and
     info.events.free == doc.totals.free_events and
     info.alloc_bytes == doc.totals.alloc_bytes and
     info.free_bytes == doc.totals.free_bytes and
     info.net_bytes == info.alloc_bytes - info.free_bytes and
     info.peak_net_bytes >= info.net_bytes and
     info.symbols.lua + info.symbols.cfunc + info.symbols.trace ==
       info.symbols.in_header + info.symbols.in_stream and
     info.symbols.cfunc >= 1 and info.symbols.trace >= 1,
     "info --format json agrees with the report", cjson.encode(info))

-- A damaged profile whose sizes also overflow: status 3, and the fields
-- that say so match the schema.
local P = dofile("tests/lib/mkprof.lua")
local dmg = TMP .. "/damaged.ljm"
write(dmg, P.head() .. P.alloc(0x100, 2^62) .. P.alloc(0x200, 2^62) ..
      P.alloc(0x300, 2^62) .. "\255")
local js, drc = run(t.build .. "/ljmemprof report --format json '" .. dmg ..
                    "' 2>/dev/null")
local okd, ddoc = pcall(cjson.decode, js)
t.ok(drc == 3 and okd and ddoc.complete == false and ddoc.damaged == true and
     ddoc.overflow == true and ddoc.truncated_at == 15 + 3 * 12,
     "damaged and overflowing: complete false, damaged, overflow, the offset",
     js)
t.ok(okd and #validate(ddoc) == 0, "and it matches the schema",
     okd and table.concat(validate(ddoc), "\n") or "")

-- A merge of profiles sampled at different rates and not at all: each
-- rate in `rates`, no one `rate`, and the schema holds.
write(TMP .. "/sm.lua", "jit.off() local k = {} for i = 1, 5000 do k[i] = {i} end\n")
local sm = {}
for _, s in ipairs({ "--sample 4K", "--sample 64K", "" }) do
  sm[#sm + 1] = TMP .. "/sm" .. #sm .. ".ljm"
  run(t.build .. "/ljmemprof run " .. s .. " -o '" .. sm[#sm] .. "' '" .. TMP ..
      "/sm.lua' >/dev/null")
end
local mjs, mrc = run(t.build .. "/ljmemprof report --format json '" ..
                    table.concat(sm, "' '") .. "'")
local okm, mdoc = pcall(cjson.decode, mjs)
t.ok(mrc == 0 and okm and mdoc.sampled and mdoc.sampled.rate == nil and
     table.concat(mdoc.sampled.rates, ",") == "4096,65536,0",
     "a merge of 4K, 64K and unsampled: rates 4096,65536,0 and no rate", mjs)
t.ok(okm and #validate(mdoc) == 0, "and it matches the schema",
     okm and table.concat(validate(mdoc), "\n") or "")

-- The validator is not a rubber stamp.
local bad = cjson.decode((run(t.build .. "/ljmemprof report --format json '" ..
                              kinds .. "'")))
bad.heap_summary[1].bytes = nil
bad.allocations[1].source.kind = "python"
bad.extra = 1
t.is(#validate(bad), 3, "a broken document fails the schema three times")

os.execute("rm -rf '" .. TMP .. "'")
t.done()
