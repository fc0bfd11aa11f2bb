#!/bin/sh
# flavour.sh: which LuaJIT a build is for.
#
#   scripts/flavour.sh detect        the flavour of the installed library:
#                                    luajit2 when only OpenResty's
#                                    libluajit2-5.1-2 is installed, else luajit
#   scripts/flavour.sh describe SRC  one line naming the LuaJIT source tree
#                                    SRC, for the load-time check's messages:
#                                    Debian's luajit (VERSION), OpenResty's
#                                    luajit2 (VERSION), or the tree's own
#                                    version and path
set -eu
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'ok installed'; }
case ${1:-} in
  detect)
    if installed libluajit2-5.1-2 && ! installed libluajit-5.1-2; then
      echo luajit2
    else
      echo luajit
    fi ;;
  describe)
    src=${2:?usage: flavour.sh describe SRC}
    first=$(head -n 1 "$src/debian/changelog" 2>/dev/null || true)
    pkg=${first%% *}
    ver=$(echo "$first" | sed -n 's/^[^ ]* (\([^)]*\)).*/\1/p')
    case $pkg in
      luajit) echo "Debian's luajit ($ver)" ;;
      luajit2) echo "OpenResty's luajit2 ($ver)" ;;
      *)
        v=$(sed -n 's/^#define LUAJIT_VERSION[[:space:]]*"\(.*\)"/\1/p' "$src/src/luajit.h" | head -n 1)
        if grep -q '^#define OPENRESTY_LUAJIT' "$src/src/luajit.h"; then
          v="OpenResty's $v"
        fi
        echo "$v at $(cd "$src" && pwd)" ;;
    esac ;;
  *) echo "usage: scripts/flavour.sh detect | describe SRC" >&2; exit 2 ;;
esac
