#!/bin/sh
# Native memory's LD_PRELOAD mode (libljmemprof_preload.so): it sees the
# calls that patching the relocation slots cannot reach, a C module's
# malloc and free through pointers taken when it was loaded
# (native_mod.early) and ffi.C.malloc, mmap and mremap resolved before
# the start, exactly, and counts what both modes see once
# (native_mod.churn); the program runs as without; ljmemprof run --native=preload sets it up, finding the
# library where make install puts it (lib, or Debian's multiarch lib).
. tests/lib/tap.sh
LJ=${LUAJIT:-luajit}
PRE=$BUILD/libljmemprof_preload.so
cat > "$TMPD/app.lua" <<'EOF2'
package.cpath = os.getenv("BUILD") .. "/?.so;" .. os.getenv("BUILD") ..
  "/tests/cmod/?.so;" .. package.cpath
local nm = require("native_mod")
local ffi = require("ffi")
ffi.cdef "void *malloc(size_t); void free(void *); void *mmap(void *, size_t, int, int, int, long); void *mremap(void *, size_t, size_t, int, ...); int munmap(void *, size_t);"
local m, f, mm, mr, mu = ffi.C.malloc, ffi.C.free, ffi.C.mmap, ffi.C.mremap, ffi.C.munmap	-- resolved before the start
local mp = arg[1] and require("ljmemprof")
jit.off()
if mp then assert(mp.start{ path = arg[1], native = true }) end
nm.early(1000, 25)
for i = 1, 10 do nm.churn(777) end
for i = 1, 7 do local p = ffi.cast("unsigned char *", m(333)) p[0] = i f(p) end
local q = mm(nil, 8192, 3, 0x22, -1, 0) q = mr(q, 8192, 16384, 1) mu(q, 16384)
if mp then assert(mp.stop()) end
print("app ran", collectgarbage("count") > 0)
EOF2
# The native stacks of a profile, from the main chunk up, with their bytes.
stacks() {
  "$BUILD/ljmemprof" report --heap native --format collapsed "$1" |
    sed "s/^.*\(main chunk\)/\1/; s|$TMPD/||" | sort
}
run env BUILD="$BUILD" "$LJ" "$TMPD/app.lua"
plain=$out
is "$rc:$out" "0:app ran	true" "the app without the profiler"

# 1. Patching alone: the pointers taken before the start are not seen.
run env BUILD="$BUILD" "$LJ" "$TMPD/app.lua" "$TMPD/got.ljm"
is "$rc:$out" "0:$plain" "patching: the app runs as without"
is "$(stacks "$TMPD/got.ljm")" "main chunk (app.lua:11);native_mod.churn;malloc [native] 7770" \
  "patching: churn's 10 mallocs of 777 bytes, not early's nor the FFI's"
"$BUILD/tests/stream_items" "$TMPD/got.ljm" | grep -q "^info native_preload="
is "$?" 1 "patching: no native_preload setting"

# 2. Preloaded: every call, once.
run env BUILD="$BUILD" LD_PRELOAD="$PRE" "$LJ" "$TMPD/app.lua"
is "$rc:$out" "0:$plain" "preloaded, not recording: the app runs as without"
run env BUILD="$BUILD" LD_PRELOAD="$PRE" "$LJ" "$TMPD/app.lua" "$TMPD/pre.ljm"
is "$rc:$out" "0:$plain" "preload mode: the app runs as without"
is "$(stacks "$TMPD/pre.ljm")" "main chunk (app.lua:10);native_mod.early;malloc [native] 25000
main chunk (app.lua:11);native_mod.churn;malloc [native] 7770
main chunk (app.lua:12);ffi.meta.__call;malloc [native] 2331
main chunk (app.lua:13);ffi.meta.__call;mmap [native] 8192
main chunk (app.lua:13);ffi.meta.__call;mremap [native] 16384" \
  "preload mode: early's 25 mallocs of 1000 bytes and the FFI's 7 of 333 too, its mmap and mremap (resolved before), churn's once"
run "$BUILD/ljmemprof" report --heap native --format json "$TMPD/pre.ljm"
n=$(printf '%s\n' "$out" | "$LJ" -e '
local r = require("cjson").decode(io.read("*a"))
for _, e in ipairs(r.deallocations) do
  if e.source.label == "native_mod.early [native]" then
    io.write(e.events, " ", e.free_bytes)
  end
end')
is "$(printf '%s\n' "$out" | sed -n 's/.*"totals":{"alloc_events":\([0-9]*\),"realloc_events":[0-9]*,"free_events":\([0-9]*\).*/\1 \2/p')" \
  "$(printf '%s\n' "$out" | sed -n 's/.*"totals":{"alloc_events":\([0-9]*\).*/\1 \1/p')" \
  "preload mode: as many frees as allocations"
is "$n" "25 25000" "preload mode: early's 25 frees of 1000 bytes"
"$BUILD/tests/stream_items" "$TMPD/pre.ljm" | grep -qx "info native_preload=1"
is "$?" 0 "preload mode: the setting native_preload = 1"

# 3. ljmemprof run --native=preload.
cat > "$TMPD/run.lua" <<'EOF2'
package.cpath = os.getenv("BUILD") .. "/tests/cmod/?.so;" .. package.cpath
jit.off()
local nm = require("native_mod")
nm.early(4321, 3)
print("run ran")
EOF2
run env BUILD="$BUILD" "$BUILD/ljmemprof" run -o "$TMPD/run.ljm" --native=preload \
  --luajit "$LJ" "$TMPD/run.lua"
is "$rc:$(printf '%s\n' "$out" | head -n 1)" "0:run ran" "run --native=preload runs the script"
is "$(stacks "$TMPD/run.ljm" | grep early)" "main chunk (run.lua:4);native_mod.early;malloc [native] 12963" \
  "run --native=preload: early's 3 mallocs of 4321 bytes"
run "$BUILD/ljmemprof" run --native=maybe "$TMPD/run.lua"
is "$rc:$err" "2:ljmemprof run: --native=maybe: 'preload' expected (or --native alone)" \
  "run --native=maybe is an error"

# 4. Where run finds the library once installed: make install's layout
# (PREFIX/lib) and Debian's multiarch one (LIBDIR=PREFIX/lib/<triplet>),
# relative to the command, so that a DESTDIR tree works as well; when it
# is in none of them, an error naming each path tried.
arch=$(gcc -print-multiarch)
for lib in lib "lib/$arch"; do
  P=$TMPD/pfx-$(echo "$lib" | tr / _)
  run make -s install PREFIX="$P" LIBDIR="$P/$lib" LUA_CMOD="$P/lib/lua/5.1" \
    LUA_LMOD="$P/share/lua/5.1"
  is "$rc:$err" "0:" "make install LIBDIR=PREFIX/$lib"
  rm -f "$TMPD/inst.ljm"
  run env BUILD="$BUILD" LUA_CPATH="$P/lib/lua/5.1/?.so;;" "$P/bin/ljmemprof" run \
    -o "$TMPD/inst.ljm" --native=preload --luajit "$LJ" "$TMPD/run.lua"
  is "$rc:$(printf '%s\n' "$out" | head -n 1)" "0:run ran" \
    "installed with LIBDIR=PREFIX/$lib: run --native=preload runs the script"
  is "$(stacks "$TMPD/inst.ljm" | grep early)" \
    "main chunk (run.lua:4);native_mod.early;malloc [native] 12963" \
    "installed with LIBDIR=PREFIX/$lib: the library was preloaded (early's mallocs seen)"
done
rm "$P/$lib/libljmemprof_preload.so"
run env BUILD="$BUILD" "$P/bin/ljmemprof" run --native=preload --luajit "$LJ" "$TMPD/run.lua"
is "$rc:$out:$err" "2::ljmemprof run: --native=preload: libljmemprof_preload.so not found; \
tried $P/bin/libljmemprof_preload.so, $P/lib/libljmemprof_preload.so, \
$P/lib/$arch/libljmemprof_preload.so, $P/lib64/libljmemprof_preload.so" \
  "missing: the error names the paths tried"
mkdir "$TMPD/a:b" && cp "$BUILD/ljmemprof" "$BUILD/libljmemprof_preload.so" "$TMPD/a:b/"
run env BUILD="$BUILD" "$TMPD/a:b/ljmemprof" run --native=preload --luajit "$LJ" "$TMPD/run.lua"
is "$rc:$out:$err" "2::ljmemprof run: --native=preload: $TMPD/a:b/libljmemprof_preload.so: \
LD_PRELOAD cannot name a path with a space or a colon" \
  "a path LD_PRELOAD cannot hold: an error, not a run without the library"
done_testing
