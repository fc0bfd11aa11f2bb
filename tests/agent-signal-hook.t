#!/bin/sh
# An armed signal keeps the program's own hook: its function, mask, count
# and what is left of its count. Each switch puts the program's hook back
# through lua_sethook, which restarted its count: debug.sethook(f, "",
# 10000) fired 20 times without the profiler and 0 times with mp.signal
# armed and 100 signals, so watchdogs and instruction limits built on
# count hooks stopped. JIT off, where the instructions counted are the
# same in both runs (compiled code counts none).
. tests/lib/tap.sh
cat > "$TMPD/hook.lua" <<'EOF2'
-- usage: hook.lua ARMED PATH COUNT MASK: fires of the program's hook
-- over 100 rounds of 400 tables, each round then a signal (0: none).
local armed, path, count, mask = arg[1] == "1", arg[2], tonumber(arg[3]), arg[4]
local ffi = require("ffi")
ffi.cdef("int kill(int, int); int getpid(void);")
local mp = require("ljmemprof")
if armed then assert(mp.signal("USR2", path)) end
local sig, pid = armed and 12 or 0, ffi.C.getpid()
local fired, lines, t = 0, 0, {}
debug.sethook(function(ev) if ev == "count" then fired = fired + 1 else lines = lines + 1 end end,
              mask, count)
for i = 1, 100 do
  for j = 1, 400 do t[j] = { i, j } end
  ffi.C.kill(pid, sig)
end
debug.sethook()
print(fired, lines)
EOF2
for c in "10000 ''" "997 ''" "1 ''" "333 l"; do
  eval "set -- $c"
  base=$(with_timeout 60 env LUA_CPATH="$BUILD/?.so;;" $LUAJIT -joff "$TMPD/hook.lua" 0 "$TMPD/x.ljm" $1 "$2")
  armed=$(with_timeout 60 env LUA_CPATH="$BUILD/?.so;;" $LUAJIT -joff "$TMPD/hook.lua" 1 "$TMPD/p.ljm" $1 "$2")
  [ -n "$base" ] && [ "${base%%	*}" -gt 0 ]; ok $? "count $1, mask '$2': the hook fires without the profiler ($base)"
  is "$armed" "$base" "count $1, mask '$2': the same fires (count, line) with mp.signal armed and 100 signals"
done
is "$(ls "$TMPD"/p.ljm* | wc -l)" 50 "the signals started 50 recordings (p.ljm, p.ljm.2 ... p.ljm.50) each run"
for f in "$TMPD"/p.ljm*; do [ "$(complete "$f")" = true ] || echo "$f"; done > "$TMPD/bad"
is "$(cat "$TMPD/bad")" "" "every one of them is complete"
done_testing
