#!/bin/sh
# Native memory from a program embedding LuaJIT whose lua_Alloc is
# malloc/realloc/free (tests/c/native_host.c, the agent linked in): the
# VM's heap is not counted again as native memory; the host's own C
# functions' mallocs are billed to their calling lines, exactly.
. tests/lib/tap.sh
P=$TMPD/host.ljm
run "$BUILD/tests/native_host" "$P"
is "$rc" 0 "the C API with native = 1: start, stop, option checks ($out)"
run "$BUILD/ljmemprof" report --heap native --format collapsed "$P"
is "$out" "main chunk (function_alias_1:4);hostchurn;malloc [native] 25000
main chunk (function_alias_1:5);hostleak;malloc [native] 4321" \
  "native: hostchurn's 25 mallocs of 1000 bytes at line 4, hostleak's at 5, nothing else"
run "$BUILD/ljmemprof" report --heap native --leak-only "$P"
is "$out" "HEAP SUMMARY: 4321B in 1 block live at the end, by the source that allocated or last resized them
hostleak [native] holds 4321B in 1 block (100.0%)$NOTES_NONE" "native: the leak, and churn's blocks freed"
run "$BUILD/ljmemprof" report --heap vm --format collapsed "$P"
vm=$(printf '%s\n' "$out" | awk '{ s += $NF } END { print s + 0 }')
ok $([ "$vm" -gt 10000 ]; echo $?) "the VM's heap (through malloc) is there as the VM's: $vm bytes"
ok $(printf '%s\n' "$out" | grep -q '\[native\]'; echo $((1 - $?))) "and not as native"
done_testing
