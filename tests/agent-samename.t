#!/bin/sh
# Two C functions with one name (the same exported symbol in two modules,
# reached by no Lua name) are two sources, and their labels say which:
# the name and the symbol's address. A name only one function has keeps
# its plain label.
. tests/lib/tap.sh
for m in a b; do
  cat > "$TMPD/mod$m.c" <<SRC
#include "lua.h"
int encode(lua_State *L) { lua_pushfstring(L, "$m-%d", (int)lua_tointeger(L, 1)); return 1; }
int only_$m(lua_State *L) { lua_pushfstring(L, "$m+%d", (int)lua_tointeger(L, 1)); return 1; }
int luaopen_mod$m(lua_State *L)
{
  lua_newtable(L);
  lua_pushcfunction(L, encode); lua_setfield(L, -2, "encode");
  lua_pushcfunction(L, only_$m); lua_setfield(L, -2, "only");
  return 1;
}
SRC
  cc -shared -fPIC -I"${LUAJIT_INC:-/usr/include/luajit-2.1}" -o "$TMPD/mod$m.so" "$TMPD/mod$m.c"
  ok $? "module $m builds"
done
cat > "$TMPD/dup.lua" <<LUA
local mp = require("ljmemprof")
-- Loaded by address, kept in locals: no Lua name reaches them.
local a = assert(package.loadlib("$TMPD/moda.so", "luaopen_moda"))()
local b = assert(package.loadlib("$TMPD/modb.so", "luaopen_modb"))()
local ea, eb, oa = a.encode, b.encode, a.only
a, b = nil, nil
assert(mp.start("$TMPD/dup.ljm"))
local out = {}
for i = 1, 10 do out[#out + 1] = ea(i); out[#out + 1] = eb(i * 100) end
for i = 1, 7 do out[#out + 1] = oa(i) end
assert(mp.stop())
LUA
LUA_CPATH="$BUILD/?.so;;" with_timeout 60 luajit -joff "$TMPD/dup.lua"; ok $? "profiled"
"$BUILD/ljmemprof" report "$TMPD/dup.ljm" > "$TMPD/r.txt"; ok $? "report"
is "$(grep -c '^encode@0x[0-9a-f]*: 10 events' "$TMPD/r.txt")" 2 \
  "two sources named encode, 10 events each, told apart by address"
is "$(grep '^encode@.*: 10 events' "$TMPD/r.txt" | cut -d: -f1 | sort -u | wc -l)" 2 "with different labels"
is "$(grep -c '^only_a: 7 events' "$TMPD/r.txt")" 1 "a name no other function has: plain"
done_testing
