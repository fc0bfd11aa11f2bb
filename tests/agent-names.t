#!/bin/sh
# Names instead of addresses (issue 17, 3): builtins by the name of their
# ffid in the LuaJIT source the agent is built against (both flavours, the
# generated table checked against LuaJIT's own jit.vmdef), the C closures
# builtins return (io.lines iterator), the host's outermost frame, and the
# standard library's name over a module's alias of the same function.
. tests/lib/tap.sh
LUAJIT=${LUAJIT:-luajit}
TMPD=$(mktemp -d)
trap 'rm -rf "$TMPD"' EXIT

# 1. The generated table, preprocessed as the agent compiles it, is
# LuaJIT's own ffnames (jit/vmdef.lua, which that build's buildvm wrote)
# ffid for ffid, but for our display names of methods and iterators.
printf '#include "lj_arch.h"\n#include "mp_ffnames.h"\n' > "$TMPD/ff.c"
cc -E -P -I"$LUAJIT_INC" -I"$BUILD/gen" "$TMPD/ff.c" |
  sed -n 's/^ *"\([^"]*\)",.*/\1/p' > "$TMPD/ours"
"$LUAJIT" -e '
local v = require("jit.vmdef").ffnames
for i = 2, #v do
  local n = v[i]:gsub("^io%.method%.", "file:"):gsub("^buffer%.method%.", "buffer:")
  n = n:gsub("^coroutine%.wrap_aux$", "coroutine.wrap function"):gsub("_aux$", " iterator")
  print(n)
end' > "$TMPD/vmdef"
is "$(cmp "$TMPD/ours" "$TMPD/vmdef" 2>&1)" "" \
  "mp_ffnames.h has jit.vmdef's $(wc -l < "$TMPD/vmdef") fast functions in ffid order"
grep -q '^table.new$' "$TMPD/ours"; ok $? "table.new is among them"

# 2. A program's frames: builtins no table reaches, iterators, the host.
cat > "$TMPD/names.lua" <<'LUA'
jit.off()
local tnew = require("table.new")
local ffi = require("ffi")
local keep = {}
local f = assert(io.open(os.getenv("TMPD") .. "/data.txt", "w"))
for i = 1, 50 do f:write(("row %d\n"):format(i)) end
f:close()
for l in io.lines(os.getenv("TMPD") .. "/data.txt") do keep[#keep + 1] = l end
local p = ffi.new("int[4]")
for i = 1, 10 do keep[#keep + 1] = p + 1 end
for i = 1, 10 do keep[#keep + 1] = tnew(4, 0) end
for w in ("xq1 yq2 zq3"):gmatch("%a+%d") do keep[#keep + 1] = w end
keep[#keep + 1] = coroutine.wrap(function() end)
require("pl.List")
local q = {}
for i = 1, 200 do table.insert(q, i) end
keep[#keep + 1] = q
return keep
LUA
export TMPD
run "$BUILD/ljmemprof" run --stacks 20 -o "$TMPD/n.ljm" "$TMPD/names.lua"
is "$rc" 0 "run: the program runs ($err)"
run "$BUILD/ljmemprof" report --format collapsed --metric alloc-count "$TMPD/n.ljm"
col=$out
frames() { printf '%s\n' "$col" | grep -F "luajit (main);main chunk ($TMPD/names.lua:$1);$2 " | sed 's/.* //'; }
is "$(frames 10 'ffi.meta.__add')" 10 "p + 1 on a cdata pointer: ffi.meta.__add, 10 cdata"
is "$(frames 11 'table.new')" 10 "table.new (require'd, in no library table): 10 tables"
[ "$(frames 8 'io.lines iterator')" -ge 50 ]
ok $? "the io.lines iterator by name: its 50 lines ($(frames 8 'io.lines iterator'))"
is "$(frames 12 'string.gmatch iterator')" 3 "string.gmatch iterator: its 3 matches"
[ "$(frames 16 'table.insert')" -ge 1 ]
ok $? "after require('pl.List'), table.insert is table.insert, not pl.List.push"
is "$(printf '%s\n' "$col" | grep -c 'pl.List.push\|builtin#\|luajit+0x')" 0 \
  "no pl.List.push, builtin#N or luajit+0x... frame"
is "$(printf '%s\n' "$col" | grep -v '^INTERNAL \|^luajit (main)' | head -3)" "" \
  "every stack of the script starts at luajit (main)"
# The one-frame stream names the host's entry too (a C function symbol):
# started before the script is loaded, its loading is the host's.
run env LUA_CPATH="$BUILD/?.so;;" "$LUAJIT" -e \
  "assert(require('ljmemprof').start('$TMPD/n1.ljm'))" "$TMPD/names.lua"
is "$rc" 0 "luajit -e start(...) script: runs ($err)"
run "$BUILD/ljmemprof" report "$TMPD/n1.ljm"
printf '%s\n' "$out" | grep -q '^luajit (main): [0-9]* events'
ok $? "one-frame stream: the script's loading is billed to 'luajit (main)'"
is "$(printf '%s\n' "$out" | grep -c 'luajit+0x\|builtin#')" 0 "no luajit+0x... source"

# 3. The profiler's own allocations are no events: LJMEMPROF starts
# recording at require("ljmemprof"), once the module has made its table.
run env LJMEMPROF="$TMPD/env.ljm" LUA_CPATH="$BUILD/?.so;;" "$LUAJIT" -e \
  'require("ljmemprof")' -e 'keep = { 1, 2, 3 }'
is "$rc" 0 "LJMEMPROF with require: runs ($err)"
run "$BUILD/ljmemprof" report "$TMPD/env.ljm"
is "$(printf '%s\n' "$out" | grep -c 'luaopen_ljmemprof\|ljmemprof.so')" 0 \
  "no event of luaopen_ljmemprof in an LJMEMPROF-started profile"
printf '%s\n' "$out" | grep -q '^=(command line):1: 1 events'
ok $? "the program's table is there: =(command line):1"
# cjson.safe's decode and encode are one C function in two closures: the
# closure that ran says which (through a local alias too).
cat > "$TMPD/cj.lua" <<'LUA'
local safe = require("cjson.safe")
local keep = {}
for i = 1, 20 do keep[#keep + 1] = safe.encode({ i, "x" .. i }) end
for i = 1, 10 do keep[#keep + 1] = safe.decode('{"a":[1,2,' .. i .. ']}') end
local dec = safe.decode
for i = 1, 5 do keep[#keep + 1] = dec('[' .. i .. ']') end
return keep
LUA
run "$BUILD/ljmemprof" run --stacks -o "$TMPD/cj.ljm" "$TMPD/cj.lua"
run "$BUILD/ljmemprof" report --format collapsed --metric alloc-count "$TMPD/cj.ljm"
is "$(printf '%s\n' "$out" | grep -o 'cj.lua:[0-9]*);cjson[^;]*' | sort -u | tr '\n' ' ')" \
  "cj.lua:3);cjson.safe.encode cj.lua:4);cjson.safe.decode cj.lua:6);cjson.safe.decode " \
  "cjson.safe: encode and decode (and decode through a local) each by its name"
is "$(printf '%s\n' "$out" | grep -c 'cjson.safe.{')" 0 "no cjson.safe.{decode,encode} frame"

# 4. Lua functions by name, from the bytecode that makes them, in the
# stacks (collapsed), pprof (function name, file, start line) and the
# one-frame report where a line is shared.
cat > "$TMPD/fn.lua" <<'LUA'
jit.off()
local M = {}
local function parse_row(s) local t = {} t[1] = s return t end
M.parse = function(s) local r = parse_row(s) return r end
function M.wrap(x) return { x } end
function M:method(x) return { self, x } end
function global_f(x) return { x } end
local up
local function set()
  up = function(x) return { x } end
end
set()
local keep = {}
for i = 1, 10 do
  keep[#keep + 1] = M.parse("a" .. i)
  keep[#keep + 1] = M.wrap(i)
  keep[#keep + 1] = M:method(i)
  keep[#keep + 1] = global_f(i)
  keep[#keep + 1] = up(i)
  keep[#keep + 1] = (function() return { i } end)()
end
local function one() return {} end keep[0] = one()
return keep
LUA
run "$BUILD/ljmemprof" run --stacks 20 -o "$TMPD/fn.ljm" -- "$LUAJIT" "$TMPD/fn.lua"
is "$rc" 0 "run: the naming program runs ($err)"
run "$BUILD/ljmemprof" report --format collapsed --metric alloc-count "$TMPD/fn.ljm"
F="$TMPD/fn.lua"
is "$(printf '%s\n' "$out" | grep -F "main chunk ($F:" | grep -v 'main chunk ([^)]*) [0-9]*$' |
      sed "s|^luajit (main);||; s|$TMPD/||g")" "main chunk (fn.lua:12);set (fn.lua:10) 1
main chunk (fn.lua:15);M.parse (fn.lua:4);parse_row (fn.lua:3) 20
main chunk (fn.lua:16);M.wrap (fn.lua:5) 10
main chunk (fn.lua:17);M:method (fn.lua:6) 10
main chunk (fn.lua:18);global_f (fn.lua:7) 10
main chunk (fn.lua:19);up (fn.lua:10) 10
main chunk (fn.lua:20);@fn.lua:20 (function at line 20) 10
main chunk (fn.lua:22);one (fn.lua:22) 1" \
  "frames by name: local function, M.f = function, function M.f, M:m, global, upvalue; an argument unnamed"
run "$BUILD/ljmemprof" report --format html -o "$TMPD/fn.html" "$TMPD/fn.ljm"
for want in "parse_row ($F:3)" "M:method ($F:6)" "main chunk ($F:15)"; do
  grep -qF "$want" "$TMPD/fn.html"
  ok $? "html: the flame graph's frame $want"
done
if command -v go >/dev/null 2>&1; then
  run "$BUILD/ljmemprof" report --format pprof -o "$TMPD/fn.pb.gz" "$TMPD/fn.ljm"
  raw=$(with_timeout 120 go tool pprof -raw "$TMPD/fn.pb.gz" 2>&1 | sed -n '/^Locations/,/^Mappings/p')
  for want in "parse_row ($F:3) $F:3 s=3" "M.parse ($F:4) $F:4 s=4" \
	      "M:method ($F:6) $F:6 s=6" "main chunk ($F) $F:15 s=0" \
	      "function at $F:20 $F:20 s=20"; do
    printf '%s\n' "$raw" | grep -qF "M=1 $want"
    ok $? "pprof: function, file, line, start line: $want"
  done
else
  echo "not ok - go tool pprof is not installed (Debian golang-go; make deps)"
  tap_n=$((tap_n + 1)); tap_failed=$((tap_failed + 1))
fi
# Without stacks (a version-3 stream, which memprof readers read: the
# names are C function symbols no event refers to), the line that one
# and the main chunk share says which function by its name.
run "$BUILD/ljmemprof" run -o "$TMPD/fn3.ljm" -- "$LUAJIT" "$TMPD/fn.lua"
run "$BUILD/ljmemprof" info "$TMPD/fn3.ljm"
printf '%s\n' "$out" | grep -q 'version 3'
ok $? "without stacks: a version-3 stream ($(printf '%s\n' "$out" | head -2 | tr '\n' ' '))"
run "$BUILD/ljmemprof" report "$TMPD/fn3.ljm"
printf '%s\n' "$out" | grep -qF "@$F:22 (one): 1 events"
ok $? "one-frame report: a shared line says the function by name (@fn.lua:22 (one))"
printf '%s\n' "$out" | grep -qF "@$F:22 (main chunk): "
ok $? "one-frame report: and the main chunk's part of it"
printf '%s\n' "$out" | grep -qF "@$F:3 (parse_row): 20 events"
ok $? "one-frame report: parse_row's line, where the main chunk makes it too: @fn.lua:3 (parse_row)"
printf '%s\n' "$out" | grep -qF "@$F:15: 11 events"
ok $? "one-frame report: a line of one function keeps its label (@fn.lua:15)"
done_testing
