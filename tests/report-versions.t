#!/bin/sh
# The reader on hand-built memprof v1, v2 and v3 streams: decoded items,
# every error with its offset and message, truncation at every byte, and the
# report of a stream worked out by hand (tests/c/report_reader.c).
exec timeout -k 5 60 $BUILD/tests/report_reader
