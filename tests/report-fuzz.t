#!/bin/sh
# libFuzzer with ASan and UBSan over the reader, the profile pass and the
# renderers finds nothing in LJMP_FUZZ_SECONDS (default 15; `make fuzz`
# runs 60). Skipped without clang and libclang-rt.
. tests/lib/tap.sh
secs=${LJMP_FUZZ_SECONDS:-15}
if ! command -v "${FUZZ_CC:-clang}" >/dev/null 2>&1; then
  echo "1..0 # SKIP clang not found"; exit 0
fi
if ! make -s BUILD="$BUILD" "$BUILD/fuzz/report_fuzz" >"$TMPD/build" 2>&1; then
  if grep -q "fuzzer" "$TMPD/build"; then
    echo "1..0 # SKIP libFuzzer not available (libclang-rt-14-dev)"; exit 0
  fi
  cat "$TMPD/build" | sed 's/^/# /'
  ok 1 "the fuzz target builds"
  done_testing
fi
ok 0 "the fuzz target builds"
with_timeout $((secs + 120)) scripts/fuzz-report.sh $BUILD/fuzz/report_fuzz "$secs" >"$TMPD/log" 2>&1
rc=$?
grep -q "^Done [0-9]* runs" "$TMPD/log"
found=$?
if [ $rc -ne 0 ] || [ $found -ne 0 ]; then tail -n 40 "$TMPD/log" | sed 's/^/# /'; fi
is "$rc" 0 "$secs s of fuzzing find nothing ($(grep -o '^Done [0-9]* runs' "$TMPD/log"))"
done_testing
