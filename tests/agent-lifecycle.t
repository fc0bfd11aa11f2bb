#!/usr/bin/env luajit
-- The profiler's life in a process: start() makes no garbage that the
-- profile would record; options are checked (an unknown key is an error);
-- profiles are created 0600 unless a mode is given; after fork() the child
-- does not inherit the recording and can start its own while the parent's
-- profile goes on; a start() that fails leaves no file behind.
package.path = "tests/lib/?.lua;" .. package.path
local T = require("mp_test")
local t = require("tap")
local ffi = require("ffi")
local mp = T.mp
jit.off()
ffi.cdef[[
int fork(void);
int waitpid(int pid, int *status, int options);
void _exit(int status);
unsigned umask(unsigned mask);
]]

-- 1. collectgarbage(), start(), collectgarbage(), stop(): the start made no
-- garbage, so the profile holds no free (Tarantool's memprof shows none).
local path = T.tmpname("garbage")
collectgarbage()
assert(mp.start(path))
collectgarbage()
assert(mp.stop())
local evs = T.events(path)
os.remove(path)
local frees = 0
for _, e in ipairs(evs) do if e.event == "free" then frees = frees + 1 end end
t.is(frees, 0, "start() made no garbage for the collector to free")
-- Also with an options table. (Two collections first: reading the first
-- profile left a closed file whose finaliser runs in one cycle and whose
-- memory is freed in the next.)
local opts = { path = path, bufsize = 8192 }
collectgarbage()
collectgarbage()
assert(mp.start(opts))
collectgarbage()
assert(mp.stop())
evs = T.events(path)
os.remove(path)
frees = 0
for _, e in ipairs(evs) do if e.event == "free" then frees = frees + 1 end end
t.is(frees, 0, "start{path =, bufsize =} neither")

-- 2. Options are checked; an unknown key is an error, never ignored.
local function err(arg)
  local ok, msg = pcall(mp.start, arg)
  if ok then mp.stop() end
  return ok and "started" or msg
end
t.is(err({ path = path, buffsize = 4096 }),
     "bad argument #1 to 'start' (unknown option 'buffsize'; options are " ..
     "path, bufsize, mode, stacks, sample, seed, max_size, collect, native, snapshot)", "a misspelt option is an error")
t.is(err({ path = path, [1] = "x" }),
     "bad argument #1 to 'start' (option names must be strings)",
     "a key that is not a string is an error")
t.is(err({ path = 42 }), "bad argument #1 to 'start' (options.path must be a string)",
     "path of the wrong type")
t.is(err({ path = path, bufsize = 100 }),
     "bad argument #1 to 'start' (options.bufsize must be an integer from " ..
     "4096 to 1073741824)", "bufsize too small")
t.is(err({ path = path, bufsize = 8192.5 }),
     "bad argument #1 to 'start' (options.bufsize must be an integer from " ..
     "4096 to 1073741824)", "bufsize not an integer")
t.is(err({ path = path, mode = true }),
     "bad argument #1 to 'start' (options.mode must be a string of octal " ..
     "digits (\"644\") or a number)", "mode of the wrong type")
-- Lua has no octal literals: mode = 0644 is the number 644 (01204, with
-- the sticky bit). Numbers are file modes from 0 to 511 (0777); the error
-- says how to write the mode that was meant.
t.is(err({ path = path, mode = 0644 }),
     "bad argument #1 to 'start' (options.mode must be a file mode from 0 " ..
     "to 511 (0777 in octal), not 644: Lua numbers are decimal; write " ..
     "mode = \"644\" or tonumber(\"644\", 8))", "mode = 0644 (decimal 644)")
t.is(err({ path = path, mode = 600 }),
     "bad argument #1 to 'start' (options.mode must be a file mode from 0 " ..
     "to 511 (0777 in octal), not 600: Lua numbers are decimal; write " ..
     "mode = \"600\" or tonumber(\"600\", 8))", "mode = 600")
t.is(err({ path = path, mode = 2541 }),	-- 04755: setuid
     "bad argument #1 to 'start' (options.mode must be a file mode from 0 " ..
     "to 511 (0777 in octal), not 2541: Lua numbers are decimal; write an " ..
     "octal mode as a string, e.g. mode = \"644\")", "mode with setuid")
t.is(err({ path = path, mode = 8 ^ 5 }),
     "bad argument #1 to 'start' (options.mode must be a file mode from 0 " ..
     "to 511 (0777 in octal), not 32768: Lua numbers are decimal; write an " ..
     "octal mode as a string, e.g. mode = \"644\")", "mode out of range")
t.is(err({ path = path, mode = 420.5 }),
     "bad argument #1 to 'start' (options.mode must be a file mode from 0 " ..
     "to 511 (0777 in octal), not 420.5: Lua numbers are decimal; write an " ..
     "octal mode as a string, e.g. mode = \"644\")", "mode not an integer")
t.is(err({ path = path, mode = -1 }),
     "bad argument #1 to 'start' (options.mode must be a file mode from 0 " ..
     "to 511 (0777 in octal), not -1: Lua numbers are decimal; write an " ..
     "octal mode as a string, e.g. mode = \"644\")", "mode negative")
-- A string is octal digits, at most "777".
for _, bad in ipairs({ "rw-r--r--", "0x1a4", "0689", "1000", "4755", "",
                       " 644" }) do
  t.is(err({ path = path, mode = bad }),
       "bad argument #1 to 'start' (options.mode must be octal digits from " ..
       "\"0\" to \"777\" (e.g. \"644\"), not \"" .. bad .. "\")",
       ("mode = %q"):format(bad))
end
t.ok(err({ path = path, mode = "644\0" }):find("must be octal digits", 1, true),
     "mode = \"644\\0\" (a zero byte after the digits)")
t.is(io.open(path, "rb"), nil, "no file made by the refused calls")

-- 3. Permissions: 0600 by default (a profile reveals addresses and source
-- text); the mode option asks for another (the umask applies).
local function mode_of(p)
  local f = assert(io.popen("stat -c %a '" .. p .. "'"))
  local m = f:read("*l")
  f:close()
  return m
end
local old = ffi.C.umask(18)	-- 022
assert(mp.start(path)); assert(mp.stop())
t.is(mode_of(path), "600", "a new profile is created 0600")
os.remove(path)
assert(mp.start({ path = path, mode = 420 })); assert(mp.stop())	-- 0644
t.is(mode_of(path), "644", "mode = 0644 (420) gives 0644")
assert(mp.start({ path = path, mode = 438 })); assert(mp.stop())	-- 0666
t.is(mode_of(path), "644", "an existing file keeps its mode")
os.remove(path)
-- Strings of octal digits, with or without a leading 0.
for _, m in ipairs({ { "0644", "644" }, { "640", "640" }, { "600", "600" },
                     { "0777", "755" }, { "00400", "400" } }) do
  assert(mp.start({ path = path, mode = m[1] })); assert(mp.stop())
  t.is(mode_of(path), m[2], ("mode = %q gives %s (umask 022)"):format(m[1], m[2]))
  os.remove(path)
end
assert(mp.start({ path = path, mode = tonumber("640", 8) })); assert(mp.stop())
t.is(mode_of(path), "640", 'mode = tonumber("640", 8) gives 0640')
os.remove(path)
assert(mp.start({ path = path, mode = "0" })); assert(mp.stop())
t.is(mode_of(path), "600", 'mode = "0" is the default, 0600')
os.remove(path)
ffi.C.umask(old)

-- 4. fork(): the child does not inherit the recording. running() is false
-- there, stop() says not running, start() begins the child's own profile;
-- the parent's profile goes on and is complete.
local parent, child = T.tmpname("parent"), T.tmpname("child")
assert(mp.start(parent))
local keep = {}
for i = 1, 100 do keep[i] = { i } end
local pid = ffi.C.fork()
if pid == 0 then
  local ok = not mp.running()
  local r1, m1, e1 = mp.stop()
  ok = ok and r1 == nil and m1 == "profiler is not running" and e1 == 22
  local r2 = mp.start(child)
  for i = 1, 100 do keep[i] = { i, i } end
  ok = ok and r2 == true and mp.running() and mp.stop() == true
  ffi.C._exit(ok and 0 or 1)
end
for i = 1, 100 do keep[i] = "p" .. i end
local st = ffi.new("int[1]")
t.ok(pid > 0 and ffi.C.waitpid(pid, st, 0) == pid, "forked and waited")
t.is(st[0], 0, "child: running() false, stop() not running, start() and " ..
     "stop() of its own succeed")
t.ok(mp.running(), "parent still running")
assert(mp.stop())
local pev, pcomplete = T.events(parent)
local cev, ccomplete = T.events(child)
t.ok(pcomplete and ccomplete, "both profiles complete")
local strings, ctables = 0, 0
for _, e in ipairs(pev) do
  if e.event == "alloc" and e.source == "lua" then strings = strings + 1 end
end
for _, e in ipairs(cev) do
  if e.event == "alloc" and e.source == "lua" then ctables = ctables + 1 end
end
t.ok(strings >= 200, "the parent's profile has its own work", strings)
t.is(ctables, 100, "the child's profile has the child's 100 tables")
os.remove(parent)
os.remove(child)

-- 5. A start() that fails after creating nothing: the writer thread cannot
-- start (a thread stack larger than the address space allowed).
local cmd = "ulimit -v 2000000; ulimit -s 4000000; LUA_CPATH='" .. t.build .. "/?.so;;' " ..
  "luajit -e 'print(require(\"ljmemprof\").start(\"" .. path .. "\"))'"
local f = assert(io.popen("(" .. cmd .. ") 2>&1"))
local out = f:read("*a")
f:close()
t.is(out, "nil\tcannot start the profiler's writer thread: Resource " ..
     "temporarily unavailable\t11\n", "start() says what failed")
t.is(io.open(path, "rb"), nil, "and leaves no file behind")
-- The file cannot be written at start: removed again.
local full = T.tmpname("nodir") .. "/x/y.bin"
local r, m, e = mp.start(full)
t.is(m, full .. ": No such file or directory", "an unwritable path: its error")
t.is(e, 2, "errno ENOENT")
t.done()
