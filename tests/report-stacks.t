#!/bin/sh
# The stack formats on real profiles (one frame per event until the reader
# reads the stack extension): collapsed lines exact for a small program
# and equal to the report's numbers for the example; the pprof profile's
# totals as `go tool pprof -top` prints them equal to the report's; the SVG
# is well-formed XML whose root stands for the total, and its script works
# in headless Chromium; --stacks views of text and json; diff --stacks N
# shows at most N; -o; bad options and bad output paths get one clear
# error line.
. tests/lib/tap.sh
MP=$BUILD/ljmemprof

# -- A small program: two lines, known sizes ---------------------------------

# Line 6 makes 10 tables, line 8 seven; the garbage collector is stopped, so
# all of them are still live at the end. The sizes come from the VM itself.
cat >"$TMPD/two.lua" <<'EOF'
jit.off(); collectgarbage("stop")
local mp = require("ljmemprof")
local keep = require("table.new")(16, 0)
assert(mp.start(arg[1]))
local c0 = collectgarbage("count")
for i = 1, 10 do keep[i] = {} end
local c1 = collectgarbage("count")
for i = 1, 7 do local t = {} end
local c2 = collectgarbage("count")
mp.stop()
io.stderr:write((c1 - c0) * 1024, " ", (c2 - c1) * 1024, "\n")
EOF
(cd "$TMPD" && LUA_CPATH="$BUILD/?.so;;" with_timeout 60 luajit two.lua two.ljm 2>sizes)
ok $? "the small program runs"
read -r b6 b8 <"$TMPD/sizes"
P="$TMPD/two.ljm"

run $MP report --format collapsed "$P"
is "$rc:$out" "0:@two.lua:6 $b6
@two.lua:8 $b8" "collapsed: a line per stack, the bytes allocated ($b6, $b8)"
run $MP report --format collapsed --metric alloc-count "$P"
is "$out" "@two.lua:6 10
@two.lua:8 7" "collapsed --metric alloc-count: 10 and 7 allocations"
run $MP report --format collapsed --metric leak-bytes "$P"
is "$out" "@two.lua:6 $b6
@two.lua:8 $b8" "collapsed --metric leak-bytes: nothing was freed"
run $MP report --format collapsed --metric leak-count "$P"
is "$out" "@two.lua:6 10
@two.lua:8 7" "collapsed --metric leak-count: every block is live"

# -- The example: collapsed, pprof and svg against the report --------------------

E="$TMPD/example.ljm"
with_timeout 120 scripts/example.sh "$E" >/dev/null 2>&1
ok $? "the example profile is recorded"
info=$($MP info "$E")
alloc=$(echo "$info" | sed -n 's/^allocated: *\([0-9]*\)B.*/\1/p')
live_n=$(echo "$info" | sed -n 's/^live: *\([0-9]*\) blocks, \([0-9]*\)B.*/\1/p')
live_b=$(echo "$info" | sed -n 's/^live: *\([0-9]*\) blocks, \([0-9]*\)B.*/\2/p')
json=$($MP report --format json "$E")
events=$(echo "$json" | luajit -e '
  local t = require("cjson").decode(io.read("*a")).totals
  print(t.alloc_events + t.realloc_events)')

# Per site, the report's NEW bytes of allocations plus reallocations.
want=$(echo "$json" | luajit -e '
  local d, by = require("cjson").decode(io.read("*a")), {}
  for _, s in ipairs({ "allocations", "reallocations" }) do
    for _, r in ipairs(d[s]) do
      by[r.source.label] = (by[r.source.label] or 0) + r.alloc_bytes
    end
  end
  local l = {}
  for k, v in pairs(by) do if v > 0 then l[#l + 1] = k .. " " .. v end end
  table.sort(l)
  io.write(table.concat(l, "\n"))')
run $MP report --format collapsed "$E"
is "$out" "$want" "collapsed example: each site's allocated bytes, as the report has them"
sum() { awk '{ s += $NF } END { printf "%d", s }'; }
is "$(echo "$out" | sum)" "$alloc" "collapsed example: the lines add up to the allocated bytes ($alloc)"
run $MP report --format collapsed --metric leak-bytes "$E"
is "$(echo "$out" | sum)" "$live_b" "collapsed --metric leak-bytes: the lines add up to the live bytes ($live_b)"
run $MP report --format collapsed --metric leak-count "$E"
is "$(echo "$out" | sum)" "$live_n" "collapsed --metric leak-count: the lines add up to the live blocks ($live_n)"

# pprof, read by Go's own pprof.
run $MP report --format pprof -o "$TMPD/ex.pb.gz" "$E"
is "$rc:$out:$err" "0::" "pprof to -o FILE: nothing on stdout or stderr"
if command -v go >/dev/null 2>&1; then
  export GOCACHE="$TMPD/gocache" HOME="${HOME:-$TMPD}"
  for st in alloc_space:$alloc alloc_objects:$events inuse_space:$live_b inuse_objects:$live_n; do
    name=${st%%:*}
    top=$(with_timeout 120 go tool pprof -top -unit=B -sample_index="$name" "$TMPD/ex.pb.gz" 2>&1)
    total=$(echo "$top" | sed -n 's/.* of \([0-9]*\)B total$/\1/p')
    is "$total" "${st#*:}" "go tool pprof -top -sample_index=$name: the total is the report's"
  done
  top=$(with_timeout 120 go tool pprof -top "$TMPD/ex.pb.gz" 2>&1)
  is "$(echo "$top" | sed -n 's/^Type: //p')" "alloc_space" "go tool pprof: alloc_space shown first (--metric alloc-bytes)"
  echo "$top" | grep -q ' make_records (examples/example.lua:9)$'
  ok $? "go tool pprof: Lua functions by name, file and first line (make_records (examples/example.lua:9))"
  # The file of a chunk loaded from a file is its path, without the "@" of
  # the chunk name, so pprof shows the source (it said "could not find file
  # @examples/example.lua").
  list=$(with_timeout 120 go tool pprof -list '^make_records ' "$TMPD/ex.pb.gz" 2>&1)
  echo "$list" | grep -q '^ *[0-9.]*MB *[0-9.]*MB *12:    out\[i\] = { id = i'
  ok $? "go tool pprof -list: the source of a Lua function, its line's bytes" || echo "$list" | sed 's/^/# /'
  $MP report --format pprof --metric leak-count -o "$TMPD/ex2.pb.gz" "$E"
  top=$(with_timeout 120 go tool pprof -top "$TMPD/ex2.pb.gz" 2>&1)
  is "$(echo "$top" | sed -n 's/^Type: //p')" "inuse_objects" "pprof --metric leak-count: inuse_objects shown first"
else
  echo "not ok - go tool pprof is not installed (Debian golang-go; make deps)"
  tap_n=$((tap_n + 1)); tap_failed=$((tap_failed + 1))
fi

# SVG: well-formed XML, the root is the total, each frame's width its share.
run $MP report --format svg -o "$TMPD/ex.svg" "$E"
is "$rc:$out:$err" "0::" "svg to -o FILE"
check=$(python3 - "$TMPD/ex.svg" "$alloc" <<'EOF'
import sys, xml.dom.minidom
doc = xml.dom.minidom.parse(sys.argv[1])
total = int(sys.argv[2])
frames = [g for g in doc.getElementsByTagName("g")
          if g.parentNode.getAttribute("id") == "frames"]
def value(g):
    t = g.getElementsByTagName("title")[0].firstChild.data.split("\n")[1]
    return int(t.split(" bytes")[0].replace(",", ""))
bad = []
root = frames[0].getElementsByTagName("rect")[0]
if float(root.getAttribute("width")) != 1180 or value(frames[0]) != total:
    bad.append("root %s px, %d bytes" % (root.getAttribute("width"), value(frames[0])))
for g in frames:
    w = float(g.getElementsByTagName("rect")[0].getAttribute("width"))
    if abs(w - value(g) * 1180.0 / total) > 0.006:
        bad.append("frame %s: %g px for %d bytes" % (g.getElementsByTagName("title")[0].firstChild.data.split("\n")[0], w, value(g)))
print("ok %d" % len(frames) if not bad else "; ".join(bad))
EOF
)
case "$check" in ok*) s=0 ;; *) s=1 ;; esac
ok $s "svg: well-formed XML, root 1180 px = $alloc bytes, every frame its share ($check)"

# The script in a browser: zoom, search, reset (headless Chromium).
if command -v chromium >/dev/null 2>&1; then
  sed '$d' "$TMPD/ex.svg" >"$TMPD/ex-test.svg"	# All but "</svg>".
  cat >>"$TMPD/ex-test.svg" <<'EOF'
<script><![CDATA[
window.addEventListener("load", function () { setTimeout(function () {
  var r = [];
  zoom(F[1]);
  r.push(F[1].r.getAttribute("width"), F[0].g.classList.contains("anc"));
  mark("example\\.lua:12$");
  r.push(F.filter(function (f) { return f.r.getAttribute("fill") == "#e040e0"; }).length);
  reset();
  r.push(F.filter(function (f) { return f.g.style.display == "none"; }).length);
  document.documentElement.setAttribute("data-result", r.join(" "));
}, 10); });
]]></script>
</svg>
EOF
  dom=$(with_timeout 120 chromium --headless --no-sandbox --disable-gpu \
    --user-data-dir="$TMPD/chromium" --virtual-time-budget=3000 --dump-dom \
    "file://$TMPD/ex-test.svg" 2>/dev/null)
  is "$(echo "$dom" | sed -n 's/.*data-result="\([^"]*\)".*/\1/p')" "1180.00 true 1 0" \
    "svg in Chromium: a click zooms a frame to the width (its callers faded), search marks @examples/example.lua:12, reset shows all"
else
  echo "not ok - chromium is not installed (Debian chromium; make deps)"
  tap_n=$((tap_n + 1)); tap_failed=$((tap_failed + 1))
fi

# docs/REPORT.md's flame graph is what scripts/example-flame.sh draws
# (with Debian's luajit: another flavour's VM allocates a few bytes more of
# its own and its binary's builtins are at other offsets).
with_timeout 120 scripts/example-flame.sh "$TMPD/flame.svg" >/dev/null 2>&1
rc=$?
if [ "${FLAVOUR:-luajit}" != luajit ]; then
  is "$rc" 0 "scripts/example-flame.sh draws the example's flame graph"
  ok 0 "# SKIP docs/example-flame.svg is drawn with Debian's luajit, not $FLAVOUR"
else
  cmp -s "$TMPD/flame.svg" docs/example-flame.svg
  ok $? "docs/example-flame.svg is the output of scripts/example-flame.sh"
fi

# -- --stacks views of text and json, without stacks recorded ------------------

run $MP report --stacks-per-source --leak-only "$P"
pct() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", 100 * a / b }'; }
is "$out" "HEAP SUMMARY: $((b6 + b8))B in 17 blocks live at the end, by the source that allocated or last resized them
@two.lua:6 holds ${b6}B in 10 blocks ($(pct $b6 $((b6 + b8)))%)
@two.lua:8 holds ${b8}B in 7 blocks ($(pct $b8 $((b6 + b8)))%)

CALL STACKS: none in this profile (it was recorded with one frame per event; record with mp.start{stacks = 64} or 'ljmemprof run --stacks')

NOTES:
the profile notes no full garbage collection before its end: what is held may be garbage never collected (to see only what is reachable, record with mp.stop{collect = true} or 'ljmemprof run', whose collection runs as the Lua state closes: a script that ends with os.exit(code) skips it, os.exit(code, true) closes the state)" \
  "text --stacks-per-source without stacks recorded: one line says so"
run $MP report --format json --stacks-per-source 2 --metric leak-count "$P"
echo "$out" | grep -q '^"call_stacks":{"recorded":false,"metric":"leak-count","per_source":2,"sources":\[\]}'
ok $? "json --stacks without stacks recorded: recorded false, no sources"

# -- Options and outputs ---------------------------------------------------------

run $MP report --format collapsed --metric bytes "$P"
is "$rc:$out:$err" "2::ljmemprof report: bad value 'bytes' for option '--metric' (alloc-bytes, alloc-count, leak-bytes, leak-count, peak-bytes or peak-count; see 'ljmemprof report --help')" \
  "an unknown --metric"
run $MP report --metric leak-bytes "$P"
is "$rc:$out:$err" "2::ljmemprof report: --metric needs --stacks-per-source, or the format collapsed, svg or pprof (see 'ljmemprof report --help')" \
  "--metric for the text report without --stacks-per-source"
run $MP report --format svg --stacks-per-source 2 "$P"
is "$rc:$err" "2:ljmemprof report: --stacks-per-source is for the text and json formats; svg always shows every stack (see 'ljmemprof report --help')" \
  "--stacks-per-source with a stack format"
run $MP report --stacks-per-source=x "$P"
is "$rc:$err" "2:ljmemprof report: bad value 'x' for option '--stacks-per-source' (a number; see 'ljmemprof report --help')" \
  "--stacks-per-source=x"
run $MP report --stacks 2 "$P"
is "$rc:$out:$err" "2::ljmemprof report: --stacks is run's number of frames to record; the call stacks shown per source are --stacks-per-source [N] (see 'ljmemprof report --help')" \
  "report --stacks (run's name for frames): an error naming --stacks-per-source"
run $MP report --stacks=2 "$P"
is "$rc:$out:$err" "2::ljmemprof report: --stacks is run's number of frames to record; the call stacks shown per source are --stacks-per-source [N] (see 'ljmemprof report --help')" \
  "report --stacks=2: the same error"
run $MP report -o "$TMPD/no/such/dir/out.svg" --format svg "$P"
is "$rc:$out:$err" "2::ljmemprof: $TMPD/no/such/dir/out.svg: No such file or directory" \
  "-o in a directory that does not exist: one error line"
printf 'not a profile' >"$TMPD/text.ljm"
run $MP report --format collapsed -o "$TMPD/out.txt" "$TMPD/text.ljm"
is "$rc:$(ls "$TMPD/out.txt" 2>&1 | sed 's/.*: //')" "2:No such file or directory" \
  "-o with a file that is not a profile: no output file left behind"
run $MP report -o - --format collapsed "$P"
is "$rc:$out" "0:@two.lua:6 $b6
@two.lua:8 $b8" "-o - is standard output"
if command -v script >/dev/null 2>&1; then
  out=$(with_timeout 60 script -qec "$MP report --format pprof $P" /dev/null </dev/null)
  is "$(echo "$out" | tr -d '\r')" "ljmemprof report: the pprof format is binary: not written to a terminal (give -o FILE, or redirect standard output)" \
    "pprof to a terminal: refused with one line"
else
  echo "not ok - script(1) is not installed (util-linux)"
  tap_n=$((tap_n + 1)); tap_failed=$((tap_failed + 1))
fi
run $MP report --format pprof "$P"
is "$rc:$(head -c 2 "$TMPD/out" | od -An -tx1 | tr -d ' ')" "0:1f8b" "pprof to a pipe or file: gzip data"

# -- diff --stacks N: at most N stacks ---------------------------------------

# f makes k * n tables when called with k, once from each of the lines 7 to
# 18 (k = 1 to 12): 12 stacks; run twice (n = 1, 2), each changes by k
# tables, the largest those of lines 18, 17, 16, ... A bare --stacks of diff
# is 10; --stacks 3 was taken for a bare one (3 is what a bare --stacks of
# report means) and showed 10.
cat >"$TMPD/ds.lua" <<'EOF'
jit.off(); collectgarbage("stop")
local mp = require("ljmemprof")
local n = tonumber(arg[2])
local keep = require("table.new")(200, 0)
local function f(k) for i = 1, k * n do keep[#keep + 1] = {} end end
assert(mp.start{path = arg[1], stacks = 8})
f(1)
f(2)
f(3)
f(4)
f(5)
f(6)
f(7)
f(8)
f(9)
f(10)
f(11)
f(12)
mp.stop()
EOF
(cd "$TMPD" && LUA_CPATH="$BUILD/?.so;;" with_timeout 60 luajit ds.lua da.ljm 1 &&
 LUA_CPATH="$BUILD/?.so;;" with_timeout 60 luajit ds.lua db.ljm 2)
ok $? "the diff stack program runs twice"
# The lines that the stacks of a text diff were called from, in order.
callers() {
  printf '%s\n' "$1" | grep -A2 '^	[0-9]' |
    sed -n 's/^		main chunk (ds.lua:\([0-9]*\))$/\1/p' | tr '\n' ' '
}
for n in 1 2 3 4; do
  run $MP diff --stacks $n "$TMPD/da.ljm" "$TMPD/db.ljm"
  want=$(seq 18 -1 $((19 - n)) | tr '\n' ' ')
  is "$rc:$(callers "$out")" "0:$want" "diff --stacks $n: the $n largest changes (lines $want)"
done
run $MP diff --stacks "$TMPD/da.ljm" "$TMPD/db.ljm"
is "$rc:$(callers "$out")" "0:$(seq 18 -1 9 | tr '\n' ' ')" "diff --stacks: 10 stacks"
run $MP diff --stacks=0 "$TMPD/da.ljm" "$TMPD/db.ljm"
is "$rc:$(callers "$out")" "0:$(seq 18 -1 7 | tr '\n' ' ')" "diff --stacks=0: all 12 stacks"
# Two runs alike: no stack changed, and the text says so (an empty
# heading before); one source is one source.
(cd "$TMPD" && LUA_CPATH="$BUILD/?.so;;" with_timeout 60 luajit ds.lua dc.ljm 1)
run $MP diff --stacks "$TMPD/da.ljm" "$TMPD/dc.ljm"
is "$rc:$(echo "$out" | sed -n '6p;8p')" "0:0 sources changed, 1 did not
CALL STACKS: none changed (allocated bytes)" "diff --stacks of two runs alike: no stack changed"
run $MP diff "$TMPD/da.ljm" "$TMPD/db.ljm"
is "$rc:$(echo "$out" | grep 'changed, ')" "0:1 source changed, 0 did not" "diff: one source changed, in the singular"
run $MP diff --format json --stacks 3 "$TMPD/da.ljm" "$TMPD/db.ljm"
is "$rc:$(echo "$out" | luajit -e '
  local s = {}
  for _, x in ipairs(require("cjson").decode(io.read("*a")).call_stacks.stacks) do
    s[#s + 1] = x.frames[2] .. "+" .. (x.new.alloc_events - x.base.alloc_events)
  end
  print(table.concat(s, " "))')" "0:main chunk (ds.lua:18)+12 main chunk (ds.lua:17)+11 main chunk (ds.lua:16)+10" \
  "diff --format json --stacks 3: the 3 largest changes"
# Under a peak metric the JSON stacks carry what they held at the peak, the
# numbers the text shows and orders by (they had only the four costs).
run $MP report --format json --stacks-per-source 1 --top 1 --metric peak-count "$TMPD/db.ljm"
is "$rc:$(echo "$out" | luajit -e '
  local s = require("cjson").decode(io.read("*a")).call_stacks.sources[1]
  print(s.label, s.peak_blocks, s.paths[1].peak_blocks, s.paths[1].frames[2].label)')" \
  "0:@ds.lua:5	156	24	main chunk (ds.lua:18)" \
  "json --stacks --metric peak-count: each source's and stack's blocks at the peak"
run $MP diff --format json --stacks 2 --metric peak-count "$TMPD/da.ljm" "$TMPD/db.ljm"
is "$rc:$(echo "$out" | luajit -e '
  local s = {}
  for _, x in ipairs(require("cjson").decode(io.read("*a")).call_stacks.stacks) do
    s[#s + 1] = x.frames[2] .. "+" .. (x.new.peak_blocks - x.base.peak_blocks)
  end
  print(table.concat(s, " "))')" "0:main chunk (ds.lua:18)+12 main chunk (ds.lua:17)+11" \
  "diff --format json --stacks --metric peak-count: the stacks' blocks at the peak"
# A profile without stacks against one with them: every stack differs, and
# a warning says why (the stacks of each side were shown as all new or all
# gone, silently); without a stack view there is nothing to warn of.
want="ljmemprof diff: warning: $TMPD/two.ljm was recorded without call stacks, $TMPD/da.ljm with them: no stack of one is a stack of the other, compare the sources"
run $MP diff --stacks 1 "$TMPD/two.ljm" "$TMPD/da.ljm"
is "$rc:$err" "0:$want" "diff --stacks of a profile without stacks and one with them: a warning"
run $MP diff --format collapsed "$TMPD/two.ljm" "$TMPD/da.ljm"
is "$rc:$err" "0:$want" "diff --format collapsed: the same warning"
run $MP diff "$TMPD/two.ljm" "$TMPD/da.ljm"
is "$rc:$err" "0:" "diff by source only: no warning"
for n in 3 4; do
  run $MP report --stacks-per-source $n "$TMPD/db.ljm"
  is "$rc:$(printf '%s\n' "$out" | grep -c '^	[0-9]')" "0:$n" "report --stacks-per-source $n: $n stacks of the one source"
done

# -- Two functions on one line: distinct labels --------------------------------

# f and the main chunk share line 1: their labels say which is which in
# every output (they were both "@one.lua:1", two rows and two Overrides
# lines alike, and one frame of the flame graphs): the sources by the
# function's name, the frames by function and line.
printf 'local function f(i) return {i} end local t={} for i=1,100 do t[i]=f(i) end\n' >"$TMPD/one.lua"
(cd "$TMPD" && with_timeout 60 $MP run --stacks -o one.ljm -- luajit -joff one.lua >/dev/null)
ok $? "the one-line program runs"
run $MP report "$TMPD/one.ljm"
is "$rc:$(printf '%s\n' "$out" | grep '^@one' | sed 's/	.*//')" "0:@one.lua:1 (f): 100 events
@one.lua:1 (main chunk): 3 events
@one.lua:1 (main chunk): 6 events" "text: the function's rows and the main chunk's say which"
is "$(printf '%s\n' "$out" | sed -n '/^DEALLOCATIONS/,$p' | grep '^		@')" "		@one.lua:1 (f)
		@one.lua:1 (main chunk)" "text: Overrides names each once"
run $MP report --format collapsed "$TMPD/one.ljm"
is "$rc:$(printf '%s\n' "$out" | grep 'one.lua' | sed 's/^[^;]*;//; s/ [0-9]*$//')" "0:main chunk (one.lua:1)
main chunk (one.lua:1);f (one.lua:1)" \
  "collapsed: the main chunk's frame calls the function's"
run $MP report --format json "$TMPD/one.ljm"
is "$rc:$(echo "$out" | luajit -e '
  local d, s = require("cjson").decode(io.read("*a")), {}
  for _, r in ipairs(d.allocations) do
    s[#s + 1] = r.source.label .. "=" .. r.source.function_line .. ":" .. r.events
  end
  print(table.concat(s, " "))')" "0:@one.lua:1 (f)=1:100 @one.lua:1 (main chunk)=0:3" \
  "json: the labels, with function_line"
run $MP report --format svg "$TMPD/one.ljm"
is "$rc:$(printf '%s\n' "$out" | grep -o '[a-z ]* (one.lua:1)' | sort -u | tr '\n' ';')" \
  "0:f (one.lua:1);main chunk (one.lua:1);" "svg: both frames, told apart"
run $MP report --format collapsed "$TMPD/two.ljm"
is "$(printf '%s\n' "$out" | sed 's/ .*//')" "@two.lua:6
@two.lua:8" "a line of one function keeps its short label"

# -- events: the frames of each event of a stack profile ---------------------

# b (line 4) makes the 5 tables, called by a (line 5), called at line 7.
cat >"$TMPD/ev.lua" <<'EOF'
jit.off(); collectgarbage("stop")
local mp = require("ljmemprof")
local keep = {}
local function b() return {} end
local function a() local t = b(); return t end
assert(mp.start{path = arg[1], stacks = 8})
for i = 1, 5 do keep[i] = a() end
mp.stop()
EOF
(cd "$TMPD" && LUA_CPATH="$BUILD/?.so;;" with_timeout 60 luajit ev.lua ev.ljm)
ok $? "a stack profile of a -> b"
run $MP events "$TMPD/ev.ljm"
is "$rc:$(printf '%s\n' "$out" | grep -c '"source":"stack","label":"b (ev.lua:4)","node":[0-9]*,"stack":\["b (ev.lua:4)","a (ev.lua:5)","main chunk (ev.lua:7)","[^"]*"\],')" "0:5" \
  "events: the 5 tables of b with their frames, innermost first, down to the host"

done_testing
