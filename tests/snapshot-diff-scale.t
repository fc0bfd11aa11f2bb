#!/bin/sh
# The diff of two snapshots scales with the objects (issue 20): a list of
# 400,000 nodes, each node a path class of its own, against a small
# snapshot taken before it, within 60 s (it took minutes when every
# class's path was climbed step by step from the node to the root: a
# class's path is now named in at most 24 steps, and the changed classes
# are sorted, not inserted one by one); with its exact figures, and the
# exact path of the deepest node. And `snapshot --top 0` (every retainer)
# of a million strings of random sizes within 60 s (its retainers were
# inserted one by one: minutes), in the order --top 64 gives.
. tests/lib/tap.sh
LUAJIT=${LUAJIT:-luajit}
TMPD=$(mktemp -d)
trap 'rm -rf "$TMPD"' EXIT
N=400000
cat > "$TMPD/list.lua" <<'LUA'
local mp = require("ljmemprof")
local n = tonumber(arg[2])
-- The paths made before the first snapshot: both snapshots hold them.
local pa, pb = arg[1] .. "/a.snap", arg[1] .. "/b.snap"
collectgarbage()
collectgarbage()
collectgarbage("stop")
assert(mp.snapshot(pa))
local c0 = collectgarbage("count")
local l
for i = 1, n do l = { next = l } end
local c1 = collectgarbage("count")
assert(mp.snapshot(pb))
print((c1 - c0) * 1024)
LUA
with_timeout 120 env LUA_CPATH="$BUILD/?.so;;" "$LUAJIT" -joff "$TMPD/list.lua" "$TMPD" $N \
  >"$TMPD/cost" 2>"$TMPD/err"
is "$?:$(cat "$TMPD/err")" "0:" "two snapshots, the second with a list of $N nodes"
cost=$(cat "$TMPD/cost")
start=$(date +%s.%N)
with_timeout 60 "$BUILD/ljmemprof" diff --format json --top 3 "$TMPD/a.snap" "$TMPD/b.snap" \
  >"$TMPD/d.json" 2>"$TMPD/err"
rc=$?
secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
is "$rc:$(cat "$TMPD/err")" "0:" "the diff, within 60 s (took $secs s)"
python3 - "$TMPD/d.json" "$N" "$cost" > "$TMPD/got" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
n, cost = int(sys.argv[2]), int(float(sys.argv[3]))
tab = [t for t in d["types"] if t["type"] == "table"][0]
print(d["new"] == {"count": n, "bytes": cost}, d["gone"], d["resized"],
      tab["new"] == {"count": n, "bytes": cost}, d["more_classes"])
for c in d["classes"]:
    print(c["path"].split(" of ")[0], c["objects"], c["bytes"] == [0, cost // n],
          c["new"]["count"])
PY
is "$(cat "$TMPD/got")" "True {'count': 0, 'bytes': 0} {'count': 0, 'bytes': 0} True $((N - 3))
main thread <local l in main chunk [0, 1] True 1
main thread <local l in main chunk [0, 1] True 1
main thread <local l in main chunk [0, 1] True 1" \
  "$N new tables of the list's bytes, none gone; a class a node, the nearest first"
python3 -c 'import json, sys
print(" | ".join(c["path"].split(">")[1] for c in json.load(open(sys.argv[1]))["classes"]))' \
  "$TMPD/d.json" > "$TMPD/got"
is "$(cat "$TMPD/got")" " | .next | .next.next" "the three: the list's head, then .next, .next.next"
# The deepest node: its path, its first 12 steps and last 12 (at depth
# N + 1: the main thread, the local, then N - 1 times .next).
with_timeout 60 "$BUILD/tests/snap_dump" "$TMPD/b.snap" > "$TMPD/dump"
is "$?" 0 "snap_dump of the list's snapshot"
tail -n 1 "$TMPD/dump" | cut -f 6 | sed 's/ of [^>]*>/>/' > "$TMPD/got"
n10=".next.next.next.next.next.next.next.next.next.next"
is "$(cat "$TMPD/got")" "main thread <local l in main chunk>$n10 ... ($((N + 1 - 24)) steps) ...$n10.next.next" \
  "the deepest node's path: the first and last 12 steps, those between counted"

# A million strings of random sizes, each a retainer of its own.
cat > "$TMPD/strings.lua" <<'LUA'
local mp = require("ljmemprof")
local t = {}
math.randomseed(1)
for i = 1, 1000000 do t[i] = ("x"):rep(math.random(1, 500)) .. i end
collectgarbage()
collectgarbage()
assert(mp.snapshot(arg[1]))
LUA
with_timeout 120 env LUA_CPATH="$BUILD/?.so;;" "$LUAJIT" -joff "$TMPD/strings.lua" "$TMPD/s.snap" \
  2>"$TMPD/err"
is "$?:$(cat "$TMPD/err")" "0:" "a snapshot of a million strings"
start=$(date +%s.%N)
with_timeout 60 "$BUILD/ljmemprof" snapshot --top 0 "$TMPD/s.snap" 2>"$TMPD/err" |
  sed -n '/^TOP RETAINERS/,/^$/p' > "$TMPD/all"
rc=$?
secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
is "$rc:$(cat "$TMPD/err")" "0:" "snapshot --top 0, within 60 s (took $secs s)"
# The header, the retainers, the blank line: the strings and the table.
lines=$(wc -l < "$TMPD/all")
ok $([ "$lines" -gt 1000002 ]; echo $?) "every retainer listed ($((lines - 2)))"
"$BUILD/ljmemprof" snapshot --top 64 "$TMPD/s.snap" | sed -n '/^TOP RETAINERS/,/^$/p' |
  head -n 65 > "$TMPD/top64"
head -n 65 "$TMPD/all" | cmp -s - "$TMPD/top64"
ok $? "its first 64 in the order --top 64 lists them (ties by number)"
rm -f "$TMPD/all" "$TMPD/s.snap"
done_testing
