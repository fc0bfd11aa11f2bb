#!/bin/sh
# The reader against hostile and unlucky inputs: every input gets a clear
# answer at once, memory stays bounded, and nothing read is lost.
#   - endless inputs that are not profiles (/dev/zero, /dev/urandom, `yes`)
#     are refused at their first bytes, with nothing written to TMPDIR;
#   - a stream read through a pipe keeps one window in memory, and an item
#     longer than the window (a 3 MiB name) grows it;
#   - one corrupt byte in the middle of a profile: what came before it is
#     reported, with a warning naming the offset, status 3;
#   - sizes that add up to 2^63 bytes or more are said to overflow;
#   - control characters in names are escaped in text, names are cut in
#     labels and JSON (a sparse file with four 256 MiB names);
#   - the progress line of long reads: on a terminal only, or forced.
. tests/lib/tap.sh
MP=$BUILD/ljmemprof
MAXRSS=$BUILD/tests/maxrss
mk() { luajit -e "P = dofile('tests/lib/mkprof.lua') $1"; }

# run CMD...: sets $rc, $out, $err.
run() {
  "$@" >"$TMPD/out" 2>"$TMPD/err"
  rc=$?
  out=$(cat "$TMPD/out")
  err=$(cat "$TMPD/err")
}
mkdir "$TMPD/tmp"
export TMPDIR="$TMPD/tmp"

# -- Endless inputs that are not profiles ---------------------------------

run with_timeout 20 $MP report /dev/zero
is "$rc:$out:$err" "2::ljmemprof: /dev/zero: not a memprof profile: bad data at byte 0: expected magic \"ljs\" of a memprof symtab" \
  "/dev/zero: refused at its first byte"
run with_timeout 20 $MP info /dev/urandom
case "$rc:$out:$err" in
  "2::ljmemprof: /dev/urandom: not a memprof profile: bad data at byte "[0-6]": expected "*) s=0 ;;
  *) s=1; echo "# $rc:$err" ;;
esac
ok $s "/dev/urandom: refused at its first bytes"
run with_timeout 20 sh -c 'yes | "$0" report -' "$MP"
is "$rc:$out:$err" "2::ljmemprof: -: not a memprof profile: bad data at byte 0: expected magic \"ljs\" of a memprof symtab" \
  "yes | ljmemprof report -: refused at once"
run with_timeout 20 sh -c '{ printf "ljs\003\000\000\000\200ljm\003\000\000\000"; cat /dev/zero; } | "$0" report --leak-only -' "$MP"
is "$rc:$out:$err" "3:HEAP SUMMARY: 0B in 0 blocks live at the end, by the source that allocated or last resized them

NOTES:
the profile is damaged at byte 15, after 0 events: its frees after that are missing, so what is held is an upper bound (the blocks made before the cut that the program still held, and those it freed later)${NOTES_NONE#*NOTES:}:ljmemprof: -: warning: bad data at byte 15 (expected event header valid in version 3, found 0x00); reporting what came before" \
  "a profile's prologue, then endless zeros: stops at the first bad byte"
is "$(ls "$TMPD/tmp")" "" "nothing was written to TMPDIR"

# -- Streams --------------------------------------------------------------

# 60 MB of events through a pipe: one window of memory, whatever the length.
mk 'local pair = P.alloc(0x100, 32) .. P.free(0x100, 32)
    io.write(P.head()); local chunk = pair:rep(100000)
    for i = 1, 50 do io.write(chunk) end; io.write(P.final())' >"$TMPD/long.ljm"
run with_timeout 60 sh -c 'cat "$2" | "$0" "$1" info -' "$MAXRSS" "$MP" "$TMPD/long.ljm"
kb=$(printf '%s\n' "$err" | sed -n 's/^maxrss_kb //p')
is "$rc:$(echo "$out" | grep '^events:')" "0:events:     10000000 (alloc 5000000, realloc 0, free 5000000)" \
  "60 MB through a pipe: every event read"
ok $(( kb > 0 && kb < 16384 ? 0 : 1 )) "and the reader's peak RSS stays below 16 MB (${kb} KB)"

# A name of 3 MiB through a pipe: the window grows to hold it.
mk 'io.write(P.head(), P.sym_lua(0x1000, "@" .. ("x"):rep(3 * 2^20), 1),
             P.alloc_lua(0x1000, 2, 0x100, 16), P.final())' >"$TMPD/name.ljm"
run with_timeout 20 sh -c 'cat "$1" | "$0" report --leak-only -' "$MP" "$TMPD/name.ljm"
is "$rc:$out" "0:HEAP SUMMARY: 16B in 1 block live at the end, by the source that allocated or last resized them
@$(printf '%04095d' 0 | tr 0 x)... (3145729 bytes):2 holds 16B in 1 block (100.0%)$NOTES_NONE" \
  "a 3 MiB name through a pipe: read whole, cut to 4 KiB in the label"
piped=$out
run with_timeout 20 $MP report --leak-only "$TMPD/name.ljm"
is "$rc:$out" "0:$piped" "the same report from the file"

# -- One corrupt byte -----------------------------------------------------

# 100000 allocations of 16 bytes, 6 bytes each from byte 15; the header of
# the 50001st (byte 15 + 6 * 50000) is replaced by 0xff.
mk 'local t = { P.head() }
    for i = 0, 99999 do t[#t + 1] = P.alloc(0x200000 + 16 * i, 16) end
    t[#t + 1] = P.final(); io.write(table.concat(t))' >"$TMPD/whole.ljm"
cp "$TMPD/whole.ljm" "$TMPD/bad.ljm"
printf '\377' | dd of="$TMPD/bad.ljm" bs=1 seek=300015 conv=notrunc 2>/dev/null
run with_timeout 20 $MP report --leak-only "$TMPD/whole.ljm"
is "$rc:$out" "0:HEAP SUMMARY: 1600000B in 100000 blocks live at the end, by the source that allocated or last resized them
INTERNAL holds 1600000B in 100000 blocks (100.0%)$NOTES_NONE" "the whole profile"
run with_timeout 20 $MP report --leak-only "$TMPD/bad.ljm"
is "$rc:$out" "3:HEAP SUMMARY: 800000B in 50000 blocks live at the end, by the source that allocated or last resized them
INTERNAL holds 800000B in 50000 blocks (100.0%)

NOTES:
the profile is damaged at byte 300015, after 50000 events: its frees after that are missing, so what is held is an upper bound (the blocks made before the cut that the program still held, and those it freed later)${NOTES_NONE#*NOTES:}" \
  "one corrupt byte: the 50000 events before it are reported, status 3"
is "$err" "ljmemprof: $TMPD/bad.ljm: warning: bad data at byte 300015 (expected event header valid in version 3, found 0xff); reporting what came before" \
  "a warning names the offset and what was expected"
run with_timeout 20 sh -c 'cat "$1" | "$0" info -' "$MP" "$TMPD/bad.ljm"
is "$rc:$(echo "$out" | grep -e '^complete:' -e '^events:')" "3:complete:   no, bad data at byte 300015 (expected event header valid in version 3, found 0xff)
events:     50000 (alloc 50000, realloc 0, free 0)" "the same through a pipe (info)"
run with_timeout 20 $MP events "$TMPD/bad.ljm"
is "$rc:$(echo "$out" | wc -l):$(echo "$out" | tail -n 1)" '3:50001:{"complete":false}' \
  "events: the 50000 events, then complete false, status 3"

# -- Sizes that overflow --------------------------------------------------

mk 'io.write(P.head(), P.alloc(0x100, 2^62), P.alloc(0x200, 2^61), P.final())' >"$TMPD/big.ljm"
run with_timeout 20 $MP info "$TMPD/big.ljm"
is "$rc:$err:$(echo "$out" | grep -e '^allocated:' -e '^overflow:')" \
  "0::allocated:  6917529027641081856B (new sizes of alloc and realloc events)" \
  "sizes of 2^62 + 2^61 bytes: exact, no overflow"
mk 'io.write(P.head(), P.alloc(0x100, 2^62), P.alloc(0x200, 2^62),
             P.free(0x100, 2^62), P.alloc(0x300, 2^62), P.final())' >"$TMPD/ovf.ljm"
run with_timeout 20 $MP info "$TMPD/ovf.ljm"
is "$rc:$err" "3:ljmemprof: $TMPD/ovf.ljm: warning: the sizes in the profile add up to 2^63 bytes or more (absurd data): byte totals and differences are not exact" \
  "sizes adding up to 3 * 2^62: a warning, status 3"
is "$(echo "$out" | grep '^overflow:')" "overflow:   the sizes add up to 2^63 bytes or more: the byte figures are not exact" \
  "info says so"
run with_timeout 20 $MP report --format json "$TMPD/ovf.ljm"
case "$out" in *'"complete":true,"overflow":true,'*) s=0 ;; *) s=1 ;; esac
is "$rc:$s" "3:0" "the JSON report says overflow: true"
run with_timeout 20 $MP report --leak-only "$TMPD/ovf.ljm"
is "$rc" 3 "the text report too has status 3"

# -- Names: control characters, length ------------------------------------

mk 'io.write(P.head(), P.sym_lua(0x1000, "=\27[31mred\r", 1),
             P.sym_c(0x2000, "bad\255name\t\194\155"),
             P.sym_lua(0x3000, "return {}\27[2J", 1),
             P.alloc_lua(0x1000, 1, 0x100, 16), P.alloc_c(0x2000, 0x200, 8),
             P.alloc_lua(0x3000, 1, 0x300, 4), P.final())' >"$TMPD/ctl.ljm"
run with_timeout 20 $MP report --leak-only "$TMPD/ctl.ljm"
is "$rc:$out" '0:HEAP SUMMARY: 28B in 3 blocks live at the end, by the source that allocated or last resized them
=\x1b[31mred\r:1 holds 16B in 1 block (57.1%)
bad\xffname\t\xc2\x9b holds 8B in 1 block (28.6%)
function_alias_1:1 holds 4B in 1 block (14.3%)

ALIASES:
function_alias_1:
1	| return {}\x1b[2J'"$NOTES_NONE" "text: control characters, C1 controls and bytes that are not UTF-8 escaped"
run with_timeout 20 $MP report --format json --leak-only "$TMPD/ctl.ljm"
case "$out" in
  *'"label":"=\u001b[31mred\u000d:1"'*'"name":"bad\u00ffname\t\u009b"'*'"text":"return {}\u001b[2J"'*) s=0 ;;
  *) s=1 ;;
esac
ok $s "JSON: the same names, escaped for JSON"

# A sparse file of 1 GiB and a few KB on disk: four symbols whose names
# are 256 MiB long ("@bigN" and zeros).
OUT="$TMPD/sparse.ljm" luajit -e '
  local P = dofile("tests/lib/mkprof.lua")
  local f = assert(io.open(os.getenv("OUT"), "wb"))
  f:write(P.head())
  for i = 1, 4 do
    f:write(string.char(8), P.uleb(0x1000 * i), P.uleb(2^28), "@big" .. i)
    f:seek("cur", 2^28 - 5)
    f:write(P.uleb(1))
  end
  for i = 1, 4 do f:write(P.alloc_lua(0x1000 * i, 1, 0x100 * i, 8)) end
  f:write(P.final())
  f:close()'
run with_timeout 60 $MAXRSS $MP report "$TMPD/sparse.ljm"
is "$rc:$(echo "$out" | grep -c '^@big[1-4]\.\.\. (268435456 bytes):1 holds 8B in 1 block (25\.0%)$')" "0:4" \
  "four 256 MiB names: labels cut at their NUL bytes, with their length"
kb=$(sed -n 's/^maxrss_kb //p' "$TMPD/err")
ok $(( kb < 65536 ? 0 : 1 )) "the reader's peak RSS stays below 64 MB (${kb} KB)"
run with_timeout 60 $MP report --format json "$TMPD/sparse.ljm"
bytes=$(wc -c <"$TMPD/out")
ok $(( rc == 0 && bytes < 1048576 ? 0 : 1 )) "JSON of the four names: ${bytes} bytes (names cut at 4 KiB)"
run with_timeout 60 $MP events "$TMPD/sparse.ljm"
bytes=$(wc -c <"$TMPD/out")
ok $(( rc == 0 && bytes < 262144 ? 0 : 1 )) "events of the four names: ${bytes} bytes"

# -- Progress -------------------------------------------------------------

mk 'local t = { P.head() }
    for i = 0, 599999 do t[#t + 1] = P.alloc(0x200000 + 16 * (i % 1000), 16) end
    t[#t + 1] = P.final(); io.write(table.concat(t))' >"$TMPD/prog.ljm"
run with_timeout 20 $MP info "$TMPD/prog.ljm"
is "$rc:$err" "0:" "not a terminal: no progress line"
LJMEMPROF_PROGRESS=always run with_timeout 20 $MP info "$TMPD/prog.ljm"
case "$err" in
  "ljmemprof: reading $TMPD/prog.ljm: "[0-9]*" MB, "[0-9]*"M events, "[0-9]*"M events/s"*) s=0 ;;
  *) s=1 ;;
esac
is "$rc:$s" "0:0" "LJMEMPROF_PROGRESS=always: progress lines (bytes, events, rate) on stderr"
LJMEMPROF_PROGRESS=sometimes run with_timeout 20 $MP info "$TMPD/prog.ljm"
is "$rc:$err" "0:ljmemprof: LJMEMPROF_PROGRESS: bad value 'sometimes' (never, always, auto or seconds); using auto" \
  "a bad LJMEMPROF_PROGRESS value is said"
# On a terminal (script(1) gives one): a line rewritten in place, erased
# at the end; none for a read shorter than the delay (1.5 s by default).
with_timeout 30 script -qec "env LJMEMPROF_PROGRESS=0 $MP info $TMPD/prog.ljm >/dev/null" /dev/null \
  >"$TMPD/tty" 2>&1
rc=$?
grep -q "$(printf '\r')ljmemprof: reading $TMPD/prog.ljm: [0-9.]* MB, [0-9.]*M events, [0-9.]*M events/s$(printf '\033')\[K" "$TMPD/tty"
is "$rc:$?" "0:0" "on a terminal, delay 0: the progress line"
tail -c 4 "$TMPD/tty" | od -An -c | tr -s ' ' >"$TMPD/end"
is "$(cat "$TMPD/end")" " \r 033 [ K" "and it is erased at the end"
with_timeout 30 script -qec "$MP info $TMPD/prog.ljm >/dev/null" /dev/null >"$TMPD/tty" 2>&1
is "$?:$(grep -c reading "$TMPD/tty")" "0:0" "on a terminal, a short read: no progress line"
with_timeout 30 script -qec "env LJMEMPROF_PROGRESS=never $MP info $TMPD/prog.ljm >/dev/null" /dev/null >"$TMPD/tty" 2>&1
is "$?:$(grep -c reading "$TMPD/tty")" "0:0" "LJMEMPROF_PROGRESS=never: none on a terminal"
done_testing
