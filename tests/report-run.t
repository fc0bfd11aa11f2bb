#!/bin/sh
# `ljmemprof run` profiles an unmodified script: its arguments, input,
# output and exit status pass through, the report follows its output, -o
# keeps the profile, the temporary one is removed, and the agent module is
# found next to the binary, in an installed layout or through LUA_CPATH.
. tests/lib/tap.sh
MP="$BUILD/ljmemprof"
unset LUA_CPATH

# args.lua allocates 10 tables on line 6 and prints their size as the VM
# counts it on line 7 (sizes differ between LuaJIT builds).
cat >"$TMPD/args.lua" <<'EOF'
jit.off(); collectgarbage("stop")
local line = io.read("*l")
print("args:", select("#", ...), ...)
print("stdin:", line)
local keep, c = require("table.new")(16, 0), collectgarbage("count")
for i = 1, 10 do keep[i] = {} end
io.stderr:write((collectgarbage("count") - c) * 1024, "\n")
os.exit(tonumber((...)) or 0)
EOF

cd "$TMPD" || exit 1
mkdir tmp
out=$(echo hello | TMPDIR="$TMPD/tmp" with_timeout 60 "$MP" run --leak-only args.lua 5 "two words" 2>err)
rc=$?
is "$rc" 5 "the script's exit status passes through"
is "$(echo "$out" | head -n 2)" "args:	2	5	two words
stdin:	hello" "arguments and standard input reach the script"
is "$(echo "$out" | sed -n 3p | cut -c1-14)" "HEAP SUMMARY: " "the report follows the script's output"
bytes=$(head -n 1 err)
echo "$out" | grep -q "^@args.lua:6 holds ${bytes}B in 10 blocks ([0-9.]*%)$"
ok $? "the report attributes the script's lines (10 tables, ${bytes} bytes)"
is "$(tail -n +2 err)" "" "nothing else on stderr"
is "$(ls tmp)" "" "the temporary profile is removed"

out=$(echo | with_timeout 60 "$MP" run -o kept.ljm --format json --top 1 args.lua 0 2>err)
rc=$?
is "$rc" 0 "status 0 when the script exits 0"
is "$("$MP" info kept.ljm | grep complete:)" "complete:   yes" "-o keeps the complete profile"
is "$(echo "$out" | tail -n +3)" "$("$MP" report --format json --top 1 kept.ljm | sed "s|\"file\":\"kept.ljm\"|\"file\":\"kept.ljm\"|")" \
  "the report printed is that of the kept file, with the report options"

cat >"$TMPD/fail.lua" <<'EOF'
local t = {}
error("boom")
EOF
out=$(with_timeout 60 "$MP" run --leak-only fail.lua 2>err)
rc=$?
is "$rc" 1 "a failing script: luajit's status 1"
grep -q "boom" err
ok $? "its error message passes through"
is "$(echo "$out" | head -n 1 | cut -c1-14)" "HEAP SUMMARY: " "and it is still reported"

# Killed before the agent wrote its first full buffer (1 MiB): only the
# prologues are in the file, an empty report with a warning.
cat >"$TMPD/kill.lua" <<'EOF'
local pid = io.open("/proc/self/stat"):read("*l"):match("^(%d+)")
os.execute("kill -KILL " .. pid)
EOF
out=$(with_timeout 60 "$MP" run --leak-only kill.lua 2>err)
rc=$?
is "$rc" 137 "killed by SIGKILL: status 128 + 9"
grep -q "warning: data ends at byte" err
ok $? "a warning says the profile is cut short"
is "$out" "HEAP SUMMARY: 0B in 0 blocks live at the end, by the source that allocated or last resized them

NOTES:
the profile is cut short at byte 15, after 0 events: its frees after that are missing, so what is held is an upper bound (the blocks made before the cut that the program still held, and those it freed later)
the profile notes no full garbage collection before its end: what is held may be garbage never collected (to see only what is reachable, record with mp.stop{collect = true} or 'ljmemprof run', whose collection runs as the Lua state closes: a script that ends with os.exit(code) skips it, os.exit(code, true) closes the state)" "an empty report, which notes the cut and no final collection"

# Killed after writing several MiB: the part written is reported.
cat >"$TMPD/killbig.lua" <<'EOF'
jit.off(); collectgarbage("stop")
local keep = {}
for i = 1, 400000 do keep[i] = {} end
local pid = io.open("/proc/self/stat"):read("*l"):match("^(%d+)")
os.execute("kill -KILL " .. pid)
EOF
out=$(with_timeout 60 "$MP" run -o big.ljm --leak-only killbig.lua 2>err)
rc=$?
is "$rc" 137 "killed after writing: status 137"
grep -q "^ljmemprof: big.ljm: warning: data ends at byte [0-9]* before the end of the profile" err
ok $? "a warning says where the data ends"
echo "$out" | grep -q "^@killbig.lua:3 holds [0-9]*B in [1-9][0-9][0-9][0-9][0-9][0-9] blocks ([0-9.]*%)$"
ok $? "what was written before the kill is reported"

# Finding the module: installed layout, then luajit's own LUA_CPATH.
mkdir -p inst/bin inst/lib/lua/5.1 bare
cp "$MP" inst/bin/ljmemprof
cp "$(dirname "$MP")/ljmemprof.so" inst/lib/lua/5.1/
out=$(echo | with_timeout 60 inst/bin/ljmemprof run --leak-only args.lua 2>/dev/null)
is "$?:$(echo "$out" | sed -n 3p | cut -c1-14)" "0:HEAP SUMMARY: " "module found in ../lib/lua/5.1 (installed layout)"
cp "$MP" bare/ljmemprof
if luajit -e 'require("ljmemprof")' 2>/dev/null; then
  ok 0 "# SKIP an installed ljmemprof.so is on luajit's default path"
else
  out=$(echo | with_timeout 60 bare/ljmemprof run --leak-only args.lua 2>&1)
  ok $(( $? == 0 ? 1 : 0 )) "without a module nearby or in LUA_CPATH, run fails"
fi
out=$(echo | LUA_CPATH="$(dirname "$MP")/?.so;;" with_timeout 60 bare/ljmemprof run --leak-only args.lua 2>/dev/null)
is "$?:$(echo "$out" | sed -n 3p | cut -c1-14)" "0:HEAP SUMMARY: " "module found through LUA_CPATH"
out=$(echo | with_timeout 60 "$MP" run --luajit "$(command -v luajit)" --leak-only args.lua 2>/dev/null)
is "$?:$(echo "$out" | sed -n 3p | cut -c1-14)" "0:HEAP SUMMARY: " "--luajit PATH"

# LuaJIT's own options: everything after -- is the LuaJIT command line, and
# the agent starts before its options run.
cat >"$TMPD/opts.lua" <<'EOF'
print("jit:", (jit.status()), "N:", N)
keep = {}
for i = 1, 10 do keep[i] = {} end
EOF
out=$(with_timeout 60 "$MP" run --leak-only -- luajit -joff -e 'N = 7' opts.lua 2>err)
rc=$?
is "$rc:$(echo "$out" | head -n 1)" "0:jit:	false	N:	7" "run -- luajit -joff -e CODE SCRIPT: -joff and -e apply"
echo "$out" | grep -q "^@opts.lua:3 holds [0-9]*B in [0-9]* blocks ([0-9.]*%)$"
ok $? "and the script is profiled"
is "$(cat err)" "" "nothing on stderr"
out=$(with_timeout 60 "$MP" run -o opts.ljm -- luajit -e 'X = require("table.new")(5000, 0)' opts.lua 2>/dev/null)
is "$?:$(with_timeout 60 "$MP" events opts.ljm | grep -c '"label":"=(command line):1".*"nsize":[0-9]\{5,\}')" "0:1" \
  "the agent records from before the first -e (its 5000-slot table)"
run() { "$@" >"$TMPD/out" 2>"$TMPD/err"; rc=$?; out=$(cat "$TMPD/out"); err=$(cat "$TMPD/err"); }
run with_timeout 60 "$MP" run --
is "$rc:$out:$err" "2::ljmemprof run: missing LUAJIT command after -- (see 'ljmemprof run --help')" \
  "run -- without a command"
run with_timeout 60 "$MP" run --luajit luajit -- luajit opts.lua
is "$rc:$out:$err" "2::ljmemprof run: --luajit and a command after -- both name the LuaJIT to run (see 'ljmemprof run --help')" \
  "--luajit with a command after --"
run with_timeout 60 "$MP" run -- "$TMPD/no-luajit" opts.lua
is "$rc:$(head -n 1 "$TMPD/err")" "127:ljmemprof run: cannot run $TMPD/no-luajit: No such file or directory" \
  "run -- with a program that cannot run: status 127"

# A script that stops the profiler itself: the report covers the run
# until then, and a warning says so (its exit status stays the script's).
cat >"$TMPD/stops.lua" <<'EOF'
jit.off(); collectgarbage("stop")
local keep = {}
for i = 1, 10 do keep[i] = {} end
assert(require("ljmemprof").stop())
for i = 11, 20 do keep[i] = {} end
EOF
run with_timeout 60 "$MP" run --leak-only stops.lua
is "$rc:$err" "0:ljmemprof run: warning: the script stopped the profiler itself; the report covers the run until then" \
  "a script that stops the profiler: a warning, its status"
echo "$out" | grep -q "^@stops.lua:3 holds [0-9]*B in [0-9]* blocks ([0-9.]*%)$"
ok $? "what ran before the stop is reported"
echo "$out" | grep -q "^@stops.lua:5 "
ok $(( $? == 0 )) "what ran after it is not"
cat >"$TMPD/compat.lua" <<'EOF'
require("ljmemprof").compat()
assert(misc.memprof.stop())
EOF
run with_timeout 60 "$MP" run --leak-only compat.lua
is "$rc:$err" "0:ljmemprof run: warning: the script stopped the profiler itself; the report covers the run until then" \
  "misc.memprof.stop() after compat() is noted too"
cat >"$TMPD/stopfail.lua" <<'EOF'
local mp = require("ljmemprof")
assert(mp.stop())
assert(not mp.stop())
EOF
run with_timeout 60 "$MP" run --leak-only stopfail.lua
is "$(echo "$err" | grep -c warning)" 1 "a failed stop() is not noted again"
is "$(ls tmp)" "" "the note and the profile are removed"

# The report shows only the program's allocations: the code run adds to
# start the agent records nothing (it used to show as two sources named
# =(command line):1 that looked like leaks), nor does luajit loading the
# script.
cat >"$TMPD/own.lua" <<'EOF'
jit.off(); collectgarbage("stop")
keep = {}
for i = 1, 10 do keep[i] = {} end
EOF
run with_timeout 60 "$MP" run -o own.ljm --leak-only own.lua
is "$rc:$err:$(echo "$out" | sed -n 's/ holds .*//p')" "0::@own.lua:3
INTERNAL
@own.lua:2" "run: the heap summary holds the script's lines only (and the blocks the final collection shrank)"
is "$(with_timeout 60 "$MP" events own.ljm | grep -o '"label":"[^"]*"' | sort -u)" \
  '"label":"@own.lua:2"
"label":"@own.lua:3"
"label":"INTERNAL"' "every event of the profile is the script's or the VM's"
run with_timeout 60 "$MP" run --stacks --format collapsed own.lua
is "$rc:$err:$(echo "$out" | grep -c 'command line')" "0::0" \
  "no stack has a frame of run's own code"

# A script that cannot be loaded: luajit's error, no report, its status;
# an existing --html file is left as it was. (luajit names itself by the
# path it was started by: build/luajit2's is a full path.)
echo old >old.html
run with_timeout 60 "$MP" run --html old.html nonexist.lua
err=$(printf '%s\n' "$err" | sed 's|^[^ :]*/luajit:|luajit:|')
is "$rc:$out:$err:$(cat old.html)" "1::luajit: cannot open nonexist.lua: No such file or directory
ljmemprof run: no profile was recorded: the script did not start:old" \
  "run with a missing script: luajit's error, no report, status 1"
echo 'local x = = 1' >syntax.lua
run with_timeout 60 "$MP" run -o syntax.ljm syntax.lua
err=$(printf '%s\n' "$err" | sed 's|^[^ :]*/luajit:|luajit:|')
is "$rc:$out:$err:$(ls syntax.ljm 2>/dev/null)" "1::luajit: syntax.lua:1: unexpected symbol near '='
ljmemprof run: no profile was recorded: the script did not start:" \
  "a script that does not compile: the same, and no empty -o file"
# An existing -o file is replaced only by a profile: the profile is
# recorded beside it and renamed over it.
cp syntax.lua prev.ljm
run with_timeout 60 "$MP" run -o prev.ljm syntax.lua
is "$rc:$(cmp syntax.lua prev.ljm && echo same):$(ls prev.ljm.* 2>/dev/null)" "1:same:" \
  "a script that does not compile leaves the -o file as it was, and no file beside it"
echo 'local t = {} for i = 1, 10 do t[i] = {} end' >ten.lua
run with_timeout 60 "$MP" run -o prev.ljm ten.lua
is "$rc:$(complete prev.ljm):$(ls prev.ljm.* 2>/dev/null)" "0:true:" \
  "a script that runs replaces it with its profile"
run with_timeout 60 "$MP" run -- luajit nonexist.lua
is "$rc:$out:$(echo "$err" | tail -n 1)" "1::ljmemprof run: no profile was recorded: the script did not start" \
  "the same after --"

# The outputs are opened before anything runs: a bad --html path, -o and
# --html naming one file, or either naming a file of the command (the
# script, an argument, its standard input) is said first with status 2,
# the script does not run (it would write ran.txt), and no file is lost.
cat >"$TMPD/mark.lua" <<'EOF'
io.open("ran.txt", "w"):write("ran\n")
local keep = {}
for i = 1, 10 do keep[i] = {} end
EOF
cp mark.lua script.lua
cp kept.ljm x.ljm
echo data >data.txt
mkfifo fifo
# refused ERROR ARGS...: `ljmemprof run ARGS` says ERROR, status 2, and
# the script does not run.
refused() {
  want=$1
  shift
  rm -f ran.txt
  run with_timeout 60 "$MP" run "$@"
  is "$rc:$out:$err:$(ls ran.txt 2>/dev/null)" "2::$want:" \
    "run $*: refused before the script runs"
}
refused "ljmemprof: $TMPD/none/a.html: No such file or directory" \
  --html "$TMPD/none/a.html" mark.lua
refused "ljmemprof: $TMPD/none/p.ljm: No such file or directory" \
  -o "$TMPD/none/p.ljm" mark.lua
refused "ljmemprof run: --html x.ljm: is the profile's file -o x.ljm (it would be overwritten)" \
  -o x.ljm --html x.ljm mark.lua
cmp -s kept.ljm x.ljm
ok $? "the profile -o names is intact"
refused "ljmemprof run: --html ./new.ljm: is the profile's file -o new.ljm (it would be overwritten)" \
  -o new.ljm --html ./new.ljm mark.lua
test -e new.ljm
ok $(( $? == 0 )) "and the profile's file made for it is removed"
refused "ljmemprof run: -o ./script.lua: is script.lua, a file of the command to run (it would be overwritten)" \
  -o ./script.lua script.lua
refused "ljmemprof run: --html data.txt: is data.txt, a file of the command to run (it would be overwritten)" \
  --html data.txt -- luajit mark.lua data.txt
refused "ljmemprof run: --output-report x.ljm: is the profile's file -o x.ljm (it would be overwritten)" \
  -o x.ljm --output-report x.ljm mark.lua
refused "ljmemprof run: --html ./r.txt: is the report's file --output-report r.txt (it would be overwritten)" \
  --output-report r.txt --html ./r.txt mark.lua
test -e r.txt
ok $(( $? == 0 )) "and the report's file made for it is removed"
refused "ljmemprof run: --output-report script.lua: is script.lua, a file of the command to run (it would be overwritten)" \
  --output-report script.lua script.lua
refused "ljmemprof: $TMPD/none/r.txt: No such file or directory" \
  --output-report "$TMPD/none/r.txt" mark.lua
cmp -s mark.lua script.lua && [ "$(cat data.txt)" = data ]
ok $? "the script and its argument are intact"
rm -f ran.txt
run with_timeout 60 "$MP" run -o script.lua - <script.lua
is "$rc:$out:$err:$(ls ran.txt 2>/dev/null)" "2::ljmemprof run: -o script.lua: is the standard input of the command to run (it would be overwritten):" \
  "run -o FILE - <FILE: refused before the script runs"
refused "ljmemprof run: -o fifo: not a regular file (the profile is read back for the report)" \
  -o fifo mark.lua

# --output-report FILE: the report in FILE, the script's output alone on
# standard output; FILE is the report of the profile, byte for byte.
printf 'print("from the script")\nlocal keep = {}\nfor i = 1, 10 do keep[i] = {} end\n' >say.lua
run with_timeout 60 "$MP" run -o say.ljm --format collapsed --output-report say.txt say.lua
is "$rc:$out:$err" "0:from the script:" "run --output-report: the script's output alone on standard output"
"$MP" report --format collapsed say.ljm >want.txt
cmp -s want.txt say.txt && [ -s say.txt ]
ok $? "the file holds the report of the profile, byte for byte"
run with_timeout 60 "$MP" run --output-report=say2.txt --top 1 say.lua
is "$rc:$out:$(head -n 1 say2.txt)" "0:from the script:ALLOCATIONS" "--output-report=FILE: the text report in FILE"

# The HTML page and the SVG name what ran, not the temporary profile.
run with_timeout 60 "$MP" run --html say.html --format svg --output-report say.svg say.lua 'a<b'
is "$rc:$(grep -o '<title>[^<]*</title>' say.html):$(grep -o '<h1 id="title">[^<]*</h1>' say.html)" \
  '0:<title>ljmemprof: say.lua a&lt;b</title>:<h1 id="title">ljmemprof: say.lua a&lt;b</h1>' \
  "run --html: the page's title and heading name the script and its arguments"
grep -q '>Flame graph of allocated bytes: say.lua a&lt;b</text>' say.svg
ok $? "run --format svg: the flame graph's title too"
"$MP" report --format html -o say2.html say.ljm
is "$(grep -o '<title>[^<]*</title>' say2.html)" '<title>ljmemprof: say.ljm</title>' \
  "report --format html: the title names the profile"

# A report that cannot be written: status 2, and the profile is not lost.
mkdir keep
TMPDIR="$TMPD/keep" with_timeout 60 "$MP" run --leak-only mark.lua >/dev/full 2>err
is "$?:$(sed 's/ljmemprof-[A-Za-z0-9]*\.ljm/ljmemprof-X.ljm/' err)" "2:ljmemprof: standard output: No space left on device
ljmemprof run: the profile is kept in $TMPD/keep/ljmemprof-X.ljm" \
  "the report cannot be written: status 2, the temporary profile is kept and named"
kept=$(sed -n 's/^ljmemprof run: the profile is kept in //p' err)
is "$(ls keep | wc -l):$(complete "$kept")" "1:true" "it is the complete profile"
# A reader that goes away (`| head -n 1`) is the same: the run was killed by
# SIGPIPE in the middle of the report, leaving its temporary profile and
# note file in $TMPDIR, unnamed.
mkdir pipe
# (A report of 5000 lines, 380 KB, far more than a pipe holds.)
printf 'keep = {}\n' >many.lua
for i in $(seq 1 5000); do printf 'keep[#keep + 1] = {} -- line %d\n' $i; done >>many.lua
(TMPDIR="$TMPD/pipe" with_timeout 60 "$MP" run --top 0 many.lua 2>err; echo $? >rc) | head -n 1 >/dev/null
kept=$(sed -n 's/^ljmemprof run: the profile is kept in //p' err)
is "$(cat rc):$(ls pipe | wc -l):$(ls "$TMPD"/pipe/* 2>/dev/null):$(sed -n 1p err)" \
  "2:1:$kept:ljmemprof: standard output: Broken pipe" \
  "a reader that goes away: status 2, the one temporary file left is the profile, named"
run with_timeout 60 "$MP" run --leak-only --html /dev/full -o p.ljm mark.lua
is "$rc:$err:$(complete p.ljm)" "2:ljmemprof: /dev/full: No space left on device:true" \
  "the HTML report cannot be written: status 2, the profile in -o is complete"

# lua_close runs every userdata finaliser, reachable or not, newest first,
# and the profiler's own comes after those made later: what they free was
# held when the script ended. NOTES and check say how many ran; files that
# are closed or standard and C-module handles are not counted; a script
# that stops the profiler itself at its end sees what it held.
cat >fin.lua <<'EOL'
cache = {}
for i = 1, 200 do cache[i] = string.rep("x", 100) .. i end
local u = newproxy(true)
getmetatable(u).__gc = function() cache = nil end
keep_u = u
local f = io.open("fin.lua")
f:close()
EOL
closenote='the recording ended as the VM closed (lua_close), which ran 1 userdata finaliser first: what it freed shows as freed, though the program still held it when it ended (a module'"'"'s buffers, what a __gc cleared); to record what it held, end the script with require("ljmemprof").stop{collect = true}'
run with_timeout 60 "$MP" run -o fin.ljm fin.lua
is "$rc:$(echo "$out" | sed -n '/^NOTES:/,$p' | grep -c 'ended as the VM closed')" "0:1" "run: NOTES has the note once"
is "$(echo "$out" | grep 'ended as the VM closed')" "$closenote" "it counts the one finaliser of the script's"
run "$MP" check --max-leak 1M fin.ljm
is "$rc:$(echo "$out" | grep -c "^note: $closenote\$")" "0:1" "check says it too"
cp fin.ljm fin2.ljm
run "$MP" report fin.ljm fin2.ljm
is "$rc:$(echo "$out" | grep -o 'which ran [0-9]* userdata finalisers* first')" \
  "0:which ran 2 userdata finalisers first" "a merge of two profiles: the finalisers of both"
run "$MP" report --format json fin.ljm
case $out in *"\"notes\":"*"ended as the VM closed"*) r=0;; *) r=1;; esac
ok $r "and the JSON's notes"
printf 'require("ljmemprof").stop{collect = true}\n' >>fin.lua
run with_timeout 60 "$MP" run --leak-only fin.lua
is "$(echo "$out" | grep -c 'ended as the VM closed')" 0 "a script that stops the profiler itself: no note"
case $out in *"@fin.lua:2 holds "*) r=0;; *) r=1;; esac
ok $r "and its cache is held ($(echo "$out" | grep 'fin.lua:2'))"
cat >nofin.lua <<'EOL'
local t = {}
for i = 1, 100 do t[i] = {} end
local f = io.open("nofin.lua")
f:close()
EOL
run with_timeout 60 "$MP" run nofin.lua
is "$rc:$(echo "$out" | grep -c 'ended as the VM closed')" "0:0" "no finaliser of the script's: no note"
cd - >/dev/null
# A script that ends with os.exit(code) never closes its Lua state, so
# run's final collection (at lua_close) does not run: the note says so,
# and how to get it; os.exit(code, true) closes the state and collects.
cd "$TMPD" || exit 1
printf 'KEEP = {}\nfor i = 1, 10 do KEEP[i] = { i } end\nos.exit(0)\n' >exit.lua
printf 'KEEP = {}\nfor i = 1, 10 do KEEP[i] = { i } end\nos.exit(0, true)\n' >exitc.lua
with_timeout 60 "$MP" run -o exit.ljm exit.lua >/dev/null 2>&1 &&
  with_timeout 60 "$MP" run -o exitc.ljm exitc.lua >/dev/null 2>&1
ok $? "run: the scripts ending with os.exit(0) and os.exit(0, true) are recorded"
is "$("$MP" report exit.ljm | sed -n '/^NOTES:$/,$p')" "NOTES:
a full garbage collection was asked for before the end, but the process exited without closing its Lua state (lua_close: a host that exits without it, os.exit(code) without true), so none ran: what is held may be garbage never collected (stop the profiler from Lua before the exit: require(\"ljmemprof\").stop{collect = true}; a script can end with os.exit(code, true), which closes the state)" \
  "run, os.exit(0): the note says run's collection did not run, and why"
is "$("$MP" report exitc.ljm | sed -n '/^NOTES:$/,$p')" "NOTES:
a full garbage collection ran before the end: what is held is reachable" \
  "run, os.exit(0, true): the state closed, the collection ran"
cd - >/dev/null
done_testing

