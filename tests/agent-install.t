#!/bin/sh
# `make install` puts the module where Debian's luajit finds it (with
# PREFIX and DESTDIR), so require("ljmemprof") works from any directory.
. tests/lib/tap.sh

make -s install DESTDIR="$TMPD/root" PREFIX=/usr/local >/dev/null 2>&1
is "$?" 0 "make install DESTDIR=... PREFIX=/usr/local"
for f in usr/local/lib/lua/5.1/ljmemprof.so usr/local/bin/ljmemprof \
         usr/local/include/ljmemprof.h usr/local/lib/libljmemprof.a; do
  ok $([ -f "$TMPD/root/$f" ] && echo 0 || echo 1) "installed $f"
done
# Debian's luajit searches /usr/local/lib/lua/5.1/?.so; emulate the
# installed root by rewriting that prefix only.
cpath=$(luajit -e 'io.write(package.cpath)')
case "$cpath" in
  */usr/local/lib/lua/5.1/?.so*) ok 0 "luajit searches /usr/local/lib/lua/5.1" ;;
  *) ok 1 "luajit searches /usr/local/lib/lua/5.1"; echo "# cpath: $cpath" ;;
esac
out=$(cd / && P="$TMPD/p.bin" LUA_CPATH="$TMPD/root/usr/local/lib/lua/5.1/?.so" luajit -e '
  local mp = require("ljmemprof")
  assert(mp.start(os.getenv("P")))
  local t = {}
  assert(mp.stop())
  print("ok")' 2>&1)
is "$out" "ok" "the installed module profiles from another directory"
ver=$("$TMPD/root/usr/local/bin/ljmemprof" --help 2>&1 | head -n 1)
ok $([ -n "$ver" ] && echo 0 || echo 1) "the installed ljmemprof command runs"
done_testing
