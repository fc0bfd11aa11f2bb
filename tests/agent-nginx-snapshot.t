#!/bin/sh
# A heap snapshot of a live nginx worker, taken by a signal under wrk's
# load (issue 20): the worker is armed in two ways, one nginx each, by
# mp.signal(SIG, {..., snapshot = P}) in init_worker_by_lua and by
# LJMEMPROF's signal= and snapshot= keys (passed to the worker with
# nginx's env directive). A first signal starts a recording; wrk loads a
# handler that caches a table per request in its module; a second signal
# stops the recording and takes the snapshot. The worker's snapshot file
# must load in `ljmemprof snapshot`, hold the handler's cache entries under
# their path (package.loaded.cache.items[*]: as many tables as the handler
# says it holds, and as the access log counts), and join with the
# recording: the handler's line made them all, 100% held by the cache.
#
# Set up as tests/agent-nginx.t does (the Lua module unpacked under
# $BUILD/root, workers as nobody, bounded waits, nginx stopped at the end
# whatever happens). wrk is required (make deps installs it): without it
# the test says so and fails.
. tests/lib/tap.sh
. tests/lib/nginx.sh

if ! command -v wrk > /dev/null; then
  ok 1 "wrk is installed (make deps installs it)"
  done_testing
fi
nginx_dirs

cat > "$D/lua/cache.lua" <<'LUA'
-- A handler whose cache never evicts: one table per request.
jit.off(true, true)	-- Interpreted: each allocation on its line.
local M = { items = {} }
function M.run()
  M.items[#M.items + 1] = { #M.items }	-- line 5: the leak
  ngx.say(#M.items)
end
return M
LUA

trap 'stop_nginx; rm -rf "$TMPD"' EXIT
trap 'exit 1' INT TERM HUP

# start_nginx NAME INIT [MAIN]: nginx with one worker whose
# init_worker_by_lua runs INIT (MAIN: more of the main context); sets
# $master, $port, $URL and $pid (the worker's), or fails the test.
start_nginx() {
  try=0
  : > "$D/access.log"
  while [ $try -lt 5 ]; do
    port=$((20000 + ($$ * 13 + try * 347) % 20000))
    { nginx_conf_head "$user
$3"; cat <<EOF; } > "$D/nginx.conf"
  lua_package_path "$D/lua/?.lua;$ROOT/usr/share/lua/5.1/?.lua;;";
  lua_package_cpath "$D/lua/?.so;;";
  init_worker_by_lua_block { $2 }
  server {
    listen 127.0.0.1:$port reuseport;
    location /cache { content_by_lua_block { require("cache").run() } }
    location /count { content_by_lua_block { ngx.say(#require("cache").items) } }
    location /running {
      content_by_lua_block {
        local t = { ngx.worker.pid() }	-- An allocation: a switch comes at one.
        ngx.say(t[1], " ", tostring(require("ljmemprof").running()))
      }
    }
  }
}
EOF
    : > "$D/error.log"
    LD_LIBRARY_PATH=$LIBDIR "$NGINX" -p "$D" -c "$D/nginx.conf" -e "$D/error.log" \
      2>>"$D/error.log" &
    master=$!
    URL=http://127.0.0.1:$port
    # Up for at most 10 s: the worker answers.
    pid="" i=0
    while [ $i -lt 100 ] && kill -0 "$master" 2>/dev/null && [ -z "$pid" ]; do
      sleep 0.1; i=$((i + 1))
      pid=$(curl -s --max-time 2 "$URL/running" | sed -n 's/^\([0-9]*\) false$/\1/p')
    done
    [ -n "$pid" ] && break
    stop_nginx
    grep -q "Address already in use" "$D/error.log" || break
    try=$((try + 1))
  done
  if [ -z "$pid" ]; then
    ok 1 "$1: nginx starts, its worker armed, not recording"
    sed 's/^/# /' "$D/error.log" | tail -n 20
    done_testing
  fi
  ok 0 "$1: nginx starts, its worker armed, not recording (port $port)"
}

# running WANT: /running until the worker says WANT (true or false), at
# most 100 requests (each switch comes at the worker's next allocation).
running() {
  k=0
  while [ $k -lt 100 ]; do
    [ "$(curl -s --max-time 5 "$URL/running")" = "$pid $1" ] && return 0
    k=$((k + 1))
  done
  return 1
}
sig() { python3 -c 'import os, signal, sys
os.kill(int(sys.argv[1]), signal.SIGRTMIN + 1)' "$pid"; }

# round NAME PROF SNAP: signal, wrk, signal; then the checks of the
# worker's snapshot SNAP and its recording PROF.
round() {
  sig
  running true; ok $? "$1: the first signal starts a recording"
  with_timeout 30 wrk -t2 -c4 -d2s "$URL/cache" > "$D/wrk.out" 2>&1
  ok $? "$1: wrk loads the caching handler for 2 s"
  sed 's/^/# /' "$D/wrk.out" | grep -i 'requests/sec\|errors' 
  sig
  running false; ok $? "$1: the second signal stops it"
  # The snapshot is written by the stop, before the stream ends.
  i=0
  while [ $i -lt 100 ] && [ ! -s "$2" ]; do sleep 0.1; i=$((i + 1)); done
  n=$(curl -s --max-time 5 "$URL/count")
  logged=$(grep -c "^$pid /cache " "$D/access.log")
  ok $([ "$n" -gt 100 ] && [ "$n" = "$logged" ]; echo $?) \
    "$1: the handler holds $n entries, one per request the access log counts ($logged)"
  run "$BUILD/ljmemprof" snapshot "$3"
  is "$rc:$err" "0:" "$1: ljmemprof snapshot reads the worker's snapshot"
  printf '%s\n' "$out" | grep -E '^  package\.loaded\.cache\.items\[\*\]: ' |
    sed 's/, [0-9]*B$//' > "$D/got"
  is "$(cat "$D/got")" "  package.loaded.cache.items[*]: $n tables" \
    "$1: the cache's entries under their path, all $n"
  printf '%s\n' "$out" | grep -q ' table        package\.loaded\.cache\.items$'
  ok $? "$1: the cache is a top retainer, by its path"
  run "$BUILD/ljmemprof" info "$2"
  is "$rc" 0 "$1: the recording is complete"
  run "$BUILD/ljmemprof" snapshot --profile "$2" "$3"
  printf '%s\n' "$out" | sed "s|$D/||g" |
    grep -E '^ +[0-9]+B +[0-9]+  @lua/cache\.lua:5: ' | sed 's/^ *[0-9]*B *//' > "$D/got"
  is "$rc:$(cat "$D/got")" \
    "0:$n  @lua/cache.lua:5: 100% held by package.loaded.cache.items" \
    "$1: joined with its recording: the handler's line made the $n entries, all held by the cache"
  stop_checked "$D/error.log" "$1: " "$pid"
}

# mp.signal with a snapshot among its options.
start_nginx "mp.signal" "local mp = require('ljmemprof')
    assert(mp.signal('RTMIN+1', { path = '$D/prof/sig-%p.ljm', stacks = 8,
                                  snapshot = '$D/prof/sig-%p.ljh' }))"
round "mp.signal" "$D/prof/sig-$pid.ljm" "$D/prof/sig-$pid.ljh"

# LJMEMPROF's signal= and snapshot= keys (nginx hands the workers only the
# environment its env directive names).
LJMEMPROF="$D/prof/env-%p.ljm,stacks=8,signal=RTMIN+1,start=no,snapshot=$D/prof/env-%p.ljh"
export LJMEMPROF
start_nginx "LJMEMPROF" "require('ljmemprof')" "env LJMEMPROF;"
round "LJMEMPROF" "$D/prof/env-$pid.ljm" "$D/prof/env-$pid.ljh"
done_testing
