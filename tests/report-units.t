#!/bin/sh
# The report's heap table, C symbol lookup and size formatting against
# simple models (tests/c/report_units.c).
exec timeout -k 5 60 $BUILD/tests/report_units
