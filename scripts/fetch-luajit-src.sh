#!/bin/sh
# Fetch the Debian source package of a LuaJIT flavour into DEST (default
# build/luajit-src), using the private apt configuration under APTDIR
# (default build/apt; scripts/apt-private.sh) so the system's apt sources
# are never touched. Prints the source directory.
#
#   luajit    Debian's `luajit`, the version of the installed package
#   luajit2   OpenResty's branch, Debian's `luajit2`: the version of the
#             installed libluajit2-5.1-2, else the version Debian offers
#
# usage: scripts/fetch-luajit-src.sh [FLAVOUR [DEST [APTDIR]]]
set -eu
flavour=${1:-luajit}
dest=${2:-build/luajit-src}
aptdir=${3:-build/apt}
if [ -f "$dest/src/lj_obj.h" ]; then echo "$dest"; exit 0; fi
. "$(dirname "$0")/apt-private.sh"

installed() { dpkg-query -W -f='${Status} ${Version}\n' "$1" 2>/dev/null | sed -n 's/^install ok installed //p'; }
case $flavour in
  luajit)
    ver=$(installed luajit)
    if [ -z "$ver" ]; then
      echo "fetch-luajit-src: the Debian package 'luajit' is not installed (make deps)" >&2
      exit 1
    fi ;;
  luajit2)
    ver=$(installed libluajit2-5.1-2) ;;
  *) echo "fetch-luajit-src: unknown flavour '$flavour' (luajit or luajit2)" >&2; exit 2 ;;
esac
apt_private_init "$aptdir"
if [ -z "$ver" ]; then
  ver=$(APT_TOOL=apt-cache apt_private policy "$flavour" | sed -n 's/^  Candidate: //p')
  if [ -z "$ver" ] || [ "$ver" = "(none)" ]; then
    echo "fetch-luajit-src: Debian offers no package '$flavour'" >&2
    exit 1
  fi
fi
dl="$dest.dl"
rm -rf "$dl" "$dest.tmp"
mkdir -p "$dl"
(cd "$dl" && apt_private -qq source --download-only "$flavour=$ver" >&2)
dsc=$(ls "$dl/${flavour}_"*.dsc | head -n 1)
dpkg-source --no-check -x "$dsc" "$dest.tmp" >&2
rm -rf "$dl" "$(dirname "$dest")/${flavour}_"*.orig.tar.*
mv "$dest.tmp" "$dest"
echo "$dest"
