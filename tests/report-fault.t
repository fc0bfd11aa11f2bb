#!/bin/sh
# The reader's fault loop, as SQLite's tests fail the Nth allocation: each
# command below runs under the fault build of ljmemprof ($BUILD/fault,
# ASan + UBSan, leaks checked at exit) failing its Nth allocation call.
# For every N chosen, the command either succeeds with exactly what it
# prints without a failure (stdout, stderr, the -o file), or exits 2 with
# one line that says out of memory, having printed at most a prefix of
# its output (events: and its last line, {"complete":false}) and left no
# -o file; the sanitizers report nothing; the Nth
# call was reached and failed.
#
# The profiles: the agent's fault program (tests/lib/fault_prog.lua)
# recorded by the plain build (one-frame, stacks, sampled, native, a heap
# snapshot), and the Tarantool fixture. Which Ns: a counting run lists
# every call with its site (the caller and three frames above); the loop
# fails the first three and the last call of each site, and every 16th
# call besides (every 128th for the Tarantool fixture, whose 11,500 calls
# are mostly one site). The counts are printed.
#
# Defects this found: `snapshot` printed an empty list of retainers or
# path classes, or "(out of memory)" as a path, with status 0, and
# called a failure to decode for want of memory a damaged snapshot;
# `--format pprof` wrote empty strings for names it could not intern
# (status 0), and passed NULL to memcpy; a report that failed for want
# of memory left its half-written -o file; `info` printed the VM's and
# the native live bytes as 0 when it had no memory to add them up;
# `events` lost the lines it held when their buffer could not grow.
. tests/lib/tap.sh
. tests/lib/fault.sh
D=$TMPD/p
mkdir -p "$D"
FAULT_DIR=$D LUA_CPATH="$BUILD/?.so;;" with_timeout 60 $LUAJIT tests/lib/fault_prog.lua \
  > /dev/null 2> "$TMPD/rec.err"
is "$(grep -c ' ok$' "$TMPD/rec.err")" 9 "the profiles are recorded"
cp tests/fixtures/tarantool-v3-tiny.ljm "$D/tarantool.ljm"

# The commands, one a line: the -o file, if any, is $TMPD/o (given as O),
# and how often to fail calls besides every site's first and last.
cat > "$TMPD/cmds" <<'EOF'
16 info stacks.ljm
16 info --format json native.ljm
16 report one.ljm
16 report --stacks-per-source stacks.ljm
16 report --format json --peak --temporary stacks.ljm
16 report --format html -o O stacks.ljm
16 report --format pprof -o O stacks.ljm
16 report --format svg native.ljm
16 report --format collapsed sample.ljm
16 report one.ljm stacks.ljm
16 events sample.ljm
16 diff one.ljm stacks.ljm
16 diff --format html one.ljm stacks.ljm
16 snapshot heap.snap
16 snapshot --format json heap.snap
128 report tarantool.ljm
EOF

# run_cmd DIR ARGS...: the fault build's ljmemprof in $D with ARGS (O
# replaced by DIR/o); stdout, stderr and status in DIR/out, DIR/err, DIR/rc.
# The environment's MP_FAULT_* say which calls fail.
run_cmd() {
  r=$1
  shift
  rm -f "$r/o"
  set -- $(for a in "$@"; do [ "$a" = O ] && echo "$r/o" || echo "$a"; done)
  (cd "$D" && MP_FAULT_REPORT="$r/report" with_timeout 60 "$FAULT/ljmemprof" "$@" \
     < /dev/null > "$r/out" 2> "$r/err")
  echo $? > "$r/rc"
}

# judge DIR N: nothing if the run behaved against the one in $W, else a
# line that says how it did not. Adds its outcome to $TMPD/tally.
judge() {
  r=$1 n=$2 bad=
  rc=$(cat "$r/rc")
  f=$(fault_failed "$r/report")
  [ "$f" != none ] && [ "$f" -ge 1 ] || bad="$bad call $n not failed ($f);"
  case $rc in
    0)
      echo "ok" >> "$TMPD/tally"
      cmp -s "$r/out" "$W/out" || bad="$bad status 0, stdout differs;"
      cmp -s "$r/err" "$W/err" || bad="$bad status 0, stderr: $(head -c 200 "$r/err" | tr '\n' '|');"
      if [ -e "$W/o" ]; then cmp -s "$r/o" "$W/o" || bad="$bad status 0, the -o file differs;"; fi
      ;;
    2)
      # The no-fault run's own warnings may come first.
      grep -vxF -f "$W/err" "$r/err" > "$r/said"
      echo "error: $(sed 's/[0-9][0-9]*/N/g; s|/[^ ]*/||g' "$r/said")" >> "$TMPD/tally"
      [ "$(wc -l < "$r/said")" = 1 ] && grep -q 'out of memory\|Cannot allocate memory' "$r/said" ||
        bad="$bad status 2, said: $(head -c 200 "$r/said" | tr '\n' '|');"
      # events ends with {"complete":false} whatever stopped it.
      if [ "$(tail -n 1 "$r/out")" = '{"complete":false}' ]; then
        sed '$d' "$r/out" > "$r/part"
      else
        cp "$r/out" "$r/part"
      fi
      head -c "$(wc -c < "$r/part")" "$W/out" | cmp -s - "$r/part" ||
        bad="$bad status 2, stdout is not a prefix of the output;"
      [ -e "$r/o" ] && bad="$bad status 2, the -o file is left;"
      ;;
    *) bad="$bad status $rc: $(grep -m 3 . "$r/err" | tr '\n' '|');" ;;
  esac
  [ -n "$bad" ] && echo "N=$n:$bad"
}

mkdir -p "$TMPD/w" "$TMPD/f"
W=$TMPD/w
total=0 runs=0
while read -r every cmd; do
  # shellcheck disable=SC2086
  (export MP_FAULT_SITES="$TMPD/sites"; run_cmd "$W" $cmd)
  calls=$(sed -n 's/^calls \([0-9]*\) .*/\1/p' "$W/report")
  sites=$(awk '{print $2}' "$TMPD/sites" | sort -u | wc -l)
  is "$(cat "$W/rc") $(fault_failed "$W/report")" "0 0" "$cmd: succeeds without a failure ($calls calls at $sites sites)"
  fault_pick "$TMPD/sites" "$every" 3 > "$TMPD/ns"
  : > "$TMPD/bad"
  : > "$TMPD/tally"
  k=0
  for n in $(cat "$TMPD/ns"); do
    k=$((k + 1))
    # shellcheck disable=SC2086
    (export MP_FAULT_AT=$n; run_cmd "$TMPD/f" $cmd)
    judge "$TMPD/f" "$n" >> "$TMPD/bad"
  done
  total=$((total + calls)) runs=$((runs + k))
  echo "# $cmd: $k runs, each failing call N of $calls"
  sort "$TMPD/tally" | uniq -c | sed 's/^/#   /'
  is "$(head -n 5 "$TMPD/bad")" "" "$cmd: every N fails cleanly or succeeds unchanged"
done < "$TMPD/cmds"
echo "# in all: $runs runs over $total calls"

done_testing
