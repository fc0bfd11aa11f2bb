#!/bin/sh
# The report's heap table, C symbol lookup and size formatting against
# simple models (tests/c/report_units.c).
exec build/tests/report_units
