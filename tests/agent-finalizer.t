#!/bin/sh
# A finaliser that raises an error in the collection of stop{collect =
# true} (or of collect = true given at start, at stop, lua_close or a
# signal's stop): the error is caught and reported, never raised through
# stop; the other finalisers run; the recording ends and the profile is
# complete, with its collection noted (a note in version 3, an info
# record in the extension). It raised 'gc error 3' through
# stop and left recording on; each further stop raised the next one.
. tests/lib/tap.sh
lj_e() { with_timeout 30 env LUA_CPATH="$BUILD/?.so;;" $LUAJIT "$@"; }
note() { with_timeout 30 "$BUILD/tests/stream_items" "$1" | grep -Ec '^(note|info) collect=1$'; }
cat > "$TMPD/bombs.lua" <<'EOF2'
ran = 0
-- n objects whose finalisers fail (the collector runs them newest first).
function bombs(n)
  for i = 1, n do
    local p = newproxy(true)
    getmetatable(p).__gc = function() ran = ran + 1 error("gc error " .. i) end
  end
end
EOF2
why="a finaliser raised an error in the collection before the end (caught; the profile is complete): $TMPD/bombs.lua:6: gc error 3"

# stop{collect = true}.
out=$(lj_e -e "
  dofile('$TMPD/bombs.lua')
  local mp = require('ljmemprof')
  assert(mp.start('$TMPD/a.ljm'))
  bombs(3)
  print(pcall(mp.stop, { collect = true }))
  print(mp.running(), ran)
  print(mp.stop())
  print(pcall(collectgarbage))")
is "$out" "true	nil	$TMPD/a.ljm: $why	22
false	3
nil	profiler is not running	22
true	0" "stop{collect = true}: not raised; nil, the path and the finaliser's error; stopped; all 3 finalisers ran"
is "$(complete "$TMPD/a.ljm"):$(note "$TMPD/a.ljm")" "true:1" "the profile is complete, its collection noted"

# collect = true at start; then stop() twice.
out=$(lj_e -e "
  dofile('$TMPD/bombs.lua')
  local mp = require('ljmemprof')
  assert(mp.start({ path = '$TMPD/b.ljm', collect = true, stacks = 8 }))
  bombs(3)
  print(pcall(mp.stop))
  print(mp.running(), ran)
  print(pcall(mp.stop))")
is "$out" "true	nil	$TMPD/b.ljm: $why	22
false	3
true	nil	profiler is not running	22" "collect = true at start: stop() reports the error once, then says not running"
is "$(complete "$TMPD/b.ljm"):$(note "$TMPD/b.ljm")" "true:1" "that profile is complete, its collection noted"

# lua_close: the recording that collect = true ends there.
run env LUA_CPATH="$BUILD/?.so;;" $LUAJIT -e "
  dofile('$TMPD/bombs.lua')
  local mp = require('ljmemprof')
  assert(mp.start({ path = '$TMPD/c.ljm', collect = true }))
  bombs(3)
  print('end')"
is "$rc:$out:$err" "0:end:" "lua_close with failing finalisers: the program ends normally"
is "$(complete "$TMPD/c.ljm"):$(note "$TMPD/c.ljm")" "true:1" "lua_close's profile is complete, its collection noted"

# A signal's stop with collect: said on stderr, not thrown into the program.
run env LUA_CPATH="$BUILD/?.so;;" $LUAJIT -e "
  dofile('$TMPD/bombs.lua')
  local mp = require('ljmemprof')
  local ffi = require('ffi')
  ffi.cdef('int kill(int, int); int getpid(void);')
  assert(mp.signal('USR2', { path = '$TMPD/d.ljm', collect = true }))
  ffi.C.kill(ffi.C.getpid(), 12)
  local t = {} for i = 1, 100 do t[i] = {} end
  local on = mp.running()
  bombs(3)
  ffi.C.kill(ffi.C.getpid(), 12)
  for i = 1, 100 do t[i] = {} end
  print(on, mp.running(), ran)"
is "$rc:$out:$err" "0:true	false	3:ljmemprof: stopping at a signal: $why" \
  "a signal's stop: the program goes on, the error is said on stderr"
is "$(complete "$TMPD/d.ljm"):$(note "$TMPD/d.ljm")" "true:1" "the signal's profile is complete, its collection noted"
done_testing
