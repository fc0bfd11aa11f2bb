#!/bin/sh
# tests/lib/timed.sh, through which make test runs every file of the suite:
# a file that passes or fails keeps its output and status; one that hangs
# is killed at TEST_TIMEOUT seconds, with what it started, and says so; a
# bad TEST_TIMEOUT (unset or empty: 900) or a file without a #! line is a clear error.
. tests/lib/tap.sh
TMPD=$(mktemp -d /tmp/ljmp-test-timed.XXXXXX)
trap 'rm -rf "$TMPD"' EXIT
printf '#!/bin/sh\necho "ok 1 - fine"\necho "1..1"\n' > "$TMPD/pass.t"
printf '#!/bin/sh\necho "not ok 1 - bad"\nexit 3\n' > "$TMPD/fail.t"
printf '#!/bin/sh\nsleep 300 &\necho $! > %s/child\nwait\n' "$TMPD" > "$TMPD/hang.t"
printf 'echo no interpreter\n' > "$TMPD/plain.t"

run tests/lib/timed.sh "$TMPD/pass.t"
is "$rc:$out:$err" "0:ok 1 - fine
1..1:" "a passing file: its output and status 0"
run tests/lib/timed.sh "$TMPD/fail.t"
is "$rc:$out" "3:not ok 1 - bad" "a failing file: its output and its status"

t0=$(date +%s)
TEST_TIMEOUT=2 run tests/lib/timed.sh "$TMPD/hang.t"
took=$(( $(date +%s) - t0 ))
is "$rc:$(printf '%s\n' "$err" | grep '^timed.sh')" \
  "124:timed.sh: $TMPD/hang.t: killed after 2 s (TEST_TIMEOUT)" \
  "a file that hangs: killed at TEST_TIMEOUT, status 124, says so"
[ "$took" -lt 10 ]; ok $? "killed within the limit (took $took s)"
sleep 0.2
# Gone, or a zombie not yet reaped by whoever adopted it.
state=$(ps -o stat= -p "$(cat "$TMPD/child")" | cut -c1)
case $state in ''|Z) ok 0 "what it started is killed too" ;;
  *) ok 1 "what it started is killed too (state $state)" ;; esac

for bad in x 0 -5 1.5 " 3"; do
  TEST_TIMEOUT=$bad run tests/lib/timed.sh "$TMPD/pass.t"
  is "$rc:$out:$err" "2::timed.sh: TEST_TIMEOUT=$bad: not a positive number of seconds" \
    "TEST_TIMEOUT='$bad': an error, status 2, nothing run"
done
run tests/lib/timed.sh "$TMPD/plain.t"
is "$rc:$err" "2:timed.sh: $TMPD/plain.t: no #! line to run it with" \
  "a file without #!: an error"
run tests/lib/timed.sh
is "$rc" 2 "no file: usage, status 2"
case $err in *"usage: timed.sh TESTFILE"*) ok 0 "no file: says the usage" ;;
  *) ok 1 "no file: says the usage ($err)" ;; esac
done_testing
