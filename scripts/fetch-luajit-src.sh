#!/bin/sh
# Fetch the LuaJIT source that built the installed `luajit` package into
# build/luajit-src, using a private apt configuration under build/apt so the
# system's apt sources are never touched. Prints the source directory.
#
# usage: scripts/fetch-luajit-src.sh [BUILD_DIR]
set -eu
build=${1:-build}
dest="$build/luajit-src"
if [ -f "$dest/src/lj_obj.h" ]; then echo "$dest"; exit 0; fi

ver=$(dpkg-query -W -f='${Version}' luajit 2>/dev/null || true)
if [ -z "$ver" ]; then
  echo "fetch-luajit-src: the Debian package 'luajit' is not installed" >&2
  exit 1
fi
aptdir="$build/apt"
mkdir -p "$aptdir/lists/partial" "$aptdir/sources.list.d" "$aptdir/archives/partial" "$build/src-dl"

# Derive deb-src entries from the system's deb entries (both apt formats).
out="$aptdir/sources.list.d/ljmp-src.sources"
: > "$out"
for f in /etc/apt/sources.list.d/*.sources; do
  [ -f "$f" ] || continue
  sed -e 's/^Types:[[:space:]]*deb[[:space:]]*$/Types: deb-src/' "$f" >> "$out"
  echo >> "$out"
done
lst="$aptdir/sources.list.d/ljmp-src.list"
: > "$lst"
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
  [ -f "$f" ] || continue
  sed -n -e 's/^[[:space:]]*deb[[:space:]]/deb-src /p' "$f" >> "$lst"
done

abs_aptdir=$(cd "$aptdir" && pwd)
opts="-o APT::Sandbox::User=root -o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts=$abs_aptdir/sources.list.d -o Dir::State::Lists=$abs_aptdir/lists -o Dir::Cache::Archives=$abs_aptdir/archives -o Debug::NoLocking=1"
# shellcheck disable=SC2086
apt-get $opts -qq update >&2
(cd "$build/src-dl" && apt-get $opts -qq source --download-only "luajit=$ver" >&2)
dsc=$(ls "$build"/src-dl/luajit_*.dsc | head -n 1)
rm -rf "$dest.tmp"
dpkg-source --no-check -x "$dsc" "$dest.tmp" >&2
mv "$dest.tmp" "$dest"
echo "$dest"
