#!/bin/sh
# The analyses of the profile pass on streams built by hand
# (tests/c/report_analyses.c): time marks and notes (the trailer cut at
# every byte), the peak by hand, the peak, the blocks held at the end,
# temporaries and the timeline against a model of random streams, the
# weights of sampled profiles and their estimates against a simulated
# sampler.
exec timeout -k 5 120 $BUILD/tests/report_analyses
