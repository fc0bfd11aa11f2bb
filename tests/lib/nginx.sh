# nginx.sh: what the nginx tests share (source it after tap.sh). Skips
# the test outside the luajit2 flavour (nginx's Lua module runs OpenResty's
# LuaJIT), finds nginx, the unpacked Lua module and libluajit2 under
# $BUILD/root (make nginx-lua FLAVOUR=luajit2: never installed), and fails
# at once if one is missing. stop_nginx stops the master in $master and
# its workers, bounded (TERM, KILL after 10 s), and is a no-op when none;
# stop_checked does it and checks that they are gone and nothing was
# logged as an alert. nginx_dirs makes a test's directories,
# nginx_conf_head prints the first lines of its nginx.conf.
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

# stop_checked LOG WHAT PIDS...: stop nginx, then check that its master
# and the PIDS are gone and LOG has no alert, crit or emerg (WHAT begins
# each check's name, "" for none).
stop_checked() {
  _log=$1 _what=$2
  shift 2
  _m=$master
  stop_nginx
  _left=""
  for _p in $_m "$@"; do kill -0 "$_p" 2>/dev/null && _left="$_left $_p"; done
  is "$_left" "" "${_what}nginx is stopped: its master and workers are gone"
  grep -q '\[alert\]\|\[emerg\]\|\[crit\]' "$_log"
  ok $((! $?)) "${_what}nginx logged no alert, crit or emerg"
  grep '\[alert\]\|\[emerg\]\|\[crit\]' "$_log" | head -n 5 | sed 's/^/# /'
}

# nginx_conf_head MAIN: the start of an nginx.conf of one worker in the
# foreground, its files under $D (MAIN: more lines of the main context,
# the user line among them), up to the http context's temporary paths;
# the test adds the rest of its http context and closes it.
nginx_conf_head() {
  cat <<EOF
daemon off;
master_process on;
worker_processes 1;
$1
pid $D/nginx.pid;
error_log $D/error.log notice;
load_module $MODS/ndk_http_module.so;
load_module $MODS/ngx_http_lua_module.so;
events { worker_connections 64; }
http {
  log_format counted '\$pid \$uri \$status';
  access_log $D/access.log counted;
  client_body_temp_path $D/tmp/body;
  proxy_temp_path $D/tmp/proxy;
  fastcgi_temp_path $D/tmp/fastcgi;
  uwsgi_temp_path $D/tmp/uwsgi;
  scgi_temp_path $D/tmp/scgi;
EOF
}

# nginx_dirs: $D (under $TMPD) with lua/ (the agent copied in), prof/ and
# tmp/; as root, the workers run as nobody ($user, the main context's
# line; "" otherwise) and prof/ is theirs alone.
nginx_dirs() {
  D=$TMPD/ngx
  mkdir -p "$D/lua" "$D/prof" "$D/tmp"
  chmod 0711 "$TMPD"
  chmod 0755 "$D" "$D/lua"
  cp "$BUILD/ljmemprof.so" "$D/lua/"
  user=""
  if [ "$(id -u)" = 0 ]; then
    user="user nobody nogroup;"
    chown nobody "$D/prof"
    chmod 0700 "$D/prof"
  fi
}
