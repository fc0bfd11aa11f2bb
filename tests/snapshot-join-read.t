#!/bin/sh
# ljmemprof snapshot --profile (issue 20): a snapshot joined with the
# recording that marked it names, both ways, the lines that made what the
# retainers hold: a session cache that leaks and a history capped at 50.
. tests/lib/tap.sh
LUAJIT=${LUAJIT:-luajit}
TMPD=$(mktemp -d)
trap 'rm -rf "$TMPD"' EXIT
cat > "$TMPD/leak.lua" <<'LUA'
local mp = require("ljmemprof")
local sessions = {}
local function handler(i) sessions[#sessions + 1] = { id = i, data = ("x"):rep(100) .. i } end
local history = {}
local function remember(i) history[#history % 50 + 1] = { i } end
assert(mp.start{ path = arg[1] .. "/leak.ljm", stacks = 8 })
for i = 1, 2000 do handler(i); remember(i) end
_G.keep = handler
assert(mp.stop{ collect = true, snapshot = arg[1] .. "/leak.ljh" })
LUA
run env LUA_CPATH="$BUILD/?.so;;" "$LUAJIT" -joff "$TMPD/leak.lua" "$TMPD"
is "$rc:$err" "0:" "the program runs"
run "$BUILD/ljmemprof" snapshot --profile "$TMPD/leak.ljm" "$TMPD/leak.ljh"
is "$rc:$err" "0:" "snapshot --profile: status 0"
sed "s|$TMPD/||g" "$TMPD/out" | sed -n '/^MADE WITHIN/,$p' > "$TMPD/all"
head -1 "$TMPD/all" | grep -Eq '^MADE WITHIN THE RECORDING \(leak\.ljm, marked after event [0-9]+\): 4050 of [0-9]+ objects, 488404B of [0-9]+B$'
ok $? "4050 objects, 488404 bytes made within the recording ($(head -1 "$TMPD/all"))"
tail -n +2 "$TMPD/all" > "$TMPD/got"
# 2000 sessions of 2 objects each (a table and its string), 50 history
# entries (as LuaJIT sizes them, the same in every run).
cat > "$TMPD/want" <<'TXT'
         bytes    objects  line that made them: the retainer holding most of it
       484004B       4000  @leak.lua:3: 100% held by main thread <local sessions in main chunk of leak.lua>
         4400B         50  @leak.lua:5: 100% held by main thread <local history in main chunk of leak.lua>

TOP RETAINERS BY THE LINES THAT MADE WHAT THEY HOLD (of what each is the nearest top retainer of)
  main thread <local sessions in main chunk of leak.lua>: retains 500460B, 484004B of it made within the recording
         484004B  @leak.lua:3
  main thread <local history in main chunk of leak.lua>: retains 4984B, 4400B of it made within the recording
           4400B  @leak.lua:5
TXT
is "$(cat "$TMPD/got")" "$(cat "$TMPD/want")" \
  "the lines that made what is live, and the retainers that hold it, both ways"
# The made bytes agree with the snapshot's own path class of the cache.
grep -q '<local sessions in main chunk of .*leak.lua>\[\*\]: 2000 tables, 484004B' "$TMPD/out"; ok $? \
  "the cache's path class holds the bytes its line made"
# The JSON form: the same numbers, the retainers by their index in
# "retainers" (whose paths are the text's).
run "$BUILD/ljmemprof" snapshot --format json --profile "$TMPD/leak.ljm" "$TMPD/leak.ljh"
is "$rc:$err" "0:" "snapshot --format json --profile: status 0"
python3 - "$TMPD/out" "$TMPD/leak.ljm" > "$TMPD/jgot" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
r = d["recording"]
path = lambda k: d["retainers"][k]["path"].split("/")[-1]
print(r["profile"] == sys.argv[2], r["made_objects"], r["made_bytes"],
      r["marked_after_event"] > 0)
for l in r["lines"]:
    print(l["line"].split("/")[-1], l["bytes"], l["objects"],
          path(l["held_by"]), l["held_bytes"])
for t in r["retainers"]:
    print(path(t["retainer"]), d["retainers"][t["retainer"]]["retained"],
          t["made_bytes"], [(x["line"].split("/")[-1], x["bytes"])
                            for x in t["lines"]])
PY
cat > "$TMPD/jwant" <<'TXT'
True 4050 488404 True
leak.lua:3 484004 4000 leak.lua> 484004
leak.lua:5 4400 50 leak.lua> 4400
leak.lua> 500460 484004 [('leak.lua:3', 484004)]
leak.lua> 4984 4400 [('leak.lua:5', 4400)]
TXT
is "$(cat "$TMPD/jgot")" "$(cat "$TMPD/jwant")" "the JSON join: the text's numbers"
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print("\n".join(d["retainers"][t["retainer"]]["path"] for t in d["recording"]["retainers"]))
' "$TMPD/out" | sed "s|$TMPD/||g" > "$TMPD/jpaths"
grep '^  main thread' "$TMPD/got" | sed 's/^  //; s/: retains .*//' > "$TMPD/tpaths"
is "$(cat "$TMPD/jpaths")" "$(cat "$TMPD/tpaths")" "and the text's retainers, in its order"
# Errors.
run env LUA_CPATH="$BUILD/?.so;;" "$LUAJIT" -joff -e "
local mp = require('ljmemprof')
assert(mp.start{ path = '$TMPD/other.ljm', stacks = 4 })
x = {}
assert(mp.stop())"
run "$BUILD/ljmemprof" snapshot --profile "$TMPD/other.ljm" "$TMPD/leak.ljh"
is "$rc" 2 "a profile without the snapshot's mark: status 2"
case $err in *"no mark of the snapshot"*"it was not taken while this profile was recorded (the profile marks none)") r=0;; *) r=1;; esac
ok $r "and it says why ($err)"
# A snapshot taken while a profile without stacks was recorded: such a
# profile marks no snapshot, and the error says to record with stacks.
run env LUA_CPATH="$BUILD/?.so;;" "$LUAJIT" -joff -e "
local mp = require('ljmemprof')
assert(mp.start{ path = '$TMPD/flat.ljm' })
x = {}
assert(mp.snapshot('$TMPD/flat.ljh'))
assert(mp.stop())"
run "$BUILD/ljmemprof" snapshot --profile "$TMPD/flat.ljm" "$TMPD/flat.ljh"
is "$rc" 2 "a profile without stacks: status 2"
case $err in *"no mark of the snapshot"*"this profile was recorded without stacks, so it marks no snapshot (record with stacks, sample or native: run --stacks N)") r=0;; *) r=1;; esac
ok $r "and it says the profile has no stacks ($err)"
run "$BUILD/ljmemprof" snapshot --profile "$TMPD/leak.ljm" "$TMPD/flat.ljh"
case $rc:$err in 2:*"it was not taken while this profile was recorded (the profile marks 1 other snapshot)") r=0;; *) r=1;; esac
ok $r "a profile that marks another snapshot: says so ($err)"
# A line two functions have: the join names each as the report does
# ("@two.lua:2 (fill)", "@two.lua:2 (main chunk)"), with the report's own
# labels (one definition), not two lines both called "@two.lua:2".
cat > "$TMPD/two.lua" <<'LUA'
local mp = require("ljmemprof") assert(mp.start{ path = arg[1] .. "/two.ljm", stacks = 4 }) local cache = {}
local function fill(n) for i = 1, n do cache[i] = { i } end end fill(100) cache.x = { 1, 2, 3 }
assert(mp.stop{ collect = true, snapshot = arg[1] .. "/two.ljh" })
LUA
run env LUA_CPATH="$BUILD/?.so;;" "$LUAJIT" -joff "$TMPD/two.lua" "$TMPD"
is "$rc:$err" "0:" "the program of a shared line runs"
run "$BUILD/ljmemprof" snapshot --top 3 --profile "$TMPD/two.ljm" "$TMPD/two.ljh"
sed "s|$TMPD/||g" "$TMPD/out" | sed -n '/^MADE WITHIN/,/^$/p' | sed -n '3,5p' > "$TMPD/got"
cat > "$TMPD/want" <<'TXT'
         8800B        100  @two.lua:2 (fill): 100% held by main thread <local cache in main chunk of two.lua>
         1144B          1  @two.lua:1: 100% held by main thread <local cache in main chunk of two.lua>
          200B          3  @two.lua:2 (main chunk): 52% held by main thread <local cache in main chunk of two.lua>
TXT
is "$rc:$(cat "$TMPD/got")" "0:$(cat "$TMPD/want")" \
  "a line two functions have: each named, as the report names them"
run "$BUILD/ljmemprof" report "$TMPD/two.ljm"
sed "s|$TMPD/||g" "$TMPD/out" | grep -E '^@two\.lua:[0-9].* holds ' | sed 's/ holds.*//' > "$TMPD/got"
is "$(cat "$TMPD/got")" "@two.lua:2 (fill)
@two.lua:2 (main chunk)
@two.lua:1" "the report's HEAP SUMMARY: the same labels"
run "$BUILD/ljmemprof" snapshot --format json --profile "$TMPD/two.ljm" "$TMPD/two.ljh"
python3 -c 'import json, sys
print(" | ".join(l["line"].split("/")[-1] for l in json.load(open(sys.argv[1]))["recording"]["lines"]))' "$TMPD/out" > "$TMPD/got"
is "$(cat "$TMPD/got")" "two.lua:2 (fill) | two.lua:1 | two.lua:2 (main chunk)" \
  "and the JSON join's lines"
run "$BUILD/ljmemprof" snapshot --profile "$TMPD/leak.ljm" --format heapsnapshot "$TMPD/leak.ljh"
is "$rc:$err" "2:ljmemprof snapshot: --profile joins one snapshot with its recording, in the text, json or html report (not with --format heapsnapshot)" \
  "--profile with --format heapsnapshot: refused"
run "$BUILD/ljmemprof" diff --profile "$TMPD/leak.ljm" "$TMPD/leak.ljh" "$TMPD/leak.ljh"
is "$rc" 2 "--profile with a diff: refused"
run "$BUILD/ljmemprof" snapshot --profile "$TMPD/nope.ljm" "$TMPD/leak.ljh"
is "$rc:$err" "2:ljmemprof: $TMPD/nope.ljm: No such file or directory" "a missing profile"
run "$BUILD/ljmemprof" snapshot --profile "$TMPD/leak.ljh" "$TMPD/leak.ljh"
is "$rc" 2 "a snapshot given as the profile: refused"
run "$BUILD/ljmemprof" snapshot --profile
is "$rc" 2 "--profile without a value: refused"
done_testing
