#!/bin/sh
# docs/FORMAT.md says the bytes the agent writes. Its worked examples (the
# blocks after "<!-- example: NAME -->") are taken from the page itself,
# decoded by the reader (`ljmemprof events`), which must print the page's
# "<!-- decoded: NAME -->" block; and by tests/lib/docformat.py, a decoder
# written from the page alone, which must agree. That decoder then reads
# every event of profiles the agent writes (one frame, stacks, sampled),
# and must find exactly what the reader finds: the page cannot describe
# bytes the agent does not write.
. tests/lib/tap.sh
MP="$BUILD/ljmemprof"
DOC=docs/FORMAT.md
PY="python3 tests/lib/docformat.py"

# block KIND NAME: the fenced block after "<!-- KIND: NAME ...-->".
block() {
  awk -v m="<!-- $1: $2" 'index($0, m) == 1 { on = 1; next }
    on == 1 && /^```/ { on = 2; next }
    on == 2 && /^```/ { exit }
    on == 2 { print }' "$DOC"
}
# hexes NAME: the bytes of example NAME (the leading hex pairs of each line).
hexes() {
  block example "$1" | sed 's/^\(\([0-9a-f][0-9a-f] \)*[0-9a-f][0-9a-f]\).*/\1/' | tr -d ' \n'
}
# The streams around the examples: the prologues of version 3 (an empty
# symtab) and of the extension, the epilogue after.
v3=6c6a7303000000806c6a6d03000000
ext=6c6a7303000000806c6a6d4c010000
for name in v3 ext; do
  bytes=$(hexes $name)
  [ -n "$bytes" ] && [ -n "$(block decoded $name)" ]
  ok $? "FORMAT.md has the example '$name' and its decoding"
  eval "pro=\$$name"
  python3 -c 'import sys; open(sys.argv[1], "wb").write(bytes.fromhex(sys.argv[2]))' \
    "$TMPD/$name.ljm" "${pro}${bytes}80"
  run "$MP" events "$TMPD/$name.ljm"
  is "$rc:$out" "0:$(block decoded $name)
{\"complete\":true}" "example '$name': the reader decodes the page's bytes as the page says"
  run $PY "$TMPD/$name.ljm"
  is "$rc:$out" "0:$(block decoded $name | $PY --fields)" \
    "example '$name': the page's own rules decode its bytes the same"
done

# Profiles the agent writes: every event, decoded by the page's rules,
# is the event the reader reads.
cat > "$TMPD/mix.lua" <<'LUA'
local t, s = {}, {}
for i = 1, 2000 do t[i] = { i } end			-- Traces, frees.
for i = 1, 200 do s[#s + 1] = ("x"):rep(i) .. i end	-- Builtins.
local co = coroutine.wrap(function() for i = 1, 50 do coroutine.yield({}) end end)
for i = 1, 50 do co() end
t = nil
collectgarbage()
LUA
for mode in "" "--stacks" "--stacks 3" "--sample 4K"; do
  # shellcheck disable=SC2086
  run "$MP" run -o "$TMPD/p.ljm" $mode --top 1 "$TMPD/mix.lua"
  "$MP" events "$TMPD/p.ljm" | $PY --fields > "$TMPD/reader.txt"
  $PY "$TMPD/p.ljm" > "$TMPD/page.txt"
  n=$(wc -l < "$TMPD/page.txt")
  [ "$n" -gt 50 ]
  ok $? "run ${mode:-(one frame)}: a profile of $n events"
  cmp -s "$TMPD/reader.txt" "$TMPD/page.txt"
  ok $? "run ${mode:-(one frame)}: the page's rules decode each event as the reader does"
  diff "$TMPD/reader.txt" "$TMPD/page.txt" | head -n 5 | sed 's/^/# /'
done
# The headers the page names for the usual events are the agent's.
run "$MP" run -o "$TMPD/p.ljm" --stacks --top 1 "$TMPD/mix.lua"
is "$($PY --headers "$TMPD/p.ljm")" "0x26 0x55 0x77" \
  "a stack profile's most frequent headers: 0x55, 0x77, 0x26 as the page says"
done_testing
