#!/bin/sh
# Names of Lua functions made before the recording (issue 17, 3): a
# module's M.f whose chunk (the parent that made it, whose bytecode would
# name it) is gone by the start is named by the table that reaches it at
# start; a function whose parent is alive keeps the name its parent's
# bytecode gives; one that no table reaches stays unnamed.
. tests/lib/tap.sh
LUAJIT=${LUAJIT:-luajit}
TMPD=$(mktemp -d)
trap 'rm -rf "$TMPD"' EXIT

cat > "$TMPD/mod.lua" <<'LUA'
local M = {}
function M.build(n) local t = {} for i = 1, n do t[i] = { i } end return t end
local function helper() return { 1, 2, 3 } end
M.alias = helper
M.deep = { inner = function() return { 4 } end }
local hidden = function() return { 5 } end
M.get_hidden = function() return hidden end
return M
LUA
cat > "$TMPD/app.lua" <<'LUA'
package.path = arg[1] .. "/?.lua;" .. package.path
local m = require("mod")
local hidden = m.get_hidden()
local function mk() return { 6 } end
named_later = mk
collectgarbage(); collectgarbage()	-- mod's chunk is gone.
local mp = require("ljmemprof")
assert(mp.start{ path = arg[1] .. "/a.ljm", stacks = 4 })
keep = { m.build(2), m.alias(), m.deep.inner(), hidden(), mk() }
assert(mp.stop())
LUA
run env LUA_CPATH="$BUILD/?.so;;" "$LUAJIT" -joff "$TMPD/app.lua" "$TMPD"
is "$rc:$err" "0:" "the program runs"
run "$BUILD/ljmemprof" report --format collapsed --metric alloc-count "$TMPD/a.ljm"
sed "s|$TMPD/||g" "$TMPD/out" | sort > "$TMPD/got"
cat > "$TMPD/want" <<'TXT'
luajit (main);main chunk (app.lua:9) 1
luajit (main);main chunk (app.lua:9);@mod.lua:6 1
luajit (main);main chunk (app.lua:9);mk (app.lua:4) 1
luajit (main);main chunk (app.lua:9);mod.alias (mod.lua:3) 1
luajit (main);main chunk (app.lua:9);mod.build (mod.lua:2) 4
luajit (main);main chunk (app.lua:9);mod.deep.inner (mod.lua:5) 1
TXT
is "$(cat "$TMPD/got")" "$(cat "$TMPD/want")" \
  "module functions named by the table that reaches them; mk by its parent's bytecode; hidden unnamed"
done_testing
