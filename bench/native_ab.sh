#!/bin/sh
# bench/native_ab.sh: bench/native.lua's figures side by side in one run,
# the runs of every column interleaved (drift falls on all alike), with
# the median CPU seconds and its ratio to the unprofiled run:
#   bench/native_ab.sh [--pairs N] [--old DIR] WORK MODE...
# WORK is cjson, ffi, ffioff, ffibuf or vm; MODE stacks, native or sampled (none is always
# run). --old DIR: the same modes with DIR/ljmemprof.so too (a build of
# an earlier commit), in columns of their own.
set -eu
pairs=5 old=
while [ $# -gt 0 ]; do
  case $1 in
  --pairs) pairs=$2; shift 2 ;;
  --old) old=$2; shift 2 ;;
  *) break ;;
  esac
done
[ $# -ge 2 ] || { echo "usage: $0 [--pairs N] [--old DIR] WORK MODE..." >&2; exit 2; }
work=$1; shift
here=$(cd "$(dirname "$0")" && pwd)
new=${BUILD:-build}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ljmp-native-ab.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cols="none:$new"
for m in "$@"; do
  [ -n "$old" ] && cols="$cols $m:$old"
  cols="$cols $m:$new"
done
i=0
while [ $i -lt "$pairs" ]; do
  for c in $cols; do
    m=${c%%:*} b=${c#*:}
    # A column's file is named by its index, not its path.
    k=$(echo "$c" | cksum | cut -d' ' -f1)
    BUILD=$b TMPDIR=$tmp luajit "$here/native.lua" "$m" "$work" |
      awk '{ print $3 }' >> "$tmp/$k"
  done
  i=$((i + 1))
done
med() { sort -n "$1" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
k=$(echo "none:$new" | cksum | cut -d' ' -f1)
base=$(med "$tmp/$k")
printf '%-8s %-8s %-28s %8s %7s\n' work mode agent "cpu s" ratio
for c in $cols; do
  m=${c%%:*} b=${c#*:}
  k=$(echo "$c" | cksum | cut -d' ' -f1)
  v=$(med "$tmp/$k")
  printf '%-8s %-8s %-28s %8s %6.2fx\n' "$work" "$m" "$b" "$v" \
    "$(echo "$v $base" | awk '{ print $1 / $2 }')"
done
