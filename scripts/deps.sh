#!/bin/sh
# deps.sh: install the Debian packages the build and the tests need, never
# removing one. A simulated install (apt-get -s) comes first; if it would
# remove any package (installing `luajit` on a machine with nginx's Lua
# module removes libluajit2-5.1-2, libnginx-mod-http-lua and
# lua-resty-core), nothing is done and the exact command is printed for a
# person to decide. Not root: prints the command to run instead.
#
# usage: scripts/deps.sh PACKAGE...
set -eu
missing=""
for p in "$@"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing="$missing $p"
done
[ -n "$missing" ] || exit 0
cmd="apt-get install -y$missing"
export DEBIAN_FRONTEND=noninteractive
# shellcheck disable=SC2086
if ! sim=$(apt-get -s install -y -q $missing 2>&1); then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -q >/dev/null
    # shellcheck disable=SC2086
    sim=$(apt-get -s install -y -q $missing 2>&1) || {
      echo "$sim" >&2; echo "deps: cannot install:$missing" >&2; exit 1; }
  else
    echo "$sim" >&2
    echo "deps: missing Debian packages; run: sudo apt-get update && sudo $cmd" >&2
    exit 1
  fi
fi
removed=$(echo "$sim" | sed -n 's/^Remv \([^ ]*\).*/\1/p' | tr '\n' ' ')
if [ -n "$removed" ]; then
  echo "deps: installing$missing would remove: $removed" >&2
  echo "deps: refusing (the build never removes a package); to do it anyway, run: $cmd" >&2
  exit 1
fi
if [ "$(id -u)" != 0 ]; then
  echo "deps: missing Debian packages; run: sudo $cmd" >&2
  exit 1
fi
echo "deps: installing:$missing"
# shellcheck disable=SC2086
apt-get install -y -q --no-remove $missing >/dev/null
# A package whose service started at install (nginx, where an init system
# runs its scripts) is stopped: the tests start their own, on their ports.
case " $missing " in
  *" nginx "*)
    if [ -f /run/nginx.pid ] && kill -0 "$(cat /run/nginx.pid)" 2>/dev/null; then
      nginx -s quit 2>/dev/null || true
    fi ;;
esac
