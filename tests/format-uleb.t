#!/bin/sh
# The fast ULEB128 encoder agrees with the simple one (tests/c/format_uleb.c).
exec timeout -k 5 60 $BUILD/tests/format_uleb
