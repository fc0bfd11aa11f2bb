#!/bin/sh
# The agent's reads of VM memory, checked byte by byte: a host whose VM
# (lua_newstate) allocates each object with malloc, under AddressSanitizer
# (LuaJIT's own allocator carves objects out of arenas, where ASan sees no
# read past an object's end), and the same host with a guard-page
# allocator (each block ends against an unmapped page) in the plain build.
# A representative workload (tests/lib/workload.lua) in the one-frame mode
# and with stacks (3 frames: cut stacks; 64), JIT on and off: clean, the
# program's checksum unchanged, every profile complete. The first defect
# this found: the frame walker read a C function's field of a Lua closure
# without upvalues, 8 bytes past its end, at every builtin call.
. tests/lib/tap.sh
W=tests/lib/workload.lua
want=$(with_timeout 60 $LUAJIT $W)
is "$(echo "$want" | grep -c '^checksum [0-9]')" 1 "the workload runs without the profiler"

for host in "$BUILD/asan/agent_host sysalloc malloc" "$BUILD/tests/agent_host sysalloc guard"; do
  for st in 0 3 64; do
    for jit in on off; do
      name="$(echo "${host##*/}" | cut -d" " -f1,3) st=$st jit=$jit"
      rm -f "$TMPD/p.ljm"
      ASAN_OPTIONS=detect_leaks=0 with_timeout 120 $host "$TMPD/p.ljm" $st $jit $W \
        > "$TMPD/out" 2> "$TMPD/err"
      ok $? "$name: runs clean"
      [ -s "$TMPD/err" ] && sed 's/^/# /' "$TMPD/err" | head -n 20
      is "$(grep -c '^ok - ' "$TMPD/out") $(grep -c '^not ok' "$TMPD/out")" "5 0" \
        "$name: start, the builtin, the script and stop succeed"
      is "$(grep '^checksum' "$TMPD/out")" "$want" "$name: the program's checksum"
      is "$(complete "$TMPD/p.ljm")" true "$name: the profile is complete"
    done
  done
done
# The heap snapshot's map of addresses (32-byte granules with 64-bit
# references) on the densest heap an allocator can make: blocks packed end
# to end at LuaJIT's 8-byte alignment. Every object is told apart: the
# snapshot finds what the malloc host's does, and its objects, those not
# reached and the VM's own bytes add up to the VM's total.
cat >"$TMPD/snap.lua" <<'EOF'
jit.off()
collectgarbage("stop")
local keep = {}
for i = 1, 2000 do keep[i] = { tostring(i), "s" .. i % 97, { i } } end
KEEP = keep
assert(require("ljmemprof").snapshot(ARG))
EOF
summary() {
  "$BUILD/ljmemprof" snapshot --format json "$1" | tr ',' '\n' |
    sed -n 's/^{*"\(objects\|bytes\|gc_total\|vm_bytes\|unreached\|unreached_bytes\)":\([0-9]*\)$/\1=\2/p' | tr '\n' ' '
}
for a in malloc packed; do
  LUA_CPATH="$BUILD/?.so;;" with_timeout 60 "$BUILD/tests/agent_host" sysalloc $a "$TMPD/s.ljm" 0 off \
    "$TMPD/snap.lua" "$TMPD/$a.snap" >"$TMPD/out" 2>&1
  is "$(grep -c '^ok - ' "$TMPD/out")" 5 "snapshot in the $a host: taken"
done
sm=$(summary "$TMPD/malloc.snap") sp=$(summary "$TMPD/packed.snap")
is "$sp" "$sm" "packed blocks: the same objects and bytes as with malloc ($sm)"
eval "$sp"
is "$((bytes + unreached_bytes + vm_bytes))" "${gc_total:-x}" \
  "packed blocks: objects, those not reached and the VM's own add up to its total"
done_testing
