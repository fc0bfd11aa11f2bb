#!/bin/sh
# The heap snapshot reader's memory (issue 20: 100 bytes an object or
# less): its whole report of a list of a million nodes, the shape that
# cost it most (145 bytes an object before the dominators worked in the
# paths' arrays and path classes lost their records), stays within 100
# bytes an object of maximum resident set (of its JSON and text reports);
# and a tree of as many.
. tests/lib/tap.sh
LUAJIT=${LUAJIT:-luajit}
TMPD=$(mktemp -d)
trap 'rm -rf "$TMPD"' EXIT
cat > "$TMPD/heap.lua" <<'LUA'
local mp = require("ljmemprof")
local l
if arg[2] == "list" then for i = 1, 1000000 do l = { next = l } end
else l = {} for i = 1, 1000000 do l[i] = { i } end end
_G.keep = l
collectgarbage(); collectgarbage()
assert(mp.snapshot(arg[1]))
LUA
for shape in list tree; do
  run env LUA_CPATH="$BUILD/?.so;;" "$LUAJIT" -joff "$TMPD/heap.lua" "$TMPD/$shape.snap" $shape
  is "$rc:$err" "0:" "a snapshot of a $shape of a million tables"
  run python3 - "$BUILD/ljmemprof" "$TMPD/$shape.snap" <<'PY'
import json, resource, subprocess, sys
objects = json.loads(subprocess.run([sys.argv[1], "snapshot", "--format", "json",
    "--top", "1", sys.argv[2]], capture_output=True, timeout=120,
    check=True).stdout)["objects"]
p = subprocess.run([sys.argv[1], "snapshot", sys.argv[2]],
                   stdout=subprocess.DEVNULL, timeout=120)
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
print(p.returncode, objects > 1000000, "%.1f" % (rss / objects))
PY
  set -- $out
  ok $([ "$rc:$1:$2" = "0:0:True" ] && awk "BEGIN { exit !($3 <= 100) }"; echo $?) \
    "the $shape's report: $3 bytes an object at most, 100 or less"
done
done_testing
