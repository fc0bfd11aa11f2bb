#!/bin/sh
# The stack renderers (collapsed, svg, pprof) and the report's CALL STACKS
# view on trees built by hand (tests/c/report_stacks.c): exact lines,
# geometry, the pprof profile decoded back, 100,000 stacks.
exec timeout -k 5 120 $BUILD/tests/report_stacks
