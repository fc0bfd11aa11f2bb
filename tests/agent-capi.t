#!/bin/sh
# The C API, from a small host program embedding LuaJIT (tests/c/capi_host.c),
# which writes its files under a scratch directory.
. tests/lib/tap.sh
with_timeout 300 "$BUILD/tests/capi_host" "$TMPD"
