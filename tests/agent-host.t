#!/bin/sh
# The agent in a C host (tests/c/agent_host.c): allocations the host makes
# outside any Lua call go to HOST, not INTERNAL; a VM that never ran; two
# VMs refused one file; a hook that something else wrapped; exit() from one
# thread while other threads' VMs are in the hook (every profile complete,
# 30 runs; clean under ThreadSanitizer); four VMs in four threads into four
# files or one serialising callback, each conserving exactly (also under
# ASan + UBSan and TSan).
. tests/lib/tap.sh
H=$BUILD/tests/agent_host
T=60	# Seconds any one command may take.

# Turn the host's "ok - ..." / "not ok - ..." lines into TAP checks.
checks() {
  while IFS= read -r line; do
    case $line in
      "ok - "*) ok 0 "${1:+$1: }${line#ok - }" ;;
      "not ok - "*) ok 1 "${1:+$1: }${line#not ok - }" ;;
    esac
  done
}

# Allocation events of FILE whose label is LABEL.
allocs_of() {
  $BUILD/ljmemprof events "$1" | grep -c "\"event\":\"alloc\".*\"label\":\"$2\""
}

timeout $T $H host "$TMPD/host.ljm" > "$TMPD/out"; ok $? "host mode runs"
checks host < "$TMPD/out"
n=$(allocs_of "$TMPD/host.ljm" "HOST (agent_host)")
[ "$n" -ge 8 ]; ok $? "5 tables, 3 strings and the chunk's loading made by the host: HOST ($n)"
# The VM's own: at most its string table growing (tests/agent-strtab.t),
# from 256 slots to 512 as the host's strings fill it (Debian's LuaJIT;
# OpenResty's interns fewer strings before).
internal=$($BUILD/ljmemprof events "$TMPD/host.ljm" | grep '"event":"alloc".*"label":"INTERNAL"' |
	   sed 's/.*"nsize":\([0-9]*\).*/\1/' | tr '\n' ' ')
case "$FLAVOUR:$internal" in luajit:"4096 "|luajit2:) r=0;; *) r=1;; esac
ok $r "no allocation is INTERNAL but the string table's growth ($FLAVOUR: '$internal')"
is "$($BUILD/ljmemprof events "$TMPD/host.ljm" | grep '"event":"alloc"' | grep -c '"source":"lua"')" 2 \
  "the chunk's two tables on its lines"

# Builtins the host calls (directly, or tail-called by a Lua function it
# called) are the host's in both streams: nothing but the builtin is on
# the stack, and the stacks mode puts the host below it.
for st in 0 64; do
  timeout $T $H tail "$TMPD/tail$st.ljm" $st > "$TMPD/out"; ok $? "tail mode runs (stacks $st)"
  checks "tail $st" < "$TMPD/out"
  $BUILD/ljmemprof report "$TMPD/tail$st.ljm" | sed -n '/^ALLOCATIONS/,/^$/p' | sed 1d > "$TMPD/tail$st.allocs"
done
# (The string table may grow in one run and not in the other: the counts
# of two runs can differ by one.)
for st in 0 64; do
  is "$(grep -c . "$TMPD/tail$st.allocs")" 1 "stacks $st: one source allocates..."
  n=$(sed -n 's/^HOST (agent_host): \([0-9]*\) events.*/\1/p' "$TMPD/tail$st.allocs")
  [ "${n:-0}" -ge 200 ]; ok $? "...the host: string.rep's 200 strings and its buffer ($n events)"
done
$BUILD/ljmemprof report --format collapsed --metric alloc-count "$TMPD/tail64.ljm" > "$TMPD/tail.folded"
is "$(grep -c '^string\.rep' "$TMPD/tail.folded")" 0 "no stack has the builtin at its root"
n=$(sed -n 's/^HOST (agent_host);string\.rep \([0-9]*\)$/\1/p' "$TMPD/tail.folded")
[ "${n:-0}" -ge 200 ]; ok $? "the host calls string.rep in the collapsed stacks ($n)"

# A program's name longer than the kernel's 15 bytes of comm is whole.
cp $H "$TMPD/agent_host_with_a_long_name"
timeout $T "$TMPD/agent_host_with_a_long_name" host "$TMPD/long.ljm" > "$TMPD/out"
ok $? "host mode runs as agent_host_with_a_long_name"
n=$(allocs_of "$TMPD/long.ljm" "HOST (agent_host_with_a_long_name)")
[ "$n" -ge 8 ]; ok $? "the host's allocations are HOST (agent_host_with_a_long_name) ($n)"

timeout $T $H fresh "$TMPD/fresh.ljm" > "$TMPD/out"; ok $? "fresh mode runs"
checks fresh < "$TMPD/out"
is "$($BUILD/ljmemprof events "$TMPD/fresh.ljm" | grep -c '"source":"trace"')" 0 \
  "a VM that never ran is in no trace (its state is 0)"
n=$(allocs_of "$TMPD/fresh.ljm" "HOST (agent_host)")
[ "$n" -ge 1 ]; ok $? "luaL_openlibs pushes its functions as the host ($n)"
n=$(allocs_of "$TMPD/fresh.ljm" luaopen_base)
[ "$n" -ge 1 ]; ok $? "luaopen_base's allocations are its own ($n)"

timeout $T $H samepath "$TMPD/a.ljm" "$TMPD/b.ljm" > "$TMPD/out"; ok $? "samepath mode runs"
checks samepath < "$TMPD/out"
is "$(complete "$TMPD/a.ljm")" true "the first profile is intact"
is "$(complete "$TMPD/b.ljm")" true "the second VM's own profile too"

timeout $T $H wrap "$TMPD/w.ljm" > "$TMPD/out"; ok $? "wrap mode runs"
checks wrap < "$TMPD/out"
is "$(complete "$TMPD/w.ljm")" true "the wrapped profile is finalised by stop"
is "$(complete "$TMPD/w.ljm.again")" true "the profile started over the wrapper is complete"

# exit() from the main thread after 10 to 100 ms while 2 or 3 threads run
# their VMs: each file must be complete.
bad=0
i=0
while [ $i -lt 30 ]; do
  rm -f "$TMPD"/t-*.ljm
  timeout $T $H threads $((2 + i % 2)) "$TMPD/t" $((10 + i * 3)) > /dev/null || bad=$((bad + 1))
  for f in "$TMPD"/t-*.ljm; do
    $BUILD/ljmemprof info "$f" > /dev/null 2>&1 || bad=$((bad + 1))
  done
  i=$((i + 1))
done
is $bad 0 "exit() during other threads' hooks: 30 runs, every profile complete"

san=0
for i in 1 2 3; do
  rm -f "$TMPD"/t-*.ljm
  TSAN_OPTIONS="halt_on_error=1 exitcode=66" timeout $T $BUILD/tsan/agent_host \
    threads 3 "$TMPD/t" $((40 * i)) > /dev/null 2> "$TMPD/tsan.err" || san=$((san + 1))
  for f in "$TMPD"/t-*.ljm; do
    $BUILD/ljmemprof info "$f" > /dev/null 2>&1 || san=$((san + 1))
  done
done
is $san 0 "the same under ThreadSanitizer: no report, every profile complete"
[ $san -eq 0 ] || sed 's/^/# /' "$TMPD/tsan.err" | head -n 20

# Four VMs in four threads at once, stopped by their threads.
for host in $H $BUILD/asan/agent_host $BUILD/tsan/agent_host; do
  for mode in files shared; do
    rm -f "$TMPD"/p-*.ljm
    TSAN_OPTIONS="halt_on_error=1 exitcode=66" timeout $T $host $mode 4 "$TMPD/p" \
      > "$TMPD/out" 2> "$TMPD/err"
    ok $? "$host $mode: runs clean"
    [ -s "$TMPD/err" ] && sed 's/^/# /' "$TMPD/err" | head -n 20
    checks "$host $mode" < "$TMPD/out"
    good=0
    for i in 0 1 2 3; do
      want=$(sed -n "s/^delta $i //p" "$TMPD/out")
      net=$($BUILD/ljmemprof info --format json "$TMPD/p-$i.ljm" | sed -n 's/.*"net_bytes":\(-*[0-9]*\).*/\1/p')
      [ -n "$want" ] && [ "$net" = "$want" ] && [ "$(complete "$TMPD/p-$i.ljm")" = true ] &&
        good=$((good + 1))
    done
    is $good 4 "$host $mode: 4 complete profiles, each conserving exactly"
  done
done
done_testing
