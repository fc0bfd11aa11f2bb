#!/bin/sh
# Profile examples/example.lua with the freshly built agent and show what
# was recorded (the full report comes from `ljmemprof report`).
set -eu
out=${1:-build/example.bin}
LUA_CPATH="$PWD/build/?.so;;" luajit -e \
  "local mp = require('ljmemprof'); assert(mp.start('$out'))" examples/example.lua
if build/ljmemprof report --help >/dev/null 2>&1; then
  build/ljmemprof report --top 10 "$out"
else
  echo "events by source (top 10):"
  build/ljmemprof events "$out" | sed -n 's/.*"label":"\([^"]*\)".*/\1/p' |
    sort | uniq -c | sort -rn | head -n 10
fi
