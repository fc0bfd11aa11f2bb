# nginx.sh: what the nginx tests share (source it after tap.sh). Skips
# the test outside the luajit2 flavour (nginx's Lua module runs OpenResty's
# LuaJIT), finds nginx, the unpacked Lua module and libluajit2 under
# $BUILD/root (make nginx-lua FLAVOUR=luajit2: never installed), and fails
# at once if one is missing. stop_nginx stops the master in $master and
# its workers, bounded (TERM, KILL after 10 s), and is a no-op when none.
if [ "${FLAVOUR:-luajit}" != luajit2 ]; then
  echo "1..0 # SKIP nginx's Lua module runs OpenResty's LuaJIT: make test FLAVOUR=luajit2 runs this"
  exit 0
fi
ROOT=$BUILD/root
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
MODS=$ROOT/usr/lib/nginx/modules
LIBDIR=$(dirname "$(find "$ROOT/usr/lib" -name 'libluajit-5.1.so.2' | head -n 1)")
if [ ! -x "$NGINX" ]; then
  ok 1 "nginx is installed (apt-get install nginx; make deps does)"; done_testing
fi
if [ ! -f "$MODS/ngx_http_lua_module.so" ] || [ ! -d "$ROOT/usr/share/lua/5.1/resty" ]; then
  ok 1 "nginx's Lua module is unpacked under $ROOT (make nginx-lua FLAVOUR=luajit2)"; done_testing
fi

master=""
stop_nginx() {
  [ -n "$master" ] || return 0
  workers=$(ps -o pid= --ppid "$master" 2>/dev/null)
  kill -TERM "$master" 2>/dev/null
  # A fast shutdown takes well under a second; after 10 s, KILL.
  # shellcheck disable=SC2086
  (sleep 10; kill -KILL "$master" $workers 2>/dev/null) &
  dog=$!
  wait "$master" 2>/dev/null
  kill "$dog" 2>/dev/null
  master=""
}
