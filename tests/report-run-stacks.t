#!/bin/sh
# `ljmemprof run --stacks [N]` records call stacks: the start code passes
# stacks = N to mp.start (the profile says so in its first bytes: the
# event-stream version of the extension, 0x4c, and its "stacks" setting),
# a bare --stacks is 64 frames, --stacks=0 is the one-frame memprof v3
# stream; bad values are refused before the script runs.
. tests/lib/tap.sh
MP="$BUILD/ljmemprof"
unset LUA_CPATH

cat >"$TMPD/a.lua" <<'EOF2'
local function leaf(n) local t = {} for i = 1, n do t[i] = {} end return t end
local function mid(n) local t = leaf(n) return t end
KEEP = mid(20)
print("done")
EOF2
cd "$TMPD" || exit 1

# The prologue (bytes 8 to 11: "ljm" and the version) and the stacks
# setting (an info record: key "stacks", value N) of a profile.
version() { od -An -tx1 -j 11 -N 1 "$1" | tr -d ' '; }
setting() { grep -ac "$(printf "\\006stacks\\$(printf '%03o' ${#1})%s" "$1")" "$2"; }

out=$(with_timeout 60 "$MP" run -o s8.ljm --stacks 8 --leak-only a.lua 2>err)
is "$(echo "$out" | head -n 1)" "done" "run --stacks 8: the script runs"
is "$(version s8.ljm):$(setting 8 s8.ljm)" "4c:1" "run --stacks 8: a stack profile with stacks = 8"

with_timeout 60 "$MP" run -o s64.ljm --stacks a.lua >/dev/null 2>&1
is "$(version s64.ljm):$(setting 64 s64.ljm)" "4c:1" "run --stacks SCRIPT: 64 frames"

with_timeout 60 "$MP" run -o s0.ljm --stacks=0 --leak-only a.lua >out 2>err
is "$?:$(version s0.ljm)" "0:03" "run --stacks=0: the one-frame v3 stream"
grep -q '^@a.lua:1 (leaf) holds' out	# The main chunk's line too.
ok $? "run --stacks=0: the usual report"

with_timeout 60 "$MP" run -o s3.ljm --stacks 3 -- luajit -joff a.lua >/dev/null 2>&1
is "$(version s3.ljm):$(setting 3 s3.ljm)" "4c:1" "run --stacks 3 -- luajit -joff: stacks = 3"

# Sampling records stacks: --stacks 0 with it would record 64 frames.
out=$(with_timeout 60 "$MP" run -o ss.ljm --sample 4K --stacks 0 a.lua 2>&1)
is "$?:$out:$(ls ss.ljm 2>/dev/null)" "2:ljmemprof run: --stacks 0 cannot go with --sample: sampled profiles record call stacks (leave --stacks out for 64 frames, or give 1 to 10000):" \
  "run --sample 4K --stacks 0: refused before the script runs"
out=$(with_timeout 60 "$MP" run --stacks=0 --sample=4K a.lua 2>&1)
is "$?" "2" "run --stacks=0 --sample=4K: refused too"

out=$(with_timeout 60 "$MP" run --stacks 10001 a.lua 2>&1)
is "$?:$out" "2:ljmemprof run: --stacks 10001: at most 10000 frames" "run --stacks 10001: refused"
out=$(with_timeout 60 "$MP" run --stacks=many a.lua 2>&1)
is "$?:$out" "2:ljmemprof run: bad value 'many' for option '--stacks' (a number; see 'ljmemprof run --help')" \
  "run --stacks=many: refused"
out=$(with_timeout 60 "$MP" run --metric leak-bytes a.lua 2>&1)
is "$?:$out" "2:ljmemprof run: --metric needs --stacks-per-source, or the format collapsed, svg or pprof (see 'ljmemprof run --help')" \
  "run --metric without --stacks: refused before the script runs"

# The report of a stack profile.
"$MP" info s8.ljm >/dev/null 2>&1
ok $? "the stack profile reads"
out=$(with_timeout 60 "$MP" run --stacks 8 --leak-only a.lua 2>&1)
echo "$out" | grep -q '^CALL STACKS (bytes not freed, at most 3 per source):$'
ok $? "run --stacks: the report has the CALL STACKS view"
echo "$out" | grep -q '^		mid (a.lua:2)$'
ok $? "run --stacks: the stacks show the caller of the allocating line"


# A shallow depth keeps the frame the one-frame report bills: builtins
# (string.rep, pcall calling string.rep) fill the N innermost frames, and
# the Lua line that called them comes under them (it was cut, so their
# bytes went to INTERNAL). The report is the one-frame report at every
# depth, JIT off and on.
cat >"$TMPD/rep.lua" <<'EOF2'
KEEP = {}
for i = 1, 100 do KEEP[i] = string.rep("ab", 100 + i) end
local ok, s = pcall(string.rep, "x", 300)
KEEP[0] = s
EOF2
# With the JIT, where the trace starts varies from run to run (LuaJIT
# seeds its heuristics at random): the line's events and the trace's
# there, summed, are the JIT-off line's.
line2() {
  sed -n '/^ALLOCATIONS/,/^$/p' "$1" |
    sed -n 's/^\(TRACE \[[0-9]*\] started at \)\{0,1\}@rep\.lua:2: \([0-9]*\) events	+\([0-9]*\)B	-0B$/\2 \3/p' |
    awk '{ n += $1; b += $2 } END { print n " events " b "B" }'
}
for j in off on; do
  with_timeout 60 "$MP" run -o r0.ljm --stacks=0 -- luajit -j$j rep.lua >r0.txt 2>&1
  want=$(sed -n '/^ALLOCATIONS/,/^$/p' r0.txt)
  [ $j = off ] && want_off=$want && want2=$(line2 r0.txt)
  for d in 1 2 3; do
    with_timeout 60 "$MP" run -o r$d.ljm --stacks=$d -- luajit -j$j rep.lua >r$d.txt 2>&1
    rc=$?
    if [ $j = off ]; then
      is "$rc:$(sed -n '/^ALLOCATIONS/,/^$/p' r$d.txt)" "0:$want" "JIT off, --stacks=$d: the allocations of the one-frame report"
    else
      is "$rc:$(line2 r$d.txt)" "0:$want2" \
        "JIT on, --stacks=$d: line 2 and its trace as in the one-frame report ($want2)"
    fi
  done
  got=$("$MP" report --format collapsed r1.ljm | grep -c '^\[deeper than 1 frames\];main chunk (rep.lua:3);pcall;string.rep ')
  is "$got" 1 "JIT $j, --stacks=1: pcall and string.rep, then their line, under the cut"
done
echo "$want_off" | grep -q '^@rep.lua:2: 101 events'
ok $? "JIT off, the one-frame report bills string.rep's 100 strings (and KEEP) to their line"


# The frames a trace inlined below its line are billed to the trace, as
# the one-frame mode bills everything a trace allocates: vec's tables,
# made in the loop's trace under mk and rec2, are the trace's, not line
# 3's (those few that ran before the trace was made are line 3's).
cat >"$TMPD/chain3.lua" <<'EOF2'
local function vec(x)
  local a = { x }
  local b = { x, x, x }
  return a, b
end
local function rec2(i) local a, b = vec(i) return b end
local function mk(i) local r = rec2(i) return r end
local out = {}
for i = 1, 2000 do out[i] = mk(i) end
EOF2
with_timeout 60 "$MP" run -o c3.ljm --stacks -- luajit -jon chain3.lua >c3.txt 2>&1
ok $? "run --stacks of a loop through three inlined functions"
"$MP" report --format collapsed c3.ljm | grep -q 'started at @chain3.lua:9;mk (chain3.lua:7);rec2 (chain3.lua:6);vec (chain3.lua:3) '
ok $? "its stacks have the inlined frames between the trace and the line"
tr=$(sed -n '/^ALLOCATIONS/,/^$/s/^TRACE \[[0-9]*\] started at @chain3.lua:9: \([0-9]*\) events.*/\1/p' c3.txt)
l3=$(sed -n '/^ALLOCATIONS/,/^$/s/^@chain3.lua:3: \([0-9]*\) events.*/\1/p' c3.txt)
ok $([ "${tr:-0}" -ge 1800 ] && [ "${l3:-0}" -le 200 ] && echo 0 || echo 1) \
  "the trace's tables billed to the trace ($tr events), not to line 3 (${l3:-0})"
# Under the trace's row, the lines inside its code: vec's tables on line 3;
# the lines' events add up to the trace's allocations and reallocations.
blk=$(sed -n '/^ALLOCATIONS/,/^$/p' c3.txt | sed -n '/^TRACE \[[0-9]*\] started at @chain3.lua:9:/,/^[^	]/p')
echo "$blk" | grep -q '^	Lines in the trace (allocations and reallocations):$'
ok $? "run --stacks: the trace's row lists the lines inside it"
l3t=$(echo "$blk" | sed -n 's/^		@chain3.lua:3: \([0-9]*\) events.*/\1/p')
sum=$(echo "$blk" | sed -n 's/^		.*: \([0-9]*\) events.*/\1/p' | awk '{ s += $1 } END { print s + 0 }')
rtr=$(sed -n '/^REALLOCATIONS/,/^DEALLOCATIONS/s/^TRACE \[[0-9]*\] started at @chain3.lua:9: \([0-9]*\) events.*/\1/p' c3.txt)
ok $([ "${l3t:-0}" -ge 1800 ] && [ "$sum" -eq $(( ${tr:-0} + ${rtr:-0} )) ] && echo 0 || echo 1) \
  "its lines: line 3 with ${l3t:-0} events; they add up to the trace's ($sum)"
# A line inside a trace reads as the rows of its source do (one labeler):
# on a one-line script, whose line two functions share, `@one.lua:1
# (vec)` under the trace and as vec's own row, not `vec (one.lua:1)`.
echo 'local function vec() return {1, 2, 3} end local keep = {} for i = 1, 3000 do keep[i % 100 + 1] = vec() end' >one.lua
with_timeout 60 "$MP" run --stacks --top 0 one.lua >one.txt 2>&1
ok $? "run --stacks of a one-line script"
is "$(sed -n '/^ALLOCATIONS/,/^$/p' one.txt | grep -c '^		@one.lua:1 (vec): [0-9]* events')$(grep -c '(one.lua:1):' one.txt)" "10" \
  "its trace's line reads @one.lua:1 (vec), vec's row's label, and no row reads vec (one.lua:1)"
sed -n '/^ALLOCATIONS/,/^$/p' one.txt | grep -q '^@one.lua:1 (vec): '
ok $? "vec's own row has that label"
"$MP" report --format html -o c3.html c3.ljm
grep -q '^"TRACE \[[0-9]*\] started at @chain3.lua:9":\[\["@chain3.lua:3",[0-9]*,'"$l3t"',[0-9]*,[0-9]*\]' c3.html
ok $? "the HTML page has the same lines under the trace (trace_lines)"

# Bytes compiled code made where the agent cannot tell the line (three
# lines of `..` with no snapshot between them) have the trace as their
# innermost frame; a note says how much of what was allocated that is,
# and how to see lines.
cat >"$TMPD/alone.lua" <<'EOF2'
local keep = {}
local function line(i)
  local s = "a" .. i .. "b"
  s = s .. "c" .. (i % 7) .. "d"
  s = s .. "e" .. (i % 11)
  return s
end
for i = 1, 20000 do keep[i % 100 + 1] = line(i) end
EOF2
with_timeout 60 "$MP" run -o alone.ljm --stacks 8 alone.lua >/dev/null 2>&1
with_timeout 60 "$MP" run -o alone0.ljm --stacks 8 -- "$LUAJIT" -joff alone.lua >/dev/null 2>&1
# The bytes of the collapsed stacks of $1 whose innermost frame is a
# trace, and of all of them.
alone=$("$MP" report --format collapsed alone.ljm | awk '{ n = $NF; s = $0; sub(/ [0-9]+$/, "", s)
  k = split(s, f, ";"); all += n; if (f[k] ~ /^TRACE \[/) on += n }
  END { print on + 0, all + 0 }')
on=${alone% *} all=${alone#* }
note=$("$MP" report alone.ljm | grep '^JIT traces made ')
pct=$(awk -v a="$on" -v b="$all" 'BEGIN { printf "%.1f", 100 * a / b }')
case $note in
  "JIT traces made ${on}B of the ${all}B allocated ($pct%, 1 trace) without a line: the agent could not tell which of the trace's lines did (several that can allocate, and no snapshot of the JIT's between them to tell the way taken); with the JIT off ('ljmemprof run -- luajit -joff SCRIPT') every allocation has its line") r=0 ;;
  *) r=1; echo "# got: $note (on the trace alone ${on}B of ${all}B)" ;;
esac
ok $r "JIT on: the note gives the bytes of the stacks that end in the trace, of all the stacks' (${on}B of ${all}B)"
[ "$on" -gt $((all / 10)) ]
ok $? "the concatenations are on the trace alone (${on}B)"
"$MP" report alone0.ljm | grep -q '^JIT traces made '
ok $((!$?)) "JIT off: every allocation has its line, no such note"
"$MP" report --accounting tarantool alone.ljm | grep -q '^JIT traces made '
ok $((!$?)) "--accounting tarantool leaves it out"
"$MP" report --format json alone.ljm | grep -q '"JIT traces made '"${on}"'B of the'
ok $? "the JSON report's notes have it too"
"$MP" report --leak-only alone.ljm | grep -q '^JIT traces made '"${on}"'B of the'
ok $? "and --leak-only's NOTES"

done_testing
