#!/bin/sh
# Native memory in a live nginx (Debian's nginx with its Lua module, which
# runs OpenResty's LuaJIT): the worker starts recording with native = true
# in init_worker_by_lua, a handler calls ffi.C.malloc(777) and ffi.C.free
# once per request (the FFI resolves them at the first request, through
# the wrapped dlsym), wrk loads it on 127.0.0.1, then 100 requests are
# counted by the client, and /stop ends the profile. nginx's access log
# counts the requests exactly: the native report must bill the handler's
# line with one malloc of 777 bytes per request, and its free line with
# one free each; nothing of the handler's is left held.
#
# Set up as tests/agent-nginx.t does (unpacked module, nobody, bounded
# waits, nginx stopped at the end whatever happens).
. tests/lib/tap.sh
. tests/lib/nginx.sh

N=100		# Requests counted exactly, from curl.
nginx_dirs

cat > "$D/lua/handler.lua" <<'LUA'
-- A request handler with one native block per request.
jit.off(true, true)	-- Interpreted: each call on its line.
local ffi = require("ffi")
ffi.cdef("void *malloc(size_t); void free(void *);")
local C = ffi.C
local M = {}
function M.run()
  local p = C.malloc(777)		-- line 8: one native block
  C.free(p)				-- line 9: freed
  ngx.say("ok")
end
return M
LUA

trap 'stop_nginx; rm -rf "$TMPD"' EXIT
trap 'exit 1' INT TERM HUP

try=0
while [ $try -lt 5 ]; do
  port=$((20000 + ($$ * 11 + try * 337) % 20000))
  { nginx_conf_head "$user"; cat <<EOF; } > "$D/nginx.conf"
  lua_package_path "$D/lua/?.lua;$ROOT/usr/share/lua/5.1/?.lua;;";
  lua_package_cpath "$D/lua/?.so;;";
  init_worker_by_lua_block {
    local mp = require("ljmemprof")
    assert(mp.start{ path = ("$D/prof/worker-%d.ljm"):format(ngx.worker.pid()),
                     native = true })
  }
  server {
    listen 127.0.0.1:$port reuseport;
    location /work { content_by_lua_block { require("handler").run() } }
    location /stop {
      content_by_lua_block {
        local ok, err = require("ljmemprof").stop()
        ngx.say(ngx.worker.pid(), " ", tostring(ok), " ", tostring(err))
      }
    }
  }
}
EOF
  : > "$D/error.log"
  LD_LIBRARY_PATH=$LIBDIR "$NGINX" -p "$D" -c "$D/nginx.conf" -e "$D/error.log" 2>>"$D/error.log" &
  master=$!
  i=0
  while [ $i -lt 100 ] && kill -0 "$master" 2>/dev/null &&
        [ "$(ls "$D/prof" 2>/dev/null | grep -c '^worker-[0-9]*\.ljm$')" -lt 1 ]; do
    sleep 0.1; i=$((i + 1))
  done
  kill -0 "$master" 2>/dev/null && break
  master=""
  grep -q "Address already in use" "$D/error.log" || break
  try=$((try + 1))
done
if [ -z "$master" ] || [ "$(ls "$D/prof" | grep -c '^worker-[0-9]*\.ljm$')" -ne 1 ]; then
  ok 1 "nginx starts with native recording in its worker"
  sed 's/^/# /' "$D/error.log" | tail -n 20
  done_testing
fi
ok 0 "nginx starts with native recording in its worker (port $port)"
pid=$(ls "$D/prof" | sed -n 's/^worker-\([0-9]*\)\.ljm$/\1/p')

URL=http://127.0.0.1:$port
get() { curl -s --max-time 5 "$URL$1"; }
if command -v wrk > /dev/null; then
  with_timeout 30 wrk -t2 -c4 -d2s "$URL/work" > "$D/wrk.out" 2>&1
  ok $? "wrk drives the handler for 2 s"
else
  ok 0 "# SKIP wrk is not installed (make deps installs it with the luajit flavour)"
fi
good=0 i=0
while [ $i -lt $N ]; do
  [ "$(get /work)" = ok ] && good=$((good + 1))
  i=$((i + 1))
done
is "$good" "$N" "$N requests answered by the handler"
is "$(get /stop)" "$pid true nil" "/stop ends the profile"
n=$(grep -c "^$pid /work 200$" "$D/access.log")
f=$D/prof/worker-$pid.ljm
run "$BUILD/ljmemprof" info "$f"
is "$rc" 0 "a complete profile"
run "$BUILD/ljmemprof" report --heap native --format collapsed "$f"
sum() { printf '%s\n' "$out" | grep "/handler.lua:$1);.*$2 \[native\] [0-9]*$" |
  awk '{ s += $NF } END { print s + 0 }'; }
is "$(sum 8 malloc)" "$((n * 777))" "$n requests: handler.lua:8 malloc'd 777 bytes each"
run "$BUILD/ljmemprof" report --heap native "$f"
frees=$(printf '%s\n' "$out" | sed -n '/^DEALLOCATIONS/,/^HEAP/p' |
  sed -n "s#^@.*/handler.lua:9 \[native\]: \([0-9]*\) events.*#\1#p")
is "$frees" "$n" "handler.lua:9 freed them, one free per request"
run "$BUILD/ljmemprof" report --heap native --leak-only "$f"
case $out in
  *handler.lua*) ok 1 "nothing of the handler's is held"; echo "$out" | sed 's/^/# /' | head ;;
  *) ok 0 "nothing of the handler's is held" ;;
esac

stop_checked "$D/error.log" "" "$pid"
done_testing
