#!/bin/sh
# `ljmemprof run` profiles an unmodified script: its arguments, input,
# output and exit status pass through, the report follows its output, -o
# keeps the profile, the temporary one is removed, and the agent module is
# found next to the binary, in an installed layout or through LUA_CPATH.
. tests/lib/tap.sh
MP="$PWD/build/ljmemprof"
unset LUA_CPATH

cat >"$TMPD/args.lua" <<'EOF'
jit.off(); collectgarbage("stop")
local line = io.read("*l")
print("args:", select("#", ...), ...)
print("stdin:", line)
local keep = require("table.new")(16, 0)
for i = 1, 10 do keep[i] = {} end
os.exit(tonumber((...)) or 0)
EOF

cd "$TMPD" || exit 1
mkdir tmp
out=$(echo hello | TMPDIR="$TMPD/tmp" "$MP" run --leak-only args.lua 5 "two words" 2>err)
rc=$?
is "$rc" 5 "the script's exit status passes through"
is "$(echo "$out" | head -n 2)" "args:	2	5	two words
stdin:	hello" "arguments and standard input reach the script"
is "$(echo "$out" | sed -n 3p)" "HEAP SUMMARY:" "the report follows the script's output"
echo "$out" | grep -q "^@args.lua:6 holds 640B: 10 allocs, 0 frees$"
ok $? "the report attributes the script's lines (10 tables of 64 bytes)"
is "$(cat err)" "" "nothing on stderr"
is "$(ls tmp)" "" "the temporary profile is removed"

out=$(echo | "$MP" run -o kept.ljm --format json --top 1 args.lua 0 2>err)
rc=$?
is "$rc" 0 "status 0 when the script exits 0"
is "$("$MP" info kept.ljm | grep complete:)" "complete:   yes" "-o keeps the complete profile"
is "$(echo "$out" | tail -n +3)" "$("$MP" report --format json --top 1 kept.ljm | sed "s|\"file\":\"kept.ljm\"|\"file\":\"kept.ljm\"|")" \
  "the report printed is that of the kept file, with the report options"

cat >"$TMPD/fail.lua" <<'EOF'
local t = {}
error("boom")
EOF
out=$("$MP" run --leak-only fail.lua 2>err)
rc=$?
is "$rc" 1 "a failing script: luajit's status 1"
grep -q "boom" err
ok $? "its error message passes through"
is "$(echo "$out" | head -n 1)" "HEAP SUMMARY:" "and it is still reported"

# Killed before the agent wrote its first full buffer (1 MiB): only the
# prologues are in the file, an empty report with a warning.
cat >"$TMPD/kill.lua" <<'EOF'
local pid = io.open("/proc/self/stat"):read("*l"):match("^(%d+)")
os.execute("kill -KILL " .. pid)
EOF
out=$("$MP" run --leak-only kill.lua 2>err)
rc=$?
is "$rc" 137 "killed by SIGKILL: status 128 + 9"
grep -q "warning: data ends at byte" err
ok $? "a warning says the profile is cut short"
is "$out" "HEAP SUMMARY:" "an empty report"

# Killed after writing several MiB: the part written is reported.
cat >"$TMPD/killbig.lua" <<'EOF'
jit.off(); collectgarbage("stop")
local keep = {}
for i = 1, 400000 do keep[i] = {} end
local pid = io.open("/proc/self/stat"):read("*l"):match("^(%d+)")
os.execute("kill -KILL " .. pid)
EOF
out=$("$MP" run -o big.ljm --leak-only killbig.lua 2>err)
rc=$?
is "$rc" 137 "killed after writing: status 137"
grep -q "^ljmemprof: big.ljm: warning: data ends at byte [0-9]* before the end of the profile" err
ok $? "a warning says where the data ends"
echo "$out" | grep -q "^@killbig.lua:3 holds [0-9]*B: [1-9][0-9][0-9][0-9][0-9][0-9] allocs, [0-9]* frees$"
ok $? "what was written before the kill is reported"

# Finding the module: installed layout, then luajit's own LUA_CPATH.
mkdir -p inst/bin inst/lib/lua/5.1 bare
cp "$MP" inst/bin/ljmemprof
cp "$(dirname "$MP")/ljmemprof.so" inst/lib/lua/5.1/
out=$(echo | inst/bin/ljmemprof run --leak-only args.lua 2>&1)
is "$?:$(echo "$out" | sed -n 3p)" "0:HEAP SUMMARY:" "module found in ../lib/lua/5.1 (installed layout)"
cp "$MP" bare/ljmemprof
if luajit -e 'require("ljmemprof")' 2>/dev/null; then
  ok 0 "# SKIP an installed ljmemprof.so is on luajit's default path"
else
  out=$(echo | bare/ljmemprof run --leak-only args.lua 2>&1)
  ok $(( $? == 0 ? 1 : 0 )) "without a module nearby or in LUA_CPATH, run fails"
fi
out=$(echo | LUA_CPATH="$(dirname "$MP")/?.so;;" bare/ljmemprof run --leak-only args.lua 2>&1)
is "$?:$(echo "$out" | sed -n 3p)" "0:HEAP SUMMARY:" "module found through LUA_CPATH"
out=$(echo | "$MP" run --luajit "$(command -v luajit)" --leak-only args.lua 2>&1)
is "$?:$(echo "$out" | sed -n 3p)" "0:HEAP SUMMARY:" "--luajit PATH"
cd - >/dev/null
done_testing
