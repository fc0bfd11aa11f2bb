#!/bin/sh
# fuzz-report.sh BINARY SECONDS: run the report pipeline's libFuzzer target
# (built by `make fuzz`) for SECONDS on a corpus seeded from
# tests/fuzz/seeds. Exits non-zero if libFuzzer finds anything: a crash, a
# sanitizer report, a leak, a slow input (10 s) or memory over 2 GiB. The
# input that failed is left in build/fuzz/ (crash-*, leak-*, timeout-*).
set -eu
bin=$1
secs=${2:-60}
dir=$(dirname "$bin")
seeds=$(pwd)/tests/fuzz/seeds
mkdir -p "$dir/corpus"
cd "$dir"
exec "./$(basename "$bin")" -max_total_time="$secs" -timeout=10 \
  -rss_limit_mb=2048 -max_len=8192 -print_final_stats=1 \
  corpus "$seeds"
