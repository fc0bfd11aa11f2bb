#!/bin/sh
# The README's example is what the command it names prints: run
# `make example` (scripts/example.sh) and compare its output with the
# block under the marker in README.md, byte for byte.
. tests/lib/tap.sh
with_timeout 60 make -s example >"$TMPD/got" 2>"$TMPD/err"
rc=$?
is "$rc:$(cat "$TMPD/err")" "0:" "make example runs"
awk '/^<!-- The output of `make example`/ { on = 1; next }
     on && /^```$/ { if (started) exit; started = 1; next }
     on && started { print }' README.md >"$TMPD/want"
is "$(wc -l <"$TMPD/want")" "$(wc -l <"$TMPD/got")" "the README block has as many lines as the output"
if [ "${FLAVOUR:-luajit}" != luajit ]; then
  # The README shows Debian luajit's run: another flavour's binary has its
  # builtins at other offsets and its VM frees a few more blocks of its own.
  ok 0 "# SKIP the README block is the output of Debian's luajit, not $FLAVOUR"
elif cmp -s "$TMPD/want" "$TMPD/got"; then ok 0 "the README block is the output of make example"
else
  diff "$TMPD/want" "$TMPD/got" | sed 's/^/# /'
  ok 1 "the README block is the output of make example"
fi
done_testing
