#!/bin/sh
# The profiler's own memory stays bounded however long it runs: a run that
# loads and drops 40,000 functions, flushes traces and makes millions of
# events peaks at most a few MiB above the same run without the profiler
# (4 buffers of 1 MiB, the symbol sets of live functions, the thread).
. tests/lib/tap.sh

work='
  jit.opt.start("hotloop=5")
  local keep = {}
  for i = 1, 40000 do
    local f = load("local t = {} for j = 1, 20 do t[j] = { j } end return t", "=c" .. i)
    keep[i % 10 + 1] = f()
    if i % 5000 == 0 then jit.flush() end
  end
  local f = io.open("/proc/self/status")
  local s = f:read("*a")
  f:close()
  print(s:match("VmHWM:%s*(%d+)"))'
base=$(luajit -e "$work")
prof=$(P="$TMPD/m.bin" LUA_CPATH="$BUILD/?.so;;" luajit -e \
  'assert(require("ljmemprof").start(os.getenv("P")))' -e "$work")
extra=$((prof - base))
echo "# peak RSS without the profiler: ${base} KiB, with it: ${prof} KiB"
ok $([ "$extra" -lt 12288 ] && echo 0 || echo 1) \
  "the profiler adds less than 12 MiB at peak (${extra} KiB)"
n=$($BUILD/ljmemprof events "$TMPD/m.bin" | grep -c '"event"')
ok $([ "$n" -gt 1000000 ] && echo 0 || echo 1) "over a million events ($n)"
done_testing
