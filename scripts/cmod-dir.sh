#!/bin/sh
# cmod-dir.sh: where `make install` puts the Lua module, so that the LuaJIT
# the build is for finds it with its default package.cpath: the LuaJIT's
# pkg-config INSTALL_CMOD under PREFIX (Debian's luajit.pc: PREFIX/lib/
# <multiarch>/lua/5.1) if that LuaJIT searches it, else the first directory
# of its default cpath under PREFIX (/usr/local/lib/lua/5.1 for Debian's),
# else PREFIX/lib/lua/5.1 (with a note: LUA_CPATH must name it).
#
# usage: scripts/cmod-dir.sh PREFIX LUAJIT
set -eu
prefix=${1%/}
cpath=$(env -u LUA_CPATH -u LUA_CPATH_5_1 -u LUA_INIT "$2" -e 'io.write(package.cpath)')
searched() { case ";$cpath;" in *";$1/?.so;"*) return 0 ;; esac; return 1; }
dir=$(pkg-config --define-variable=prefix="$prefix" --variable=INSTALL_CMOD luajit 2>/dev/null || true)
if [ -n "$dir" ] && searched "$dir"; then echo "$dir"; exit 0; fi
for d in $(echo "$cpath" | tr ';' '\n' | sed -n 's#^\(/.*\)/?\.so$#\1#p'); do
  case $d in "$prefix"/*) echo "$d"; exit 0 ;; esac
done
echo "cmod-dir: $2 does not search under $prefix for C modules: installing into $prefix/lib/lua/5.1 (add it to LUA_CPATH)" >&2
echo "$prefix/lib/lua/5.1"
