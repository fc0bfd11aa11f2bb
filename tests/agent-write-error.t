#!/bin/sh
# A write error at any point stops recording, never the program: stop()
# reports it with errno, and what was written is a readable prefix.
. tests/lib/tap.sh

churn='local t = {} for i = 1, 1500000 do t[i % 1000 + 1] = { i } end'

# A pipe whose reader goes away after 6 MiB (SIGPIPE must not kill us).
mkfifo "$TMPD/fifo"
# Bounded: if the writer never opens the pipe, the reader gives up.
timeout 60 head -c 6291456 "$TMPD/fifo" > "$TMPD/head.bin" &
out=$(P="$TMPD/fifo" LUA_CPATH="$BUILD/?.so;;" timeout 60 luajit -e '
  local mp = require("ljmemprof")
  assert(mp.start(os.getenv("P")))
  '"$churn"'
  print(mp.stop())
  print("alive")' 2>&1)
st=$?
wait
is "$st" 0 "program exits normally after EPIPE"
is "$out" "$(printf 'nil\t%s: Broken pipe\t32\nalive' "$TMPD/fifo")" \
  "stop() returns the EPIPE error with path and errno"
is "$(complete "$TMPD/head.bin")" false "the 6 MiB received are a readable prefix"
"$BUILD/ljmemprof" events "$TMPD/head.bin" > "$TMPD/ev.json" 2>/dev/null
n=$(grep -c '"event"' "$TMPD/ev.json")
ok $([ "$n" -gt 400000 ] && echo 0 || echo 1) "prefix decodes to many events ($n)"

# A file size limit hit after 4 MiB (dash counts ulimit -f in 512-byte
# blocks; SIGXFSZ must not kill us).
out=$( (ulimit -f 8192; P="$TMPD/big.bin" LUA_CPATH="$BUILD/?.so;;" timeout 60 luajit -e '
  local mp = require("ljmemprof")
  assert(mp.start(os.getenv("P")))
  '"$churn"'
  print(mp.running())
  print(mp.stop())
  print(mp.running())') 2>&1)
is "$?" 0 "program exits normally after EFBIG"
is "$out" "$(printf 'false\nnil\t%s: File too large\t27\nfalse' "$TMPD/big.bin")" \
  "running() is false once EFBIG ended recording; stop() returns the error with path and errno"
sz=$(stat -c %s "$TMPD/big.bin")
ok $([ "$sz" -ge 4194304 ] && echo 0 || echo 1) "written up to the limit ($sz bytes)"
is "$(complete "$TMPD/big.bin")" false "the file is a readable prefix"

# Started by LJMEMPROF, no code of the program's calls stop(): the error
# is said on stderr, once, when it ends recording (the Lua caller above
# heard it from stop() and got no such line).
out=$( (ulimit -f 8192; LJMEMPROF="$TMPD/env.bin" LUA_CPATH="$BUILD/?.so;;" timeout 60 luajit -l ljmemprof -e '
  '"$churn"'
  io.stderr:write("script ends\n")') 2>&1)
is "$?" 0 "LJMEMPROF: program exits normally after EFBIG"
# (The writer thread says it when the write fails: in any order with the
# script's own output.)
is "$(printf '%s\n' "$out" | sort)" "$(printf 'ljmemprof: %s: File too large: recording stopped, the profile is cut short\nscript ends' "$TMPD/env.bin" | sort)" \
  "LJMEMPROF: one line on stderr names the file and the error"
is "$(complete "$TMPD/env.bin")" false "LJMEMPROF: the file is a readable prefix"

# Started by a signal: no code of the program's stops it either. The error
# is said on stderr when it ends recording, not only at the next signal's
# stop (which then says nothing more).
cat >"$TMPD/sigfull.lua" <<'EOF'
local mp = require("ljmemprof")
os.execute("kill -USR2 $PPID")
local t = {}
for i = 1, 2e6 do t[i % 1000 + 1] = { i }; if mp.running() then break end end
io.stderr:write("recording: ", tostring(mp.running()), "\n")
for i = 1, 2e7 do t[i % 1000 + 1] = { i }; if not mp.running() then break end end
io.stderr:write("ended: ", tostring(not mp.running()), "\n")
os.execute("kill -USR2 $PPID")
for i = 1, 1e5 do t[i % 1000 + 1] = { i } end
io.stderr:write("script ends\n")
EOF
out=$( (ulimit -f 8192; LJMEMPROF="$TMPD/sig.bin,signal=USR2,start=no" LUA_CPATH="$BUILD/?.so;;" timeout 60 luajit -l ljmemprof "$TMPD/sigfull.lua") 2>&1)
is "$?:$out" "$(printf '0:recording: true\nljmemprof: %s: File too large: recording stopped, the profile is cut short\nended: true\nscript ends' "$TMPD/sig.bin")" \
  "signal: one line on stderr when the write fails, none at the stop"
is "$(complete "$TMPD/sig.bin")" false "signal: the file is a readable prefix"

# Started by the program and stopped by a signal: the writer said nothing
# (the program was to hear it from stop()), so the signal's stop says it.
cat >"$TMPD/progfull.lua" <<'EOF'
local mp = require("ljmemprof")
assert(mp.signal("USR2", { path = os.getenv("P") .. ".sig" }))
assert(mp.start(os.getenv("P")))
local t = {}
for i = 1, 2e7 do t[i % 1000 + 1] = { i }; if not mp.running() then break end end
io.stderr:write("ended: ", tostring(not mp.running()), "\n")
os.execute("kill -USR2 $PPID")
for i = 1, 1e5 do t[i % 1000 + 1] = { i } end
io.stderr:write("script ends: ", tostring(select(2, mp.stop())), "\n")
EOF
out=$( (ulimit -f 8192; P="$TMPD/prog.bin" LUA_CPATH="$BUILD/?.so;;" timeout 60 luajit "$TMPD/progfull.lua") 2>&1)
is "$?:$out" "0:ended: true
ljmemprof: stopping at a signal: File too large
script ends: profiler is not running" \
  "program-started, stopped by a signal after a write error: the stop says it"

# A disk that fills up after 4 MiB: a small tmpfs (needs root and mount;
# skipped where not allowed).
mkdir "$TMPD/small"
if mount -t tmpfs -o size=4m tmpfs "$TMPD/small" 2>/dev/null; then
  out=$(P="$TMPD/small/p.bin" LUA_CPATH="$BUILD/?.so;;" timeout 60 luajit -e '
    local mp = require("ljmemprof")
    assert(mp.start(os.getenv("P")))
    '"$churn"'
    print(mp.stop())
    print("alive")' 2>&1)
  is "$?" 0 "program exits normally when the disk is full"
  is "$out" "$(printf 'nil\t%s: No space left on device\t28\nalive' "$TMPD/small/p.bin")" \
    "stop() returns ENOSPC with path and errno"
  is "$(complete "$TMPD/small/p.bin")" false "the full disk holds a readable prefix"
  umount "$TMPD/small"
else
  for i in 1 2 3; do ok 0 "# SKIP cannot mount a tmpfs here"; done
fi

# The descriptor closed behind the profiler's back (EBADF).
out=$(P="$TMPD/c.bin" LUA_CPATH="$BUILD/?.so;;" timeout 60 luajit -e '
  local mp = require("ljmemprof")
  assert(mp.start({ path = os.getenv("P"), bufsize = 4096 }))
  -- find and close the profile descriptor (the newest one under /proc)
  local fds = io.popen("ls /proc/self/fd")
  fds:close()
  local ffi = require("ffi")
  ffi.cdef("int close(int); int readlink(const char*, char*, size_t);")
  local buf = ffi.new("char[512]")
  for fd = 3, 64 do
    local n = ffi.C.readlink("/proc/self/fd/" .. fd, buf, 512)
    if n > 0 and ffi.string(buf, n) == os.getenv("P") then ffi.C.close(fd) end
  end
  '"$churn"'
  print(mp.stop())') 2>&1
is "$out" "$(printf 'nil\t%s: Bad file descriptor\t9' "$TMPD/c.bin")" \
  "closed descriptor: EBADF reported by stop()"
done_testing
