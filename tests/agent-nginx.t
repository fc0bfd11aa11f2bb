#!/bin/sh
# A live nginx (Debian's nginx with its Lua module, which runs OpenResty's
# LuaJIT) profiled per worker without a restart, with the nginx.conf of
# docs/NGINX.md, taken from the page (its block marked "<!-- nginx.conf"),
# so that the page cannot drift from what runs here: each worker starts
# recording in init_worker_by_lua into its own file (pid in the name), a
# /ljmemprof/stop location stops the worker that serves it and
# /ljmemprof/start starts it again into a new file, and SIGRTMIN+1 (armed
# with mp.signal, which the test adds) starts and stops a third round. A handler allocates a
# known number of tables per request (interpreted: jit.off(true, true)),
# nginx's access log counts each worker's requests exactly, and each
# worker's report must bill the handler's lines with requests x tables.
# Last, docs/TESTING.md's per-request leak check (its two locations, taken
# from the page): a handler that keeps a table per request fails
# `ljmemprof check`, naming its line; one that keeps nothing passes.
#
# The Lua module, lua-resty-core and libluajit2 are unpacked under
# $BUILD/root (make nginx-lua FLAVOUR=luajit2), never installed; nginx runs
# with LD_LIBRARY_PATH to that libluajit2, started as the page's step 4
# says. As root the workers run as nobody (the page's user line), writing
# to a directory only nobody can write. nginx is stopped at
# the end whatever happens; every wait and request is bounded.
. tests/lib/tap.sh
. tests/lib/nginx.sh

N=120		# Requests counted exactly, from curl.
D=$TMPD/ngx
mkdir -p "$D/logs" "$D/tmp" "$D/lua" "$D/prof"	# The page's step 2.
chmod 0711 "$TMPD"
chmod 0755 "$D" "$D/lua"
root=""
if [ "$(id -u)" = 0 ]; then
  root=1
  chown nobody "$D/prof"
  chmod 0700 "$D/prof"	# Only the workers' user can write (and read) here.
fi
# The page's nginx.conf, with this test's directories and port.
doc_conf() {
  awk 'index($0, "<!-- nginx.conf") == 1 { on = 1; next }
    on == 1 && /^```/ { on = 2; next }
    on == 2 && /^```/ { exit }
    on == 2 { print }' docs/NGINX.md
}
is "$(doc_conf | grep -c 'load_module\|^events\|lua_package_path\|^user\|init_worker_by_lua_block\|ljmemprof/stop\|ljmemprof/start')" 8 \
  "docs/NGINX.md has a complete nginx.conf (events, modules, path, user, init_worker, locations)"

cat > "$D/lua/handler.lua" <<'LUA'
-- A request handler with allocations known per request.
jit.off(true, true)	-- This module is interpreted: each allocation on its line.
local M = {}
function M.run()
  local a = {}				-- line 5: one table
  local b = { {}, {}, {} }		-- line 6: four tables
  ngx.say(#a + #b)
end
return M
LUA

# Handlers for docs/TESTING.md's leak check per request: one keeps a
# table per request in its module, the other keeps nothing.
cat > "$D/lua/perreq.lua" <<'LUA'
jit.off(true, true)
local M, seen = {}, {}
function M.leaky() seen[#seen + 1] = { #seen } ngx.say(#seen) end
function M.clean() local t = { 1, 2, 3 } ngx.say(#t) end
return M
LUA
# The locations of docs/TESTING.md (its block marked "<!-- memprof").
testing_locations() {
  awk 'index($0, "<!-- memprof locations") == 1 { on = 1; next }
    on == 1 && /^```/ { on = 2; next }
    on == 2 && /^```/ { exit }
    on == 2 { print }' docs/TESTING.md
}
testing_locations > "$D/memprof-locations.conf"
is "$(grep -c 'location = /memprof/st' "$D/memprof-locations.conf")" 2 \
  "docs/TESTING.md has the two locations of its per-request leak check"

trap 'stop_nginx; rm -rf "$TMPD"' EXIT
trap 'exit 1' INT TERM HUP

# Start nginx on a free local port (a few tries: another test may hold one).
try=0
while [ $try -lt 5 ]; do
  port=$((20000 + ($$ * 7 + try * 331) % 20000))
  # At the page's two marks: the handler and /running locations, and the
  # signal armed after mp.start.
  doc_conf | sed -e "s|/path/to/ljmemprof/build/luajit2|$BUILD|g" \
    -e "s|/tmp/ngx|$D|g" -e "s|127\\.0\\.0\\.1:8090|127.0.0.1:$port|" |
    awk -v sig="    assert(mp.signal(\"RTMIN+1\", \"$D/prof/sig-%p-%n.ljm\"))" '
      { print }
      index($0, "assert(mp.start(") { print sig }
      index($0, "# ... the application'"'"'s locations ...") {
        print "    location /work { content_by_lua_block { require(\"handler\").run() } }"
        print "    location /running {"
        print "      content_by_lua_block {"
        print "        local t = { ngx.worker.pid() }	-- An allocation: a switch comes at one."
        print "        ngx.say(t[1], \" \", tostring(require(\"ljmemprof\").running()))"
        print "      }"
        print "    }"
        print "    location /leaky { content_by_lua_block { require(\"perreq\").leaky() } }"
        print "    location /clean { content_by_lua_block { require(\"perreq\").clean() } }"
        print "    include '"$D"'/memprof-locations.conf;"
      }' > "$D/nginx.conf"
  : > "$D/logs/error.log"
  LD_LIBRARY_PATH=$LIBDIR "$NGINX" -p "$D" -c "$D/nginx.conf" -e "$D/logs/error.log" \
    -g 'daemon off;' 2>>"$D/logs/error.log" &
  master=$!
  # Up for at most 10 s: both workers have created their profiles.
  i=0
  while [ $i -lt 100 ] && kill -0 "$master" 2>/dev/null &&
        [ "$(ls "$D/prof" 2>/dev/null | grep -c '^worker-[0-9]*\.ljm$')" -lt 2 ]; do
    sleep 0.1; i=$((i + 1))
  done
  kill -0 "$master" 2>/dev/null && break
  master=""
  grep -q "Address already in use" "$D/logs/error.log" || break
  try=$((try + 1))
done
if [ -z "$master" ] || [ "$(ls "$D/prof" | grep -c '^worker-[0-9]*\.ljm$')" -ne 2 ]; then
  ok 1 "nginx starts with the agent in both workers"
  sed 's/^/# /' "$D/logs/error.log" | tail -n 20
  done_testing
fi
ok 0 "nginx starts with the agent in both workers (port $port)"
pids=$(ls "$D/prof" | sed -n 's/^worker-\([0-9]*\)\.ljm$/\1/p' | sort -n | tr '\n' ' ')
if [ -n "$root" ]; then
  is "$(stat -c '%U %a' "$D/prof"/worker-*.ljm | sort -u)" "nobody 600" \
    "the workers write their profiles as nobody, mode 0600"
fi

URL=http://127.0.0.1:$port
# get PATH: the body of one request (each bounded to 5 s).
get() { curl -s --max-time 5 "$URL$1"; }

# Load first, if wrk is there (its count is not exact: requests in flight
# at its end are served but not counted; the access log counts them).
if command -v wrk > /dev/null; then
  with_timeout 30 wrk -t2 -c4 -d2s "$URL/work" > "$D/wrk.out" 2>&1
  ok $? "wrk drives the handler for 2 s"
else
  ok 0 "# SKIP wrk is not installed (make deps installs it with the luajit flavour)"
fi
# Then N requests counted by the client.
good=0 i=0
while [ $i -lt $N ]; do
  [ "$(get /work)" = 3 ] && good=$((good + 1))
  i=$((i + 1))
done
is "$good" "$N" "$N requests answered by the handler"

# each URL WANT: request URL until every worker has answered "PID WANT"
# (connections are spread over the workers by reuseport); at most 200
# requests. Prints the pids that did.
each() {
  done_pids="" k=0
  while [ $k -lt 200 ]; do
    r=$(get "$1")
    pid=${r%% *}
    case " $done_pids " in *" $pid "*) ;; *)
      [ "${r#* }" = "$2" ] && done_pids="$done_pids $pid" ;;
    esac
    [ "$(echo $done_pids | wc -w)" -ge 2 ] && break
    k=$((k + 1))
  done
  echo $done_pids | tr ' ' '\n' | sort -n | tr '\n' ' '
}
is "$(each /ljmemprof/stop "true nil")" "$pids" "/ljmemprof/stop stops each worker's profile, nginx still running"

# count PID: the worker's /work requests in the access log.
count() { grep -c "^$1 /work 200$" "$D/logs/access.log"; }
# line_allocs FILE LINE: allocations billed to handler.lua:LINE.
line_allocs() {
  "$BUILD/ljmemprof" events "$1" | grep '"event":"alloc"' |
    grep -c "\"line\":$2,\"chunk\":\"@[^\"]*/handler.lua\""
}
total=0
for p in $pids; do
  f=$D/prof/worker-$p.ljm
  n=$(count "$p")
  total=$((total + n))
  run "$BUILD/ljmemprof" info "$f"
  is "$rc" 0 "worker $p: a complete profile"
  is "$(line_allocs "$f" 5):$(line_allocs "$f" 6)" "$n:$((n * 4))" \
    "worker $p: $n requests: handler.lua:5 one table each, handler.lua:6 four"
  run "$BUILD/ljmemprof" report "$f"
  case $out in
    *"@$D/lua/handler.lua:6: $((n * 4)) events"*) ok 0 "worker $p: the report bills handler.lua:6 with $((n * 4)) allocations" ;;
    *) ok 1 "worker $p: the report bills handler.lua:6 with $((n * 4)) allocations"; echo "$out" | head -n 12 | sed 's/^/# /' ;;
  esac
done
[ "$total" -ge "$N" ]; ok $? "the workers served all $N counted requests and wrk's ($total)"
# One report of all workers: their profiles merged by source.
run "$BUILD/ljmemprof" report "$D"/prof/worker-[0-9]*.ljm
case $out in
  *"@$D/lua/handler.lua:6: $((total * 4)) events"*) ok 0 "one report of both workers bills handler.lua:6 with $((total * 4)) allocations" ;;
  *) ok 1 "one report of both workers bills handler.lua:6 with $((total * 4)) allocations"; echo "$out" | head -n 12 | sed 's/^/# /' ;;
esac

# Toggle again without a restart: start each worker into a second file,
# 40 requests, stop.
is "$(each /ljmemprof/start "true nil")" "$pids" "/ljmemprof/start starts each worker again into its own file"
before=$(wc -l < "$D/logs/access.log")
i=0
while [ $i -lt 40 ]; do get /work > /dev/null; i=$((i + 1)); done
is "$(each /ljmemprof/stop "true nil")" "$pids" "/ljmemprof/stop stops them again"
tail -n +$((before + 1)) "$D/logs/access.log" > "$D/access2.log"
sum=0
for p in $pids; do
  n=$(grep -c "^$p /work 200$" "$D/access2.log")
  sum=$((sum + n))
  f=$(ls "$D/prof/worker-$p-"*.ljm | head -n 1)	# worker-PID-TIME.ljm
  is "$(line_allocs "$f" 5):$(line_allocs "$f" 6)" "$n:$((n * 4))" \
    "worker $p, second profile: $n requests, $n and $((n * 4)) tables"
done
is "$sum" 40 "the second round's 40 requests, each in one worker's profile"

# A third round by signal (armed in init_worker_by_lua for SIGRTMIN+1,
# which nginx leaves alone): each worker starts at its next allocation
# after the signal, into sig-PID-N.ljm, and stops at its next allocation
# after the next signal (/running allocates a table for that).
sig() { python3 -c 'import os, signal, sys
for p in sys.argv[1:]: os.kill(int(p), signal.SIGRTMIN + 1)' $pids; }
sig
is "$(each /running true)" "$pids" "SIGRTMIN+1 starts a recording in each worker"
before=$(wc -l < "$D/logs/access.log")
i=0
while [ $i -lt 40 ]; do get /work > /dev/null; i=$((i + 1)); done
sig
is "$(each /running false)" "$pids" "SIGRTMIN+1 again stops them"
tail -n +$((before + 1)) "$D/logs/access.log" > "$D/access3.log"
sum=0
for p in $pids; do
  n=$(grep -c "^$p /work 200$" "$D/access3.log")
  sum=$((sum + n))
  f=$(ls "$D/prof/sig-$p-"*.ljm 2>/dev/null | head -n 1)
  is "$(complete "$f"):$(line_allocs "$f" 5):$(line_allocs "$f" 6)" "true:$n:$((n * 4))" \
    "worker $p, by signal: $n requests, $n and $((n * 4)) tables"
done
is "$sum" 40 "the third round's 40 requests, each in one worker's profile"

# docs/TESTING.md's recipe, its Test::Nginx blocks sent by curl on one
# connection (one worker): warm the handler and /memprof/stop, record two
# requests, stop with a collection, check. The handler that keeps a table
# per request fails, naming its line; the other passes.
pipeline() {
  u=$1; shift
  with_timeout 30 curl -s --max-time 10 "$URL/$u" "$URL/memprof/stop" \
    "$URL/memprof/start?path=$D/prof/$u.ljm" "$URL/$u" "$URL/$u" "$URL/memprof/stop"
}
is "$(pipeline clean | tr '\n' ' ')" "3 profiler is not running started 3 3 stopped " \
  "TESTING.md's sequence on one connection: warm, start, two requests, stop"
run "$BUILD/ljmemprof" check "$D/prof/clean.ljm"
is "$rc" 0 "a handler that keeps nothing: ljmemprof check passes"
is "${out%%:*}" "ok" "and says ok ($out)"
r=$(pipeline leaky | tr '\n' ' ')
case $r in
  *" profiler is not running started "*" stopped ") ok 0 "the leaky handler's sequence ($r)" ;;
  *) ok 1 "the leaky handler's sequence ($r)" ;;
esac
run "$BUILD/ljmemprof" check "$D/prof/leaky.ljm"
is "$rc" 1 "a handler that keeps a table per request: ljmemprof check fails"
echo "$out" | grep -q "^@$D/lua/perreq.lua:3: [0-9]* blocks"
ok $? "naming the handler's line"
echo "$out" | sed 's/^/# /' | head -n 8

# shellcheck disable=SC2086
stop_checked "$D/logs/error.log" "" $pids
done_testing
