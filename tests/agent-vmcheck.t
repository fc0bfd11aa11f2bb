#!/bin/sh
# At load, the module checks that the running VM has the layout it was
# built for and refuses cleanly otherwise, before following any pointer it
# is unsure of, naming the build each side is for: here a build for 32-bit
# GC references loaded into a GC64 LuaJIT, and a build of the other flavour
# (Debian's luajit vs OpenResty's luajit2) loaded into this one.
. tests/lib/tap.sh
flavour=${FLAVOUR:-luajit}
case $flavour in
  luajit) built_for="Debian's luajit (" vm="a LuaJIT without OpenResty's extensions" ;;
  luajit2) built_for="OpenResty's luajit2 (" vm="OpenResty's LuaJIT" ;;
  *) built_for="" vm="" ;;
esac

out=$(LUA_CPATH="$BUILD/wrong-layout/?.so" luajit -e '
  local ok, err = pcall(require, "ljmemprof")
  print(ok, err)' 2>&1)
is "$?" 0 "loading a mismatched build does not crash"
case "$out" in
  "false	ljmemprof: this LuaJIT does not match the one ljmemprof was built for: this module was built for $built_for"*") with 32-bit GC references (LUAJIT_DISABLE_GC64), this VM, $vm (LuaJIT 2.1.0-beta3), uses 64-bit GC references (GC64): build with the LuaJIT's own options (LUAJIT_XCFLAGS, docs/DESIGN.md); rebuild ljmemprof against the source of this LuaJIT (LUAJIT_SRC)")
    ok 0 "it is refused with a clear error naming both builds" ;;
  *) ok 1 "it is refused with a clear error naming both builds"; echo "# actual: $out" ;;
esac

# The other flavour's module in this VM (the other build must exist: CI
# builds both).
case $flavour in
  luajit) other=build/luajit2 other_for="OpenResty's luajit2 (" want=luajit ;;
  luajit2) other=build other_for="Debian's luajit (" want=luajit2 ;;
  *) other="" ;;
esac
if [ -z "$other" ]; then
  ok 0 "# SKIP a LUAJIT_SRC build has no other flavour to compare with"
elif [ ! -f "$other/ljmemprof.so" ]; then
  ok 0 "# SKIP $other/ljmemprof.so not built (make FLAVOUR=$( [ $want = luajit ] && echo luajit2 || echo luajit))"
else
  for j in on off; do
    out=$(LUA_CPATH="$PWD/$other/?.so" luajit -j$j -e '
      local ok, err = pcall(require, "ljmemprof")
      print(ok, err)' 2>&1)
    rc=$?
    is "$rc:$out" "0:false	ljmemprof: this LuaJIT does not match the one ljmemprof was built for: this module was built for $other_for$(scripts/flavour.sh describe "$other/luajit-src" | cut -d'(' -f2-), this VM is $vm (LuaJIT 2.1.0-beta3): build with make FLAVOUR=$want (or LUAJIT_SRC=<the source of this LuaJIT>); rebuild ljmemprof against the source of this LuaJIT (LUAJIT_SRC)" \
      "the other flavour's module is refused with the JIT $j, naming both and the build to use"
  done
fi
out=$(LUA_CPATH="$BUILD/?.so" luajit -e '
  jit.opt.start("-fold", "hotloop=3")
  local mp = require("ljmemprof")
  print(type(mp.start), mp._VERSION)' 2>&1)
is "$out" "function	ljmemprof 0.1" "the matching build loads (with non-default JIT flags)"
out=$(LUA_CPATH="$BUILD/?.so" luajit -joff -e '
  local mp = require("ljmemprof")
  print(mp.running())' 2>&1)
is "$out" "false" "the matching build loads with the JIT off"
done_testing
