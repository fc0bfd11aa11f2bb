#!/bin/sh
# run under a termination signal (found by a new user, issue 18): SIGTERM
# or SIGHUP to `ljmemprof run` (timeout(1), a closing terminal) killed it
# and left the script running, recording into temporary files nobody
# removed. Now the signal is passed on, the script ends as it would alone,
# what it recorded is reported, and no temporary file is left.
. tests/lib/tap.sh
LUAJIT=${LUAJIT:-luajit}
TMPD=$(mktemp -d)
trap 'rm -rf "$TMPD"' EXIT
mkdir "$TMPD/tmp"
cat > "$TMPD/loop.lua" <<'LUA'
keep = {}
local i = 0
while true do i = i + 1; keep[i % 1000 + 1] = { i } end
LUA
for s in "TERM 15" "HUP 1"; do
  set -- $s; sig=$1; num=$2
  # Stacks: a profile of a few MB a second, not one-frame's GB.
  env TMPDIR="$TMPD/tmp" LUA_CPATH="$BUILD/?.so;;" "$BUILD/ljmemprof" run \
    --luajit "$LUAJIT" --stacks --leak-only "$TMPD/loop.lua" \
    > "$TMPD/out" 2> "$TMPD/err" &
  pid=$!
  sleep 1
  kill -$sig $pid
  waited=0
  while kill -0 $pid 2>/dev/null && [ $waited -lt 60 ]; do
    sleep 1; waited=$((waited + 1))
  done
  wait $pid; rc=$?
  is "$rc" "$((128 + num))" "SIG$sig: run ends with the script's status (killed by it)"
  grep -q '^@.*loop.lua:3 holds [0-9]*B in [0-9]* blocks' "$TMPD/out"; ok $? \
    "SIG$sig: the report of what was recorded is printed"
  grep -q 'the script was ended by a signal to run (passed on)' "$TMPD/err"; ok $? \
    "SIG$sig: run says the script was ended by its signal"
  is "$(ls "$TMPD/tmp")" "" "SIG$sig: no temporary file is left"
  pgrep -f "$TMPD/loop.lua" > /dev/null; is "$?" 1 "SIG$sig: the script is not left running"
done
done_testing
