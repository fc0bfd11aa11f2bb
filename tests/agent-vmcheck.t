#!/bin/sh
# At load, the module checks that the running VM has the layout it was
# built for and refuses cleanly otherwise (here: a build for 32-bit GC
# references loaded into Debian's GC64 LuaJIT), before following any
# pointer it is unsure of.
. tests/lib/tap.sh

out=$(LUA_CPATH="$PWD/build/wrong-layout/?.so" luajit -e '
  local ok, err = pcall(require, "ljmemprof")
  print(ok, err)' 2>&1)
is "$?" 0 "loading a mismatched build does not crash"
case "$out" in
  "false	ljmemprof: this LuaJIT does not match the one ljmemprof was built for: "*"rebuild ljmemprof against the source of this LuaJIT (LUAJIT_SRC)")
    ok 0 "it is refused with a clear error" ;;
  *) ok 1 "it is refused with a clear error"; echo "# actual: $out" ;;
esac
out=$(LUA_CPATH="$PWD/build/?.so" luajit -e '
  jit.opt.start("-fold", "hotloop=3")
  local mp = require("ljmemprof")
  print(type(mp.start), mp._VERSION)' 2>&1)
is "$out" "function	ljmemprof 0.1" "the matching build loads (with non-default JIT flags)"
out=$(LUA_CPATH="$PWD/build/?.so" luajit -joff -e '
  local mp = require("ljmemprof")
  print(mp.running())' 2>&1)
is "$out" "false" "the matching build loads with the JIT off"
done_testing
