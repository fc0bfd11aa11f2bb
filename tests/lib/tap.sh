# tap.sh: minimal TAP for shell tests. Source it from the repo root.
#   ok COND_STATUS NAME; is GOT WANT NAME; done_testing
#   run CMD [ARGS...]: CMD under with_timeout 60; sets $out, $err, $rc
#   with_timeout SECONDS CMD [ARGS...]: CMD's status, or 124 (and a TAP
#     comment on stderr) if it ran longer than SECONDS; it is killed then (TERM, KILL
#     5 s later), and so is everything it started in its process group.
# Every command that may wait (on a pipe, a FIFO, a child, the network)
# runs under with_timeout: a test that hangs is a failure, not a stall.
# BUILD: the build under test, absolute (make test sets it for a flavour;
# default build/). LUAJIT: its interpreter (luajit in PATH by default).
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
tap_n=0
tap_failed=0
ok() {
  tap_n=$((tap_n + 1))
  if [ "$1" -eq 0 ]; then echo "ok $tap_n - $2"
  else echo "not ok $tap_n - $2"; tap_failed=$((tap_failed + 1)); fi
}
is() {
  tap_n=$((tap_n + 1))
  if [ "$1" = "$2" ]; then echo "ok $tap_n - $3"
  else
    echo "not ok $tap_n - $3"
    printf '# expected: %s\n#   actual: %s\n' "$2" "$1"
    tap_failed=$((tap_failed + 1))
  fi
}
done_testing() {
  echo "1..$tap_n"
  [ "$tap_failed" -eq 0 ]
  exit $?
}
with_timeout() {
  _wt_secs=$1
  shift
  timeout -k 5 "$_wt_secs" "$@"
  _wt_rc=$?
  if [ "$_wt_rc" -eq 124 ] || [ "$_wt_rc" -eq 137 ]; then
    echo "# timed out after ${_wt_secs} s: $*" >&2
  fi
  return "$_wt_rc"
}
# run CMD...: sets $out, $err, $rc (CMD killed after 60 s).
run() {
  with_timeout 60 "$@" >"$TMPD/out" 2>"$TMPD/err"
  rc=$?
  out=$(cat "$TMPD/out")
  err=$(cat "$TMPD/err")
}
# Run luajit with the freshly built module.
lj() { LUA_CPATH="$BUILD/?.so;;" luajit "$@"; }
# "true" if `ljmemprof events` says FILE is complete, else "false".
complete() { "$BUILD/ljmemprof" events "$1" 2>/dev/null | tail -n 1 | sed -n 's/.*"complete":\([a-z]*\).*/\1/p'; }
# The end of a text report of a profile that notes no full collection
# before its end (render/mp_render.c, mp_note_uncollected).
NOTES_NONE="

NOTES:
the profile notes no full garbage collection before its end: what is held may be garbage never collected (to see only what is reachable, record with mp.stop{collect = true} or 'ljmemprof run', whose collection runs as the Lua state closes: a script that ends with os.exit(code) skips it, os.exit(code, true) closes the state)"
TMPD=$(mktemp -d "${TMPDIR:-/tmp}/ljmp-test.XXXXXX")
trap 'rm -rf "$TMPD"' EXIT
