#!/usr/bin/env luajit
-- The Lua API: start/stop/running, their errors (Tarantool's messages and
-- errno values), the default path and the misc.memprof shim.
package.path = "tests/lib/?.lua;" .. package.path
local T = require("mp_test")
local t = require("tap")
local mp = T.mp
local EINVAL, ENOENT, ENOSPC = 22, 2, 28

local function exists(path)
  local f = io.open(path, "rb")
  if f then f:close() end
  return f ~= nil
end

t.is(mp.running(), false, "not running at first")
local r, msg, errno = mp.stop()
t.same({ r, msg, errno }, { nil, "profiler is not running", EINVAL },
       "stop() when not running")

local p1, p2 = T.tmpname("api1"), T.tmpname("api2")
t.is(mp.start(p1), true, "start(path)")
t.is(mp.running(), true, "running() while running")
r, msg, errno = mp.start(p2)
t.same({ r, msg, errno }, { nil, "profiler is running already", EINVAL },
       "start() while running")
t.is(exists(p2), false, "the second path was not even created")
t.is(mp.stop(), true, "stop()")
t.is(mp.running(), false, "not running after stop")
local evs, complete = T.events(p1)
t.is(complete, true, "the stopped profile is complete")

-- Options table.
t.is(mp.start({ path = p2, bufsize = 4096 }), true, "start{path=, bufsize=}")
local junk = {}
for i = 1, 2000 do junk[i] = { i } end	-- several 4 KiB flushes
t.is(mp.stop(), true, "stop() after many small flushes")
evs, complete = T.events(p2)
t.is(complete, true, "complete with a 4 KiB buffer")
t.ok(#evs >= 2000, "all events of the small-buffer run", #evs)
os.remove(p1); os.remove(p2)

-- Errors of the OS come with the path and errno, nothing is left running.
r, msg, errno = mp.start("/nonexistent-dir/x.bin")
t.same({ r, msg, errno },
       { nil, "/nonexistent-dir/x.bin: No such file or directory", ENOENT },
       "path in a missing directory")
t.is(mp.running(), false, "not running after a failed start")
r, msg, errno = mp.start("/dev/full")
t.same({ r, msg, errno }, { nil, "/dev/full: No space left on device", ENOSPC },
       "unwritable sink is reported by start()")
t.is(mp.running(), false, "not running after a failed write at start")

-- Bad arguments raise, like any Lua function given the wrong types.
local function err_of(...)
  local ok, e = pcall(mp.start, ...)
  return ok and "no error" or e
end
-- Every argument error names the function, however it is called
-- (luaL_argerror would take the name from the call site: '?' through
-- pcall, a local's name through an alias).
local function errmsg(f, ...)
  local ok, e = pcall(f, ...)
  return ok and "no error" or e
end
local bad_start = "bad argument #1 to 'start' (path string or options " ..
                  "table expected)"
t.is(err_of(42), bad_start, "start(42)")
t.is(err_of(true), bad_start, "start(true)")
t.is(err_of(print), bad_start, "start(print)")
local alias = mp.start
t.is(errmsg(function() local _ = alias(42) end):gsub("^[^:]*:%d+: ", ""),
     bad_start, "start(42) through a local alias (after the caller's line)")
local bad_stop = "bad argument #1 to 'stop' (options table expected)"
t.is(errmsg(mp.stop, 1), bad_stop, "stop(1)")
t.is(errmsg(mp.stop, "collect"), bad_stop, "stop('collect')")
t.is(errmsg(mp.stop, { collect = 1 }), "bad argument #1 to 'stop' " ..
     "(options.collect must be a boolean)", "stop{collect = 1}")
local bad_signal = "bad argument #1 to 'signal' (a signal that can toggle " ..
  "the profiler expected (USR1, USR2, HUP, WINCH, URG, PWR, RTMIN+n, " ..
  "RTMAX-n, or its number))"
t.is(errmsg(mp.signal, {}), bad_signal, "signal({})")
t.is(errmsg(mp.signal), bad_signal, "signal()")
t.is(errmsg(mp.signal, "USR2", 5), "bad argument #2 to 'signal' (path " ..
     "string or options table expected)", "signal('USR2', 5)")
t.is(errmsg(mp.signal, "USR2", { mode = true }), "bad argument #2 to " ..
     "'signal' (options.mode must be a string of octal digits (\"644\") or " ..
     "a number)", "signal('USR2', {mode = true})")
t.ok(err_of({ path = 1 }):find("options.path must be a string"), "path type",
     err_of({ path = 1 }))
t.ok(err_of({ bufsize = 10 }):find("bufsize must be an integer"), "bufsize range",
     err_of({ bufsize = 10 }))
t.ok(err_of({ bufsize = "big" }):find("bufsize must be a number"), "bufsize type",
     err_of({ bufsize = "big" }))
-- An empty path is a bad argument, not "No such file or directory".
t.is(err_of(""), "bad argument #1 to 'start' (path is empty)", "start('')")
t.is(err_of({ path = "", stacks = 8 }),
     "bad argument #1 to 'start' (path is empty)", "start{path = ''}")
t.is(errmsg(mp.signal, "USR2", ""),
     "bad argument #2 to 'signal' (path is empty)", "signal('USR2', '')")
t.is(errmsg(mp.signal, "USR2", { path = "" }),
     "bad argument #2 to 'signal' (path is empty)", "signal('USR2', {path = ''})")
-- Sampled profiles record stacks: an explicit stacks = 0 (which would
-- record 64 frames) is refused, whichever key comes first.
local no_stacks = "(options.stacks = 0 cannot go with sample: sampled " ..
  "profiles record call stacks (leave stacks out for 64 frames, or give 1 " ..
  "to 10000))"
t.is(err_of({ path = "x.ljm", sample = 4096, stacks = 0 }),
     "bad argument #1 to 'start' " .. no_stacks, "start{sample = 4096, stacks = 0}")
t.is(err_of({ path = "x.ljm", stacks = false, sample = true }),
     "bad argument #1 to 'start' " .. no_stacks, "start{stacks = false, sample = true}")
t.is(errmsg(mp.signal, "USR2", { path = "x.ljm", sample = 4096, stacks = 0 }),
     "bad argument #2 to 'signal' " .. no_stacks, "signal('USR2', {sample = 4096, stacks = 0})")
t.is(mp.running(), false, "not running after bad arguments")

-- Default path: memprof.bin in the current directory.
local dir = T.tmp .. "/ljmp-default-" .. os.time()
os.execute("mkdir -p " .. dir)
local code = os.execute(string.format(
  "cd %s && LUA_CPATH='%s/?.so' luajit -e " ..
  "'local mp = require(\"ljmemprof\"); assert(mp.start()); " ..
  "local t = {} ; assert(mp.stop())'", dir, t.build_abs()))
t.is(code, 0, "start() with no argument works")
t.is(mp.DEFAULT_PATH, "memprof.bin", "DEFAULT_PATH")
t.is(exists(dir .. "/memprof.bin"), true, "start() wrote ./memprof.bin")
os.execute("rm -rf " .. dir)

-- The Tarantool shim.
local misc = mp.compat()
t.is(misc, _G.misc, "compat() returns the global misc table")
local p3 = T.tmpname("misc")
t.is(misc.memprof.start(p3), true, "misc.memprof.start")
r, msg, errno = misc.memprof.start(p3)
t.same({ r, msg, errno }, { nil, "profiler is running already", EINVAL },
       "misc.memprof.start while running")
t.is(misc.memprof.stop(), true, "misc.memprof.stop")
r, msg, errno = misc.memprof.stop()
t.same({ r, msg, errno }, { nil, "profiler is not running", EINVAL },
       "misc.memprof.stop when not running")
t.is(errmsg(misc.memprof.start, 42), bad_start, "misc.memprof.start(42)")
t.is(errmsg(misc.memprof.stop, 1), bad_stop, "misc.memprof.stop(1)")
os.remove(p3)
t.done()
