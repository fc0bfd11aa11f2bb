#!/bin/sh
# difftest.sh: the differential test of the agent's attribution, outside
# the test suite (tests/gen/README.md).
#
#   scripts/difftest.sh --seed N --explain   one program: its source with each
#                                            line's counts, JIT off and on
#   scripts/difftest.sh --seed N --print     the program only
#   scripts/difftest.sh --seeds A-B          programs A to B
#   scripts/difftest.sh --seconds S          random seeds for S seconds (CI's
#                                            long run); prints every failing seed
#
# LJMP_AGENT_DIR=/path/to/build tests that build's ljmemprof.so and CLI.
# Exit status: 0 all passed, 1 some failed, 2 usage, 124 timed out.
set -eu
cd "$(dirname "$0")/.."
dir=${LJMP_AGENT_DIR:-build}
for f in "$dir/ljmemprof.so" "$dir/ljmemprof"; do
  [ -e "$f" ] || { echo "difftest: $f missing (run make)" >&2; exit 2; }
done
# Programs are bounded by construction; a runaway one (a generator bug)
# fails on memory instead of taking the machine, a hung one on time.
limit=3600
prev=""
for a in "$@"; do
  if [ "$prev" = "--seconds" ]; then limit=$((a + 300)); fi
  prev=$a
done
ulimit -v 8000000 2>/dev/null || true
exec timeout "$limit" luajit tests/gen/difftest-cli.lua "$@"
