#!/bin/sh
# Native memory side by side with heaptrack (Debian's heaptrack, which
# interposes malloc with LD_PRELOAD) on the same deterministic workload: a
# C module of the tests mallocs 300 blocks of 1000 bytes and leaks one of
# 4242 while native recording runs. heaptrack counts the calls that reach
# malloc from ljmemprof's wrapper (w_malloc, called by the module's
# functions): the same 301 as ljmemprof's native mallocs. What heaptrack
# sees beyond them is the agent's own memory (its tables), which
# ljmemprof leaves out on purpose, and the VM's.
. tests/lib/tap.sh
if ! command -v heaptrack >/dev/null || ! command -v heaptrack_print >/dev/null; then
  echo "1..0 # SKIP heaptrack is not installed (make deps installs it)"
  exit 0
fi
cat > "$TMPD/w.lua" <<EOS
package.cpath = "$BUILD/?.so;$BUILD/tests/cmod/?.so;" .. package.cpath
local mp = require("ljmemprof")
local nm = require("native_mod")
jit.off()
assert(mp.start{ path = "$TMPD/w.ljm", native = true })
for i = 1, 300 do nm.churn(1000) end
nm.leak(4242)
assert(mp.stop())
EOS
# heaptrack follows a program, not the shell script that runs it: another
# flavour's luajit in PATH is such a wrapper, so its binary is run here.
LJ=luajit
if [ "${FLAVOUR:-luajit}" = luajit2 ]; then
  LJ=$BUILD/root/usr/bin/luajit
  LD_LIBRARY_PATH=$(dirname "$(find "$BUILD/root/usr/lib" -name 'libluajit-5.1.so.2' | head -n 1)")
  export LD_LIBRARY_PATH
fi
with_timeout 120 heaptrack -o "$TMPD/h" "$LJ" "$TMPD/w.lua" > "$TMPD/ht.out" 2>&1
ok $? "luajit runs under heaptrack with native recording"
ht=$(ls "$TMPD"/h.* 2>/dev/null | head -n 1)
with_timeout 120 heaptrack_print -f "$ht" > "$TMPD/print" 2>/dev/null
ok $? "heaptrack_print reads its profile"
# "N calls to allocation functions with ... from" then the function.
calls=$(awk '/^[0-9]+ calls to allocation functions/ { n = $1; getline f;
  if (f == "w_malloc") { print n; exit } }' "$TMPD/print")
is "$calls" 301 "heaptrack: 301 calls of malloc made for the program's C code"
run "$BUILD/ljmemprof" report --heap native --format json "$TMPD/w.ljm"
n=$(printf '%s' "$out" | sed -n 's/.*"alloc_events":\([0-9]*\).*/\1/p' | head -n 1)
is "$n" 301 "ljmemprof: 301 native allocations, the same"
run "$BUILD/ljmemprof" report --heap native --leak-only "$TMPD/w.ljm"
is "$out" "HEAP SUMMARY: 4242B in 1 block live at the end, by the source that allocated or last resized them
native_mod.leak [native] holds 4242B in 1 block (100.0%)$NOTES_NONE" "the leak, which heaptrack counts too"
done_testing
