-- ljmemprof.busted: memory checks for busted test suites.
--
--   busted --lua=luajit --helper=ljmemprof.busted [-Xhelper OPTIONS] spec/
--
-- Each test's body is recorded with call stacks (the ljmemprof agent) and
-- ends with a full garbage collection; then `ljmemprof check` judges the
-- profile. A test fails when it leaks (blocks its body made that are still
-- reachable after the collection, more bytes than the leak limit) or when
-- its peak (the most bytes its body held at once) passes the peak limit.
-- The failure message names the lines that made the excess, with their
-- call stacks and bytes; busted's outputs (utfTerminal, TAP, junit) carry
-- it as they carry any failure.
--
-- Options (-Xhelper, comma-separated):
--   leak=SIZE     most bytes a test may leak (default 0; none: no check)
--   peak=SIZE     most bytes a test's peak may reach (default none)
--   repeat=N      run each body N times (default 1): the first run is not
--                 recorded and warms what is cached once (a module loaded
--                 lazily, a memoised value); the other N-1 are checked
--   stacks=N      frames per call stack (default 64)
--   all           count the VM's own blocks (INTERNAL) as leaked too
--   save=DIR      keep the profile of each failing test in DIR, as
--                 DIR/<file>-<line>.ljm (for `ljmemprof report`)
--   cli=PATH      the ljmemprof command (default $LJMEMPROF_CLI, or
--                 ljmemprof in PATH)
-- SIZE is digits with an optional K, M or G (powers of 1024).
--
-- Inside a test, for that test alone (the helper's table, also the global
-- `memory` unless the program has one):
--   memory.limit("10M")     the peak limit
--   memory.no_leaks()       leak limit 0
--   memory.max_leak("4K")   leak limit
--
-- What is recorded is the test's body: before_each, after_each and
-- finally() run outside it. A test that starts ljmemprof itself cannot be
-- checked (the profiler runs already): it fails saying so.

local mp = require("ljmemprof")

local M = {}

-- -- Options -----------------------------------------------------------------

-- Whether s is a size as `ljmemprof check` takes it (no capture: inside a
-- test, checking it must not allocate).
local function is_size(s)
  return type(s) == "string" and s:find("^%d+[KkMmGg]?$") ~= nil or
         type(s) == "number" and s >= 0 and s % 1 == 0
end

-- A limit's value: false for "none", else the size as a string for
-- `ljmemprof check`; raises a clear error.
local function limit_value(name, v)
  if v == "none" then return false end
  if not is_size(v) then
    error(("ljmemprof.busted: %s=%s: a size expected (digits with an "
      .. "optional K, M or G, or none)"):format(name, tostring(v)), 0)
  end
  return v
end

local opts = { leak = "0", peak = false, rep = 1, stacks = 64, all = false,
               save = nil, cli = os.getenv("LJMEMPROF_CLI") or "ljmemprof" }

-- Read the -Xhelper options busted left in arg.
local function read_options(args)
  for _, a in ipairs(args or {}) do
    local k, v = a:match("^([%w_]+)=(.*)$")
    k = k or a
    if k == "leak" and v then opts.leak = limit_value(k, v)
    elseif k == "peak" and v then opts.peak = limit_value(k, v)
    elseif k == "repeat" and v then
      opts.rep = tonumber(v:match("^%d+$") or "")
      if not opts.rep or opts.rep < 1 then
        error("ljmemprof.busted: repeat=" .. v .. ": a number of runs "
          .. "(1 or more) expected", 0)
      end
    elseif k == "stacks" and v then
      opts.stacks = tonumber(v:match("^%d+$") or "")
      if not opts.stacks or opts.stacks < 1 or opts.stacks > 10000 then
        error("ljmemprof.busted: stacks=" .. v .. ": frames from 1 to "
          .. "10000 expected", 0)
      end
    elseif k == "all" and not v then opts.all = true
    elseif k == "save" and v and v ~= "" then opts.save = v
    elseif k == "cli" and v and v ~= "" then opts.cli = v
    else
      error("ljmemprof.busted: unknown option '" .. a .. "' (options: "
        .. "leak=SIZE, peak=SIZE, repeat=N, stacks=N, all, save=DIR, "
        .. "cli=PATH)", 0)
    end
  end
end

-- -- Per test ----------------------------------------------------------------

local current	-- The limits of the test running, or nil.

local function in_test(fname)
  if not current then
    error("ljmemprof.busted: memory." .. fname .. "() is for inside a test",
      3)
  end
end

-- The peak limit of this test.
function M.limit(size)
  in_test("limit")
  current.peak = limit_value("memory.limit", size)
end

-- Leak limit 0 for this test.
function M.no_leaks()
  in_test("no_leaks")
  current.leak = "0"
end

-- The leak limit of this test.
function M.max_leak(size)
  in_test("max_leak")
  current.leak = limit_value("memory.max_leak", size)
end

-- -- Checking ----------------------------------------------------------------

-- s quoted for sh.
local function shq(s)
  return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end

-- Run `ljmemprof check` on path with the test's limits: ok (true or
-- false) and the message, or nil and an error.
local function check(path, lim)
  local cmd = { shq(opts.cli), "check", "-H", "--top", "5",
                "--max-leak", lim.leak and shq(lim.leak) or "none",
                "--max-peak", lim.peak and shq(lim.peak) or "none" }
  if opts.all then cmd[#cmd + 1] = "--all" end
  cmd[#cmd + 1] = shq(path)
  local f = io.popen(table.concat(cmd, " ") .. " 2>&1")
  if not f then return nil, "cannot run " .. opts.cli end
  local out = f:read("*a")
  f:close()
  if out:match("^ok: ") then return true, out end
  if out:match("^over the limit: ") then return false, out end
  return nil, ("%s check failed: %s"):format(opts.cli,
    out ~= "" and out or "no output (is it installed? -Xhelper cli=PATH)")
end

-- check's output without the frames below the test's body (busted's own
-- and this helper's): a stack's frames are the lines that start with two
-- tabs, innermost first, and the body was called from the pcall in
-- checked().
local function trim_stacks(out)
  local lines, cut = {}, false
  for l in out:gmatch("([^\n]*)\n") do
    local frame = l:match("^\t\t(.*)$")
    if not frame then
      cut = false
    elseif frame:find("ljmemprof/busted.lua:", 1, true) then
      cut = true
      if lines[#lines] == "\t\tpcall" then lines[#lines] = nil end
    end
    if not cut then lines[#lines + 1] = l end
  end
  while lines[#lines] == "" do lines[#lines] = nil end
  return table.concat(lines, "\n")
end

-- A file name for the profile of test element in opts.save.
local function saved_name(element)
  local t = element.trace or {}
  local src = tostring(t.short_src or "test"):gsub("[^%w%._-]", "_")
  return ("%s/%s-%s.ljm"):format(opts.save, src,
    tostring(t.currentline or 0))
end

local STOP = { collect = true }	-- Made before recording: not in it.

-- "file:line: " of test element, so that busted shows the test's place,
-- not the helper's.
local function where(element)
  local t = element.trace or {}
  return ("%s:%s: "):format(tostring(t.short_src or "?"),
    tostring(t.currentline or 0))
end

-- Run body (the test's function) as the helper checks it, raising a
-- busted failure when it is over a limit.
local function checked(busted, element, body, ...)
  local lim = { leak = opts.leak, peak = opts.peak }
  current = lim
  for _ = 2, opts.rep do	-- Warm-up runs, not recorded.
    local ran, err = pcall(body, ...)
    if not ran then current = nil; error(err, 0) end
  end
  local path = os.tmpname()
  local start = { path = path, stacks = opts.stacks }
  current = lim
  local ok, why = mp.start(start)
  if not ok then
    current = nil
    os.remove(path)
    error(where(element) .. "ljmemprof.busted: cannot record the test: "
      .. tostring(why), 0)
  end
  local ran, err = pcall(body, ...)	-- Nothing made here: no table.
  local stopped, serr = mp.stop(STOP)
  current = nil
  if not ran then	-- The test's own failure comes first.
    os.remove(path)
    error(err, 0)
  end
  if not stopped then
    os.remove(path)
    error(where(element) .. "ljmemprof.busted: recording failed: "
      .. tostring(serr), 0)
  end
  local within, msg = check(path, lim)
  if within == nil then
    os.remove(path)
    error(where(element) .. "ljmemprof.busted: " .. msg, 0)
  end
  if not within and opts.save then
    local dest = saved_name(element)
    if os.rename(path, dest) then
      msg = msg .. "profile: " .. dest .. "\n"
      path = nil
    end
  end
  if path then os.remove(path) end
  if not within then
    busted.fail(where(element) .. "ljmemprof: memory " .. trim_stacks(msg), 0)
  end
end

-- -- Installing --------------------------------------------------------------

local wrapped = setmetatable({}, { __mode = "k" })

-- Put the check around each test's body as it starts: busted reads
-- element.run after publishing {'test', 'start'}.
local function install(busted)
  busted.subscribe({ "test", "start" }, function(element)
    if not wrapped[element] then
      local body = element.run
      wrapped[element] = body
      element.run = function(...) return checked(busted, element, body, ...) end
    end
    return nil, true
  end)
end

read_options(arg)
local ok, busted = pcall(require, "busted")
if not ok or type(busted) ~= "table" or not busted.subscribe then
  error("ljmemprof.busted is a busted helper: busted --helper=ljmemprof.busted",
    0)
end
install(busted)
if rawget(_G, "memory") == nil then rawset(_G, "memory", M) end

return M
