#!/bin/sh
# The fast ULEB128 encoder agrees with the simple one (tests/c/format_uleb.c).
exec build/tests/format_uleb
