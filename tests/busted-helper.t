#!/bin/sh
# The busted helper (lua/ljmemprof/busted.lua) with Debian's busted: a
# leaking test fails naming its line and stack, a clean one passes, a cache
# warmed once passes with repeat=2, a peak limit set inside a test fails
# it, the test's own failure passes through, TAP and JUnit carry the
# message, a failing test's profile can be kept, and bad options are
# errors.
. tests/lib/tap.sh
LUAJIT=${LUAJIT:-luajit}
ROOT=$PWD
command -v busted >/dev/null
ok $? "busted is installed (make deps installs lua-busted)"

mkdir -p "$TMPD/spec" "$TMPD/saved"
cat >"$TMPD/spec/mem_spec.lua" <<'EOF'
jit.off()
local cache, seen = {}, {}
local function memo(k) if not seen[k] then seen[k] = { k } end return seen[k] end
describe("memory", function()
  it("is clean", function()
    local t = {}
    for i = 1, 100 do t[i] = { i } end
    assert.are.equal(100, #t)
  end)
  it("leaks into a cache", function()
    for i = 1, 3 do cache[#cache + 1] = { i } end
  end)
  it("warms a cache once", function()
    assert.are.equal("a", memo("a")[1])
  end)
  it("peaks", function()
    memory.limit("64K")
    local big = {}
    for i = 1, 2000 do big[i] = { i } end
  end)
  it("fails its own assertion", function()
    assert.are.equal(1, 2)
  end)
end)
EOF
cd "$TMPD" || exit 1
# bst ARGS...: busted under the flavour's luajit with the helper.
bst() {
  LUA_CPATH="$BUILD/?.so;;" LUA_PATH="$ROOT/lua/?.lua;;" \
    LJMEMPROF_CLI="${CLI:-$BUILD/ljmemprof}" with_timeout 120 \
    busted --lua="$LUAJIT" --helper=ljmemprof.busted "$@"
}

bst -o TAP spec/mem_spec.lua >out 2>err
rc=$?
is "$rc" 1 "busted fails: some tests are over a limit"
is "$(grep -E '^(not )?ok ' out)" "ok 1 - memory is clean
not ok 2 - memory leaks into a cache
not ok 3 - memory warms a cache once
not ok 4 - memory peaks
not ok 5 - memory fails its own assertion" "the clean test passes, the others fail"
# Test 2's message: its line, the 6 blocks (3 tables, and the cache's
# array part grown twice is 1 block, resized last by line 11... each
# counted as the report counts them), and the stack.
msg2=$(sed -n '/^not ok 2/,/^\(not \)\{0,1\}ok 3/p' out)
echo "$msg2" | grep -q "^# Failure message: spec/mem_spec.lua:10: ljmemprof: memory over the limit: leaked [0-9]*B in [0-9]* blocks (limit 0B), peak "
ok $? "the leak's message starts at the test's line, with the bytes and the limit"
echo "$msg2" | grep -q "^# @spec/mem_spec.lua:11: [0-9]* blocks	[0-9]*B not freed	in 1 stack$"
ok $? "it names the line that leaked"
is "$(echo "$msg2" | grep -c '^# 		')" 1 \
  "its stack stops at the test's body: busted's and the helper's frames are cut"
msg3=$(sed -n '/^not ok 3/,/^\(not \)\{0,1\}ok 4/p' out)
echo "$msg3" | grep -q "^# 		@spec/mem_spec.lua:3$"
ok $? "a cache filled on first use: the memoised line..."
echo "$msg3" | grep -q "^# 		@spec/mem_spec.lua:14$"
ok $? "...called from the test's line"
msg4=$(sed -n '/^not ok 4/,/^\(not \)\{0,1\}ok 5/p' out)
echo "$msg4" | grep -q "leaked 0B in 0 blocks (limit 0B), peak [0-9.]*KiB (limit 64KiB)$"
ok $? "memory.limit() inside a test sets its peak limit"
echo "$msg4" | grep -q "^# CALL STACKS (bytes live at the peak"
ok $? "the sources at the peak are listed"
echo "$msg4" | grep -q "^# @spec/mem_spec.lua:19: "
ok $? "the line that made the peak is named"
msg5=$(sed -n '/^not ok 5/,$p' out)
echo "$msg5" | grep -q "spec/mem_spec.lua:22: Expected objects to be equal."
ok $? "a test's own failure passes through unchanged"
echo "$msg5" | grep -q "ljmemprof"
ok $((!$?)) "and is not checked for memory"

bst -o TAP -Xhelper repeat=2 spec/mem_spec.lua >out 2>err
is "$(grep -E '^(not )?ok ' out)" "ok 1 - memory is clean
not ok 2 - memory leaks into a cache
ok 3 - memory warms a cache once
not ok 4 - memory peaks
not ok 5 - memory fails its own assertion" \
  "repeat=2: the cache warmed once passes, the leak still fails"

bst -o TAP -Xhelper leak=none,peak=none spec/mem_spec.lua >out 2>err
is "$(grep -E '^(not )?ok ' out | grep -c '^ok')" 3 \
  "leak=none: the leaks pass; memory.limit() still holds test 4 ($(grep -c '^not ok' out) fail)"
bst -o TAP -Xhelper leak=100K spec/mem_spec.lua >out 2>err
is "$(grep -c '^ok' out)" 3 "leak=100K: small leaks are within the limit"

bst -o junit -Xhelper save=saved spec/mem_spec.lua >out 2>err
grep -q "<failure>spec/mem_spec.lua:10: ljmemprof: memory over the limit: leaked" out
ok $? "JUnit carries the message"
ls saved/*-10.ljm >/dev/null 2>&1
ok $? "save=DIR keeps the failing test's profile, named after its line"
is "$(ls saved | grep -c -- '-5.ljm')" 0 "and not the passing test's"
"$BUILD/ljmemprof" report --leak-only saved/*-10.ljm 2>&1 | grep -q "^@spec/mem_spec.lua:11 "
ok $? "the kept profile reports the leaking line"

bst -Xhelper bogus=1 spec/mem_spec.lua >out 2>err
ok $((!$?)) "an unknown option: busted fails"
grep -q "ljmemprof.busted: unknown option 'bogus=1'" out err
ok $? "naming the option"
bst -Xhelper leak=12Q spec/mem_spec.lua >out 2>err
grep -q "ljmemprof.busted: leak=12Q: a size expected" out err
ok $? "a bad size is said"
bst -Xhelper repeat=0 spec/mem_spec.lua >out 2>err
grep -q "ljmemprof.busted: repeat=0: a number of runs" out err
ok $? "repeat=0 is refused"
CLI=/nonexistent/ljmemprof bst -o TAP spec/mem_spec.lua >out 2>err
ok $((!$?)) "no ljmemprof command: busted fails"
grep -A2 "^not ok 1" out | grep -q "^# Failure message: spec/mem_spec.lua:5: ljmemprof.busted: /nonexistent/ljmemprof check failed: "
ok $? "saying the command could not check the profile"

cat >"$TMPD/spec/api_spec.lua" <<'EOF'
it("takes no bad limit", function()
  local ok, err = pcall(memory.limit, "ten")
  assert.is_false(ok)
  assert.matches("memory.limit=ten: a size expected", err, 1, true)
end)
it("is not started twice", function()
  local ok, why = require("ljmemprof").start("x.ljm")
  assert.is_nil(ok)
  assert.are.equal("profiler is running already", why)
end)
EOF
bst -o TAP spec/api_spec.lua >out 2>err
is "$(grep -E '^(not )?ok ' out)" "ok 1 - takes no bad limit
ok 2 - is not started twice" "memory.limit() refuses a bad size; the test runs under the profiler"
LUA_PATH="$ROOT/lua/?.lua;;" LUA_CPATH="$BUILD/?.so;;" with_timeout 60 "$LUAJIT" \
  -e 'require("ljmemprof.busted")' >out 2>&1
ok $((!$?)) "outside busted, the module refuses to load"
grep -q "is a busted helper" out
ok $? "and says how it is used"

done_testing
