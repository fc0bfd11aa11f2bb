-- tap.lua: a minimal TAP producer for the Lua tests.
--
--   local t = require("tap")
--   t.plan(3); t.is(got, want, "name"); t.ok(cond, "name"); t.done()
-- Failures print expected and actual values as TAP diagnostics.

local M = {}

-- The build under test: BUILD as make test sets it for a flavour (an
-- absolute path), else build/ (the default flavour's).
M.build = os.getenv("BUILD") or "build"

-- The same as an absolute path, for commands run in another directory.
function M.build_abs()
  if M.build:sub(1, 1) == "/" then return M.build end
  return assert(io.popen("pwd")):read("*l") .. "/" .. M.build
end
local n, failed, planned = 0, 0, nil

local function show(v)
  if type(v) == "string" then return string.format("%q", v) end
  return tostring(v)
end

function M.plan(k)
  planned = k
  io.write("1..", k, "\n")
end

function M.ok(cond, name, diag)
  n = n + 1
  io.write(cond and "ok " or "not ok ", n, " - ", name or "", "\n")
  if not cond then
    failed = failed + 1
    if diag then io.write("# ", (tostring(diag):gsub("\n", "\n# ")), "\n") end
  end
  return cond
end

function M.is(got, want, name)
  return M.ok(got == want, name,
              "expected: " .. show(want) .. "\n  actual: " .. show(got))
end

-- Compare two flat tables key by key.
function M.same(got, want, name)
  local diffs = {}
  for k, v in pairs(want) do
    if got[k] ~= v then diffs[#diffs + 1] = k .. ": expected " .. show(v) ..
      ", actual " .. show(got[k]) end
  end
  for k, v in pairs(got) do
    if want[k] == nil then diffs[#diffs + 1] = k .. ": unexpected " .. show(v) end
  end
  table.sort(diffs)
  return M.ok(#diffs == 0, name, table.concat(diffs, "\n"))
end

-- Quote s for /bin/sh.
function M.shq(s)
  return "'" .. s:gsub("'", "'\\''") .. "'"
end

-- The shell command that runs the command line cmd for at most secs
-- seconds (default 60; then it is killed and the status is 124): every
-- command a test starts that may wait goes through it, so that a test that
-- hangs fails instead of stalling the suite.
function M.timeout(cmd, secs)
  return "timeout -k 5 " .. (secs or 60) .. " sh -c " .. M.shq(cmd)
end

-- One check that could not run, said on its line (prove counts it as
-- skipped and shows the reason with -v).
function M.skip(name, why)
  n = n + 1
  io.write("ok ", n, " - ", name or "", " # SKIP ", why, "\n")
end

function M.skip_all(why)
  io.write("1..0 # SKIP ", why, "\n")
  os.exit(0)
end

function M.done()
  if not planned then io.write("1..", n, "\n") end
  io.stdout:flush()
  os.exit(failed == 0 and (planned == nil or planned == n) and 0 or 1)
end

return M
