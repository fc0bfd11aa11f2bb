#!/bin/sh
# Run one test file under a time limit: `make test` runs each file of the
# suite through this (prove --exec), so that a test that hangs fails, says
# so, and lets the suite go on, instead of holding CI until its own limit.
# The file runs under the interpreter of its #! line. TEST_TIMEOUT: the
# limit in seconds (unset or empty: 900); at the limit the file's process group
# gets SIGTERM, and SIGKILL 10 s later.
f=${1:?usage: timed.sh TESTFILE}
limit=${TEST_TIMEOUT:-900}
case $limit in
  '' | *[!0-9]* | 0)
    echo "timed.sh: TEST_TIMEOUT=$limit: not a positive number of seconds" >&2
    exit 2 ;;
esac
interp=$(sed -n '1s/^#![[:space:]]*//p' "$f")
if [ -z "$interp" ]; then
  echo "timed.sh: $f: no #! line to run it with" >&2
  exit 2
fi
# The #! line's words: an interpreter and maybe its argument.
# shellcheck disable=SC2086
timeout -k 10 "$limit" $interp "$f"
rc=$?
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
  echo "timed.sh: $f: killed after $limit s (TEST_TIMEOUT)" >&2
fi
exit "$rc"
