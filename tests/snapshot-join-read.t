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
head -1 "$TMPD/all" | grep -Eq '^MADE WITHIN THE RECORDING \(leak\.ljm, marked after event [0-9]+\): 4050 of [0-9]+ objects, 505788B of [0-9]+B$'
ok $? "4050 objects, 505788 bytes made within the recording ($(head -1 "$TMPD/all"))"
tail -n +2 "$TMPD/all" > "$TMPD/got"
# 2000 sessions of 2 objects each (a table and its string), 50 history
# entries (as LuaJIT sizes them, the same in every run), and the array
# parts of the two tables, made before the recording, that lines 3 and 5
# grew (16392 and 520 bytes): their lines made them. The main thread's
# stack, grown by the VM itself, is INTERNAL's.
cat > "$TMPD/want" <<'TXT'
         bytes    objects  line that made them: the retainer holding most of it
       500396B       4000  @leak.lua:3: 100% held by main thread <local sessions in main chunk of leak.lua>
         4920B         50  @leak.lua:5: 100% held by main thread <local history in main chunk of leak.lua>
          472B          0  INTERNAL: 100% held by main thread

TOP RETAINERS BY THE LINES THAT MADE WHAT THEY HOLD (of what each is the nearest top retainer of)
  main thread <local sessions in main chunk of leak.lua>: retains 500460B, 500396B of it made within the recording
         500396B  @leak.lua:3
  main thread: retains 6713B, 472B of it made within the recording
            472B  INTERNAL
  main thread <local history in main chunk of leak.lua>: retains 4984B, 4920B of it made within the recording
           4920B  @leak.lua:5
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
True 4050 505788 True
leak.lua:3 500396 4000 leak.lua> 500396
leak.lua:5 4920 50 leak.lua> 4920
INTERNAL 472 0 main thread 472
leak.lua> 500460 500396 [('leak.lua:3', 500396)]
main thread 6713 472 [('INTERNAL', 472)]
leak.lua> 4984 4920 [('leak.lua:5', 4920)]
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
         9832B        100  @two.lua:2 (fill): 100% held by main thread <local cache in main chunk of two.lua>
          472B          0  INTERNAL: 100% held by main thread
          248B          3  @two.lua:2 (main chunk): 61% held by main thread <local cache in main chunk of two.lua>
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
is "$(cat "$TMPD/got")" "two.lua:2 (fill) | INTERNAL | two.lua:2 (main chunk) | two.lua:1" \
  "and the JSON join's lines"
# A table's parts (its array and hash, allocated apart from it) are
# credited to the line that allocated them, as the profile bills them: a
# table made by mk() and grown by grow() is 64 bytes of line 4 and 312 of
# line 5, and each Lua line's bytes in the join are its bytes in the
# report's HEAP SUMMARY, exactly (the snapshot is taken at the stop,
# after its collection).
cat > "$TMPD/parts.lua" <<'LUA'
local mp = require("ljmemprof")
assert(mp.start{ path = arg[1] .. "/parts.ljm", stacks = 8 })
KEEP = {}
local function mk() return {} end
local function grow(t) for k = 1, 20 do t[k] = k end; t.name = "x" end
for i = 1, 100 do local t = mk(); grow(t); KEEP[i] = t end
assert(mp.stop{ collect = true, snapshot = arg[1] .. "/parts.ljh" })
LUA
run env LUA_CPATH="$BUILD/?.so;;" "$LUAJIT" -joff "$TMPD/parts.lua" "$TMPD"
is "$rc:$err" "0:" "the program of grown tables runs"
run "$BUILD/ljmemprof" snapshot --profile "$TMPD/parts.ljm" "$TMPD/parts.ljh"
sed "s|$TMPD/||g" "$TMPD/out" | sed -n '/^MADE WITHIN/,/^$/p' | grep -E '@parts.lua:[45] \((grow|mk)\)' > "$TMPD/got"
cat > "$TMPD/want" <<'TXT'
        31200B          0  @parts.lua:5 (grow): 100% held by _G.KEEP
         6400B        100  @parts.lua:4 (mk): 100% held by _G.KEEP
TXT
is "$rc:$(cat "$TMPD/got")" "0:$(cat "$TMPD/want")" \
  "a table's parts: billed to the line that grew them, not to the one that made the table"
# join_lines PROFILE SNAPSHOT: "label bytes" of every Lua line of the join;
# heap_lines PROFILE: the same of HEAP SUMMARY.
join_lines() {
  "$BUILD/ljmemprof" snapshot --format json --profile "$1" "$2" |
    python3 -c 'import json, sys
for l in json.load(sys.stdin)["recording"]["lines"]:
    if l["line"].startswith("@"): print(l["line"], l["bytes"])' | sort
}
heap_lines() {
  "$BUILD/ljmemprof" report --format json --leak-only --top 0 "$1" |
    python3 -c 'import json, sys
for r in json.load(sys.stdin)["heap_summary"]:
    if r["source"]["label"].startswith("@"): print(r["source"]["label"], r["bytes"])' | sort
}
for p in leak two parts; do
  join_lines "$TMPD/$p.ljm" "$TMPD/$p.ljh" > "$TMPD/jl"
  heap_lines "$TMPD/$p.ljm" > "$TMPD/hl"
  [ -s "$TMPD/jl" ] && cmp -s "$TMPD/jl" "$TMPD/hl"
  ok $? "$p.lua: every line's bytes in the join are its HEAP SUMMARY bytes ($(tr '\n' ';' < "$TMPD/jl"))"
done
# With the JIT on, what a trace made is credited to the line inside it:
# the join's line is the report's line, its bytes its own row's plus its
# rows under the traces in HEAP SUMMARY, and no trace is a line.
cat > "$TMPD/jit.lua" <<'LUA'
local mp = require("ljmemprof")
assert(mp.start{ path = arg[1] .. "/jit.ljm", stacks = 8 })
local cache = {}
local function add(i) cache[#cache + 1] = { id = i, name = "n" .. i } end
for i = 1, 5000 do add(i) end
assert(mp.stop{ collect = true, snapshot = arg[1] .. "/jit.ljh" })
LUA
run env LUA_CPATH="$BUILD/?.so;;" "$LUAJIT" -jon "$TMPD/jit.lua" "$TMPD"
is "$rc:$err" "0:" "the program of a compiled loop runs"
"$BUILD/ljmemprof" report --format json --leak-only --top 0 "$TMPD/jit.ljm" > "$TMPD/jr"
"$BUILD/ljmemprof" snapshot --format json --profile "$TMPD/jit.ljm" "$TMPD/jit.ljh" > "$TMPD/js"
python3 - "$TMPD/jr" "$TMPD/js" > "$TMPD/got" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))["heap_summary"]
lines = json.load(open(sys.argv[2]))["recording"]["lines"]
want = {}
for r in rows:
    if r["source"]["kind"] == "lua":
        want[r["source"]["label"]] = want.get(r["source"]["label"], 0) + r["bytes"]
    for l in r.get("trace_lines", []):
        want[l["line"]] = want.get(l["line"], 0) + l["bytes"]
traced = sum(l["bytes"] for r in rows for l in r.get("trace_lines", []))
got = {l["line"]: l["bytes"] for l in lines if l["line"].startswith("@")}
print(traced > 0, got == want, any(l["line"].startswith("TRACE") for l in lines))
print(sorted(got.items())[-2:])
PY
is "$(head -1 "$TMPD/got")" "True True False" \
  "JIT on: the join's lines are the lines inside the traces ($(tail -1 "$TMPD/got"))"
# Parts in a hostile file: a table has two at most, only tables, threads
# and userdata have any, and a version-1 file has none.
H='ljh\002\000\000\000\001\000\000\020\002\001\000'
H1='ljh\001\000\000\000\001\000\000\020\002\001\000'
H3='ljh\003\000\000\000\001\000\000\020\002\001\000'
T='\040\001\050\050\000\000\000\000\200'
printf "${H}\013\200\100\050\021\200\001\021\220\003\000$T" > "$TMPD/p2.ljh"
printf "${H}\013\200\100\050\021\200\001\021\220\003\021\002\000$T" > "$TMPD/p3.ljh"
printf "${H}\006\200\100\050\021\200\001\000$T" > "$TMPD/pf.ljh"
printf "${H1}\013\200\100\050\021\200\001\000$T" > "$TMPD/p1.ljh"
printf "${H3}\013\200\100\050\000$T" > "$TMPD/pv.ljh"
run "$BUILD/ljmemprof" snapshot "$TMPD/p2.ljh"
is "$rc:$err" "0:" "a table with two parts: read"
for c in "p3:byte 25: more than 2 parts of one object" \
	 "pf:byte 19: a part of an object of type 6 (only tables, threads and userdata have parts)" \
	 "p1:byte 19: unknown edge kind 17" \
	 "pv:byte 0: snapshot version 3, this reader knows 1 to 2"; do
  f=${c%%:*}
  run "$BUILD/ljmemprof" snapshot "$TMPD/$f.ljh"
  is "$rc:$err" "2:ljmemprof: $TMPD/$f.ljh: damaged heap snapshot: ${c#*:}" "$f.ljh: refused (${c#*:})"
done
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
