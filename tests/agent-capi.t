#!/bin/sh
# The C API, from a small host program embedding LuaJIT (tests/c/capi_host.c).
exec $BUILD/tests/capi_host
