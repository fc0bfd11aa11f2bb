#!/bin/sh
# Download Debian binary packages with the private apt configuration and
# unpack them under ROOT with `dpkg -x`: the other flavour's interpreter
# and library, nginx's Lua module, are used from there and never installed
# over the system's packages (luajit2 conflicts with luajit). Versions
# default to the one Debian offers; a stamp per package makes it idempotent.
#
# usage: scripts/unpack-debs.sh ROOT APTDIR PACKAGE[=VERSION]...
set -eu
root=$1 aptdir=$2
shift 2
. "$(dirname "$0")/apt-private.sh"
mkdir -p "$root/.debs"
todo=""
for p in "$@"; do
  [ -f "$root/.debs/${p%%=*}.unpacked" ] || todo="$todo $p"
done
[ -n "$todo" ] || exit 0
apt_private_init "$aptdir"
dl="$root/.debs/dl"
rm -rf "$dl"; mkdir -p "$dl"
# shellcheck disable=SC2086
(cd "$dl" && apt_private -qq download $todo >&2)
for d in "$dl"/*.deb; do
  dpkg -x "$d" "$root"
  pkg=$(dpkg-deb -f "$d" Package)
  dpkg-deb -f "$d" Version > "$root/.debs/$pkg.unpacked"
done
rm -rf "$dl"
