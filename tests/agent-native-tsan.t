#!/bin/sh
# Native memory under ThreadSanitizer (tests/c/native_threads.c, the agent
# built with -fsanitize=thread): ten recordings (five of them sampled)
# start and stop while four threads of a C module allocate through the
# wrappers (the stops find them inside). No race is reported, the threads' blocks stay intact, and each
# profile is complete, with the threads' events billed to their caller.
. tests/lib/tap.sh
TSAN_OPTIONS="halt_on_error=1 exitcode=66" OUT=$TMPD \
  with_timeout 300 "$BUILD/tsan/native_threads" tests/lib/native_threads.lua \
  > "$TMPD/out" 2> "$TMPD/err"
rc=$?
is "$rc" 0 "no race, no corrupted block (status $rc)"
[ "$rc" -eq 0 ] || sed 's/^/# /' "$TMPD/err" | head -n 30
n=0
w=0
e=0
for i in 1 2 3 4 5 6 7 8 9 10; do
  [ "$(complete "$TMPD/t$i.ljm")" = true ] && n=$((n + 1))
  "$BUILD/ljmemprof" report --heap native "$TMPD/t$i.ljm" 2>/dev/null |
    grep -q '^native_mod_worker+0x[0-9a-f]* \[native\]: ' && w=$((w + 1))
  c=$("$BUILD/ljmemprof" report --heap native "$TMPD/t$i.ljm" 2>/dev/null |
    sed -n 's/^native_mod\.churn \[native\]: \([0-9]*\) events.*/\1/p' | head -n 1)
  [ "$c" = 50 ] && e=$((e + 1))
done
is "$n" 10 "the ten profiles are complete"
is "$w" 10 "each has the threads' events, by their caller"
is "$e" 10 "and exactly the VM thread's 50 mallocs of native_mod.churn"
done_testing
