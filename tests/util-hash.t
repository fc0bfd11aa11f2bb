#!/bin/sh
# The one hash table (src/util/mp_hash.h) against models: exact keys,
# records sharing a hash, reserved room (tests/c/util_hash.c).
exec timeout -k 5 60 $BUILD/tests/util_hash
