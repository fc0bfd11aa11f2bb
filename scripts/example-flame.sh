#!/bin/sh
# example-flame.sh [OUT.svg]: the flame graph of docs/REPORT.md. Profiles
# examples/example.lua as scripts/example.sh does (JIT off, the same
# environment, so the profile is the same in every clone), with call
# stacks of up to STACKS frames (default 64), and draws it (default
# docs/example-flame.svg).
# tests/report-stacks.t checks that the committed file is this output.
set -eu
out=${1:-docs/example-flame.svg}
stacks=${STACKS:-64}
dir=$(mktemp -d "${TMPDIR:-/tmp}/ljmemprof-example.XXXXXX")
trap 'rm -rf "$dir"' EXIT
prof=$dir/example.ljm
b=${BUILD:-build}	# The build of a flavour (BUILD, as make test sets it),
b=${b#"$PWD"/}		# relative: the profile must not depend on where the tree is.
env -u LUA_PATH -u LUA_INIT LUA_CPATH="$b/?.so;;" luajit -joff -e \
  "assert(require('ljmemprof').start{ path = '$prof', stacks = $stacks })" \
  examples/example.lua >/dev/null
"$b/ljmemprof" report --format svg -o "$out" "$prof"
