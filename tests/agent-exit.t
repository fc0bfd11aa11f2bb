#!/bin/sh
# Nothing is lost: the stream is finalised at stop(), at lua_close() while
# running, and at process exit (os.exit() without closing the state), and
# the program's exit status is untouched.
. tests/lib/tap.sh

run() {	# run LUA-CODE while profiling into $TMPD/p.bin; prints exit status
  lj -e 'local mp = require("ljmemprof"); assert(mp.start(arg[1]))' \
     -e "$1" "$TMPD/p.bin" >/dev/null 2>&1
  echo $?
}
# arg[1] is not set by -e; pass the path through the environment instead.
run() {
  P="$TMPD/p.bin" LUA_CPATH="$BUILD/?.so;;" luajit -e \
    'local mp = require("ljmemprof"); assert(mp.start(os.getenv("P")))' \
    -e "$1" >/dev/null 2>&1
  echo $?
}

is "$(run 'local t = {} for i = 1, 1000 do t[i] = {i} end os.exit(3)')" 3 \
  "os.exit(3) keeps its status"
is "$(complete "$TMPD/p.bin")" true "os.exit() while profiling: complete"

is "$(run 'local t = {} for i = 1, 1000 do t[i] = {i} end os.exit(true, true)')" 0 \
  "os.exit(true, true) closes the state"
is "$(complete "$TMPD/p.bin")" true "os.exit with close: complete"

is "$(run 'local t = {} for i = 1, 1000 do t[i] = {i} end')" 0 \
  "script ends while profiling"
is "$(complete "$TMPD/p.bin")" true "lua_close() while profiling: complete"

is "$(run 'local t = {} error("boom")')" 1 "uncaught error keeps status 1"
is "$(complete "$TMPD/p.bin")" true "uncaught error: complete"

# A script using cjson (a C module unloaded at lua_close) while running.
is "$(run 'local c = require("cjson") for i = 1, 100 do c.encode({i}) end')" 0 \
  "C module unloaded at close while profiling"
is "$(complete "$TMPD/p.bin")" true "C module at close: complete"
done_testing
