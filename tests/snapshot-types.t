#!/bin/sh
# `ljmemprof snapshot`'s LIVE BY TYPE: the types of the JSON's "types",
# each with the same bytes and objects, most bytes first, ties by name.
. tests/lib/tap.sh
MP="$BUILD/ljmemprof"
cat >"$TMPD/sn.lua" <<'EOL'
local mp = require("ljmemprof")
keep = {}
for i = 1, 200 do keep[i] = { i } end
for i = 1, 50 do keep[#keep + 1] = function() return i end end
for i = 1, 300 do keep[#keep + 1] = ("s"):rep(40) .. i end
assert(mp.snapshot(arg[1]))
EOL
LUA_CPATH="$BUILD/?.so;;" with_timeout 60 "${LUAJIT:-luajit}" "$TMPD/sn.lua" "$TMPD/sn.snap"
ok $? "the snapshot is taken"
run "$MP" snapshot "$TMPD/sn.snap"
rows=$(echo "$out" | sed -n '/^LIVE BY TYPE$/,/^$/p' | sed '1,2d;/^$/d' |
  awk '{ b = $1; sub(/B$/, "", b); n = $2; $1 = ""; $2 = ""; sub(/^  */, ""); print b "\t" n "\t" $0 }')
run "$MP" snapshot --format json "$TMPD/sn.snap"
want=$(echo "$out" | tr '{' '\n' | sed -n 's/^"type":"\([^"]*\)","count":\([0-9]*\),"bytes":\([0-9]*\)}.*/\3	\2	\1/p' |
  sort -t '	' -k1,1nr -k3,3)
is "$rows" "$want" "LIVE BY TYPE: the JSON's types, by bytes descending, ties by name"
is "$(echo "$rows" | wc -l)" "$(echo "$want" | wc -l)" "as many rows as types ($(echo "$want" | wc -l))"
done_testing
