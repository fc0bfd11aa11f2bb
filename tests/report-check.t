#!/bin/sh
# `ljmemprof check`: the leak and peak of a profile against limits, the
# figures equal to what info and the report say, the lines over a limit
# named with their stacks, and every bad input an error (status 2).
. tests/lib/tap.sh
MP="$BUILD/ljmemprof"
LUAJIT=${LUAJIT:-luajit}

# det.lua: with the JIT off and the collector stopped but for the final
# collection, line 7 keeps 5 tables made on line 4 (10 blocks: each table
# and its array part) unless told to drop them; line 8 makes garbage that
# is live at the peak only.
cat >"$TMPD/det.lua" <<'EOF'
jit.off()
local mp = require("ljmemprof")
local keep, stop = {}, { collect = true }
local function make(n) local t = {} for i = 1, n do t[i] = i end return t end
collectgarbage(); collectgarbage("stop")
assert(mp.start{path = arg[1], stacks = arg[3] == "flat" and 0 or 8})
for i = 1, 5 do keep[i] = make(20) end
for i = 1, 50 do local g = make(100) end
if arg[2] ~= "keep" then keep = nil end
if arg[2] == "inline" then assert(mp.stop{collect = true}) else assert(mp.stop(stop)) end
EOF
cd "$TMPD" || exit 1
LUA_CPATH="$BUILD/?.so;;" with_timeout 60 "$LUAJIT" det.lua d.ljm keep
ok $? "the profile is recorded"
LUA_CPATH="$BUILD/?.so;;" with_timeout 60 "$LUAJIT" det.lua c.ljm drop
ok $? "the profile of a clean run is recorded"

# The figures of the other views.
live=$("$MP" info --format json d.ljm | sed -n 's/.*"live_bytes":\([0-9]*\).*/\1/p')
nlive=$("$MP" info --format json d.ljm | sed -n 's/.*"live_blocks":\([0-9]*\).*/\1/p')
peak=$("$MP" report --format json d.ljm | sed -n 's/.*"peak":{"bytes":\([0-9]*\).*/\1/p')
# What INTERNAL (the VM's own) holds at the end, from the JSON stack view.
internal=$("$MP" report --format json --leak-only --stacks-per-source 1 d.ljm | tr '{' '\n' |
  sed -n '/"label":"INTERNAL","source"/{n;p;}' | sed -n 's/.*"live_bytes":\([0-9]*\).*/\1/p' | head -n 1)
internal=${internal:-0}
internal_n=$("$MP" report --format json --leak-only --stacks-per-source 1 d.ljm | tr '{' '\n' |
  sed -n '/"label":"INTERNAL","source"/{n;p;}' | sed -n 's/.*"live_blocks":\([0-9]*\).*/\1/p' | head -n 1)
# The line under the verdict that says what it leaves out.
vm_note() {
  [ "$2" = 1 ] && b=block || b=blocks
  echo "note: not counted as leaked: INTERNAL's $1B in $2 $b, the VM's own (the string table, JIT traces, grown Lua stacks; --all counts them)"
}
line4=$("$MP" report --format json --leak-only --stacks-per-source 1 d.ljm | tr '{' '\n' |
  sed -n '/"label":"@det.lua:4","source"/{n;p;}' | sed -n 's/.*"live_bytes":\([0-9]*\).*/\1/p' | head -n 1)

run "$MP" check d.ljm
is "$rc" 1 "leaked blocks: over the default limit 0, status 1"
first=$(echo "$out" | head -n 1)
case $first in
  "over the limit: leaked $((live - internal))B in "*" blocks (limit 0B), peak ${peak}B (no limit)") r=0 ;;
  *) r=1; echo "# got: $first (live $live, INTERNAL $internal, peak $peak)" ;;
esac
ok $r "the verdict: info's live less INTERNAL's, and the report's peak"
[ "$internal" -gt 0 ]
ok $? "INTERNAL holds something at the end ($internal B in $internal_n blocks)"
is "$(echo "$out" | sed -n 2p)" "$(vm_note "$internal" "$internal_n")" \
  "the line under the verdict says INTERNAL's bytes are left out: with the verdict's, info's live"
echo "$out" | grep -q "^@det.lua:4: 10 blocks	${line4}B not freed	in 1 stack$"
ok $? "line 4's 10 blocks are named, with the report's bytes ($line4)"
echo "$out" | grep -q "^		main chunk (det.lua:7)$"
ok $? "with the call stack that made them (line 7)"
echo "$out" | grep -v '^note: ' | grep -q "INTERNAL"
ok $((!$?)) "the VM's own blocks are not shown (but for the note)"
is "$err" "" "nothing on stderr"

run "$MP" check --all --max-leak "$live" d.ljm
is "$rc" 0 "--all --max-leak LIVE: within the limit"
is "$out" "ok: leaked ${live}B in $nlive blocks (limit ${live}B), peak ${peak}B (no limit)" \
  "--all counts every live block: info's live, exactly"
run "$MP" check --all --max-leak $((live - 1)) d.ljm
is "$rc" 1 "--all --max-leak LIVE-1: over"

run "$MP" check --max-leak none --max-peak "$peak" d.ljm
is "$rc" 0 "--max-peak PEAK: within"
run "$MP" check --max-leak none --max-peak $((peak - 1)) d.ljm
is "$rc" 1 "--max-peak PEAK-1: over"
is "$(echo "$out" | grep -v '^note: ' | sed -n 2p)" "CALL STACKS (bytes live at the peak, at most 3 per source):" \
  "the sources at the peak follow"
echo "$out" | grep -q "^		main chunk (det.lua:8)$"
ok $? "line 8's garbage is named at the peak"

run "$MP" check -H --max-leak 1K --max-peak 1M d.ljm
echo "$out" | head -n 1 | grep -q "(limit 1KiB), peak .*(limit 1MiB)$"
ok $? "-H: sizes with units ($(echo "$out" | head -n 1))"
run "$MP" check --top 1 d.ljm
is "$(echo "$out" | grep -c '^@det')" 1 "--top 1: one source"

# Dropped before the final collection, line 7's tables are no leak.
run "$MP" check c.ljm
is "$rc" 0 "a clean run: within the limit, status 0"
c_peak=$("$MP" report --format json c.ljm | sed -n 's/.*"peak":{"bytes":\([0-9]*\).*/\1/p')
c_vm=$("$MP" report --leak-only c.ljm | sed -n 's/^INTERNAL holds \([0-9]*\)B in \([0-9]*\) blocks* .*/\1 \2/p')
is "$out" "ok: leaked 0B in 0 blocks (limit 0B), peak ${c_peak}B (no limit)
$(vm_note $c_vm)" \
  "nothing leaked, the peak; and what INTERNAL holds, not counted"

# mp.stop{collect = true}: its own options table is not kept alive by the
# collection it asks for.
LUA_CPATH="$BUILD/?.so;;" with_timeout 60 "$LUAJIT" det.lua i.ljm inline
run "$MP" check i.ljm
is "$rc:${out%%,*}" "0:ok: leaked 0B in 0 blocks (limit 0B)" \
  "stop{collect = true} written inline: nothing leaked, not even its table"

# Recorded without call stacks: the sources over the limit are named,
# each its own frame, with what the heap summary says they hold.
LUA_CPATH="$BUILD/?.so;;" with_timeout 60 "$LUAJIT" det.lua f.ljm keep flat
ok $? "the profile without call stacks is recorded"
held=$("$MP" report --leak-only f.ljm | sed -n 's/^@det.lua:4 holds \([0-9]*\)B in 10 blocks .*/\1/p')
run "$MP" check f.ljm
is "$rc:$(echo "$out" | grep -v '^note: ' | sed -n '2,3p')" "1:SOURCES (bytes not freed; the profile has no call stacks: each source is its own frame):
@det.lua:4: 10 blocks	${held}B not freed" \
  "no stacks: the source that leaked is named, line 4's 10 blocks as the heap summary says (${held}B)"
echo "$out" | grep -v '^note: ' | grep -q "INTERNAL\|CALL STACKS"
ok $((!$?)) "neither the VM's blocks (but for the note) nor a CALL STACKS line"
run "$MP" check --max-leak none --max-peak 1 f.ljm
is "$rc:$(echo "$out" | grep -v '^note: ' | sed -n 2p)" "1:SOURCES (bytes live at the peak; the profile has no call stacks: each source is its own frame):" \
  "over the peak: the sources at the peak"

# Errors and damaged input.
run "$MP" check --max-leak 1X d.ljm
is "$rc" 2 "a bad size: status 2"
is "$err" "ljmemprof check: --max-leak 1X: a size expected (digits with an optional K, M or G, or none)" "which says what is expected"
run "$MP" check --max-peak d.ljm
is "$rc" 2 "a missing value: status 2"
run "$MP" check --top x d.ljm
is "$rc" 2 "a bad --top: status 2"
run "$MP" check --bogus d.ljm
is "$rc" 2 "an unknown option: status 2"
echo "$err" | grep -q "bogus"
ok $? "named in the error"
run "$MP" check
is "$rc" 2 "no FILE: status 2"
run "$MP" check d.ljm c.ljm
is "$rc" 2 "two FILEs: status 2"
printf 'not a profile' >junk.ljm
run "$MP" check junk.ljm
is "$rc" 2 "not a profile: status 2"
is "$out" "" "and no verdict"
head -c 200 d.ljm >cut.ljm
run "$MP" check --max-leak none cut.ljm
is "$rc" 3 "a profile cut short, within the limits up to the cut: status 3"
echo "$err" | grep -q "cut.ljm"
ok $? "with the warning naming the file"
run "$MP" check --help
is "$rc" 0 "--help"
echo "$out" | grep -q "max-leak SIZE"
ok $? "the manual lists the options"

# A recording stopped at its size limit holds part of the run: check says
# so, whatever its verdict.
cat >"$TMPD/big.lua" <<'EOF'
local mp = require("ljmemprof")
assert(mp.start{path = arg[1], max_size = 65536})
local keep = {}
for i = 1, 100000 do keep[i] = { i } end
assert(mp.stop())
EOF
LUA_CPATH="$BUILD/?.so;;" with_timeout 60 "$LUAJIT" big.lua big.ljm
ok $? "a profile stopped at its size limit is recorded"
run "$MP" check --max-leak 1G big.ljm
is "$rc" 0 "within the limit: status 0"
echo "$out" | grep -q "^note: recording stopped early (size limit): the figures cover only what was recorded before$"
ok $? "and the note that recording stopped early"
run "$MP" check --max-leak 1G d.ljm
echo "$out" | grep -q "stopped early"
ok $((!$?)) "no such note on a whole recording"

# What modules keep by design: a program that only requires a module
# leaks, to check, what the module's loading made (held by
# package.loaded); a note says how much of the leaked that is, the
# verdict unchanged.
cat >"$TMPD/mod.lua" <<'EOF'
local M = {}
for i = 1, 20 do M[i] = { i } end
function M.get(i) return M[i] end
return M
EOF
cat >"$TMPD/usemod.lua" <<'EOF'
jit.off()
local mp = require("ljmemprof")
package.path = "./?.lua;" .. package.path
collectgarbage(); collectgarbage("stop")
assert(mp.start{path = arg[1], stacks = arg[3] == "flat" and 0 or 8})
local m = require("mod")
if arg[2] == "leak" then _G.kept = { 1, 2, 3 } end
assert(mp.stop{collect = true})
EOF
mod_note() { # BYTES BLOCKS PERCENT [flat]
  [ "$4" = flat ] && w="; without call stacks, only their own sources are known" || w=
  echo "note: of the leaked, $1B in $2 blocks ($3%) were made while modules loaded (under require, a package loader or a luaopen_ function$w): what package.loaded keeps by design; allow for them in --max-leak, or start the profiler from Lua after the modules are required"
}
for v in only leak; do
  LUA_CPATH="$BUILD/?.so;;" with_timeout 60 "$LUAJIT" usemod.lua "m-$v.ljm" "$v"
  ok $? "the profile of a program that requires a module ($v) is recorded"
done
run "$MP" check m-only.ljm
mb=$(echo "$out" | sed -n '1s/^over the limit: leaked \([0-9]*\)B in \([0-9]*\) blocks .*/\1/p')
mn=$(echo "$out" | sed -n '1s/^over the limit: leaked \([0-9]*\)B in \([0-9]*\) blocks .*/\2/p')
is "$rc:$(echo "$out" | grep '^note: of the leaked')" "1:$(mod_note "$mb" "$mn" 100.0)" \
  "only a module loaded: over the limit, and all of the leaked ($mb B in $mn blocks) is the module's, said so"
[ "${mn:-0}" -gt 20 ]
ok $? "the module's 20 tables, its function and its chunk are among them ($mn blocks)"
run "$MP" check m-leak.ljm
lb=$(echo "$out" | sed -n '1s/^over the limit: leaked \([0-9]*\)B in .*/\1/p')
pct=$(awk -v a="$mb" -v b="$lb" 'BEGIN { printf "%.1f", 100 * a / b }')
is "$rc:$(echo "$out" | grep '^note: of the leaked')" "1:$(mod_note "$mb" "$mn" "$pct")" \
  "a program's own leak beside it: the module's part is the same ($mb of $lb B)"
echo "$out" | grep -q "^		main chunk (usemod.lua:7)$"
ok $? "and the program's own leak is still named with its stack"
run "$MP" check --max-leak 1G m-only.ljm
is "$rc:$(echo "$out" | grep -c '^note: of the leaked')" "0:1" "within the limits: the note does not change the verdict"
run "$MP" check --max-leak none m-only.ljm
is "$rc:$(echo "$out" | grep -c '^note: of the leaked')" "0:0" "--max-leak none: leaks are not checked, no such note"
LUA_CPATH="$BUILD/?.so;;" with_timeout 60 "$LUAJIT" usemod.lua m-flat.ljm only flat
fb=$("$MP" report --leak-only m-flat.ljm | sed -n 's/^package.loaders\[2\] holds \([0-9]*\)B in \([0-9]*\) blocks* .*/\1 \2/p')
run "$MP" check m-flat.ljm
is "$(echo "$out" | grep '^note: of the leaked' | sed 's/ ([0-9.]*%)//')" \
  "$(mod_note ${fb% *} ${fb#* } 0 flat | sed 's/ (0%)//')" \
  "without stacks: only the loader's own blocks ($fb), and the note says so"
run "$MP" check d.ljm
echo "$out" | grep -q "^note: of the leaked"
ok $((!$?)) "no such note when nothing was loaded"

done_testing
