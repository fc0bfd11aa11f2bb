#!/usr/bin/env luajit
-- A heap snapshot taken with a recording (issue 20): mp.stop{snapshot =},
-- the start's snapshot option, LJMEMPROF's snapshot= key and a signal's
-- stop; the recording's stream marks the snapshot with the numbers of the
-- snapshot's trailer (ljmemprof info lists them), so that the two join;
-- and the bad values of every front end.
package.path = "tests/lib/?.lua;" .. package.path
local T = require("mp_test")
local t = require("tap")
local mp = T.mp
local BUILD = t.build
local ENOENT, EINVAL = 2, 22
jit.off()

-- The header of a snapshot file as numbers (tests/snap_dump).
local function head(path)
  local f = assert(io.popen(BUILD .. "/tests/snap_dump " .. t.shq(path) ..
			    " 2>&1"))
  local line = f:read("*l") or ""
  f:close()
  local h = {}
  for k, v in line:gmatch("(%w+)=(%d+)") do h[k] = tonumber(v) end
  return h, line
end

-- The output of a command, and its status.
local function run(cmd)
  local f = assert(io.popen(t.timeout(cmd, 60) .. " 2>&1; echo \"rc=$?\""))
  local out = f:read("*a")
  f:close()
  local rc = tonumber(out:match("rc=(%d+)\n$"))
  return out:gsub("rc=%d+\n$", ""), rc
end

-- The snapshot: lines of `ljmemprof info`.
local function marks(prof)
  local out, rc = run(BUILD .. "/ljmemprof info " .. t.shq(prof))
  local m = {}
  for line in out:gmatch("[^\n]+") do
    if line:find("^snapshot:") then m[#m + 1] = line end
  end
  return m, rc
end

-- The mark of a snapshot as `info` says it, from the snapshot's header.
local function mark_of(name, h, ev)
  return ("snapshot:   %s taken after event %d: %d objects, %dB (the VM " ..
	  "counted %dB)"):format(name, ev, h.objects, h.bytes, h.gctotal)
end

-- The number of events of a profile (info's "events:").
local function events(prof)
  local out = run(BUILD .. "/ljmemprof info " .. t.shq(prof))
  return tonumber(out:match("events:%s+(%d+)"))
end

local dir = T.tmpname("join")
os.execute("mkdir -p " .. t.shq(dir))
local prof, snap = dir .. "/a.ljm", dir .. "/a.ljh"

-- stop{collect = true, snapshot = P}: after the collection, before the end.
t.is(mp.start({ path = prof, stacks = 8 }), true, "a recording with stacks")
cache = {}
for i = 1, 100 do cache[i] = { i } end
t.is(mp.stop({ collect = true, snapshot = snap }), true,
     "stop{collect = true, snapshot = P}: true")
local h = head(snap)
t.ok(h.objects and h.objects > 100, "the snapshot is written", h.objects)
local m, rc = marks(prof)
t.same({ rc, #m }, { 0, 1 }, "info: one snapshot")
t.is(m[1], mark_of("a.ljh", h, events(prof)),
     "the stream marks it, after its last event (the collection's), " ..
     "with the snapshot's own numbers")
local out = run(BUILD .. "/ljmemprof snapshot " .. t.shq(snap))
t.ok(out:find("HEAP SNAPSHOT " .. snap .. ": " .. h.objects .. " objects",
	      1, true), "ljmemprof snapshot reads it", out:sub(1, 200))

-- The start's option, taken by a plain stop(); a snapshot while recording
-- is marked where it was taken.
os.remove(snap)
t.is(mp.start({ path = prof, stacks = 4, snapshot = snap }), true,
     "start{snapshot = P}")
local during = dir .. "/during.ljh"
local keep = {}
for i = 1, 50 do keep[i] = { i } end
t.is(mp.snapshot(during), true, "mp.snapshot() while recording")
for i = 1, 50 do keep[i] = nil end
t.is(mp.stop(), true, "stop() takes the start's snapshot")
m = marks(prof)
local hd, ha = head(during), head(snap)
t.is(#m, 2, "two marks", table.concat(m, "\n"))
t.ok(m[1] and m[1]:find("^snapshot:   during%.ljh taken after event %d+: " ..
			hd.objects .. " objects, " .. hd.bytes .. "B"),
     "the first: the snapshot taken while recording", m[1])
t.is(m[2], mark_of("a.ljh", ha, events(prof)), "the second: at the stop")

-- A version-3 stream (one frame per event) is not marked: Tarantool's
-- parser reads it as it is.
t.is(mp.start({ path = prof, snapshot = snap }), true, "a version-3 recording")
t.is(mp.stop(), true, "stop")
m = marks(prof)
t.same({ #m, head(snap).objects ~= nil }, { 0, true },
       "version 3: the snapshot is taken, the stream has no mark")

-- A snapshot that fails: the recording ends all the same, complete.
t.is(mp.start({ path = prof, stacks = 4 }), true, "start")
local r, msg, errno = mp.stop({ snapshot = "/nonexistent-dir/x.ljh" })
t.same({ r, msg, errno },
       { nil, "/nonexistent-dir/x.ljh: No such file or directory", ENOENT },
       "stop with a snapshot it cannot write: nil, message, errno")
t.same({ mp.running(), select(2, run(BUILD .. "/ljmemprof info " ..
					     t.shq(prof))) },
       { false, 0 }, "the recording ended, its profile complete")

-- Bad values, as the other options' are.
local ok, err = pcall(mp.stop, { snapshot = 5 })
t.is(err, "bad argument #1 to 'stop' (options.snapshot must be a string)",
     "stop{snapshot = 5}")
ok, err = pcall(mp.stop, { snap = snap })
t.is(err, "bad argument #1 to 'stop' (unknown option 'snap'; options are " ..
	  "collect, snapshot)", "stop: the options it takes, from the table")
ok, err = pcall(mp.stop, { snapshot = "" })
t.is(err, "bad argument #1 to 'stop' (snapshot is empty)",
     "stop{snapshot = ''}")
ok, err = pcall(mp.start, { path = prof, snapshot = dir .. "/x%q" })
t.is(err, "bad argument #1 to 'start' (snapshot '" .. dir .. "/x%q': % " ..
	  "must be followed by p (the pid), n (the number of the start) or %)",
     "start{snapshot = 'x%q'}")
t.is(mp.running(), false, "nothing started")

-- LJMEMPROF: snapshot= is a key; the program's stop() takes it.
local env = "LUA_CPATH=" .. t.shq(BUILD .. "/?.so;;")
os.remove(snap)
out, rc = run("env LJMEMPROF=" .. t.shq(prof .. ",stacks=4,snapshot=" .. snap) ..
	      " " .. env .. " luajit -joff -l ljmemprof -e " ..
	      t.shq("x = {} for i = 1, 10 do x[i] = {} end " ..
		    "assert(require('ljmemprof').stop())"))
t.same({ rc, out }, { 0, "" }, "LJMEMPROF=...,snapshot=P: the program runs")
h = head(snap)
t.is(marks(prof)[1], mark_of("a.ljh", h, events(prof)),
     "LJMEMPROF: the snapshot is taken at the stop, and marked")
-- LJMEMPROF's snapshot= with no stop in the program: the recording ends at
-- lua_close() (the script just ends), and the snapshot is taken there,
-- the VM still whole, and marked; the main chunk has returned, so only
-- what a global holds is reached.
os.remove(snap)
local prog = "x = {} for i = 1, 1000 do x[i] = { i } end local l = { 1 }"
out, rc = run("env LJMEMPROF=" .. t.shq(prof .. ",stacks=4,snapshot=" .. snap) ..
	      " " .. env .. " luajit -joff -l ljmemprof -e " .. t.shq(prog))
t.same({ rc, out }, { 0, "" }, "LJMEMPROF=...,snapshot=P, no stop: the " ..
       "program runs, says nothing")
h = head(snap)
t.is(marks(prof)[1], mark_of("a.ljh", h, events(prof)),
     "the snapshot is taken at lua_close, and marked")
out, rc = run(BUILD .. "/ljmemprof snapshot " .. t.shq(snap))
t.same({ rc, out:match("\n  (_G%.x%[%*%]: %d+ %a+), %d+B\n") },
       { 0, "_G.x[*]: 1000 tables" }, "ljmemprof snapshot reads it: the " ..
       "global's 1000 entries", out)
t.ok(out:find("^HEAP SNAPSHOT [^\n]*\n  the VM counts %d+B: objects %d+B %+ " ..
	      "VM internals %d+B %+ not reached %d+B in %d+ objects? %(exact%)\n"),
     "at lua_close too, every byte the VM counts is accounted for", out)
out, rc = run(BUILD .. "/ljmemprof snapshot --profile " .. t.shq(prof) .. " " ..
	      t.shq(snap))
t.same({ rc, out:match("\n%s+%d+B%s+(%d+)  =%(command line%):1: 100%% held by _G%.x\n") },
       { 0, "1001" }, "joined: the line made the 1001 tables _G.x holds " ..
       "(itself and its entries)", out)
-- os.exit() without close: no snapshot can be taken (the VM is not
-- closed, and the exit handler may run anywhere): one line says so.
os.remove(snap)
out, rc = run("env LJMEMPROF=" .. t.shq(prof .. ",stacks=4,snapshot=" .. snap) ..
	      " " .. env .. " luajit -joff -l ljmemprof -e " ..
	      t.shq(prog .. " os.exit(3)"))
t.same({ rc, out, (io.open(snap)) }, { 3, "ljmemprof: " .. snap .. ": no heap " ..
       "snapshot written: the process exits without closing the Lua state " ..
       "(os.exit() without close); it is taken at stop(), a signal's stop " ..
       "or lua_close()\n", nil }, "os.exit(3): its status, one line, no file")
t.same({ select(2, run(BUILD .. "/ljmemprof info " .. t.shq(prof))),
	 #marks(prof) }, { 0, 0 }, "the profile complete, with no mark")
out, rc = run("env LJMEMPROF=" .. t.shq(prof .. ",stacks=4,snapshot=" .. snap) ..
	      " " .. env .. " luajit -joff -l ljmemprof -e " ..
	      t.shq(prog .. " os.exit(0, true)"))
t.same({ rc, out, head(snap).objects ~= nil }, { 0, "", true },
       "os.exit(0, true) closes the state: the snapshot is taken")
out, rc = run("env LJMEMPROF=" .. t.shq(prof .. ",stacks=4,snapshot=/nonexistent-dir/x.ljh") ..
	      " " .. env .. " luajit -joff -l ljmemprof -e " .. t.shq(prog))
t.same({ rc, out }, { 0, "ljmemprof: the snapshot at lua_close " ..
       "(/nonexistent-dir/x.ljh): No such file or directory\n" },
       "a snapshot that fails at lua_close: said on stderr")
for _, c in ipairs({
  { "snapshot=", "snapshot=: a path must follow '='" },
  { "snapshot=" .. dir .. "/s%x", "snapshot=" .. dir .. "/s%x: % must be " ..
    "followed by p (the pid), n (the number of the start) or %" },
}) do
  out, rc = run("env LJMEMPROF=" .. t.shq(prof .. "," .. c[1]) .. " " .. env ..
		" luajit -l ljmemprof -e 'x = 1'")
  t.ok(rc ~= 0 and out:find(c[2], 1, true), "LJMEMPROF " .. c[1] ..
       ": refused, saying why", out)
end

-- A signal: the first starts a recording, the second stops it and takes
-- the snapshot, numbered as the recordings are.
local sigprog = dir .. "/sig.lua"
local f = assert(io.open(sigprog, "w"))
f:write([[
local ffi = require("ffi")
ffi.cdef("int kill(int, int); int getpid(void);")
local mp = require("ljmemprof")
assert(mp.signal("USR2", { path = arg[1], stacks = 4, snapshot = arg[2] }))
local t = {}
for round = 1, 4 do
  ffi.C.kill(ffi.C.getpid(), 12)
  for i = 1, 2000 do t[i] = { round, i } end
end
]])
f:close()
local sp, ss = dir .. "/s.ljm", dir .. "/s.ljh"
out, rc = run(env .. " luajit -joff " .. t.shq(sigprog) .. " " .. t.shq(sp) ..
	      " " .. t.shq(ss))
t.same({ rc, out }, { 0, "" }, "four signals: the program runs")
local h1, h2 = head(ss), head(ss .. ".2")
t.ok(h1.objects and h2.objects, "two recordings, two snapshots (s.ljh, " ..
     "s.ljh.2)", tostring(h1.objects) .. " " .. tostring(h2.objects))
t.is(marks(sp)[1], mark_of("s.ljh", h1, events(sp)),
     "the first recording marks the first snapshot")
t.is(marks(sp .. ".2")[1], mark_of("s.ljh.2", h2, events(sp .. ".2")),
     "the second, the second")

os.execute("rm -rf " .. t.shq(dir))
t.done()
