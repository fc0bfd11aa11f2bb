#!/bin/sh
# Answers a user can trust at first read (issue 17, the report's side):
# what each view says is true as it reads, and the views agree.
#   - pprof: a function per (name, file, first line), which go tool pprof
#     shows apart (it merges functions by name);
#   - info counts the sources the report lists (and the callers apart);
#   - a frame without a line (a caller a trace returned below its base
#     to) is not "line 0";
#   - diff: a shortened path never reads as a relative one; text, JSON
#     and HTML count the same changed sources;
#   - live blocks on JIT traces of a profile without stacks: a note on
#     how to get their lines;
#   - a "... and N more" line under PEAK or a trace's lines says what the
#     rest holds or made.
. tests/lib/tap.sh
MP="$BUILD/ljmemprof"
unset LUA_CPATH
cd "$TMPD" || exit 1

# -- pprof: two files' render, and their main chunks, apart ----------------
mkdir pp
cat >pp/a.lua <<'EOF'
local keep = {}
local function render(n)
  for i = 1, n do keep[#keep + 1] = { i } end
end
render(100)
return render
EOF
cat >pp/b.lua <<'EOF'
local keep = {}
local function render(n)
  for i = 1, n do keep[#keep + 1] = { i, i } end
end
render(300)
return render
EOF
cat >pp/main.lua <<'EOF'
package.path = "./?.lua;" .. package.path
local ra = require("a")
local rb = require("b")
ra(10) rb(10)
EOF
(cd pp && with_timeout 60 "$MP" run --stacks -o p.ljm -- luajit -joff main.lua >/dev/null 2>&1)
ok $? "pprof: the two-render program is recorded"
# What each function allocated itself, as the report's collapsed stacks
# have it: the pprof rows must be these.
self() { "$MP" report --format collapsed pp/p.ljm |
	 awk -v f="$1" '{ n = split($0, a, ";"); sub(/ [0-9]+$/, "", a[n]);
			  if (index(a[n], f) == 1) s += $NF } END { print s + 0 }'; }
ra=$(self "render (./a.lua:")
rb=$(self "render (./b.lua:")
ma=$(self "main chunk (./a.lua:")
mb=$(self "main chunk (./b.lua:")
mm=$(self "main chunk (main.lua:")
run "$MP" report --format pprof -o pp/p.pb.gz pp/p.ljm
is "$rc:$err" "0:" "pprof: written"
if command -v go >/dev/null 2>&1; then
  export GOCACHE="$TMPD/gocache" HOME="${HOME:-$TMPD}"
  top=$(with_timeout 120 go tool pprof -top -unit=B -nodecount=30 pp/p.pb.gz 2>&1)
  rows=$(echo "$top" | awk '$NF ~ /\)$/ && /(render|main chunk) \(/ {
	   f = $1; $1 = $2 = $3 = $4 = $5 = ""; sub(/^ */, ""); print $0 " " f }' | sort)
  is "$rows" "main chunk (./a.lua) ${ma}B
main chunk (./b.lua) ${mb}B
main chunk (main.lua) ${mm}B
render (./a.lua:2) ${ra}B
render (./b.lua:2) ${rb}B" \
    "go tool pprof -top: each file's render and main chunk a row of its own, with what it allocated"
  is "$(echo "$top" | grep -c ' render$\| main chunk$')" 0 "go tool pprof -top: no row merges functions of one name"
  list=$(cd pp && with_timeout 120 go tool pprof -unit=B -list '^render \(./b.lua:2\)$' p.pb.gz 2>&1)
  echo "$list" | grep -q "^ *${rb}B *${rb}B *3:  for i = 1, n do keep\[#keep + 1\] = { i, i } end"
  r=$?
  ok $r "go tool pprof -list: the function's source, from its file"
  [ $r -eq 0 ] || echo "$list" | sed 's/^/# /'
else
  echo "not ok - go tool pprof is not installed (Debian golang-go; make deps)"
  tap_n=$((tap_n + 1)); tap_failed=$((tap_failed + 1))
fi

# -- info counts the sources the report lists -----------------------------
# A stack profile has a site for every frame, callers with no event of
# their own too (luajit (main), require, the main chunks' call lines):
# info counted 17 where the report and its page list 10.
nrep=$("$MP" report --format json pp/p.ljm | luajit -e '
  local d, seen, n = require("cjson").decode(io.read("*a")), {}, 0
  for _, k in ipairs({ "allocations", "reallocations", "deallocations" }) do
    for _, r in ipairs(d[k]) do
      if not seen[r.source.label] then seen[r.source.label] = true; n = n + 1 end
    end
  end
  print(n)')
"$MP" report --format html -o pp/p.html pp/p.ljm
npage=$(luajit -e '
  local s = io.open("pp/p.html"):read("*a")
  local d = require("cjson").decode(s:match("<script[^>]*id=\"data\"[^>]*>(.-)</script>"))
  print(#d.sources)')
run "$MP" info pp/p.ljm
is "$nrep:$npage:$(echo "$out" | grep '^sources:')" "10:10:sources:    10 with events (the sources the report lists), and 7 callers in the call stacks with none of their own" \
  "info: the report's sources (its JSON sections', its page's), and the callers apart"
run "$MP" info --format json pp/p.ljm
echo "$out" | grep -q '"sources":10,"callers":7,'
ok $? "info --format json: sources and callers"

# -- A frame below a trace that returned below its base: no line 0 ---------
mkdir tr
cat >tr/m.lua <<'EOF'
local M = {}
function M.split(s)
  local out = {}
  for f in s:gmatch("[^,]+") do out[#out + 1] = f end
  return out
end
function M.other(s)
  local r = {}
  for i = 1, 2 do r[i] = s .. i end
  return r
end
return M
EOF
cat >tr/main.lua <<'EOF'
package.path = "./?.lua;" .. package.path
local m = require("m")
local keep = {}
for i = 1, 2000 do
  local t = m.split("a,b,c" .. i)
  keep[i % 10 + 1] = m.other(t[1])
end
EOF
(cd tr && with_timeout 60 "$MP" run --stacks -o t.ljm main.lua >/dev/null 2>&1)
ok $? "a trace that returns below its base frame: recorded"
run "$MP" report --format collapsed tr/t.ljm
echo "$out" | grep -q '^luajit (main);main chunk (main.lua:6);TRACE \[[0-9]*\] started at @./m.lua:4;M.other (./m.lua:8) '
ok $? "the main chunk below the trace at its call of the function the trace went on into (main.lua:6), as with the JIT off"
is "$(echo "$out" | grep -c ':0)')" 0 "no frame says line 0"

# -- diff: two files of one name, one by a relative path ------------------
# The program's ./utils.lua (its chunk name relative to the working
# directory) and a library's utils.lua under another directory: shortened
# to that directory, the library's read "@utils.lua" as the program's
# does, under a header that said every path was relative to it.
mkdir -p df/run df/lib/pl
cat >df/run/utils.lua <<'EOF'
return function(n) local t = {} for i = 1, n do t[i] = { i } end return t end
EOF
cat >df/lib/pl/utils.lua <<'EOF'
return function(n) local t = {} for i = 1, n do t[i] = { i, i } end return t end
EOF
cat >df/run/main.lua <<'EOF'
local mine = dofile("./utils.lua")
local lib = dofile(LIB .. "/utils.lua")
local keep = { mine(N), lib(N) }
EOF
(cd df/run && with_timeout 60 "$MP" run -o a.ljm -- luajit -joff -e "N=10 LIB='$TMPD/df/lib/pl'" main.lua >/dev/null 2>&1 &&
  with_timeout 60 "$MP" run -o b.ljm -- luajit -joff -e "N=20 LIB='$TMPD/df/lib/pl'" main.lua >/dev/null 2>&1)
ok $? "diff: the two-utils program is recorded twice"
out=$(cd df/run && with_timeout 60 "$MP" diff a.ljm b.ljm)
is "$(echo "$out" | sed -n 2p)" "(\".../\" is $TMPD/df/lib/pl/; the other paths are as recorded)" \
  "diff: the header says what the shortened paths stand for, and that the others are as recorded"
is "$(echo "$out" | grep 'utils.lua:1 (function at line 1):$')" "@./utils.lua:1 (function at line 1):
@.../utils.lua:1 (function at line 1):" "diff: the library's utils.lua and the program's ./utils.lua read apart"
# From a directory that holds the library: relative to it, unmarked.
out=$(cd df && with_timeout 60 "$MP" diff run/a.ljm run/b.ljm)
is "$(echo "$out" | sed -n 2p)
$(echo "$out" | grep 'utils.lua:1 (function at line 1):$')" "(paths relative to $TMPD/df/)
@./utils.lua:1 (function at line 1):
@lib/pl/utils.lua:1 (function at line 1):" "diff from a directory that holds the library: its path relative to it, the program's as recorded"

# -- diff: text, JSON and HTML count the same changed sources --------------
# mkb's 50 tables are made before or after mka's 100 are freed: what each
# line allocated, freed and held at the end is the same in both runs, what
# mkb held at the peak is not. The HTML page, which keeps the peaks for
# its flame graph, counted mkb as changed (it has no column for the peak)
# where the text and JSON, without --peak, did not.
cat >pk.lua <<'EOF'
local function gc() collectgarbage() end
local function mka(n) local t = {} for i = 1, n do t[i] = { i } end return t end
local function mkb(n) local t = {} for i = 1, n do t[i] = { i } end return t end
local a = mka(100)
local b
if arg[1] then b = mkb(50) end
a = nil gc()
if not arg[1] then b = mkb(50) end
b = nil gc()
EOF
with_timeout 60 "$MP" run -o pa.ljm -- luajit -joff pk.lua >/dev/null 2>&1 &&
  with_timeout 60 "$MP" run -o pb.ljm -- luajit -joff pk.lua late >/dev/null 2>&1
ok $? "diff: the peak program is recorded twice"
# "CHANGED:UNCHANGED" as text, JSON and the HTML page's data have it.
counts() {
  t=$(with_timeout 60 "$MP" diff $1 pa.ljm pb.ljm | sed -n 's/^\([0-9]*\) sources\{0,1\} changed, \([0-9]*\) did not$/\1:\2/p')
  j=$(with_timeout 60 "$MP" diff $1 --format json pa.ljm pb.ljm | sed -n 's/.*"changed":\([0-9]*\),"unchanged":\([0-9]*\),.*/\1:\2/p')
  with_timeout 60 "$MP" diff $1 --format html -o pk.html pa.ljm pb.ljm
  h=$(sed -n 's/.*"summary":{"changed":\([0-9]*\),"unchanged":\([0-9]*\),.*/\1:\2/p' pk.html)
  echo "$t $j $h"
}
c0=$(counts "")
ch=${c0%%:*} un=${c0%% *}; un=${un#*:}
is "$c0" "$ch:$un $ch:$un $ch:$un" "diff: text, JSON and HTML count the same changed sources ($c0)"
with_timeout 60 "$MP" diff pa.ljm pb.ljm | grep -q '^@pk.lua:3 (mkb):$'
is "$?" 1 "diff: mkb, changed at the peak alone, is not a changed source without --peak"
c1=$(counts --peak)
is "$c1" "$((ch + 1)):$((un - 1)) $((ch + 1)):$((un - 1)) $((ch + 1)):$((un - 1))" \
  "diff --peak: mkb is a changed source in all three"
with_timeout 60 "$MP" diff --peak pa.ljm pb.ljm | grep -A4 '^@pk.lua:3 (mkb):$' | sed -n 5p | grep -q '^	at the peak      0B -> 4984B (+4984B) in 0 -> 52 blocks (+52)$'
ok $? "diff --peak: mkb's 50 tables and their array at the new peak, its row's change"
grep -q '\["@pk.lua:3 (mkb)","lua",[0-9,]*,0,4984\]' pk.html
ok $? "diff --peak --format html: the row carries both peaks, for the column that tells the change"

# -- Leaks on JIT traces of a profile without stacks: a note says how ----
# to get their lines. The loop's tables are made by its trace: the heap
# summary bills them to "TRACE [1] started at @lk.lua:2", no line.
cat >lk.lua <<'EOF'
local keep = {}
for i = 1, 1000 do keep[i] = { i } end
KEEP = keep
EOF
with_timeout 60 "$MP" run -o lk.ljm lk.lua >/dev/null 2>&1 &&
  with_timeout 60 "$MP" run --stacks -o lks.ljm lk.lua >/dev/null 2>&1 &&
  with_timeout 60 "$MP" run -o lkj.ljm -- luajit -joff lk.lua >/dev/null 2>&1
ok $? "the leaking loop is recorded with the JIT on, with stacks, with the JIT off"
run "$MP" report --leak-only lk.ljm
# The trace rows of the heap summary, their bytes and blocks summed.
tr=$(echo "$out" | awk '/^TRACE \[[0-9]*\] .* holds [0-9]*B in [0-9]* blocks? / {
       b += $(NF - 4) + 0; n += $(NF - 2); k++ } END { printf "%dB in %d blocks live at the end (%d trace%s)", b, n, k, k == 1 ? "" : "s" }')
note="TRACE rows hold $tr without a line: the profile has no call stacks; record with 'ljmemprof run --stacks' (the lines inside each trace) or with the JIT off ('ljmemprof run -- luajit -joff SCRIPT')"
is "$(echo "$out" | sed -n '/^NOTES:$/,$p' | grep '^TRACE rows')" "$note" \
  "report --leak-only, JIT on, no stacks: a note on the trace rows' blocks and how to get their lines"
case $tr in 0B*) ok 1 "the trace rows hold blocks ($tr)" ;; *) ok 0 "the trace rows hold blocks ($tr)" ;; esac
run "$MP" report lk.ljm
is "$(echo "$out" | grep -c '^TRACE rows hold ')" 1 "the text report's NOTES say it too"
run "$MP" report --format json lk.ljm
echo "$out" | grep -qF "\"notes\":[\"a full garbage collection ran before the end: what is held is reachable\",\"$note\"]"
ok $? "JSON: the note in notes"
run "$MP" report --accounting tarantool --leak-only lk.ljm
is "$(echo "$out" | grep -c '^TRACE rows hold ')" 0 "--accounting tarantool: Tarantool's layout, no such note"
for f in lks lkj; do
  run "$MP" report --leak-only $f.ljm
  is "$(echo "$out" | grep -c '^TRACE rows hold ')" 0 "$f.ljm (with stacks, or the JIT off): no such note"
done

# -- "... and N more" lines say what the rest holds -----------------------
# PEAK cut by --top: the rows and the last line add up to its header, as
# under HEAP SUMMARY (it said "... and 7 more sources" and no bytes).
cat >app.lua <<'EOF'
jit.off()
cache = {}
local function lookup(key)
  local v = cache[key]
  if not v then
    v = { key = key, value = ("v"):rep(32) .. key }
    cache[key] = v
  end
  return v
end
local function render(n)
  local parts = {}
  for i = 1, n do parts[#parts + 1] = lookup(i % 500).value end
  return table.concat(parts, ",")
end
local out
for round = 1, 200 do out = render(100) .. "!" end
EOF
with_timeout 60 "$MP" run -o app.ljm app.lua >/dev/null 2>&1
ok $? "the cache program is recorded"
run "$MP" report --peak --leak-only --top 2 app.ljm
sum=$(echo "$out" | sed -n '/^PEAK: /,/^$/p' | awk '
  /^PEAK: / { hb = $2 + 0; hn = $4 }
  / holds [0-9]*B in [0-9]* blocks? \(/ { b += $(NF - 4) + 0; n += $(NF - 2); rows++ }
  /^\.\.\. and [0-9]* more sources? holds? [0-9]*B in [0-9]* blocks? \(--top 0 prints all\)$/ {
    b += $(NF - 7) + 0; n += $(NF - 5); more = $3 }
  END { printf "%d %d %d %d %d %d", rows, more, b, hb, n, hn }')
set -- $sum
all=$("$MP" report --peak --leak-only --top 0 app.ljm | sed -n '/^PEAK: /,/^$/p' | grep -c ' holds ')
is "$1:$(($1 + $2)):$3:$5" "2:$all:$4:$6" "PEAK --top 2: two rows, then the $2 more with what they hold: the header's bytes and blocks ($sum)"
# The lines inside a trace, cut at 10 by --top: the rest's events and
# bytes, so that they add up to the trace's row.
{ echo 'local keep = {}'
  for k in 1 2 3 4 5 6 7 8 9 10 11 12 13; do echo "local function f$k(i) return { i, $k } end"; done
  echo 'for i = 1, 3000 do'
  echo '  keep[i % 7] = { f1(i), f2(i), f3(i), f4(i), f5(i), f6(i), f7(i), f8(i), f9(i), f10(i), f11(i), f12(i), f13(i) }'
  echo 'end'; } >tl.lua
with_timeout 60 "$MP" run --stacks -o tl.ljm tl.lua >/dev/null 2>&1
ok $? "the loop of 13 inlined functions is recorded with stacks"
run "$MP" report --stacks-per-source 1 --top 3 tl.ljm
sum=$(echo "$out" | awk '
  /^TRACE \[[0-9]*\] started at @tl.lua:15: / { sub(/.*: /, ""); te = $1; tb = substr($3, 2) + 0; on = 1; next }
  on && /^\t\t\.\.\. and [0-9]* more: [0-9]* events\t\+[0-9]*B$/ { more = $3; e += $5; b += substr($7, 2) + 0; on = 0; next }
  on && /^\t\t.*: [0-9]* events\t\+[0-9]*B$/ { n++; e += $(NF - 2); b += substr($NF, 2) + 0; next }
  on && !/^\tLines in the trace/ { on = 0 }
  END { printf "%d %d %d %d %d %d", n, more, e, te, b, tb }')
set -- $sum
is "$1:$2:$3:$5" "10:4:$4:$6" "lines in a trace, --top: 10, then the 4 more with their events and bytes: the trace's ($sum)"

# -- HEAP SUMMARY of a stack profile: the lines inside each trace ----------
# With the JIT on, the blocks a trace made are billed to the trace; with
# call stacks the lines inside it are told, and HEAP SUMMARY lists them
# under the trace's row: the same bytes per line as with the JIT off.
cat >held.lua <<'EOF'
local cache = {}
local function remember(id, s) cache[id] = { raw = s, n = #s } end
local function gen(i) return ("line %d of the input"):format(i) end
for i = 1, 3000 do remember(i, gen(i)) end
keep = cache
EOF
with_timeout 60 "$MP" run --stacks 16 -o held-on.ljm held.lua >/dev/null 2>&1
with_timeout 60 "$MP" run --stacks 16 -o held-off.ljm -- "${LUAJIT:-luajit}" -joff held.lua >/dev/null 2>&1
run "$MP" report --leak-only held-on.ljm
on=$out
# Per line: the bytes and blocks of its own row plus its lines in traces.
per_line() {
  awk '
    /^HEAP SUMMARY/ { on = 1; next }
    on && /^$/ { exit }
    on && /^TRACE / { next }
    on && /^\tLines in the trace/ { next }
    on { sub(/^\t\t/, ""); l = $0; sub(/ holds .*/, "", l)
         h = $0; sub(/.* holds /, "", h); split(h, f, " ")
         b = f[1]; sub(/B$/, "", b); B[l] += b; N[l] += f[3] }
    END { for (l in B) if (l ~ /held/) print l ":", B[l], N[l] }' | sort
}
is "$(echo "$on" | per_line)" "$("$MP" report --leak-only held-off.ljm | per_line)" \
  "JIT on: each line's bytes and blocks, its row's and in the traces, are the JIT-off ones"
case $on in *"	Lines in the trace (held at the end):"*) r=0;; *) r=1;; esac
ok $r "HEAP SUMMARY lists the lines under a trace's row"
# The lines under each trace add up to the trace's row, in the text and
# in the JSON's trace_lines.
sum=$(echo "$on" | awk '
  function out() { if (t != "") print t, want, got; t = "" }
  /^TRACE / { out(); t = $2; want = $(NF-4); sub(/B$/, "", want); got = 0; next }
  /^\t\t/ && t != "" { h = $0; sub(/.* holds /, "", h); sub(/B .*/, "", h); got += h; next }
  /^\tLines/ { next }
  { out() }
  END { out() }')
bad=$(echo "$sum" | awk '$2 != $3' | wc -l)
is "$bad:$(echo "$sum" | grep -c .)" "0:$(echo "$on" | grep -c '^TRACE ')" "each trace's lines add up to its row ($sum)"
run "$MP" report --format json held-on.ljm
js=$(echo "$out" | python3 -c '
import json, sys
d = json.load(sys.stdin)
for r in d["heap_summary"]:
    if r["source"]["kind"] == "trace":
        print(r["bytes"], sum(l["bytes"] for l in r["trace_lines"]),
              r["blocks"], sum(l["blocks"] for l in r["trace_lines"]))')
is "$(echo "$js" | awk '$1 != $2 || $3 != $4' | wc -l):$(echo "$js" | grep -c .)" \
  "0:$(echo "$on" | grep -c '^TRACE ')" "the JSON's trace_lines add up to each trace's row ($js)"
done_testing
