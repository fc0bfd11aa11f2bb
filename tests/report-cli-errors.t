#!/bin/sh
# The command line on bad input: what is not a profile (an empty file,
# text, an unknown version) is one error line on stderr naming the file,
# the byte offset and what was expected, with nothing on stdout and exit
# status 2; a profile cut short or damaged after its prologue is reported
# up to the cut or the damage with one warning line and status 3; usage
# errors say what is wrong and exit 2; --help exits 0.
. tests/lib/tap.sh
MP=$BUILD/ljmemprof

# A complete v3 stream without symbols: one alloc, one free, the epilogue.
good="$TMPD/good.ljm"
printf 'ljs\003\000\000\000\200ljm\003\000\000\000\005\200\002\040\006\200\002\040\200' >"$good"

run $MP report "$TMPD/missing.ljm"
is "$rc:$out" "2:" "missing file: status 2, no output"
is "$err" "ljmemprof: $TMPD/missing.ljm: No such file or directory" \
  "missing file: one error line"

mkdir "$TMPD/dir.ljm"
run $MP report "$TMPD/dir.ljm"
is "$rc:$err" "2:ljmemprof: $TMPD/dir.ljm: Is a directory" \
  "a directory (unreadable as a profile, even for root)"

run $MP info "$good/x"
is "$rc:$err" "2:ljmemprof: $good/x: Not a directory" "path through a file"

printf 'hello, world\n' >"$TMPD/text.ljm"
run $MP report "$TMPD/text.ljm"
is "$rc:$out" "2:" "not a profile: status 2, no output"
is "$err" "ljmemprof: $TMPD/text.ljm: not a memprof profile: bad data at byte 0: expected magic \"ljs\" of a memprof symtab" \
  "not a profile: file, offset, what was expected"

printf 'ljs\005\000\000\000\200' >"$TMPD/v5.ljm"
run $MP report "$TMPD/v5.ljm"
is "$rc:$out:$err" "2::ljmemprof: $TMPD/v5.ljm: not a memprof profile: bad data at byte 3: expected ljs version 1 to 3, found version 5" \
  "unsupported version: not a profile"

# The NOTES of a profile cut short or damaged (how, at byte $2) after one
# event: that note, then the one of no final collection.
notes_cut() {
  printf '\n\nNOTES:\nthe profile is %s at byte %s, after 1 event: its frees after that are missing, so what is held is an upper bound (the blocks made before the cut that the program still held, and those it freed later)%s' \
    "$1" "$2" "${NOTES_NONE#*NOTES:}"
}
# An alloc event (offsets 15-18), then a header with source 7 (offset 19).
printf 'ljs\003\000\000\000\200ljm\003\000\000\000\005\200\002\040\037\200\002\040\200' >"$TMPD/badev.ljm"
run $MP report --leak-only "$TMPD/badev.ljm"
is "$rc:$out" "3:HEAP SUMMARY: 32B in 1 block live at the end, by the source that allocated or last resized them
INTERNAL holds 32B in 1 block (100.0%)$(notes_cut damaged 19)" "bad event: what came before it is reported, status 3"
is "$err" "ljmemprof: $TMPD/badev.ljm: warning: bad data at byte 19 (expected event header valid in version 3, found 0x1f); reporting what came before" \
  "bad event header: one warning with offset and expectation"
run $MP info "$TMPD/badev.ljm"
is "$rc:$(echo "$out" | grep complete:)" "3:complete:   no, bad data at byte 19 (expected event header valid in version 3, found 0x1f)" \
  "info on bad data: where it stopped, status 3"
run $MP report --format json "$TMPD/badev.ljm"
case "$out" in
  *'"complete":false,"truncated_at":19,"damaged":true,'*) s=0 ;; *) s=1 ;;
esac
is "$rc:$s" "3:0" "json on bad data: complete false, damaged at 19, status 3"

# Overlong number in the free event.
printf 'ljs\003\000\000\000\200ljm\003\000\000\000\006\200\200\200\200\200\200\200\200\200\200\001\200' >"$TMPD/long.ljm"
run $MP report "$TMPD/long.ljm"
is "$rc:$err" "3:ljmemprof: $TMPD/long.ljm: warning: bad data at byte 16 (expected ULEB128 old address, found an overlong number); reporting what came before" \
  "overlong ULEB128"

# Cut inside the free event: reported, warned, status 3.
head -c 20 "$good" >"$TMPD/cut.ljm"
run $MP report --leak-only "$TMPD/cut.ljm"
is "$rc" 3 "cut stream: status 3"
is "$out" "HEAP SUMMARY: 32B in 1 block live at the end, by the source that allocated or last resized them
INTERNAL holds 32B in 1 block (100.0%)$(notes_cut "cut short" 20)" "cut stream: the alloc before the cut is reported"
is "$err" "ljmemprof: $TMPD/cut.ljm: warning: data ends at byte 20 before the end of the profile (expected ULEB128 old address, found end of data); reporting what came before" \
  "cut stream: one warning line with the offset"
: >"$TMPD/empty.ljm"
run $MP report --leak-only "$TMPD/empty.ljm"
is "$rc:$out:$err" "2::ljmemprof: $TMPD/empty.ljm: not a memprof profile: it is empty" \
  "empty file: not a profile, status 2, no output"
run $MP report - </dev/null
is "$rc:$out:$err" "2::ljmemprof: -: not a memprof profile: it is empty" \
  "empty standard input: not a profile"
printf 'ljs\003' >"$TMPD/short.ljm"
run $MP info "$TMPD/short.ljm"
is "$rc:$out:$err" "2::ljmemprof: $TMPD/short.ljm: not a memprof profile: data ends at byte 4: expected ljs prologue (7 bytes), found end of data" \
  "shorter than the prologue: not a profile"
run $MP info "$TMPD/cut.ljm"
is "$rc" 3 "info on a cut stream: status 3"

run $MP report --leak-only "$good"
is "$rc:$out:$err" "0:HEAP SUMMARY: 0B in 0 blocks live at the end, by the source that allocated or last resized them$NOTES_NONE:" "complete stream: status 0, nothing held"
# --heap native on a profile recorded without native memory: every format
# would be empty; one error line instead, status 2, no output file.
for f in text json collapsed; do
  run $MP report --heap native --format $f -o "$TMPD/nat.out" "$good"
  is "$rc:$out:$err:$(ls "$TMPD/nat.out" 2>/dev/null)" "2::ljmemprof: $good: --heap native: the profile has no native memory (it was not recorded with native = true: mp.start{native = true}, or 'ljmemprof run --native'):" \
    "report --heap native --format $f of a profile without native memory: one error, no output"
done
run $MP diff --heap native "$good" "$good"
is "$rc:$out" "2:" "diff --heap native: the same error, status 2"
run $MP report --heap vm --leak-only "$good"
is "$rc:$out" "0:HEAP SUMMARY: 0B in 0 blocks live at the end, by the source that allocated or last resized them$NOTES_NONE" "--heap vm of it: its report"
run $MP run --heap native "$TMPD/nonexist.lua"
is "$rc:$out:$err" "2::ljmemprof run: --heap native needs --native: without it no native memory is recorded" \
  "run --heap native without --native: refused before anything runs"
run $MP report --leak-only - <"$TMPD/cut.ljm"
is "$rc:$out" "3:HEAP SUMMARY: 32B in 1 block live at the end, by the source that allocated or last resized them
INTERNAL holds 32B in 1 block (100.0%)$(notes_cut "cut short" 20)" "'-' reads standard input"

out=$(cat "$TMPD/cut.ljm" | with_timeout 60 $MP report --leak-only - 2>/dev/null)
is "$?:$out" "3:HEAP SUMMARY: 32B in 1 block live at the end, by the source that allocated or last resized them
INTERNAL holds 32B in 1 block (100.0%)$(notes_cut "cut short" 20)" "'-' reads a pipe"
out=$(cat "$TMPD/cut.ljm" | TMPDIR="$TMPD/none" with_timeout 60 $MP report --leak-only - 2>/dev/null)
is "$?:$out" "3:HEAP SUMMARY: 32B in 1 block live at the end, by the source that allocated or last resized them
INTERNAL holds 32B in 1 block (100.0%)$(notes_cut "cut short" 20)" "a pipe is read as a stream: no temporary file, TMPDIR unused"

# Usage errors.
run $MP report --bogus "$good"
is "$rc:$out:$err" "2::ljmemprof report: unknown option '--bogus' (see 'ljmemprof report --help')" \
  "unknown option"
run $MP report "$good" --top
is "$rc:$err" "2:ljmemprof report: option '--top' needs an argument (see 'ljmemprof report --help')" \
  "missing option argument"
run $MP report --sort size "$good"
is "$rc:$err" "2:ljmemprof report: bad value 'size' for option '--sort' (bytes or count; see 'ljmemprof report --help')" \
  "bad option value"
run $MP report --top=-1 "$good"
is "$rc:$err" "2:ljmemprof report: bad value '-1' for option '--top' (a number of rows, 0 for all; see 'ljmemprof report --help')" \
  "negative --top"
run $MP report --format=xml "$good"
is "$rc:$err" "2:ljmemprof report: bad value 'xml' for option '--format' (text, json, collapsed, svg, pprof or html; see 'ljmemprof report --help')" \
  "unknown --format: the formats listed"
run $MP report --heap lua "$good"
is "$rc:$err" "2:ljmemprof report: bad value 'lua' for option '--heap' (all, vm or native; see 'ljmemprof report --help')" \
  "unknown --heap: its values listed"
run $MP report --accounting memprof "$good"
is "$rc:$err" "2:ljmemprof report: bad value 'memprof' for option '--accounting' (live or tarantool; see 'ljmemprof report --help')" \
  "unknown --accounting: its values listed"
run $MP report
is "$rc:$err" "2:ljmemprof report: missing FILE (see 'ljmemprof report --help')" "missing FILE"
run $MP diff "$good"
is "$rc:$err" "2:ljmemprof diff: two profiles expected, BASE and NEW, got 1 (see 'ljmemprof diff --help')" "diff with one file"
# diff orders by the change of the metric: --sort was taken and did nothing.
cp "$good" "$TMPD/good2.ljm"
run $MP diff --sort count "$good" "$TMPD/good2.ljm"
is "$rc:$err" "2:ljmemprof diff: --sort is for report; diff orders by the change of --metric (see 'ljmemprof diff --help')" \
  "diff --sort is refused"
# The manuals list only formats their command takes (diff's listed svg and
# pprof, which it refuses).
for c in report run diff; do
  bad=
  for f in $($MP $c --help | sed -n 's/^    --format \([a-z|]*\)$/\1/p; /^FORMATS$/,$s/^    \([a-z]*\) .*/\1/p' | tr '|' ' '); do
    case $f in FORMAT) continue ;; esac
    $MP $c --format "$f" --help >/dev/null 2>&1 || bad="$bad $f"
    [ $c = diff ] && $MP diff --format "$f" -o "$TMPD/fmt.out" "$good" "$TMPD/good2.ljm" 2>&1 |
      grep -q 'has no diff' && bad="$bad $f"
  done
  is "$bad" "" "$c --help lists only formats that $c takes"
done
# run takes report's options; its manual names each (--peak and
# --temporary worked but were not in it).
missing=
for o in --format --sort --top --leak-only --human-readable --metric --peak --temporary; do
  $MP run --help | grep -q -- "$o\>" || missing="$missing $o"
done
is "$missing" "" "run --help names every report option run takes"
run $MP info --leak-only "$good"
is "$rc:$err" "2:ljmemprof info: unknown option '--leak-only' (see 'ljmemprof info --help')" \
  "report options are not info's"
run $MP
is "$rc" 2 "no command"
run $MP frobnicate
is "$rc:$err" "2:ljmemprof: unknown command 'frobnicate' (see 'ljmemprof --help')" "unknown command"
run $MP run
is "$rc:$err" "2:ljmemprof run: missing SCRIPT (see 'ljmemprof run --help')" "run without a script"
run $MP run -o
is "$rc:$err" "2:ljmemprof run: option '-o' needs an argument (see 'ljmemprof run --help')" "run -o without a file"
run $MP run --luajit "$TMPD/no-luajit" "$TMPD/x.lua"
is "$rc" 127 "run: luajit that cannot be executed: status 127"
is "$(echo "$err" | head -n 1)" "ljmemprof run: cannot run $TMPD/no-luajit: No such file or directory" \
  "run: says why"

# An output that is an input: refused before anything is opened, by the
# file's identity (another name, a hard or a symbolic link, standard
# input), and the profile is left as it was. An output that does not
# exist yet is fine.
cp "$good" "$TMPD/in.ljm"
ln "$TMPD/in.ljm" "$TMPD/hard.ljm"
ln -s in.ljm "$TMPD/sym.ljm"
# refused OUT ARGS...: `ljmemprof ARGS`, run in $TMPD, refuses -o OUT.
refused() {
  o=$1
  shift
  (cd "$TMPD" && with_timeout 60 $MP "$@" >out 2>err)
  is "$?:$(cat "$TMPD/out"):$(cat "$TMPD/err")" "2::ljmemprof $1: -o $o: is the input profile in.ljm (it would be overwritten)" \
    "$*: refused, status 2, nothing on stdout"
  cmp -s "$good" "$TMPD/in.ljm"
  ok $? "$*: the profile is intact"
}
refused in.ljm report -o in.ljm in.ljm
refused ./in.ljm report --format pprof -o ./in.ljm in.ljm
refused in.ljm report --format html --output=in.ljm in.ljm
refused hard.ljm report -o hard.ljm good.ljm in.ljm
refused sym.ljm diff -o sym.ljm good.ljm in.ljm
refused in.ljm diff --format json -o in.ljm in.ljm good.ljm
run $MP report --leak-only -o "$TMPD/sym.ljm" - <"$TMPD/in.ljm"
is "$rc:$out:$err" "2::ljmemprof report: -o $TMPD/sym.ljm: is the input profile on standard input (it would be overwritten)" \
  "-o naming the file on standard input: refused"
cmp -s "$good" "$TMPD/in.ljm"
ok $? "the profile on standard input is intact"
run $MP report --leak-only -o "$TMPD/new.txt" "$TMPD/in.ljm"
is "$rc:$out:$err:$(cat "$TMPD/new.txt")" "0:::HEAP SUMMARY: 0B in 0 blocks live at the end, by the source that allocated or last resized them$NOTES_NONE" \
  "an output that does not exist yet is written"

# An input given twice: refused by the file's identity (the same name,
# a hard or a symbolic link, standard input twice or redirected from a
# file also named), not counted twice (report merged it with itself),
# nor read twice from one pipe (diff - - said "0 sources changed").
cp "$good" "$TMPD/other.ljm"
# twice WANT_ERROR ARGS...: `ljmemprof ARGS`, run in $TMPD with in.ljm on
# standard input, fails with status 2, nothing on stdout, that error line.
twice() {
  e=$1
  shift
  (cd "$TMPD" && with_timeout 60 $MP "$@" <in.ljm >out 2>err)
  is "$?:$(cat "$TMPD/out"):$(cat "$TMPD/err")" "2::$e" "$*: refused"
}
twice "ljmemprof report: in.ljm is given twice (give each profile once)" \
  report in.ljm in.ljm
twice "ljmemprof report: in.ljm and sym.ljm are the same file (give each profile once)" \
  report in.ljm other.ljm sym.ljm
twice "ljmemprof report: hard.ljm and ./in.ljm are the same file (give each profile once)" \
  report --format json hard.ljm ./in.ljm
twice "ljmemprof report: standard input ('-') is given twice (give each profile once)" \
  report - -
twice "ljmemprof report: standard input ('-') and in.ljm are the same file (give each profile once)" \
  report --format collapsed - in.ljm
twice "ljmemprof diff: in.ljm is given twice (give each profile once)" \
  diff in.ljm in.ljm
twice "ljmemprof diff: in.ljm and sym.ljm are the same file (give each profile once)" \
  diff --format json in.ljm sym.ljm
twice "ljmemprof diff: standard input ('-') is given twice (give each profile once)" \
  diff - -
twice "ljmemprof events: one FILE expected, got 'in.ljm' and 'in.ljm' (see 'ljmemprof events --help')" \
  events in.ljm in.ljm
twice "ljmemprof info: one FILE expected, got '-' and '-' (see 'ljmemprof info --help')" \
  info - -
out=$(cat "$good" | with_timeout 60 $MP report - - 2>&1)
is "$?:$out" "2:ljmemprof report: standard input ('-') is given twice (give each profile once)" \
  "report - - from a pipe: refused"
(cd "$TMPD" && with_timeout 60 $MP report - other.ljm <in.ljm >out 2>err)
is "$?:$(cat "$TMPD/err"):$(sed -n 2p "$TMPD/out")" "0::INTERNAL: 2 events	+64B	-0B" \
  "two files with the same bytes are two profiles: one allocation each"

# An existing output is truncated only when the report is written: a bad
# input leaves it as it was, and makes no new file.
printf 'precious\n' >"$TMPD/keep.txt"
run $MP report -o "$TMPD/keep.txt" "$TMPD/text.ljm"
is "$rc:$out:$(cat "$TMPD/keep.txt")" "2::precious" \
  "report: a bad input leaves an existing -o file as it was"
run $MP diff -o "$TMPD/keep.txt" "$good" "$TMPD/text.ljm"
is "$rc:$out:$(cat "$TMPD/keep.txt")" "2::precious" \
  "diff: a bad input leaves an existing -o file as it was"
run $MP report --format html -o "$TMPD/none.html" "$TMPD/text.ljm"
test -e "$TMPD/none.html"
ok $(( $? == 0 )) "a bad input makes no new -o file"
seq 1 1000 >"$TMPD/long.txt"
run $MP report --leak-only -o "$TMPD/long.txt" "$good"
is "$rc:$(cat "$TMPD/long.txt")" "0:HEAP SUMMARY: 0B in 0 blocks live at the end, by the source that allocated or last resized them$NOTES_NONE" \
  "report: a longer existing -o file is truncated when written"
seq 1 1000 >"$TMPD/long.txt"
run $MP diff -o "$TMPD/long.txt" "$good" "$TMPD/other.ljm"
is "$rc:$(cat "$TMPD/long.txt")" "0:DIFF: $good -> $TMPD/other.ljm, by the largest change of allocated bytes
TOTAL:
	allocated        32B -> 32B (+0B) in 1 -> 1 events (+0)
	freed            32B -> 32B (+0B) in 1 -> 1 events (+0)
	held at the end  0B -> 0B (+0B) in 0 -> 0 blocks (+0)
0 sources changed, 1 did not" "diff: a longer existing -o file is truncated when written"

# Manuals.
for c in "" report info run events; do
  if [ -n "$c" ]; then run $MP $c --help; else run $MP --help; fi
  case "$out" in *SYNOPSIS*"EXIT STATUS"*) s=0 ;; *) s=1 ;; esac
  ok $(( s + rc )) "ljmemprof $c --help: a manual with synopsis and exit status"
done
# Each option's text is under that option: --metric ends with what it
# does for pprof, --temporary with its window.
run $MP report --help
is "$(echo "$out" | sed -n '/^    --metric /,/^    --peak$/p' | tail -n 3)" \
"        For pprof, the sample type shown first. Text and json take it
        only with --stacks-per-source.
    --peak" "report --help: pprof's sample type is under --metric"
is "$(echo "$out" | sed -n '/^    --temporary /,/^    -o FILE/p')" \
"    --temporary [N]
        Text and json: add TEMPORARY, with a window of N allocations
        (10000 without N; at least 1). The frees of a final full
        collection (\`run\`, stop{collect = true}) are not counted: they
        end blocks that lived to the end. In a profile that does not
        mark where that collection starts (Tarantool's, or from an
        older ljmemprof) they count like any other.
    -o FILE, --output FILE" "report --help: --temporary says only its own, and what the final collection's frees are"
run $MP help report
is "$rc:$(echo "$out" | head -n 2 | tail -n 1)" "0:    ljmemprof report - print where a LuaJIT program allocated memory" \
  "ljmemprof help report"
run $MP help info extra
is "$rc:$out:$err" "2::ljmemprof: help takes one command at most, not 'extra' (see 'ljmemprof --help')" \
  "ljmemprof help with two arguments: an error, no manual"

# Writing the report fails: an error, not silence.
if [ -w /dev/full ]; then
  run sh -c "$MP report '$good' >/dev/full"
  is "$rc:$err" "2:ljmemprof: standard output: No space left on device" "stdout write error"
fi
# --version: the version the module says it is (one definition, in
# include/ljmemprof.h); it takes nothing after it.
run $MP --version
mod=$(cd "$TMPD" && LUA_CPATH="$BUILD/?.so;;" with_timeout 60 "${LUAJIT:-luajit}" -e 'io.write(require("ljmemprof")._VERSION)' 2>&1)
is "$rc:$out:$err" "0:$mod:" "--version prints what the module's _VERSION says ($mod)"
is "$(printf '%s' "$out" | sed -n 's/^ljmemprof [0-9][0-9.]*$/ok/p')" "ok" "--version: 'ljmemprof' and a number"
# The manual's synopsis has every command of its COMMANDS list.
run $MP --help
for c in run report diff check info events snapshot help; do
  echo "$out" | sed -n '/^SYNOPSIS/,/^DESCRIPTION/p' | grep -q "^    ljmemprof $c "
  ok $? "--help: the synopsis has $c"
done
# A LuaJIT option before the script: an error that says where it goes.
run $MP run -joff "$TMPD/none.lua"
is "$rc:$out:$err" "2::ljmemprof run: unknown option '-joff': LuaJIT's own options go after --, with the luajit command: 'ljmemprof run [OPTIONS] -- luajit -joff SCRIPT [ARGS...]'" \
  "run -joff SCRIPT: LuaJIT's option, said so, with the command that works"
run $MP run -O3 "$TMPD/none.lua"
is "$rc:$(echo "$err" | cut -c1-56)" "2:ljmemprof run: unknown option '-O3': LuaJIT's own option" "run -O3: the same"
run $MP run -x "$TMPD/none.lua"
is "$rc:$err" "2:ljmemprof run: unknown option '-x' (see 'ljmemprof run --help')" "run -x: a plain unknown option"
# events on a file that is not a profile: the error line alone.
printf 'not a profile at all' >"$TMPD/text.txt"
run $MP events "$TMPD/text.txt"
is "$rc:$out:$err" "2::ljmemprof: $TMPD/text.txt: not a memprof profile: bad data at byte 0: expected magic \"ljs\" of a memprof symtab" \
  "events on a file that is not a profile: one error line, status 2, nothing on standard output"
run $MP events "$TMPD/cut.ljm"
is "$rc:$(echo "$out" | tail -n 1)" '3:{"complete":false}' "events on a cut profile: its events, then complete false"
run $MP --version extra
is "$rc:$out:$err" "2::ljmemprof: --version takes no arguments" "--version with an argument: an error"

done_testing
