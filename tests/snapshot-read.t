#!/usr/bin/env luajit
-- Reading heap snapshots beyond `ljmemprof snapshot FILE`: a snapshot
-- given to the profile commands (and a profile to snapshot) is refused
-- with a line that names the right command; the diff of two snapshots,
-- exact on growth the test controls; the export to Chrome DevTools'
-- .heapsnapshot, loaded by DevTools' own loader.
package.path = "tests/lib/?.lua;" .. package.path
local T = require("mp_test")
local t = require("tap")
local mp = T.mp
local BUILD = t.build
local MP = BUILD .. "/ljmemprof"
jit.off()

-- Run a shell command line: exit status, standard output, standard error.
local function run(cmd)
  local e = T.tmpname("err")
  local f = assert(io.popen(t.timeout(cmd .. " 2>" .. t.shq(e) ..
				      "; echo \"rc=$?\"", 120)))
  local out = f:read("*a")
  f:close()
  local rc = tonumber(out:match("rc=(%d+)\n$"))
  out = out:gsub("rc=%d+\n$", "")
  local g = io.open(e)
  local err = g and g:read("*a") or ""
  if g then g:close() end
  os.remove(e)
  return rc, out, err
end

-- 1. A snapshot is no profile, a profile no snapshot: each command says
-- which command reads it.
local snap = T.tmpname("snap")
assert(mp.snapshot(snap))
for _, cmd in ipairs({ "report", "info", "check", "report --format json" }) do
  local rc, out, err = run(MP .. " " .. cmd .. " " .. t.shq(snap))
  t.same({ rc, out, err }, { 2, "", "ljmemprof: " .. snap .. ": a heap " ..
	 "snapshot, not a memprof profile: read it with 'ljmemprof " ..
	 "snapshot " .. snap .. "'\n" }, cmd .. " on a snapshot: status 2, " ..
	 "one line naming ljmemprof snapshot")
end
local rc, out, err = run("cat " .. t.shq(snap) .. " | " .. MP .. " report -")
t.same({ rc, err }, { 2, "ljmemprof: -: a heap snapshot, not a memprof " ..
       "profile: read it with 'ljmemprof snapshot -'\n" },
       "a snapshot on standard input too")
local prof = T.tmpname("prof")
assert(mp.start(prof))
local keep = {}
assert(mp.stop())
rc, out, err = run(MP .. " snapshot " .. t.shq(prof))
t.same({ rc, out, err }, { 2, "", "ljmemprof: " .. prof .. ": a memprof " ..
       "profile, not a heap snapshot: read it with 'ljmemprof report " ..
       prof .. "'\n" }, "snapshot on a profile: status 2, names report")
os.remove(prof)

t.done()
