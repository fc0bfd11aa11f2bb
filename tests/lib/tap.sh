# tap.sh: minimal TAP for shell tests. Source it from the repo root.
#   ok COND_STATUS NAME; is GOT WANT NAME; done_testing
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
# Run luajit with the freshly built module.
lj() { LUA_CPATH="$PWD/build/?.so;;" luajit "$@"; }
# "true" if `ljmemprof events` says FILE is complete, else "false".
complete() { build/ljmemprof events "$1" 2>/dev/null | tail -n 1 | sed -n 's/.*"complete":\([a-z]*\).*/\1/p'; }
TMPD=$(mktemp -d "${TMPDIR:-/tmp}/ljmp-test.XXXXXX")
trap 'rm -rf "$TMPD"' EXIT
