#!/bin/sh
# Starting without code changes: LJMEMPROF=path[,key=value]... starts
# recording when the module is loaded (luajit -l ljmemprof), %p and %n in
# paths; a signal armed by LJMEMPROF (signal=, start=no) or by
# mp.signal() toggles recording at the next allocation; every bad value
# is an error that names it, and nothing is left behind.
. tests/lib/tap.sh
MP="$BUILD/ljmemprof"
items() { with_timeout 60 "$BUILD/tests/stream_items" "$1"; }
mode_of() { stat -c %a "$1"; }

cat >"$TMPD/app.lua" <<'EOF'
keep = {}
for i = 1, 100 do keep[i] = { i } end
print("app ran")
EOF

# 1. A path: the profile of the whole script, 0600, complete.
run env LJMEMPROF="$TMPD/a.ljm" LUA_CPATH="$BUILD/?.so;;" luajit -joff -l ljmemprof "$TMPD/app.lua"
is "$rc:$out:$(complete "$TMPD/a.ljm"):$(mode_of "$TMPD/a.ljm")" "0:app ran:true:600" \
  "LJMEMPROF=path with -l ljmemprof: the script runs and is profiled"
n=$("$MP" events "$TMPD/a.ljm" | grep -c '"event":"alloc".*"label":"@.*app.lua:2"')
is "$n" "101" "the script's 100 tables at its line 2 (and keep's array part)"

# 2. %p is the process id (the shell's, which execs luajit), %n the start.
run sh -c 'echo $$; exec env LJMEMPROF="$0/p-%p-%n.ljm" LUA_CPATH="$1/?.so;;" luajit -l ljmemprof -e "x = {}"' "$TMPD" "$BUILD"
is "$rc:$(complete "$TMPD/p-$out-1.ljm")" "0:true" "%p and %n expand (p-PID-1.ljm)"
run env LJMEMPROF="$TMPD/pct%%.ljm" LUA_CPATH="$BUILD/?.so;;" luajit -l ljmemprof -e "x = {}"
is "$rc:$(complete "$TMPD/pct%.ljm")" "0:true" "%% is a %"

# 3. Options after the path.
run env LJMEMPROF="$TMPD/o.ljm,stacks=8,mode=0640,collect=yes" LUA_CPATH="$BUILD/?.so;;" \
  luajit -l ljmemprof "$TMPD/app.lua"
it=$(items "$TMPD/o.ljm")
echo "$it" | grep -qx "info stacks=8" && echo "$it" | grep -qx "info collect=1"
is "$?:$(mode_of "$TMPD/o.ljm")" "0:640" "stacks=8, mode=0640, collect=yes"
run env LJMEMPROF="$TMPD/s.ljm,sample=64K,seed=5,bufsize=8K" LUA_CPATH="$BUILD/?.so;;" \
  luajit -l ljmemprof "$TMPD/app.lua"
items "$TMPD/s.ljm" | grep -qx "info sample=65536"
ok $? "sample=64K: a sampled profile of mean 65536"
run env LJMEMPROF="$TMPD/z.ljm,sample=0" LUA_CPATH="$BUILD/?.so;;" \
  luajit -joff -l ljmemprof "$TMPD/app.lua"
n=$("$MP" events "$TMPD/z.ljm" | grep -c '"event":"alloc".*"label":"@.*app.lua:2"')
is "$rc:$("$MP" info "$TMPD/z.ljm" | sed -n 2p):$n" \
  "0:format:     memprof, symtab version 3, events version 3:101" \
  "sample=0: not sampled, every event recorded (the one-frame stream)"
run env LJMEMPROF="$TMPD/m.ljm,max_size=64K" LUA_CPATH="$BUILD/?.so;;" \
  luajit -l ljmemprof -e 'local k = {} for i = 1, 30000 do k[i] = { i } end'
items "$TMPD/m.ljm" | grep -qx "note stopped=size limit"
is "$?:$(($(stat -c %s "$TMPD/m.ljm") <= 65536))" "0:1" "max_size=64K: stopped at the limit"
run env LJMEMPROF="$TMPD/n.ljm,start=no" LUA_CPATH="$BUILD/?.so;;" luajit -l ljmemprof -e 'x = 1'
is "$rc:$(ls "$TMPD/n.ljm" 2>/dev/null)" "0:" "start=no: nothing recorded"

# 4. Bad values: luajit fails to load the module with the reason; no file.
bad() {
  run env LJMEMPROF="$1" LUA_CPATH="$BUILD/?.so;;" luajit -l ljmemprof -e 'print("ran")'
  # The message after luajit's own "PROGRAM: " (a path in luajit2's wrapper).
  is "$rc:$out:$(echo "$err" | head -n 1 | sed 's/^[^ ]*luajit: //')" "1::ljmemprof: LJMEMPROF: $2" "LJMEMPROF=$1"
}
bad "$TMPD/b.ljm,colour=red" "unknown key 'colour' (keys: bufsize, mode, stacks, sample, seed, max_size, collect, native, snapshot, signal, start)"
bad ",stacks=8" "no path before the first ','; the form is path[,key=value]..."
bad "," "no path before the first ','; the form is path[,key=value]..."
bad "$TMPD/b.ljm,stacks" "'stacks' is not key=value"
bad "$TMPD/b.ljm,stacks=5,stacks=6" "key 'stacks' is given twice"
bad "$TMPD/b.ljm,sample=4K,stacks=0" "stacks=0 cannot go with sample: sampled profiles record call stacks (leave stacks out for 64 frames, or give 1 to 10000)"
bad "$TMPD/b.ljm,stacks=no,sample=yes" "stacks=0 cannot go with sample: sampled profiles record call stacks (leave stacks out for 64 frames, or give 1 to 10000)"
bad "$TMPD/b.ljm,native=yes,sample=1M" "native cannot go with sample: native events are not sampled"
bad "$TMPD/b.ljm,native=yes,stacks=0" "stacks=0 cannot go with native: native events carry call stacks"
bad "$TMPD/b.ljm,native=maybe" "native=maybe: yes or no"
bad "$TMPD/b.ljm,signal=USR2,start=no,sample=4K,start=yes" "key 'start' is given twice"
bad "$TMPD/b.ljm,stacks=lots" "stacks=lots: frames from 0 to 10000, or yes/no"
bad "$TMPD/b.ljm,stacks=10001" "stacks=10001: frames from 0 to 10000, or yes/no"
bad "$TMPD/b.ljm,sample=-1" "sample=-1: mean bytes between samples (e.g. 512K), or yes/no"
bad "$TMPD/b.ljm,sample=5Q" "sample=5Q: mean bytes between samples (e.g. 512K), or yes/no"
bad "$TMPD/b.ljm,seed=-1" "seed=-1: a number from 0 to 1125899906842624 (2^50; 0: one drawn from the clock)"
bad "$TMPD/b.ljm,seed=2000T" "seed=2000T: a number from 0 to 1125899906842624 (2^50; 0: one drawn from the clock)"
bad "$TMPD/b.ljm,max_size=1K" "max_size=1K: bytes, at least 64K (e.g. 100M), or 0"
bad "$TMPD/b.ljm,bufsize=1" "bufsize=1: bytes from 4K to 1G"
bad "$TMPD/b.ljm,mode=999" "mode=999: octal permissions from 0 to 0777, e.g. 0644"
bad "$TMPD/b.ljm,mode=1204" "mode=1204: octal permissions from 0 to 0777, e.g. 0644"
bad "$TMPD/b.ljm,mode=04755" "mode=04755: octal permissions from 0 to 0777, e.g. 0644"
bad "$TMPD/b.ljm,collect=maybe" "collect=maybe: yes or no"
bad "$TMPD/b.ljm,signal=KILL" "signal=KILL: a signal that can toggle the profiler (USR1, USR2, HUP, WINCH, URG, PWR, RTMIN+n, RTMAX-n)"
bad "$TMPD/b.ljm,signal=RTMIN+99" "signal=RTMIN+99: a signal that can toggle the profiler (USR1, USR2, HUP, WINCH, URG, PWR, RTMIN+n, RTMAX-n)"
bad "$TMPD/b%d.ljm" "path '$TMPD/b%d.ljm': % must be followed by p (the pid), n (the number of the start) or %"
bad "$TMPD/none/b.ljm" "$TMPD/none/b.ljm: No such file or directory"
# Armed without a start: the directory is checked when armed, not at the
# signal (whose errors only reach stderr).
bad "$TMPD/none/b-%p.ljm,signal=USR2,start=no" "directory $TMPD/none: No such file or directory"
bad "$TMPD/%p/b.ljm,signal=USR2,start=no" "path '$TMPD/%p/b.ljm': the directory must not hold %p or %n: it is checked when the signal is armed"
is "$(ls "$TMPD" | grep -c '^b')" "0" "no file left by the refused values"

# 5. A signal toggles recording. The script signals itself (kill from a
# child shell) and allocates until running() changes: the switch happens
# at an allocation after the signal, compiled code included (JIT on).
cat >"$TMPD/sig.lua" <<'EOF'
local mp = require("ljmemprof")
keep = {}
local function wait(want)
  for i = 1, 2e6 do
    keep[#keep % 1000 + 1] = { i }
    if mp.running() == want then return end
  end
  error("no switch to running() == " .. tostring(want))
end
local sig = arg[1] or "USR2"
print(mp.running())
for round = 1, 2 do
  os.execute("kill -" .. sig .. " $PPID")
  wait(true)
  for i = 1, 1000 do keep[i] = { i, i } end
  os.execute("kill -" .. sig .. " $PPID")
  wait(false)
end
print("toggled")
EOF
run env LJMEMPROF="$TMPD/t-%n.ljm,signal=USR2,start=no" LUA_CPATH="$BUILD/?.so;;" \
  luajit -l ljmemprof "$TMPD/sig.lua"
is "$rc:$(echo $out):$(complete "$TMPD/t-1.ljm"):$(complete "$TMPD/t-2.ljm")" \
  "0:false toggled:true:true" "signal=USR2,start=no: two signals make a profile, twice"
run "$MP" report "$TMPD/t-1.ljm"
echo "$out" | grep -q "sig.lua:15"
ok $? "the first profile holds the script's tables made while recording"
# Without %n, the second recording gets ".2" rather than overwrite the first.
run env LJMEMPROF="$TMPD/u.ljm,signal=USR1,start=no,stacks=4" LUA_CPATH="$BUILD/?.so;;" \
  luajit -l ljmemprof "$TMPD/sig.lua" USR1
is "$rc:$(complete "$TMPD/u.ljm"):$(complete "$TMPD/u.ljm.2")" "0:true:true" \
  "no %n in the path: the second recording is PATH.2"
items "$TMPD/u.ljm.2" | grep -qx "info stacks=4"
ok $? "the recordings a signal starts have LJMEMPROF's options"
# Started at load and armed: the first signal stops.
cat >"$TMPD/stop.lua" <<'EOF'
local mp = require("ljmemprof")
print(mp.running())
os.execute("kill -HUP $PPID")
for i = 1, 2e6 do local t = { i } ; if not mp.running() then break end end
print(mp.running())
EOF
run env LJMEMPROF="$TMPD/h.ljm,signal=HUP" LUA_CPATH="$BUILD/?.so;;" \
  luajit -joff -l ljmemprof "$TMPD/stop.lua"
is "$rc:$(echo $out):$(complete "$TMPD/h.ljm")" "0:true false:true" "started at load, stopped by SIGHUP"

# 6. mp.signal() from Lua, and its errors.
cat >"$TMPD/api.lua" <<'EOF'
local mp = require("ljmemprof")
local dir = arg[1]
print(pcall(mp.signal, "KILL"))
print(pcall(mp.signal, 9))
print(pcall(mp.signal, "USR2", { path = dir .. "/x%q" }))
print(pcall(mp.signal, "USR2", { paht = "x" }))
print(mp.signal("USR2", "/nonexistent/dir/x-%p.ljm"))
print(pcall(mp.signal, "USR2", dir .. "/%n/x.ljm"))
print(mp.signal("RTMIN+1", { path = dir .. "/r-%n.ljm", stacks = 2 }))
print(mp.signal("USR2", dir .. "/y.ljm"))
assert(mp.start(dir .. "/started.ljm"))
os.execute("kill -RTMIN+1 $PPID")
for i = 1, 2e6 do local t = { i } ; if not mp.running() then break end end
print(mp.running())
EOF
run env LUA_CPATH="$BUILD/?.so;;" luajit -joff "$TMPD/api.lua" "$TMPD"
expect="false	bad argument #1 to 'signal' (a signal that can toggle the profiler expected (USR1, USR2, HUP, WINCH, URG, PWR, RTMIN+n, RTMAX-n, or its number))
false	bad argument #1 to 'signal' (a signal that can toggle the profiler expected (USR1, USR2, HUP, WINCH, URG, PWR, RTMIN+n, RTMAX-n, or its number))
false	bad argument #2 to 'signal' (path '$TMPD/x%q': % must be followed by p (the pid), n (the number of the start) or %)
false	bad argument #2 to 'signal' (unknown option 'paht'; options are path, bufsize, mode, stacks, sample, seed, max_size, collect, native, snapshot)
nil	directory /nonexistent/dir: No such file or directory	2
false	bad argument #2 to 'signal' (path '$TMPD/%n/x.ljm': the directory must not hold %p or %n: it is checked when the signal is armed)
true
nil	a signal is armed for this VM already	16
false"
is "$rc:$out" "0:$expect" "mp.signal(): errors, arming, a second arming refused, a signal stops mp.start()'s recording"
is "$(complete "$TMPD/started.ljm")" "true" "the recording the signal stopped is complete"
# A signal the program handles itself is refused.
run env LUA_CPATH="$BUILD/?.so;;" luajit -e '
local ffi = require("ffi")
ffi.cdef("typedef void (*handler)(int); handler signal(int, handler);")
local cb = ffi.cast("handler", function() end)
ffi.C.signal(10, cb)
print(require("ljmemprof").signal("USR1", "'"$TMPD"'/z.ljm"))'
is "$rc:$out" "0:nil	User defined signal 1: that signal cannot toggle the profiler: the program handles it, or another signal is armed	16" \
  "a signal with the program's own handler is refused"

# 7. ljmemprof run ignores LJMEMPROF (it starts the agent itself).
run env LJMEMPROF="$TMPD/ignored.ljm" "$MP" run --leak-only "$TMPD/app.lua"
is "$rc:$(echo "$out" | head -n 1):$(ls "$TMPD/ignored.ljm" 2>/dev/null)" "0:app ran:" \
  "run: LJMEMPROF is not used by the child"
done_testing
