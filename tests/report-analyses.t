#!/bin/sh
# The analyses on programs whose results are known by construction (the GC
# stopped, the VM's buffers at their smallest before recording, sizes from
# the VM's own counter): the peak is f's 10 MB, not g's 5 MB; a loop of
# short-lived tables is temporary, and how many of them depends on the
# window exactly as counted; two runs that differ in one function differ in
# exactly that source; several profiles add up. Then what a profile says
# of itself (the notes of a full collection and of an early stop, time
# marks, a sampling rate) in info, text and JSON, on streams built by hand.
. tests/lib/tap.sh
MP=$BUILD/ljmemprof
export LUA_CPATH="$BUILD/?.so;;"
# The number of a JSON field on the first line of $1 (where the totals are).
num() { printf '%s\n' "$1" | head -n 1 | sed -n "s/.*\"$2\":\([0-9]*\).*/\1/p"; }

# -- The peak ------------------------------------------------------------------

# f makes a 10 MiB table and drops it; a full collection frees it; then g
# makes a 5 MiB one. The peak is right after f's two blocks (its header and
# its array), and f's line holds all of it.
cat >"$TMPD/peak.lua" <<'EOF'
jit.off(); collectgarbage("stop")
local tnew = require("table.new")
local mp = require("ljmemprof")
local function f() local t = tnew(1310720, 0) return t end
local function g() local t = tnew(655360, 0) return t end
for i = 1, 8 do collectgarbage() end  -- the VM's buffers at their smallest
assert(mp.start(arg[1]))
local c0 = collectgarbage("count")
local a = f()
local c1 = collectgarbage("count")
a = nil
collectgarbage()
local c2 = collectgarbage("count")
local b = g()
local c3 = collectgarbage("count")
mp.stop()
io.stderr:write((c1 - c0) * 1024, " ", (c3 - c2) * 1024, "\n")
EOF
(cd "$TMPD" && with_timeout 60 luajit peak.lua peak.ljm 2>sizes)
ok $? "the peak program runs"
read -r F G <"$TMPD/sizes"
P="$TMPD/peak.ljm"
N=$(with_timeout 60 $MP info --format json "$P" | sed -n 's/.*"events":{"alloc":\([0-9]*\),"realloc":\([0-9]*\),"free":\([0-9]*\)}.*/\1 \2 \3/p' |
  awk '{ print $1 + $2 + $3 }')
run $MP report --peak --leak-only "$P"
peak=$(echo "$out" | sed -n '/^PEAK/,/^$/p' | sed 's/, at [0-9.]* m\{0,1\}s of [0-9.]* m\{0,1\}s$//')
is "$rc:$peak" "0:PEAK: ${F}B in 2 blocks, after event 2 of $N
@peak.lua:4 holds ${F}B in 2 blocks (100.0%)" \
  "--peak: f's ${F} bytes (table and array) after event 2 of $N; g's $G bytes came later"
run $MP report --format json --peak "$P"
is "$(num "$out" after_event):$(echo "$out" | grep -c '^ {"source":{"kind":"lua","label":"@peak.lua:4".*"bytes":'"$F"',"blocks":2}')" \
  "2:1" "json --peak: peak.after_event 2, peak_sources has f's line with its bytes and blocks"
run $MP info "$P"
echo "$out" | grep -q "^peak:       ${F}B in 2 blocks, after event 2 of $N: the most bytes allocated within the profile live at once (report --peak)$"
ok $? "info prints the peak and when, and what that peak is"
js=$($MP info --format json "$P")
net=$(printf '%s\n' "$js" | sed -n 's/.*"net_bytes":\(-\{0,1\}[0-9]*\).*/\1/p')
hi=$(printf '%s\n' "$js" | sed -n 's/.*"peak_net_bytes":\(-\{0,1\}[0-9]*\).*/\1/p')
is "$(echo "$out" | grep '^net:')" "net:        $(printf '%+d' "$net")B, at its highest $(printf '%+d' "$hi")B (allocated less freed over every event, frees of blocks older than the profile included)" \
  "info: net and its highest, saying what they count (not the peak: line)"
run $MP report --format collapsed --metric peak-bytes "$P"
is "$rc:$out" "0:@peak.lua:4 $F" "collapsed --metric peak-bytes: f's line holds the peak"
run $MP report --stacks-per-source --metric peak-count --leak-only "$P"
echo "$out" | grep -q "^CALL STACKS: none"
ok $? "--metric peak-count with --stacks-per-source: the stack view (none recorded)"
# The same with call stacks: the stack that held the peak, and its time
# (the extension has time marks).
sed 's/assert(mp.start(arg\[1\]))/assert(mp.start{ path = arg[1], stacks = 8 })/' \
  "$TMPD/peak.lua" >"$TMPD/peaks.lua"
(cd "$TMPD" && with_timeout 60 luajit peaks.lua peaks.ljm 2>/dev/null)
ok $? "the peak program runs with call stacks"
run $MP report --peak --stacks-per-source --leak-only "$TMPD/peaks.ljm"
is "$(echo "$out" | sed -n '/^CALL STACKS/,/^$/p' | sed -n '2,6p')" "@peaks.lua:4: 2 blocks	${F}B at the peak	in 1 stack
	2 blocks	${F}B at the peak
		table.new
		f (peaks.lua:4)
		main chunk (peaks.lua:9)" "--peak --stacks-per-source: f's stack (table.new called by f, called by the main chunk) held the peak"
t=$(echo "$out" | sed -n 's/^PEAK: .*, at \([0-9.]*\) ms of \([0-9.]*\) ms$/\1 \2/p')
[ -n "$t" ] && awk -v t="$t" 'BEGIN { split(t, a, " "); exit !(a[1] > 0 && a[1] <= a[2]) }'
ok $? "the peak's time lies within the profile's duration ($t ms)"

# -- Temporaries -------------------------------------------------------------------

# churn makes 100 tables that die at once (freed by the collection at the
# end), hold 50 that stay. Table i of churn is followed by (100 - i) + 50
# allocations before its free: with a window of W allocations, the tables
# with 150 - i < W are temporary.
cat >"$TMPD/temp.lua" <<'EOF'
jit.off(); collectgarbage("stop")
local mp = require("ljmemprof")
local keep = require("table.new")(64, 0)
local function churn() for i = 1, 100 do local t = {} end end
local function hold() for i = 1, 50 do keep[i] = {} end end
for i = 1, 8 do collectgarbage() end  -- the VM's buffers at their smallest
assert(mp.start(arg[1]))
local c0 = collectgarbage("count")
churn()
local c1 = collectgarbage("count")
hold()
local c2 = collectgarbage("count")
collectgarbage()
mp.stop()
io.stderr:write((c1 - c0) * 1024, " ", (c2 - c1) * 1024, "\n")
EOF
(cd "$TMPD" && with_timeout 60 luajit temp.lua temp.ljm 2>sizes)
ok $? "the temporaries program runs"
read -r C H <"$TMPD/sizes"
T=$((C / 100))
P="$TMPD/temp.ljm"
for w in default:100 100:50 150:100 149:99 10:0; do
  win=${w%%:*} k=${w#*:}
  if [ "$win" = default ]; then opt=--temporary; win=10000; else opt="--temporary $win"; fi
  run $MP report $opt --leak-only "$P"
  got=$(echo "$out" | sed -n '/^TEMPORARY/,/^$/p')
  pc=$(awk -v k=$k 'BEGIN { printf "%.1f", 100 * k / 150 }')
  want="TEMPORARY: $k of 150 blocks ($pc%), $((k * T))B of $((C + H))B, freed within $win allocations after their own"
  [ "$k" -gt 0 ] && want="$want
@temp.lua:4: $k of 100 blocks	$((k * T))B of ${C}B"
  is "$rc:$got" "0:$want" "$opt: $k of churn's 100 tables, none of hold's 50"
done
run $MP report --temporary 0 "$P"
is "$rc:$err" "2:ljmemprof report: bad value '0' for option '--temporary' (a number of events above 0; see 'ljmemprof report --help')" \
  "--temporary 0: one error line"
run $MP report --format json --temporary 100 "$P"
echo "$out" | grep -q '^ {"source":{"kind":"lua","label":"@temp.lua:4".*"blocks":50,"bytes":'$((50 * T))',"made_blocks":100,"made_bytes":'"$C"'}'
ok $? "json --temporary 100: the same line"

# The frees of run's final collection are no temporaries: the agent marks
# where it starts (FORMAT.md, "The final collection's start"), so a short
# run's tables, held to the end, are not temporary. With the mark renamed
# (a C symbol like any other, as in a profile without it), its frees
# count like any other and the same tables are.
printf 'jit.off()\nlocal a, b, c = {}, {}, {}\n' >"$TMPD/short.lua"
for stk in "" "--stacks"; do
  (cd "$TMPD" && with_timeout 60 $MP run -o short.ljm $stk --temporary short.lua >short.out)
  ok $? "run $stk --temporary of a short program"
  A=$(sed -n 's/^@short\.lua:2: 3 events	+\([0-9]*\)B	-0B$/\1/p' "$TMPD/short.out")
  [ -n "$A" ]
  ok $? "run $stk: the three tables of line 2 ($A bytes)"
  got=$(sed -n '/^TEMPORARY/,/^$/p' "$TMPD/short.out")
  case "$got" in "TEMPORARY: 0 of "*) r=0 ;; *) r=1 ;; esac
  is "$r:$(echo "$got" | grep -c '^@short')" "0:0" \
    "run $stk --temporary: tables freed only by the final collection are not temporary"
  run $MP events "$TMPD/short.ljm"
  is "$(echo "$out" | grep '"final_collection"\|"source":"lua"\|"source":"stack"' | sed 's/^{"event":"\([a-z_]*\)".*/\1/' | tr '\n' ' ')" \
    "alloc alloc alloc final_collection " "events $stk: the mark once, after the program's three allocations and before the collection"
  python3 - "$TMPD/short.ljm" "$TMPD/renamed.ljm" <<'PY'
import sys
d = open(sys.argv[1], 'rb').read()
m = b'\x0c\x01\x12(final collection)'
assert d.count(m) == 1
open(sys.argv[2], 'wb').write(d.replace(m, m[:-1] + b']'))
PY
  ok $? "run $stk: the mark is the C symbol for address 1, once"
  run $MP report --temporary "$TMPD/renamed.ljm"
  is "$rc:$(echo "$out" | sed -n '/^TEMPORARY/,/^$/p' | grep '^@short')" "0:@short.lua:2: 3 of 3 blocks	${A}B of ${A}B" \
    "without the mark, the final collection's frees count: the tables are temporary"
  run $MP events "$TMPD/renamed.ljm"
  is "$(echo "$out" | grep -c final_collection)" 0 "events: a renamed mark is no mark"
done
# Without a final collection, no mark.
cat >"$TMPD/nocollect.lua" <<'EOF'
local mp = require("ljmemprof")
assert(mp.start(arg[1]))
local t = {}
assert(mp.stop())
EOF
(cd "$TMPD" && with_timeout 60 luajit nocollect.lua nc.ljm)
run $MP events "$TMPD/nc.ljm"
is "$rc:$(echo "$out" | grep -c final_collection)" "0:0" "stop() without collect: no mark"

# -- Diff --------------------------------------------------------------------------

# Two runs: f makes 10 tables in one and 20 in the other; g the same 10.
cat >"$TMPD/d.lua" <<'EOF'
jit.off(); collectgarbage("stop")
local mp = require("ljmemprof")
local keep = require("table.new")(64, 0)
local n = arg[2] == "new" and 20 or 10
local function f() for i = 1, n do keep[i] = {} end end
local function g() for i = 1, 10 do keep[40 + i] = {} end end
for i = 1, 8 do collectgarbage() end  -- the VM's buffers at their smallest
assert(mp.start(arg[1]))
local c0 = collectgarbage("count")
f()
local c1 = collectgarbage("count")
g()
mp.stop()
io.stderr:write((c1 - c0) * 1024, "\n")
EOF
(cd "$TMPD" && with_timeout 60 luajit d.lua a.ljm base 2>fa && with_timeout 60 luajit d.lua b.ljm new 2>fb)
ok $? "the diff program runs twice"
FA=$(cat "$TMPD/fa") FB=$(cat "$TMPD/fb")
run $MP diff "$TMPD/a.ljm" "$TMPD/b.ljm"
is "$rc:$(echo "$out" | sed -n 2,5p)" "0:@d.lua:5:
	allocated        ${FA}B -> ${FB}B (+$((FB - FA))B) in 10 -> 20 events (+10)
	freed            0B -> 0B (+0B) in 0 -> 0 events (+0)
	held at the end  ${FA}B -> ${FB}B (+$((FB - FA))B) in 10 -> 20 blocks (+10)" \
  "diff: f's line, and only it, allocated and holds 10 tables more, a line each"
is "$(echo "$out" | sed -n 10p)" "1 source changed, 1 did not" "diff: g's line did not change"
# Lines a terminal shows whole: none over 120 characters, even when the
# chunks have long absolute paths, which are shown relative to the
# working directory, or else to the directory they share (and said so).
mkdir -p "$TMPD/a-long-directory-name/and-another-long-one/and-a-third-one"
D="$TMPD/a-long-directory-name/and-another-long-one/and-a-third-one"
cp "$TMPD/d.lua" "$D/d.lua"
(cd "$TMPD" && with_timeout 60 luajit "$D/d.lua" la.ljm base 2>/dev/null &&
  with_timeout 60 luajit "$D/d.lua" lb.ljm new 2>/dev/null)
run $MP diff "$TMPD/la.ljm" "$TMPD/lb.ljm"
is "$rc:$(echo "$out" | sed -n 2,3p)" "0:(paths relative to $D/)
@d.lua:5:" "diff: chunks under one directory are shown relative to it"
is "$(echo "$out" | awk 'length > 120' | wc -l)" 0 "diff: no line over 120 characters"
out=$(cd "$D" && with_timeout 60 $MP diff --top 1 "$TMPD/la.ljm" "$TMPD/peak.ljm")
n=$(echo "$out" | sed -n 's/^\([0-9]*\) sources changed, .*/\1/p')
is "$(echo "$out" | sed -n '2,3p;7p')" "(paths relative to $D/)
@peak.lua:4:
... and $((n - 1)) more changed sources (--top 0 prints all)" \
  "diff from that directory: relative to it; --top 1 says how many more changed"
run $MP diff --format collapsed "$TMPD/a.ljm" "$TMPD/b.ljm"
is "$rc:$out" "0:@d.lua:5 $FA $FB
@d.lua:6 $FA $FA" "diff --format collapsed: 'stack BASE NEW', as flamegraph.pl's difffolded.pl writes it"
run $MP diff --format json "$TMPD/a.ljm" "$TMPD/b.ljm"
echo "$out" | grep -q '"label":"@d.lua:5".*"change":{"alloc_events":10,"alloc_bytes":'$((FB - FA))',"free_events":0,"free_bytes":0,"live_blocks":10,"live_bytes":'$((FB - FA))'}}'
ok $? "diff --format json: the change of f's line, signed fields"
run $MP diff --format json "$TMPD/b.ljm" "$TMPD/a.ljm"
echo "$out" | grep -q '"change":{"alloc_events":-10,"alloc_bytes":-'$((FB - FA))','
ok $? "diff the other way: negative changes"
run $MP diff --format svg "$TMPD/a.ljm" "$TMPD/b.ljm"
is "$rc:$out:$err" "2::ljmemprof diff: the svg format has no diff (text, json, collapsed or html)" "diff --format svg: one error line"
run $MP diff "$TMPD/a.ljm" "$TMPD/nonexistent.ljm"
is "$rc:$out:$err" "2::ljmemprof: $TMPD/nonexistent.ljm: No such file or directory" "diff with a missing file: one error line"
# A side cut short: status 3, and the output itself says which side (the
# JSON had no sign of it, the text only the warning on stderr).
head -c $(($(wc -c <"$TMPD/a.ljm") - 1)) "$TMPD/a.ljm" >"$TMPD/acut.ljm"
run $MP diff "$TMPD/acut.ljm" "$TMPD/b.ljm"
is "$rc:$(echo "$out" | sed -n 2p)" "3:($TMPD/acut.ljm is cut short or damaged: compared up to the cut)" \
  "diff of a cut profile: the text says which side"
run $MP diff --format json "$TMPD/acut.ljm" "$TMPD/b.ljm"
echo "$out" | grep -q '"complete":{"base":false,"new":true}'
ok $? "diff --format json of a cut profile: complete, per side"
run $MP diff --format json "$TMPD/a.ljm" "$TMPD/b.ljm"
echo "$out" | grep -q '"complete":{"base":true,"new":true}'
ok $? "diff --format json of complete profiles: complete, per side"
run $MP diff --format html "$TMPD/acut.ljm" "$TMPD/b.ljm"
echo "$out" | grep -q '"complete":\[false,true\]' &&
  echo "$out" | grep -q "'cut short or damaged: compared up to the cut'"
ok $? "diff --format html of a cut profile: its summary says which side"

# -- Several profiles in one report -----------------------------------------------

# The same program twice with the JIT on: every count doubles, and traces,
# numbered per process, are one source by where they started.
cat >"$TMPD/jit.lua" <<'EOF'
collectgarbage("stop")
local mp = require("ljmemprof")
local keep = {}
assert(mp.start(arg[1]))
for i = 1, 2000 do keep[i] = { i } end
mp.stop()
EOF
(cd "$TMPD" && with_timeout 60 luajit jit.lua j1.ljm && with_timeout 60 luajit jit.lua j2.ljm)
ok $? "the JIT program runs twice"
run $MP report --format json "$TMPD/j1.ljm"
one=$out
cp "$TMPD/j1.ljm" "$TMPD/j1copy.ljm"	# One file given twice is refused.
run $MP report --format json "$TMPD/j1.ljm" "$TMPD/j1copy.ljm"
is "$rc:$(num "$out" alloc_bytes)" "0:$(( $(num "$one" alloc_bytes) * 2 ))" "a profile merged with a copy of itself: twice its allocated bytes"
run $MP report "$TMPD/j1.ljm" "$TMPD/j2.ljm"
echo "$out" | grep -q '^TRACE started at @jit.lua:5: '
ok $? "merged traces are named by where they started: 'TRACE started at @jit.lua:5'"
t1=$(with_timeout 60 $MP report "$TMPD/j1.ljm" | sed -n 's/^TRACE \[[0-9]*\] started at @jit.lua:5: \([0-9]*\) events.*/\1/p' | awk '{ s += $1 } END { print s }')
t2=$(with_timeout 60 $MP report "$TMPD/j2.ljm" | sed -n 's/^TRACE \[[0-9]*\] started at @jit.lua:5: \([0-9]*\) events.*/\1/p' | awk '{ s += $1 } END { print s }')
tm=$(echo "$out" | sed -n '/^ALLOCATIONS/,/^$/s/^TRACE started at @jit.lua:5: \([0-9]*\) events.*/\1/p')
is "$tm" "$((t1 + t2))" "the merged trace's allocations are the sum of each profile's traces started there ($t1 + $t2)"
run $MP report "$TMPD/j1.ljm" "$TMPD/nonexistent.ljm"
is "$rc:$out" "2:" "a merge with a missing file: nothing reported"

# A merge of profiles sampled at different rates, or some not sampled,
# says each rate in the order given (it said the last rate for all); one
# rate shared by all is said as of one profile.
cat >"$TMPD/sm.lua" <<'EOF'
jit.off()
local keep = {}
for i = 1, 20000 do keep[i] = { i, i } end
EOF
(cd "$TMPD" && with_timeout 60 $MP run --sample 4K -o s4.ljm sm.lua &&
 with_timeout 60 $MP run --sample 64K -o s64.ljm sm.lua &&
 with_timeout 60 $MP run -o full.ljm sm.lua && cp s4.ljm s4b.ljm) >/dev/null
ok $? "the sampled program runs three times"
# sampled FILE...: the "sampled" object of the JSON report of FILE...
sampled() { with_timeout 60 $MP report --format json "$@" | sed -n 's/.*"sampled":\({[^}]*}\).*/\1/p'; }
ev() { sampled "$@" | sed -n 's/.*"recorded_events":\([0-9]*\).*/\1/p'; }
n4=$(ev "$TMPD/s4.ljm"); n64=$(ev "$TMPD/s64.ljm")
is "$(sampled "$TMPD/s4.ljm" "$TMPD/s64.ljm")" "{\"rates\":[4096,65536],\"recorded_events\":$((n4 + n64))}" \
  "json, 4K and 64K merged: each rate, no one rate"
run $MP report "$TMPD/s4.ljm" "$TMPD/s64.ljm"
is "$rc:$(echo "$out" | head -n 1)" "0:SAMPLED: the profiles merged were sampled at different rates, in their order: one sample every 4096 bytes, every 65536 bytes; the counts and bytes below are estimates from $((n4 + n64)) events recorded" \
  "text, 4K and 64K merged: each rate"
nf=$(ev "$TMPD/full.ljm" "$TMPD/s4.ljm")
is "$(sampled "$TMPD/full.ljm" "$TMPD/s4.ljm")" "{\"rates\":[0,4096],\"recorded_events\":$nf}" \
  "json, a full profile and a sampled one merged: 0 for the full one"
run $MP report "$TMPD/full.ljm" "$TMPD/s4.ljm"
is "$rc:$(echo "$out" | head -n 1)" "0:SAMPLED: the profiles merged were sampled at different rates, in their order: one sample every event, every 4096 bytes; the counts and bytes below are estimates from $nf events recorded" \
  "text, a full profile and a sampled one merged: every event, then the rate"
is "$(sampled "$TMPD/s4.ljm" "$TMPD/s4b.ljm")" "{\"rate\":4096,\"rates\":[4096,4096],\"recorded_events\":$((2 * n4))}" \
  "json, two profiles at 4K merged: the one rate, and each"
run $MP report "$TMPD/s4.ljm" "$TMPD/s4b.ljm"
is "$rc:$(echo "$out" | head -n 1)" "0:SAMPLED: one sample every 4096 bytes allocated on average; the counts and bytes below are estimates from $((2 * n4)) events recorded" \
  "text, two profiles at 4K merged: the one rate"
run $MP report --format html "$TMPD/s4.ljm" "$TMPD/s64.ljm" "$TMPD/full.ljm"
is "$rc:$(echo "$out" | grep -o '"sample":[0-9]*,"rates":[^,]*,[^,]*,[^,]*,')" '0:"sample":0,"rates":[4096,65536,0],' \
  "html, three rates merged: the page's data has each and no one rate"
run $MP report --format html "$TMPD/s4.ljm"
is "$rc:$(echo "$out" | grep -o '"sample":[0-9]*,"rates":[a-z]*,')" '0:"sample":4096,"rates":null,' \
  "html, one profile: its rate"
# pprof of a merge, read by Go's pprof: its total is the sum of both.
if command -v go >/dev/null 2>&1; then
  export GOCACHE="$TMPD/gocache" HOME="${HOME:-$TMPD}"
  run $MP report --format pprof -o "$TMPD/m.pb.gz" "$TMPD/j1.ljm" "$TMPD/j2.ljm"
  total=$(with_timeout 120 go tool pprof -top -unit=B "$TMPD/m.pb.gz" 2>&1 | sed -n 's/.* of \([0-9]*\)B total$/\1/p')
  a1=$(num "$one" alloc_bytes)
  a2=$(num "$(with_timeout 60 $MP report --format json "$TMPD/j2.ljm")" alloc_bytes)
  is "$rc:$total" "0:$((a1 + a2))" "pprof of two profiles: go tool pprof's total is the sum of their allocated bytes"
else
  echo "not ok - go tool pprof is not installed (Debian golang-go; make deps)"
  tap_n=$((tap_n + 1)); tap_failed=$((tap_failed + 1))
fi
run $MP report --format svg --peak "$TMPD/j1.ljm"
is "$rc:$out:$err" "2::ljmemprof report: --peak is for the text and json formats; svg always shows every stack (see 'ljmemprof report --help')" \
  "--peak with a stack format: one error line (--metric peak-bytes draws the peak)"

# -- What a profile says of itself (streams built by hand) ------------------------

cat >"$TMPD/mk.lua" <<'EOF'
package.path = "tests/lib/?.lua;" .. package.path
local P = require("mkprof")
local f = assert(io.open(arg[1], "wb"))
-- Version 3: 100 bytes at 0x1000, the epilogue, then the trailer: a full
-- collection ran, recording stopped at the size limit, the last time mark.
f:write(P.head(), P.alloc(0x1000, 100), P.final(), P.trailer(),
        P.info("collect", "1"), P.info("stopped", "size limit"),
        P.time(2500000000))
f:close()
f = assert(io.open(arg[2], "wb"))
-- The extension, sampled at one sample every 4096 bytes: a block of 1000.
f:write(P.head_ext(), P.info("sample", "4096"), P.time(0),
        P.alloc_ext(0x1000, 1000), P.time(1000000), P.final())
f:close()
EOF
with_timeout 60 luajit "$TMPD/mk.lua" "$TMPD/notes.ljm" "$TMPD/sampled.ljm"
run $MP info "$TMPD/notes.ljm"
is "$(echo "$out" | sed -n 2p)" "format:     memprof, symtab version 3, events version 3" \
  "info: the format of a version-3 stream"
is "$rc:$(echo "$out" | sed -n '/^duration/,$p')" "0:duration:   2.500 s (1 time marks)
collected:  yes (a full garbage collection ran before the end: what is live is reachable)
stopped:    size limit" "info: the trailer's notes (collection, early stop) and the duration"
run $MP report --leak-only "$TMPD/notes.ljm"
is "$(echo "$out" | sed -n '/^NOTES:/,$p')" "NOTES:
a full garbage collection ran before the end: what is held is reachable
recording stopped early: size limit" "text: NOTES after the report (its layout stays Tarantool's)"
run $MP report --format json "$TMPD/notes.ljm"
echo "$out" | grep -q '"collected":true,"stopped":"size limit"'
ok $? "json: collected and stopped"
run $MP info "$TMPD/peak.ljm"
echo "$out" | grep -q '^collected:  no (what is live may be garbage not yet collected)'
ok $? "info: no note, no collection"
# A profile without the note says so in one line of NOTES (text, json,
# check), what is held there may be garbage; one with it does not.
U="the profile notes no full garbage collection before its end: what is held may be garbage never collected (to see only what is reachable, record with mp.stop{collect = true} or 'ljmemprof run', whose collection runs as the Lua state closes: a script that ends with os.exit(code) skips it, os.exit(code, true) closes the state)"
run $MP report --leak-only "$TMPD/peak.ljm"
is "$(echo "$out" | sed -n '/^NOTES:/,$p')" "NOTES:
$U" "text: NOTES says that no full collection is noted before the end"
run $MP report --format json --leak-only "$TMPD/peak.ljm"
echo "$out" | grep -qF '"notes":["'"$U"'"]'
ok $? "json: notes has the same line"
run $MP check --max-leak none "$TMPD/peak.ljm"
is "$rc:$(echo "$out" | sed -n 2p)" "0:note: $U" "check: the same note after its verdict"
run $MP check --max-leak none "$TMPD/notes.ljm"
is "$rc:$(echo "$out" | sed 1d | grep -v '^note: not counted as leaked: INTERNAL')" "0:note: recording stopped early (size limit): the figures cover only what was recorded before" \
  "check of a collected profile: no collection note, only that it stopped early"
run $MP report --format json "$TMPD/notes.ljm"
echo "$out" | grep -qF '"notes":["a full garbage collection ran before the end: what is held is reachable","recording stopped early: size limit"]'
ok $? "json: the notes of a collected profile, without that line"

# What the final collection frees is said: a leak held by a local of the
# main chunk is freed by it (the chunk has returned when run collects), so
# HEAP SUMMARY cannot hold it; NOTES says how much, and where it was made
# most: exactly what the same program holds at the end when its cache is a
# global (line 2's table, line 3's tables and the table's array part).
printf 'jit.off() collectgarbage("stop")\nlocal cache = {}\nfor i = 1, 10 do cache[i] = {} end\n' >"$TMPD/loc.lua"
sed 's/^local cache/cache/' "$TMPD/loc.lua" >"$TMPD/glob.lua"
(cd "$TMPD" && with_timeout 60 $MP run -o loc.ljm --leak-only loc.lua >loc.txt &&
  with_timeout 60 $MP run -o glob.ljm --leak-only glob.lua >glob.txt)
ok $? "the local and the global cache run"
g2=$(sed -n 's/^@glob.lua:2 holds \([0-9]*\)B in \([0-9]*\) blocks\{0,1\} .*/\1 \2/p' "$TMPD/glob.txt")
g3=$(sed -n 's/^@glob.lua:3 holds \([0-9]*\)B in \([0-9]*\) blocks\{0,1\} .*/\1 \2/p' "$TMPD/glob.txt")
set -- $g2 $g3
is "$(grep -c '^@loc' "$TMPD/loc.txt"):$(grep '^the final collection' "$TMPD/loc.txt")" \
  "0:the final collection freed $(($1 + $3))B in $(($2 + $4)) blocks made within the profile (the most by @loc.lua:3: $3B in $4): garbage, or what only the main chunk's locals held, which ends when the chunk returns" \
  "NOTES: the final collection freed what the global cache holds ($g2, $g3): the local one's"
run $MP info --format json "$TMPD/loc.ljm"
echo "$out" | grep -q '"collected":true,"final_collection":{"freed_bytes":'$(($1 + $3))',"freed_blocks":'$(($2 + $4))'}'
ok $? "info --format json: final_collection, the same figures"
run $MP info "$TMPD/loc.ljm"
echo "$out" | grep -q "^collected:  yes (.*); it freed $(($1 + $3))B in $(($2 + $4)) blocks made within the profile$"
ok $? "info: the same figures on the collected: line"
run $MP report --format html "$TMPD/loc.ljm"
echo "$out" | grep -qF '"final_collection":{"freed_bytes":'$(($1 + $3))',"freed_blocks":'$(($2 + $4))',"top":"@loc.lua:3","top_bytes":'$3',"top_blocks":'$4'}'
ok $? "html: the summary's data has the same figures and source"
grep -q "^the final collection" "$TMPD/glob.txt"
ok $((!$?)) "held by a global, nothing of the program's is freed by it: no such note"
w=$(luajit -e 'print(math.floor(1000 / (1 - math.exp(-1000 / 4096)) + 0.5))')
run $MP report "$TMPD/sampled.ljm"
is "$rc:$(echo "$out" | sed -n '1p;4p' | sed 's/^INTERNAL: [45] events/INTERNAL: 4 or 5 events/')" "0:SAMPLED: one sample every 4096 bytes allocated on average; the counts and bytes below are estimates from 1 events recorded
INTERNAL: 4 or 5 events	+${w}B	-0B" \
  "sampled: a recorded block of 1000 bytes stands for 1000/p = $w bytes and 1/p = 4.6 events (4 or 5, as the block's hash rounds it), and the report says so"
run $MP info "$TMPD/sampled.ljm"
is "$(echo "$out" | sed -n 2p)" "format:     memprof, symtab version 3, events version 76 ('L', the ljmemprof extension: call stacks)" \
  "info: the extension's version 76 is the letter 'L' and says what it is"
echo "$out" | grep -q '^sampled:    one sample every 4096 bytes allocated on average: counts and bytes are estimates$'
ok $? "info: sampled"
# Estimates are never shown as impossible values (a net below 0): each
# says how it is made, and net, a difference of two, is not shown.
is "$(echo "$out" | sed -n '/^allocated:/,/^live:/p')" "allocated:  ${w}B estimated (new sizes of alloc and realloc events, a recorded new size s counting s/p(s), p(s) = 1 - exp(-s/4096))
freed:      0B estimated (old sizes of realloc and free events: a free counts as its block did, a reallocation's old size o as o/p(s) of its new size s)
net:        not estimated: allocated and freed are each estimated with weights of their own, and their difference can fall below 0 (live is the estimate of what was held)
live:       $(echo "$out" | sed -n 's/^live: *\([45]\) blocks.*/\1/p') blocks, ${w}B allocated within the profile and not freed (estimated: the weights of the recorded blocks still live)" \
  "info of a sampled profile: allocated, freed and live say they are estimates and how; no net"
echo "$out" | grep -q '^peak:       .* (estimated: live at its highest)$'
ok $? "info: the sampled peak says it is an estimate"
is "$(echo "$out" | sed -n 's/^\(events\|estimated\): *\([0-9]*\) .*/\1 \2/p' | sed 's/estimated [45]$/estimated 4 or 5/')" "events 1
estimated 4 or 5" "info: the events recorded, then the estimate"
run $MP info --format json "$TMPD/sampled.ljm"
echo "$out" | grep -q '"alloc_bytes":'"$w"',"free_bytes":0,"live_blocks":[45],'
ok $? "info --format json of a sampled profile: no net_bytes nor peak_net_bytes"
done_testing
