#!/bin/sh
# Profile examples/example.lua with the freshly built agent, the JIT off,
# and print its report: the README's example is this script's output
# (tests/report-example.t compares them). Relative paths and a cleared
# LUA_PATH/LUA_INIT make the profile the same in every clone: the
# program's strings, and so its allocations, do not depend on where the
# tree is.
set -eu
b=${BUILD:-build}	# The build of a flavour (make example FLAVOUR=...),
b=${b#"$PWD"/}		# relative: the profile must not depend on where the tree is.
out=${1:-$b/example.ljm}
env -u LUA_PATH -u LUA_INIT -u LJMEMPROF LUA_CPATH="$b/?.so;;" luajit -joff -e \
  "assert(require('ljmemprof').start('$out'))" examples/example.lua
echo
echo "\$ $b/ljmemprof report --top 3 -H $out"
"$b/ljmemprof" report --top 3 -H "$out"
