#!/bin/sh
# `make install` installs like a Lua module and a C library on Debian (into
# a DESTDIR, with PREFIX=/usr/local and PREFIX=/usr): the module where this
# flavour's LuaJIT looks for C modules by default (so require("ljmemprof")
# works from any directory without LUA_CPATH), the command and its man page
# (made from --help), the header, the static library and a pkg-config file
# with which an embedder compiles, links and profiles, and the preload
# library of run --native=preload in lib (the command's ../lib).
. tests/lib/tap.sh
# The interpreter's default cpath, and the same with each directory moved
# under DIR (the installed tree in its DESTDIR).
cpath=$(env -u LUA_CPATH -u LUA_CPATH_5_1 luajit -e 'io.write(package.cpath)')
under() { echo "$cpath" | tr ';' '\n' | sed -n "s#^/#$1/#p" | tr '\n' ';'; }

for prefix in /usr/local /usr; do
  R=$TMPD/root$(echo $prefix | tr / _)
  run make -s install DESTDIR="$R" PREFIX=$prefix
  is "$rc:$err" "0:" "make install DESTDIR=... PREFIX=$prefix"
  for f in bin/ljmemprof include/ljmemprof.h lib/libljmemprof.a lib/libljmemprof_preload.so \
           lib/pkgconfig/ljmemprof.pc share/man/man1/ljmemprof.1 \
           share/lua/5.1/ljmemprof/busted.lua; do
    [ -f "$R$prefix/$f" ]; ok $? "PREFIX=$prefix: installed $prefix/$f"
  done
  mods=$(cd "$R" && find . -name ljmemprof.so | sed 's#^\.##')
  case ";$cpath;" in
    *";$(dirname "$mods")/?.so;"*) ok 0 "PREFIX=$prefix: the module is in luajit's default cpath ($mods)" ;;
    *) ok 1 "PREFIX=$prefix: the module is in luajit's default cpath ($mods)"; echo "# cpath: $cpath" ;;
  esac
  out=$(cd / && P="$TMPD/p.bin" LUA_CPATH="$(under "$R")" luajit -e '
    local mp = require("ljmemprof")
    assert(mp.start(os.getenv("P")))
    local t = {}
    assert(mp.stop())
    print("ok")' 2>&1)
  is "$out" "ok" "PREFIX=$prefix: the installed module profiles from another directory"
  lpath=$(env -u LUA_PATH -u LUA_PATH_5_1 luajit -e 'io.write(package.path)')
  case ";$lpath;" in
    *";$prefix/share/lua/5.1/?.lua;"*) ok 0 "PREFIX=$prefix: the busted helper is in luajit's default path" ;;
    *) ok 1 "PREFIX=$prefix: the busted helper is in luajit's default path"; echo "# path: $lpath" ;;
  esac
  run "$R$prefix/bin/ljmemprof" info "$TMPD/p.bin"
  is "$rc" 0 "PREFIX=$prefix: the installed ljmemprof reads its profile"
done

# The man page is the --help text (both NAME and every command's SYNOPSIS).
R=$TMPD/root_usr_local/usr/local
page=$(MANWIDTH=200 man -l "$R/share/man/man1/ljmemprof.1" 2>"$TMPD/man.err")
is "$?:$(cat "$TMPD/man.err")" "0:" "man renders ljmemprof(1) without a warning"
miss=0
for c in "" run report info events; do
  build_help=$("$BUILD/ljmemprof" $c --help | awk '/^SYNOPSIS/ { on = 1; next } /^[A-Z]/ { on = 0 } on && NF')
  echo "$build_help" | while IFS= read -r line; do
    echo "$page" | grep -qF -- "$(echo "$line" | sed 's/^ *//')" || echo "# missing: $line"
  done > "$TMPD/miss"
  [ -s "$TMPD/miss" ] && { miss=$((miss + 1)); cat "$TMPD/miss"; }
done
is "$miss" 0 "every manual's SYNOPSIS (ljmemprof, run, report, info, events) is in the man page"

# pkg-config: the flags, and an embedder built with them that profiles.
pc() { PKG_CONFIG_PATH="$R/lib/pkgconfig" pkg-config --define-variable=prefix="$R" "$@" ljmemprof; }
is "$(PKG_CONFIG_PATH="$R/lib/pkgconfig" pkg-config --cflags --libs ljmemprof | sed "s/ *$//")" \
  "-I/usr/local/include $(pkg-config --cflags luajit | sed "s/ *$//") -L/usr/local/lib -lljmemprof -ldl -lpthread $(pkg-config --libs luajit | sed "s/ *$//")" \
  "pkg-config --cflags --libs ljmemprof (luajit's flags too: Requires: luajit)"
cat > "$TMPD/embed.c" <<'EOF'
#include <stdio.h>
#include "lua.h"
#include "lauxlib.h"
#include "lualib.h"
#include "ljmemprof.h"
int main(int argc, char **argv)
{
  lua_State *L = luaL_newstate();
  ljmp_options o = LJMP_OPTIONS_INIT;
  int rc;
  luaL_openlibs(L);
  o.path = argv[1];
  rc = ljmp_start(L, &o);
  if (rc != 0) { printf("start: %s\n", ljmp_strerror(rc)); return 1; }
  luaL_dostring(L, "local t = {} for i = 1, 10 do t[i] = {} end");
  rc = ljmp_stop(L);
  lua_close(L);
  printf("%d\n", rc);
  return argc != 2;
}
EOF
# shellcheck disable=SC2046,SC2086
cc -I"${LUAJIT_INC:-/usr/include/luajit-2.1}" $(pc --cflags) -o "$TMPD/embed" "$TMPD/embed.c" \
  $(pc --libs) ${LUAJIT_LIBS:--lluajit-5.1} 2>"$TMPD/cc.err"
is "$?:$(cat "$TMPD/cc.err")" "0:" "an embedder compiles and links with pkg-config's flags"
run "$TMPD/embed" "$TMPD/e.bin"
is "$rc:$out" "0:0" "the embedder profiles itself"
n=$("$BUILD/ljmemprof" events "$TMPD/e.bin" | grep '"event":"alloc"' | grep -c '"line":1,')
[ "$n" -ge 11 ]; ok $? "its chunk's tables are in the profile ($n allocations on line 1)"

# docs/INSTALL.md's command line and nothing more, against an install under
# PREFIX: ljmemprof.pc requires luajit.pc for LuaJIT's headers and library
# (Debian's libluajit-5.1-dev; another flavour's -dev package is not
# installed, so its luajit.pc is written here from LUAJIT_INC and LUAJIT_LIBS).
P=$TMPD/prefix
run make -s install PREFIX="$P" LUA_CMOD="$P/lib/lua/5.1"
is "$rc:$err" "0:" "make install PREFIX=$P"
pcpath=$P/lib/pkgconfig
if [ "${FLAVOUR:-luajit}" != luajit ]; then
  mkdir -p "$TMPD/luajit-pc"
  printf '%s\n' 'Name: LuaJIT' "Description: the LuaJIT of FLAVOUR=$FLAVOUR" 'Version: 2.1' \
    "Cflags: -I$LUAJIT_INC" "Libs: $LUAJIT_LIBS" > "$TMPD/luajit-pc/luajit.pc"
  pcpath=$pcpath:$TMPD/luajit-pc
fi
mkdir "$TMPD/host" && cp "$TMPD/embed.c" "$TMPD/host/host.c"
# shellcheck disable=SC2016
(cd "$TMPD/host" && PKG_CONFIG_PATH="$pcpath" timeout 60 \
  sh -c 'cc host.c $(pkg-config --cflags --libs ljmemprof)') 2>"$TMPD/cc.err"
is "$?:$(cat "$TMPD/cc.err")" "0:" "cc host.c \$(pkg-config --cflags --libs ljmemprof) builds a host"
run "$TMPD/host/a.out" "$TMPD/h.bin"
is "$rc:$out" "0:0" "the host built by docs/INSTALL.md's command profiles itself"
n=$("$BUILD/ljmemprof" events "$TMPD/h.bin" | grep '"event":"alloc"' | grep -c '"line":1,')
[ "$n" -ge 11 ]; ok $? "its chunk's tables are in the profile ($n allocations on line 1)"
done_testing
