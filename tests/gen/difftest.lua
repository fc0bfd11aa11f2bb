-- difftest.lua: the differential test of the agent's attribution.
--
-- Each generated program (luagen.lua) runs twice in this process under the
-- profiler, once with the JIT off (the oracle) and once with it on, and the
-- two profiles are compared (M.check below; tests/gen/README.md says why
-- each property holds).
--
--   local D = require("difftest")
--   local runner = D.new{ dir = "build" }     -- agent .so and CLI
--   local res = runner:run(seed)               -- res.failures: list
--
-- LJMP_AGENT_DIR=/path/to/build points the runner at another build (its
-- ljmemprof.so and its ljmemprof CLI).

local M = {}

-- -- Set-up ---------------------------------------------------------------

-- Chunk names of the standard library functions LuaJIT writes in Lua
-- (table.remove, string.len, math.deg, ...: lib_*.c, LJLIB_LUA). A trace
-- may start inside one of them (a loop in table.remove, an exit in it) and
-- go on with the program's code: such a trace is the program's.
-- BUILTIN_LUA[chunk] = the function's name ("table.move"), by its chunk
-- name and by the name the agent gives such a chunk ("=[builtin:move]").
local BUILTIN_LUA = {}
do
  local fi = require("jit.util").funcinfo
  for _, name in ipairs({ "string", "table", "math", "bit", "coroutine", "os", "io", "debug" }) do
    for k, f in pairs(_G[name]) do
      if type(f) == "function" then
        local info = fi(f)
        if info.source and info.source ~= "=[C]" and info.linedefined == -1 then
          BUILTIN_LUA[info.source] = name .. "." .. k
          BUILTIN_LUA["=[builtin:" .. info.source .. "]"] = name .. "." .. k
        end
      end
    end
  end
end
M.BUILTIN_LUA = BUILTIN_LUA

local Runner = {}
Runner.__index = Runner

-- The VM's string table doubles when it holds more strings than its mask
-- and halves at a full collection when it holds at most a quarter of it.
-- With ANCHORS strings always alive and the table grown once to 65536
-- slots, it stays at that size while a program creates up to ~40000 new
-- strings.
local ANCHORS, STRTAB = 17000, 65536

-- A runner: loads the agent from opts.dir, prepares what every run needs.
function M.new(opts)
  opts = opts or {}
  local dir = opts.dir or os.getenv("LJMP_AGENT_DIR") or os.getenv("BUILD") or "build"
  package.path = "tests/gen/?.lua;tests/lib/?.lua;" .. package.path
  package.cpath = dir .. "/?.so;" .. package.cpath
  local self = setmetatable({}, Runner)
  self.dir = dir
  self.cli = opts.cli or dir .. "/ljmemprof"
  self.mp = require("ljmemprof")
  self.cjson = require("cjson")
  self.gen = require("luagen")
  self.env = self.gen.env()
  self.tmp = opts.tmp or os.getenv("TMPDIR") or "/tmp"
  self.budget = opts.budget
  self.timeout = opts.timeout or 60
  -- The main stack is grown once to more than any program needs (a
  -- stack reallocation is billed to whatever call needs it first, which
  -- differs with the JIT on); so is the temporary string buffer.
  local big = {}
  for i = 1, 7500 do big[i] = i end
  self.big = big
  -- Strings kept alive so the VM's string table is never resized while a
  -- program runs (the resize is billed to whoever interns the string that
  -- crosses the threshold: the JIT compiler interns strings too).
  local anchors = {}
  for i = 1, ANCHORS do anchors[i] = "\1anchor" .. i end
  self.anchors = anchors
  do
    local tmp = {}
    for i = 1, STRTAB - ANCHORS do tmp[i] = "\1grow" .. i end
  end
  -- The log of the JIT compiler's events, filled by the vmevent handlers
  -- below without allocating (preallocated arrays).
  self.cap = opts.logcap or 60000
  local tnew = require("table.new")
  self.lk, self.lt, self.lf, self.lp, self.lx = tnew(self.cap, 0),
    tnew(self.cap, 0), tnew(self.cap, 0), tnew(self.cap, 0), tnew(self.cap, 0)
  for i = 1, self.cap do
    self.lk[i], self.lt[i], self.lf[i], self.lp[i], self.lx[i] = 0, 0, false, 0, 0
  end
  self.ln = 0
  self:attach()
  -- What kind of object each INTERNAL block is (see objkind.lua); checked
  -- on known objects first.
  self.objkind = require("objkind")
  self.sizes, self.objkind_error = self.objkind.selftest(self.mp, self.cli,
    string.format("%s/ljmp-diff-objkind-%d.bin", self.tmp, M.pid))
  return self
end

-- The vmevent handlers: a code, the trace number, the function and the
-- bytecode position of every trace start, stop, abort and recorded
-- instruction. They store into preallocated slots and existing fields only
-- and call nothing, so they never allocate nor grow the stack they run on
-- (the VM guarantees LUA_MINSTACK free slots to a handler) while a program
-- is profiled.
function Runner:attach()
  local lk, lt, lf, lp, lx, cap = self.lk, self.lt, self.lf, self.lp, self.lx, self.cap
  local runner = self
  self.overflow = false
  self.on_trace = function(what, tr, fn, pc, parent)
    local n = runner.ln + 1
    if n > cap then runner.overflow = true; return end
    runner.ln = n
    lt[n], lf[n], lp[n], lx[n] = tr, fn, pc, parent
    if what == "start" then lk[n] = 1
    elseif what == "stop" then lk[n] = 2
    elseif what == "abort" then lk[n] = 3
    else lk[n] = 4 end
  end
  self.on_record = function(tr, fn, pc)
    local n = runner.ln + 1
    if n > cap then runner.overflow = true; return end
    runner.ln = n
    lk[n], lt[n], lf[n], lp[n] = 5, tr, fn, pc
  end
  jit.attach(self.on_trace, "trace")
  jit.attach(self.on_record, "record")
end

-- -- One profiled run ------------------------------------------------------

-- Run fn(env) once under the profiler, the JIT on or off. The GC is
-- stopped while the profile records (so that the garbage collector's timing,
-- which differs with the JIT on, changes nothing), after a full collection
-- that frees what the previous run left behind.
function Runner:run_once(fn, jit_on, prog, path, stacks)
  local mp = self.mp
  jit.off()
  jit.flush()
  if jit_on then
    jit.on()	-- from off to on: the hot counters start afresh
    jit.opt.start("hotloop=" .. prog.hotloop, "hotexit=" .. prog.hotexit, unpack(self.jitopts or {}))
  end
  collectgarbage()
  collectgarbage()
  collectgarbage("stop")
  local _ = select("#", unpack(self.big))
  _ = string.rep("x", 65536)
  _ = nil
  self.ln, self.overflow = 0, false
  local started, err = mp.start(stacks and { path = path, stacks = stacks } or path)
  if not started then
    collectgarbage("restart")
    jit.off()
    return { error = "mp.start: " .. tostring(err) }
  end
  local before = collectgarbage("count")
  local ok, res = pcall(fn, self.env)
  local after = collectgarbage("count")
  local stopped, serr = mp.stop()
  local nlog = self.ln
  jit.off()
  local run = { ok = ok, res = res, delta = (after - before) * 1024,
    stopped = stopped, stop_error = serr, overflow = self.overflow }
  run.traces = self:trace_log(nlog, prog.chunk)
  -- What the blocks still alive are, while the GC is stopped and the
  -- traces exist: INTERNAL ones and the traces' with the JIT on, the lines' with
  -- it off (for the strings each line made).
  if stopped and self.sizes and not stacks then
    local blocks, err = self.objkind.live(self.cli, path, function(e)
      if jit_on then return e.source == "internal" or e.source == "trace" end
      return e.source == "lua" and e.chunk == prog.chunk
    end, self.sizes, self.timeout)
    -- The texts of the strings among blocks, by the value of an event
    -- field (the line that made them, the trace).
    local function strings_by(field)
      local by = {}
      for _, b in ipairs(blocks or {}) do
        if b.kind == "str" and b.event.source ~= "internal" then
          local k = b.event[field]
          by[k] = by[k] or {}
          by[k][b.text] = true
        end
      end
      return by
    end
    if jit_on then
      run.internal_error, run.trace_strings = err, strings_by("trace")
      if blocks then
        run.internal = {}
        for _, b in ipairs(blocks) do
          if b.event.source == "internal" then run.internal[#run.internal + 1] = b end
        end
      end
    else
      run.strings, run.strings_error = strings_by("line"), err
    end
  end
  jit.flush()
  collectgarbage("restart")
  return run
end

-- What the JIT compiler did: per completed trace number, the lines it
-- recorded in the program's chunk, whether it recorded code outside it, and
-- its parent (a side trace starts with the allocations its parent sank and
-- had not yet made at the exit: the lines they come from are its parent's);
-- and the counts of starts, stops and aborts.
function Runner:trace_log(n, chunk)
  local lk, lt, lf, lp, lx = self.lk, self.lt, self.lf, self.lp, self.lx
  local fi = require("jit.util").funcinfo
  local out = { starts = 0, stops = 0, aborts = 0, flushes = 0, by = {},
    overflow = self.overflow }
  local cur = {}	-- trace number -> attempt being recorded
  for i = 1, n do
    local k, tr = lk[i], lt[i]
    if k == 1 then
      out.starts = out.starts + 1
      cur[tr] = { lines = {}, outside = false, builtins = {},
        parent = type(lx[i]) == "number" and lx[i] > 0 and lx[i] or nil }
    elseif k == 5 then
      -- A builtin or C function being recorded (no bytecode position) is
      -- called from a recorded line; a Lua function of another chunk
      -- means code outside the program.
      local a = cur[tr]
      if a and lf[i] and lp[i] >= 0 then
        local info = fi(lf[i], lp[i])
        if info.source == chunk and info.currentline then
          a.lines[info.currentline] = true
        elseif BUILTIN_LUA[info.source] then
          a.builtins[BUILTIN_LUA[info.source]] = true
        elseif info.source ~= chunk then
          a.outside = true
        end
      end
    elseif k == 2 or k == 3 then
      if k == 2 then out.stops = out.stops + 1 else out.aborts = out.aborts + 1 end
      local a = cur[tr]
      cur[tr] = nil
      if a and k == 2 then
        -- A number completed twice (reused): the union of both.
        local t = out.by[tr]
        if not t then out.by[tr] = a
        else
          for l in pairs(a.lines) do t.lines[l] = true end
          for b in pairs(a.builtins) do t.builtins[b] = true end
          t.outside = t.outside or a.outside
          t.parents = t.parents or { t.parent }
          t.parents[#t.parents + 1] = a.parent
        end
      end
    elseif k == 4 then
      out.flushes = out.flushes + 1
    end
  end
  -- Each trace covers its own lines and those of its ancestors.
  local function closure(t, seen)
    local rec = out.by[t]
    if not rec or seen[t] then return end
    seen[t] = true
    for _, p in ipairs(rec.parents or { rec.parent }) do
      local prec = out.by[p]
      if not prec then
        rec.outside = true	-- a parent we know nothing of: any line
      else
        closure(p, seen)
        for l in pairs(prec.cover or prec.lines) do rec.cover[l] = true end
        for b in pairs(prec.builtins or {}) do rec.builtins[b] = true end
        rec.outside = rec.outside or prec.outside
      end
    end
  end
  for _, rec in pairs(out.by) do
    rec.cover = {}
    for l in pairs(rec.lines) do rec.cover[l] = true end
  end
  for t in pairs(out.by) do closure(t, {}) end
  return out
end

-- -- Reading a profile ---------------------------------------------------

-- Counts per source of a profile: `report --format json --top 0`.
function Runner:read_profile(path, prog)
  local cmd = string.format("timeout %d '%s' report --format json --top 0 '%s' 2>&1",
    self.timeout, self.cli, path)
  local f = assert(io.popen(cmd))
  local text = f:read("*a")
  local okc, _, code = f:close()
  local ok, doc = pcall(self.cjson.decode, text)
  if not ok or type(doc) ~= "table" then
    return nil, "cannot read the profile (" .. tostring(code or okc) .. "): " .. text:sub(1, 300)
  end
  local p = { lines = {}, traces = {}, internal = { a = 0, r = 0 },
    cfuncs = {}, host = {}, complete = doc.complete,
    net = doc.totals.alloc_bytes - doc.totals.free_bytes }
  local function bucket(src)
    if src.kind == "lua" and src.chunk == prog.chunk then
      local b = p.lines[src.line]
      if not b then b = { a = 0, r = 0 }; p.lines[src.line] = b end
      return b
    elseif src.kind == "trace" and (src.start_chunk == prog.chunk or BUILTIN_LUA[src.start_chunk]) then
      local b = p.traces[src.trace]
      if not b then b = { a = 0, r = 0, start = src.start_line }; p.traces[src.trace] = b end
      return b
    elseif src.kind == "internal" then
      return p.internal
    elseif src.kind == "cfunc" and src.name and prog.cfuncs[src.name] then
      local b = p.cfuncs[src.name]
      if not b then b = { a = 0, r = 0 }; p.cfuncs[src.name] = b end
      return b
    end
    local b = p.host[src.label]
    if not b then b = { a = 0, r = 0, kind = src.kind }; p.host[src.label] = b end
    return b
  end
  for _, e in ipairs(doc.allocations or {}) do
    local b = bucket(e.source)
    b.a = b.a + e.events
  end
  for _, e in ipairs(doc.reallocations or {}) do
    local b = bucket(e.source)
    b.r = b.r + e.events
  end
  return p
end

-- Bytes per line of the program in a stack profile: each event's innermost
-- line of the program's chunk (the line inside a trace, or the line that
-- called a builtin or C function), allocations and reallocations (new
-- sizes). `report --format collapsed`.
function Runner:read_stack_lines(path, prog)
  local cmd = string.format("timeout %d '%s' report --format collapsed '%s' 2>&1",
    self.timeout, self.cli, path)
  local f = assert(io.popen(cmd))
  local text = f:read("*a")
  local okc, _, code = f:close()
  if not okc then
    return nil, "cannot read the stack profile (" .. tostring(code) .. "): " .. text:sub(1, 300)
  end
  local by, pat = {}, "^" .. prog.chunk:gsub("%p", "%%%0") .. ":(%d+)"
  for stack, n in text:gmatch("([^\n]*) (%d+)\n") do
    local line
    for frame in stack:gmatch("[^;]+") do
      local l = frame:match(pat)
      if l then line = tonumber(l)
      elseif frame:find("^@") or frame:find("^TRACE %[") then line = nil end
    end
    if line then by[line] = (by[line] or 0) + tonumber(n) end
  end
  return by
end

-- -- Checks ----------------------------------------------------------------

-- Bipartite max flow: how much of the demand can the supplies meet?
-- supply[s] = capacity, demand[d] = amount, edges[d] = { s, ... } (the
-- supplies d may take from). Returns the total flow and, per demand, what
-- is left unmet. Edmonds-Karp: the graphs have a few hundred nodes.
local function maxflow(supply, demand, edges)
  local cap, adj = {}, {}
  local function arc(u, v, c)
    cap[u] = cap[u] or {}
    cap[v] = cap[v] or {}
    adj[u] = adj[u] or {}
    adj[v] = adj[v] or {}
    if cap[u][v] == nil then adj[u][#adj[u] + 1] = v; cap[u][v] = 0 end
    if cap[v][u] == nil then adj[v][#adj[v] + 1] = u; cap[v][u] = 0 end
    cap[u][v] = cap[u][v] + c
  end
  local BIG = 2 ^ 40
  for s, c in pairs(supply) do if c > 0 then arc("S", "s" .. s, c) end end
  for d, need in pairs(demand) do
    if need > 0 then
      arc("d" .. d, "T", need)
      for _, s in ipairs(edges[d] or {}) do
        if (supply[s] or 0) > 0 then arc("s" .. s, "d" .. d, BIG) end
      end
    end
  end
  local total = 0
  while adj.S and adj.T do
    local prev, queue, head = { S = "S" }, { "S" }, 1
    while head <= #queue and not prev.T do
      local u = queue[head]
      head = head + 1
      for _, v in ipairs(adj[u]) do
        if not prev[v] and cap[u][v] > 0 then
          prev[v] = u
          queue[#queue + 1] = v
        end
      end
    end
    if not prev.T then break end
    local k, v = BIG, "T"
    while v ~= "S" do
      local u = prev[v]
      if cap[u][v] < k then k = cap[u][v] end
      v = u
    end
    v = "T"
    while v ~= "S" do
      local u = prev[v]
      cap[u][v] = cap[u][v] - k
      cap[v][u] = cap[v][u] + k
      v = u
    end
    total = total + k
  end
  local unmet = {}
  for d, need in pairs(demand) do
    unmet[d] = need > 0 and cap["d" .. d].T or 0
  end
  return total, unmet
end
M.maxflow = maxflow

-- The keys of t, numbers first, sorted.
local function sorted_keys(t)
  local ks = {}
  for k in pairs(t) do ks[#ks + 1] = k end
  table.sort(ks, function(a, b)
    if type(a) == type(b) then return a < b end
    return type(a) == "number"
  end)
  return ks
end

-- "N alloc, M realloc" of a count pair.
local function fmt_counts(b)
  return string.format("%d alloc, %d realloc", b.a, b.r)
end

-- Compare the two runs of prog (see the README for what each property
-- means and why it holds); returns the list of failures, each
-- { prop = "P1", msg = "..." }.
function M.check(prog, off, on, poff, pon, runner)
  local fails = {}
  local function fail(prop, msg) fails[#fails + 1] = { prop = prop, msg = msg } end
  local lines = prog.lines
  local function src(l)
    return (prog.text[l] or "?"):gsub("^%s+", "")
  end

  -- B: the program behaves the same in both runs (else the generator or
  -- the VM is wrong, and nothing else can be compared).
  if not off.ok or not on.ok then
    fail("B", "the program raised an error: JIT off: " .. tostring(off.ok or off.res) ..
      "; JIT on: " .. tostring(on.ok or on.res))
    return fails
  end
  if off.res ~= on.res then
    fail("B", string.format("the program's checksum differs: JIT off %s, JIT on %s",
      tostring(off.res), tostring(on.res)))
  end
  for _, x in ipairs({ { "off", off, poff }, { "on", on, pon } }) do
    local mode, run, p = x[1], x[2], x[3]
    if not run.stopped then fail("C", "JIT " .. mode .. ": mp.stop() failed: " .. tostring(run.stop_error)) end
    if not p.complete then fail("C", "JIT " .. mode .. ": the profile is not complete") end
    -- C (exact): allocated - freed bytes = the VM's own counter.
    if p.net ~= run.delta then
      fail("C", string.format("JIT %s: allocated - freed = %d bytes, the VM's counter changed by %d",
        mode, p.net, run.delta))
    end
    -- H (exact): nothing is billed to the host: no Lua line or trace
    -- outside the program, no C function the program did not call.
    for _, label in ipairs(sorted_keys(p.host)) do
      local b = p.host[label]
      if b.a + b.r > 0 then
        fail("H", string.format("JIT %s: %s (%s, not the program's) billed %s",
          mode, label, b.kind, fmt_counts(b)))
      end
    end
  end

  -- P0 (the oracle itself, exact): with the JIT off nothing is INTERNAL
  -- (no compiler, the GC stopped), no trace is billed, and no line the
  -- generator knows allocates nothing has an event.
  if poff.internal.a + poff.internal.r > 0 then
    fail("P0", "JIT off: INTERNAL billed " .. fmt_counts(poff.internal))
  end
  if next(poff.traces) then fail("P0", "JIT off: a trace is billed") end
  for _, l in ipairs(sorted_keys(poff.lines)) do
    local m = lines[l]
    if not m or m.kind == "none" then
      fail("P0", string.format("JIT off: line %d (%s) billed %s: %s", l,
        m and "allocates nothing" or "not a line of the program", fmt_counts(poff.lines[l]), src(l)))
    end
  end

  -- P3 (exact): a C function the program calls is billed the same with
  -- the JIT on and off (C functions always run in the interpreter).
  local names = {}
  for k in pairs(poff.cfuncs) do names[k] = true end
  for k in pairs(pon.cfuncs) do names[k] = true end
  for _, name in ipairs(sorted_keys(names)) do
    local a, b = poff.cfuncs[name] or { a = 0, r = 0 }, pon.cfuncs[name] or { a = 0, r = 0 }
    if a.a ~= b.a or a.r ~= b.r then
      fail("P3", string.format("C function %s: JIT off %s, JIT on %s", name, fmt_counts(a), fmt_counts(b)))
    end
  end

  -- P1 (exact): with the JIT on a line is billed at most what it is billed
  -- with the JIT off (the interpreter runs a line's code the same way in
  -- both runs, compiled code is billed to its trace); in particular no
  -- line that allocates nothing with the JIT off.
  for _, l in ipairs(sorted_keys(pon.lines)) do
    local a, b = poff.lines[l] or { a = 0, r = 0 }, pon.lines[l]
    if b.a > a.a or b.r > a.r then
      fail("P1", string.format("line %d: JIT on %s > JIT off %s: %s", l, fmt_counts(b), fmt_counts(a), src(l)))
    end
  end

  -- P2: what lines lose with the JIT on goes to traces that recorded them.
  -- Traces that recorded code outside the chunk? Then the lines of
  -- the program they may hold are not known exactly: any line.
  local tr = on.traces
  -- A trace that recorded a builtin written in Lua (table.move) may have
  -- started inside it: it covers the lines that call it.
  local function covers(t, l)
    local rec = tr.by[t]
    if tr.overflow or rec == nil or rec.outside or rec.cover[l] then return true end
    for name in pairs(rec.builtins or {}) do
      if (prog.text[l] or ""):find(name .. "(", 1, true) then return true end
    end
    return false
  end
  for _, kind in ipairs({ "a", "r" }) do
    local kname = kind == "a" and "alloc" or "realloc"
    -- P2a: every event a non-table line loses is found on a trace that
    -- recorded the line (tables may be sunk: they may vanish).
    -- A string the JIT compiler made (folding constants) is INTERNAL; a
    -- line that makes the same string later finds it: it may explain one
    -- lost allocation of a line that made that string with the JIT off.
    -- So may a string a trace made where the interpreter makes none
    -- (seed 387421701: `s .. n` compiled converts n to a string, "33",
    -- and a later line's tostring(33) finds it): an edge from that line
    -- to that trace, whatever lines the trace recorded.
    local supply, demand, edges, lost = {}, {}, {}, 0
    for t, b in pairs(pon.traces) do supply[t] = b[kind] end
    local kstrings = {}
    if kind == "a" then
      for _, b in ipairs(on.internal or {}) do
        if b.kind == "str" then
          kstrings[#kstrings + 1] = b.text
          supply["k" .. #kstrings] = 1
        end
      end
    end
    for l, b in pairs(poff.lines) do
      local d = b[kind] - ((pon.lines[l] or {})[kind] or 0)
      local m = lines[l]
      if d > 0 and m and m.kind ~= "table" then
        demand[l] = d
        lost = lost + d
        edges[l] = {}
        local made = off.strings and off.strings[l]
        for t in pairs(pon.traces) do
          local ts = on.trace_strings and on.trace_strings[t]
          local shared = false
          if made and ts and kind == "a" then
            for text in pairs(ts) do
              if made[text] then shared = true; break end
            end
          end
          if covers(t, l) or shared then edges[l][#edges[l] + 1] = t end
        end
        table.sort(edges[l])
        for i, text in ipairs(kstrings) do
          if made and made[text] then edges[l][#edges[l] + 1] = "k" .. i end
        end
      end
    end
    local got, dem = maxflow(supply, demand, edges)
    if got < lost then
      -- Show each group of lines and traces linked by "recorded" that has
      -- unmet losses: lines with their counts, traces with their events.
      local parts, seen = {}, {}
      for _, l0 in ipairs(sorted_keys(demand)) do
        if dem[l0] > 0 and not seen[l0] then
          local ls, ts, todo, tseen = {}, {}, { l0 }, {}
          seen[l0] = true
          while #todo > 0 do
            local l = table.remove(todo)
            ls[#ls + 1] = l
            for _, t in ipairs(edges[l]) do
              if type(t) == "number" and not tseen[t] then
                tseen[t] = true
                ts[#ts + 1] = t
                for l2 in pairs(demand) do
                  if not seen[l2] then
                    for _, t2 in ipairs(edges[l2]) do
                      if t2 == t then seen[l2] = true; todo[#todo + 1] = l2; break end
                    end
                  end
                end
              end
            end
          end
          table.sort(ls)
          table.sort(ts)
          local unmet, ldesc, tdesc = 0, {}, {}
          for _, l in ipairs(ls) do
            unmet = unmet + dem[l]
            local ks = 0
            for _, t in ipairs(edges[l]) do if type(t) ~= "number" then ks = ks + 1 end end
            ldesc[#ldesc + 1] = string.format("line %d lost %d of %d%s: %s", l, demand[l],
              poff.lines[l][kind], ks > 0 and " (" .. ks .. " of its strings made by the compiler)" or "",
              src(l))
          end
          for _, t in ipairs(ts) do tdesc[#tdesc + 1] = "trace " .. t .. " billed " .. supply[t] end
          parts[#parts + 1] = string.format("%d unexplained among {%s} recorded by {%s}", unmet,
            table.concat(ldesc, "; "), #tdesc > 0 and table.concat(tdesc, ", ") or "no trace")
        end
      end
      fail("P2", string.format("%d %s events lost by lines are on no trace that recorded them: %s",
        lost - got, kname, table.concat(parts, " | ")))
    end
    -- Not checked: that what traces are billed matches what the lines they
    -- recorded lost. A trace may allocate more than the interpreter would:
    -- when a guard fails, the exit resumes at the last snapshot, which may
    -- come before an allocation the trace has already made, and that
    -- allocation is made again (seen: a loop whose root trace and side
    -- trace each made the iteration's table, one of them wasted).
  end

  -- P4: INTERNAL with the JIT on is the compiler's own work only. What
  -- the JIT compiler allocates (lj_trace.c, lj_record.c, lj_ffrecord.c,
  -- lj_opt_*.c, lj_ir.c, lj_snap.c): one GCtrace per completed trace;
  -- strings folded at compile time (IR constants); its IR, snapshot and
  -- snapshot-map buffers and trace array, replaced when they grow; one
  -- vector per loop optimisation, freed at once. Nothing else: tables,
  -- closures, threads, upvalues are the program's (made by a line, a
  -- builtin it calls, or a trace and its exits).
  if on.internal_error or off.strings_error or not on.internal or not off.strings then
    fail("P4", "cannot type the blocks: " .. tostring(on.internal_error or off.strings_error or
      runner and runner.objkind_error))
  elseif on.internal then
    local kinds, freed = {}, 0
    for _, b in ipairs(on.internal) do kinds[b.kind] = (kinds[b.kind] or 0) + 1 end
    local live = #on.internal
    freed = pon.internal.a + pon.internal.r - live
    local bad = {}
    for _, k in ipairs({ "tab", "func", "thread", "upval", "proto", "udata", "cdata" }) do
      if kinds[k] then bad[#bad + 1] = kinds[k] .. " " .. k end
    end
    if #bad > 0 then
      fail("P4", "JIT on: INTERNAL holds program objects: " .. table.concat(bad, ", ") ..
        " (" .. fmt_counts(pon.internal) .. " INTERNAL in all)")
    end
    if (kinds.trace or 0) > tr.stops then
      fail("P4", string.format("JIT on: INTERNAL holds %d trace objects, %d traces were completed",
        kinds.trace, tr.stops))
    end
    if (kinds.raw or 0) > 4 then
      fail("P4", string.format("JIT on: INTERNAL holds %d blocks that are not GC objects (sizes %s); " ..
        "the JIT compiler keeps 4 (IR, snapshots, snapshot map, trace array)", kinds.raw,
        (function()
          local sz = {}
          for _, b in ipairs(on.internal) do if b.kind == "raw" then sz[#sz + 1] = b.event.nsize end end
          return table.concat(sz, " ", 1, math.min(#sz, 12))
        end)()))
    end
    local bound = 2 * tr.starts + 32
    if freed > bound then
      fail("P4", string.format("JIT on: %d INTERNAL blocks made and freed while the program ran, " ..
        "more than 2 per trace started + 32 = %d", freed, bound))
    end
  end
  return fails
end

-- -- A program, both runs ------------------------------------------------

-- Both runs of the program of a seed and the checks: { seed, prog, failures, ... }.
function Runner:run(seed)
  local res = self:run_prog(self.gen.generate(seed, { budget = self.budget }))
  res.seed = seed
  return res
end

-- A program written by hand: src, its chunk name, and per line its kind
-- ("none", "table", "alloc"; default "alloc"); the plain C functions it
-- calls; hotloop and hotexit for the JIT.
function M.program(src, chunk, kinds, opts)
  opts = opts or {}
  local text, lines = {}, {}
  for l in (src .. "\n"):gmatch("([^\n]*)\n") do
    text[#text + 1] = l
    lines[#text] = { kind = kinds and kinds[#text] or "alloc" }
  end
  local cfuncs = {}
  for _, c in ipairs(opts.cfuncs or {}) do cfuncs[c] = true end
  return { src = src, chunk = chunk, text = text, lines = lines, cfuncs = cfuncs,
    hotloop = opts.hotloop or 2, hotexit = opts.hotexit or 10, seed = 0 }
end

-- Both runs of a program and the checks.
function Runner:run_prog(prog)
  local res = { seed = prog.seed, prog = prog, failures = {} }
  local fn, err = loadstring(prog.src, prog.chunk)
  if not fn then
    res.failures[1] = { prop = "B", msg = "the program does not compile: " .. err }
    return res
  end
  local poff_path = string.format("%s/ljmp-diff-%d-%d-off.bin", self.tmp, prog.seed, M.pid)
  local pon_path = string.format("%s/ljmp-diff-%d-%d-on.bin", self.tmp, prog.seed, M.pid)
  local ps_path = string.format("%s/ljmp-diff-%d-%d-stk.bin", self.tmp, prog.seed, M.pid)
  local off = self:run_once(fn, false, prog, poff_path)
  local on = self:run_once(fn, true, prog, pon_path)
  local son = self:run_once(fn, true, prog, ps_path, 64)
  local can = require("bcalloc").chunk_lines(fn)
  fn = nil
  if off.error or on.error or son.error then
    res.failures[1] = { prop = "C", msg = off.error or on.error or son.error }
    return res
  end
  local slines, e3 = self:read_stack_lines(ps_path, prog)
  if not self.keep then os.remove(ps_path) end
  if not slines then
    res.failures[1] = { prop = "C", msg = e3 }
    return res
  end
  local poff, e1 = self:read_profile(poff_path, prog)
  local pon, e2 = self:read_profile(pon_path, prog)
  if not self.keep then
    os.remove(poff_path)
    os.remove(pon_path)
  end
  if not poff or not pon then
    res.failures[1] = { prop = "C", msg = e1 or e2 }
    return res
  end
  res.off, res.on, res.poff, res.pon, res.slines = off, on, poff, pon, slines
  res.failures = M.check(prog, off, on, poff, pon, self)
  -- L (exact): with the JIT on and call stacks, no bytes on a line whose
  -- bytecode cannot allocate: none of its instructions can
  -- (tests/lib/bcalloc.lua). The line inside a trace is found through its
  -- snapshots (mp_stack.c, map_ret()). (Not the generator's "none", which
  -- knows more: a call of math.max allocates nothing; the agent cannot
  -- tell a call that allocates from one that does not.)
  for _, l in ipairs(sorted_keys(slines)) do
    if slines[l] > 0 and can[l] ~= true then
      res.failures[#res.failures + 1] = { prop = "L", msg = string.format(
        "JIT on, stacks: line %d, which cannot allocate, billed %d bytes: %s",
        l, slines[l], ((prog.text[l] or "?"):gsub("^%s+", ""))) }
    end
  end
  return res
end

-- A process id for file names, without a C module: /proc/self/stat of
-- the shell run by io.popen gives the shell's pid; its parent is us.
M.pid = (function()
  local f = io.open("/proc/self/stat")
  if not f then return math.random(1, 1e9) end
  local pid = f:read("*l"):match("^(%d+)")
  f:close()
  return tonumber(pid)
end)()

-- Functions of the runner must never be compiled while a program is
-- profiled (a trace of the runner would be billed for nothing, and a
-- trace of the program must not return into the runner).
jit.off(Runner.run_once, true)
jit.off(Runner.trace_log, true)

return M
