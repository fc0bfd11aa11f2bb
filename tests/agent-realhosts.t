#!/bin/sh
# The agent in programs nobody here wrote (Debian packages, installed by
# `make deps`): Neovim (embeds libluajit), wrk (a LuaJIT state per thread),
# lupa (LuaJIT inside Python) and lua-lpeg (a C module required while
# recording). Each checks what users saw go wrong: builtins called from
# compiled loops billed to the host, names that change from run to run,
# the host's own allocations billed as INTERNAL, modules loaded after start
# without names.
#
# Debian's neovim, wrk and python3-lupa link Debian's libluajit-5.1-2: they
# belong to the luajit flavour and are skipped, visibly, in another
# flavour's run (its module would rightly refuse their VM).
. tests/lib/tap.sh
T=120
other=""
[ "${FLAVOUR:-luajit}" = luajit ] || other="links Debian's libluajit-5.1-2, the luajit flavour, not $FLAVOUR"
export LUA_CPATH="$BUILD/?.so;;"

# Allocation events of FILE on line LINE of a chunk ending in CHUNK.
line_allocs() {
  $BUILD/ljmemprof events "$1" | grep '"event":"alloc"' |
    grep -c "\"line\":$3,\"chunk\":\"[^\"]*$2\""
}

# The issue's reproduction: gmatch and gsub in compiled loops (JIT on).
cat > "$TMPD/repro.lua" <<EOF
local mp = require("ljmemprof")
local words = {}
for i = 1, 3000 do words[i] = ("w%d x%d"):format(i, i * 7) end
assert(mp.start("$TMPD/repro.ljm"))
local n = 0
for i = 1, 3000 do
  for w in words[i]:gmatch("%a%d+") do n = n + #w end
end
for i = 1, 3000 do
  words[i] = words[i]:gsub("x", "yy")
end
if vim then
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, words)
  local got = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
end
assert(mp.stop())
EOF

if [ -n "$other" ]; then
  ok 0 "# SKIP Neovim $other"
elif ! command -v nvim > /dev/null; then
  ok 1 "Neovim is installed (apt-get install neovim; make deps does)"
else
  timeout $T nvim --headless -u NONE -c "luafile $TMPD/repro.lua" -c 'qa!' > /dev/null 2>&1
  ok $? "nvim --headless runs the reproduction"
  n7=$(line_allocs "$TMPD/repro.ljm" repro.lua 7)
  n10=$(line_allocs "$TMPD/repro.ljm" repro.lua 10)
  [ "$n7" -ge 9000 ]; ok $? "nvim: gmatch's iterators and matches on their line ($n7)"
  is "$n10" 3000 "nvim: gsub's 3000 strings on their line"
  is "$($BUILD/ljmemprof events "$TMPD/repro.ljm" | grep '"event":"alloc"' | grep -c '"label":"INTERNAL"' | awk '{print ($1 < 50)}')" 1 \
    "nvim: INTERNAL stays the compiler's few allocations"
  names=$($BUILD/ljmemprof events "$TMPD/repro.ljm" | sed -n 's/.*"source":"cfunc","label":"\([^"]*\)".*/\1/p' | sort -u | tr '\n' ' ')
  is "$names" "vim.api.nvim_buf_get_lines " \
    "nvim: the API function that made Lua objects, by its shortest Lua name (not vim._editor.api.*)"
  # LJMEMPROF with a signal, in Neovim (which handles USR1 itself): the
  # script signals nvim and allocates until running() changes; and a
  # sampled profile started at load.
  cat > "$TMPD/nvsig.lua" <<'EOF'
local mp = require("ljmemprof")
local keep = {}
local function wait(want)
  for i = 1, 2e6 do keep[i % 1000 + 1] = { i } if mp.running() == want then return end end
  error("no switch")
end
vim.loop.kill(vim.loop.os_getpid(), "sigusr2")
wait(true)
for i = 1, 1000 do keep[i] = { i, i } end
vim.loop.kill(vim.loop.os_getpid(), "sigusr2")
wait(false)
EOF
  LJMEMPROF="$TMPD/nvsig-%n.ljm,signal=USR2,start=no" timeout $T nvim --headless -u NONE \
    -c "luafile $TMPD/nvsig.lua" -c 'qa!' > /dev/null 2>&1
  is "$?:$(complete "$TMPD/nvsig-1.ljm")" "0:true" "nvim: SIGUSR2 starts and stops a recording"
  n=$("$BUILD/ljmemprof" events "$TMPD/nvsig-1.ljm" | grep '"event":"alloc"' | grep -c 'nvsig.lua:9"')
  is "$n" 1000 "nvim: the tables made while recording, on their line (or its trace)"
  LJMEMPROF="$TMPD/nvsmp.ljm,sample=16K" timeout $T nvim --headless -u NONE \
    -c 'lua require("ljmemprof")' -c 'lua local k = {} for i = 1, 100000 do k[i] = { i, tostring(i) } end' \
    -c 'qa!' > /dev/null 2>&1
  n=$("$BUILD/ljmemprof" info "$TMPD/nvsmp.ljm" | sed -n 's/^events: *\([0-9]*\).*/\1/p')
  [ "${n:-0}" -ge 300 ] && [ "$n" -le 3000 ]; ok $? "nvim: LJMEMPROF=...,sample=16K: a sampled profile ($n events)"
fi

timeout $T luajit "$TMPD/repro.lua"; ok $? "luajit runs the reproduction"
is "$(line_allocs "$TMPD/repro.ljm" repro.lua 10)" 3000 "luajit: gsub's strings on their line"
is "$($BUILD/ljmemprof events "$TMPD/repro.ljm" | grep -c '"source":"cfunc"')" 0 \
  "luajit: nothing billed to the host's outermost C function"

# wrk: each thread its own state and profile; the responses' tables are
# built by wrk's C code outside any Lua call: HOST (wrk).
if [ -n "$other" ]; then
  ok 0 "# SKIP wrk $other"
elif ! command -v wrk > /dev/null; then
  ok 1 "wrk is installed (apt-get install wrk; make deps does)"
else
  port=$((20000 + $$ % 20000))
  python3 -m http.server $port --bind 127.0.0.1 --directory "$TMPD" > /dev/null 2>&1 &
  srv=$!
  # Wait up to 10 s for the server to listen.
  timeout 10 python3 -c "
import socket, time
while True:
    try: socket.create_connection(('127.0.0.1', $port), 0.2).close(); break
    except OSError: time.sleep(0.05)
"
  cat > "$TMPD/wrk.lua" <<EOF
local mp = require("ljmemprof")
local threads = 0
function setup(thread) threads = threads + 1; thread:set("id", threads) end
function init(args) assert(mp.start(("$TMPD/wrk-%d.ljm"):format(id))) end
local log = {}
function response(status, headers, body) log[#log + 1] = { status, #body } end
EOF
  timeout $T wrk -t2 -c2 -d1s -s "$TMPD/wrk.lua" "http://127.0.0.1:$port/" > "$TMPD/wrk.out" 2>&1
  ok $? "wrk runs with a profile per thread"
  # LJMEMPROF: every state that loads the module starts its own file (%n).
  echo 'require("ljmemprof") local log = {} function response(s, h, b) log[#log + 1] = { s, #b } end' \
    > "$TMPD/wrkenv.lua"
  LJMEMPROF="$TMPD/wrkenv-%n.ljm" timeout $T wrk -t2 -c2 -d1s -s "$TMPD/wrkenv.lua" \
    "http://127.0.0.1:$port/" > "$TMPD/wrk.out" 2>&1
  ok $? "wrk runs with LJMEMPROF=...-%n.ljm"
  is "$(ls "$TMPD"/wrkenv-*.ljm | wc -l):$(complete "$TMPD/wrkenv-2.ljm"):$(complete "$TMPD/wrkenv-3.ljm")" \
    "3:true:true" "wrk: one complete profile per state (the main one and two threads)"
  kill $srv 2>/dev/null
  for w in 1 2; do
    is "$($BUILD/ljmemprof info "$TMPD/wrk-$w.ljm" > /dev/null 2>&1; echo $?)" 0 "wrk thread $w: complete profile"
    n=$($BUILD/ljmemprof events "$TMPD/wrk-$w.ljm" | grep '"event":"alloc"' | grep -c '"label":"HOST (wrk)"')
    [ "$n" -ge 10 ]; ok $? "wrk thread $w: the host's own allocations are HOST (wrk) ($n)"
  done
fi

# lupa: LuaJIT inside Python; Python builds a table through the C API.
if [ -n "$other" ]; then
  ok 0 "# SKIP python3-lupa $other"
elif ! /usr/bin/python3 -c 'import lupa' 2> /dev/null; then
  ok 1 "python3-lupa is installed (make deps installs it)"
else
  timeout $T /usr/bin/python3 -c "
import lupa
lua = lupa.LuaRuntime()
lua.execute('mp = require(\"ljmemprof\"); assert(mp.start(\"$TMPD/lupa.ljm\"))')
t = lua.table_from({'a': 1, 'b': 2})
lua.execute('local t = {} for i = 1, 100 do t[i] = {i} end')
assert lua.eval('mp.stop()')
"; ok $? "lupa profiles"
  n=$($BUILD/ljmemprof events "$TMPD/lupa.ljm" | grep '"event":"alloc"' | grep -c '"label":"HOST (python3)"')
  [ "$n" -ge 2 ]; ok $? "lupa: table_from() from Python is HOST (python3) ($n)"
fi

# lua-lpeg required while recording: lpeg.match by its name.
cat > "$TMPD/lpeg.lua" <<EOF
local mp = require("ljmemprof")
assert(mp.start("$TMPD/lpeg.ljm"))
local lpeg = require("lpeg")
local p = lpeg.Ct(lpeg.C(lpeg.R("az")^1) * (lpeg.P(" ") * lpeg.C(lpeg.R("az")^1))^0)
local out = {}
for i = 1, 200 do out[i] = p:match("alpha beta gamma") end
assert(mp.stop())
EOF
timeout $T luajit "$TMPD/lpeg.lua"; ok $? "lpeg loaded while recording"
n=$($BUILD/ljmemprof events "$TMPD/lpeg.ljm" | grep '"event":"alloc"' | grep -c '"label":"lpeg.match"')
[ "$n" -ge 200 ]; ok $? "lpeg.match by its Lua name ($n)"
is "$($BUILD/ljmemprof events "$TMPD/lpeg.ljm" | grep -c 'lpeg.so+0x')" 0 \
  "no lpeg.so+0x... label: the operators are named by their metatable (lpeg-pattern.__mul)"
n=$($BUILD/ljmemprof events "$TMPD/lpeg.ljm" | grep -c '"label":"lpeg-pattern.__pow"')
[ "$n" -ge 1 ]; ok $? "lpeg-pattern.__pow ($n)"
done_testing
