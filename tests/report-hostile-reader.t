#!/bin/sh
# The reader and the CLI under hostile hosts and files (issue 18): `run`
# never writes over the file its standard input, output or error is
# redirected to; a script that removes the profile's directory loses
# nothing and is told as it is; a mapped profile that another process
# truncates while it is read ends early (status 3, the warning of a cut
# profile) instead of killing the reader with SIGBUS.
. tests/lib/tap.sh
MP="$BUILD/ljmemprof"
unset LUA_CPATH
cd "$TMPD" || exit 1

# -- run: outputs that are the command's own standard streams -------------

seq 1000 > d.txt
sum=$(cksum < d.txt)
cat > s.lua <<'EOF'
local n = 0
for _ in io.lines() do n = n + 1 end
io.open("ran.txt", "w"):close()
print(n)
EOF
export MP
# redirected REDIR ARGS...: `ljmemprof run ARGS s.lua` with the shell
# redirection REDIR (e.g. "<d.txt"), under run's timeout.
redirected() {
  redir=$1
  shift
  rm -f ran.txt
  run sh -c "\"\$MP\" run \"\$@\" s.lua $redir" sh "$@"
}
# refused WANT REDIR ARGS...: refused before the script runs, d.txt intact.
refused() {
  want=$1
  shift
  redirected "$@"
  is "$rc:$err:$(ls ran.txt 2>/dev/null):$(cksum < d.txt)" "2:$want::$sum" \
    "run $2 $3 s.lua $1: refused, d.txt as it was"
}
refused "ljmemprof run: -o d.txt: is the standard input of the command to run (it would be overwritten)" \
  "<d.txt" -o d.txt
refused "ljmemprof run: --html d.txt: is the standard input of the command to run (it would be overwritten)" \
  "<d.txt" --html d.txt
ln d.txt hard.txt
refused "ljmemprof run: -o hard.txt: is the standard input of the command to run (it would be overwritten)" \
  "<d.txt" -o hard.txt
# Standard output and error, appended to: their data would be lost too.
refused "ljmemprof run: --html d.txt: is the standard output, where the script's output and the report go (it would be overwritten)" \
  "</dev/null >>d.txt" --html d.txt
refused "ljmemprof run: -o d.txt: is the standard output, where the script's output and the report go (it would be overwritten)" \
  "</dev/null >>d.txt" -o d.txt
refused "ljmemprof run: --output-report d.txt: is the standard output, where the script's output and the report go (it would be overwritten)" \
  "</dev/null >>d.txt" --output-report d.txt
cp d.txt e.txt
redirected "</dev/null 2>>d.txt" -o d.txt
is "$rc:$out:$(ls ran.txt 2>/dev/null)" "2::" "run -o d.txt s.lua 2>>d.txt: refused"
is "$(tail -n 1 d.txt)" "ljmemprof run: -o d.txt: is the standard error, where the script's errors and ours go (it would be overwritten)" \
  "run -o d.txt s.lua 2>>d.txt: said on d.txt"
is "$(head -n 1000 d.txt | cksum)" "$sum" "run -o d.txt s.lua 2>>d.txt: the data of d.txt kept"
seq 1000 > d.txt
# A device shared by the streams and an output loses nothing: allowed.
run "$MP" run --html /dev/null --top 1 s.lua < /dev/null
is "$rc:$(ls ran.txt 2>/dev/null)" "0:ran.txt" "run --html /dev/null </dev/null runs"

# -- run: the script removes the profile's file or directory --------------

mkdir dd
cat > rmdir.lua <<'EOF'
jit.off() os.execute("rm -rf dd")
local t = {}
for i = 1, 100 do t[i] = {} end
EOF
rm -f tmp/*
mkdir -p tmp
run env TMPDIR="$TMPD/tmp" "$MP" run -o dd/x.ljm --top 1 rmdir.lua
kept=$(ls tmp)
is "$rc:$(echo "$err" | sed 's/x\.ljm\.[A-Za-z0-9]*/x.ljm.XXXXXX/; s/ljmemprof-[A-Za-z0-9]*\.ljm/ljmemprof-XXXXXX.ljm/')" \
  "2:ljmemprof run: the profile's file dd/x.ljm.XXXXXX was removed while the script ran; its data was still open here
ljmemprof run: -o dd/x.ljm: No such file or directory
ljmemprof run: the profile is kept in $TMPD/tmp/ljmemprof-XXXXXX.ljm" \
  "run -o dir/x.ljm, the script removes dir: said as it is, status 2"
report=$out
run "$MP" info "tmp/$kept"
is "$rc:$(echo "$out" | grep complete:)" "0:complete:   yes" "the kept copy is the complete profile"
run "$MP" report --top 1 "tmp/$kept"
is "$out" "$report" "the report printed is the kept copy's, from the data still open"
echo "$out" | grep -q '^@rmdir\.lua:3: '
ok $? "it bills the script's line 3"
rm -f tmp/*

mkdir dd
cat > rmtmp.lua <<'EOF'
jit.off() os.execute("rm -f dd/x.ljm.*")
local t = {}
for i = 1, 100 do t[i] = {} end
EOF
run env TMPDIR="$TMPD/tmp" "$MP" run -o dd/x.ljm --top 1 rmtmp.lua
is "$rc:$(echo "$err" | sed 's/x\.ljm\.[A-Za-z0-9]*/x.ljm.XXXXXX/')" \
  "0:ljmemprof run: the profile's file dd/x.ljm.XXXXXX was removed while the script ran; its data was still open here" \
  "run -o dir/x.ljm, the script removes the file being recorded: copied back"
run "$MP" info dd/x.ljm
is "$rc:$(echo "$out" | grep complete:):$(ls dd):$(ls tmp)" "0:complete:   yes:x.ljm:" \
  "-o's file is the complete profile, nothing else left behind"

# -- A mapped profile truncated while it is read ---------------------------

# shrink.so: a file mapped for reading is cut to $SHRINK_TO bytes right
# after it is mapped, as another process truncating it then would.
cat > shrink.c <<'EOF'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
void *mmap(void *a, size_t n, int prot, int flags, int fd, off_t off)
{
  static void *(*real)(void *, size_t, int, int, int, off_t);
  const char *to = getenv("SHRINK_TO");
  char path[64];
  void *p;
  int w;
  if (!real)
    real = (void *(*)(void *, size_t, int, int, int, off_t))dlsym(RTLD_NEXT, "mmap");
  p = real(a, n, prot, flags, fd, off);
  if (p != MAP_FAILED && fd >= 0 && to) {
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    if ((w = open(path, O_WRONLY)) >= 0) {
      if (ftruncate(w, atol(to)) != 0) perror("ftruncate");
      close(w);
    }
  }
  return p;
}
EOF
cc -shared -fPIC -o shrink.so shrink.c -ldl
ok $? "the truncating shim builds"
cat > big.lua <<'EOF'
local t = {}
for i = 1, 30000 do t[i] = { i } end
EOF
run "$MP" run -o big.ljm --top 1 big.lua
run "$MP" run --stacks -o bigs.ljm --top 1 big.lua
[ "$(wc -c < big.ljm)" -gt 200000 ] && [ "$(wc -c < bigs.ljm)" -gt 200000 ]
ok $? "profiles of more than 200000 bytes"
# shrunk PROFILE SIZE CMD: CMD on a copy of PROFILE cut to SIZE bytes once
# mapped, and CMD on a copy cut before it is read: the same output, status
# 3, and the warning that the file shrank.
shrunk() {
  prof=$1 size=$2 cmd=$3
  big=$(wc -c < "$prof")
  cp "$prof" m.ljm
  head -c "$size" "$prof" > c.ljm
  run env SHRINK_TO="$size" LD_PRELOAD="$TMPD/shrink.so" "$MP" "$cmd" m.ljm
  mrc=$rc mout=$(echo "$out" | sed 's/m\.ljm/X.ljm/') merr=$(echo "$err" | sed 's/m\.ljm/X.ljm/')
  run "$MP" "$cmd" c.ljm
  is "$mrc:$(wc -c < m.ljm)" "3:$size" "$cmd $prof cut to $size bytes while mapped: status 3, no SIGBUS"
  is "$mout" "$(echo "$out" | sed 's/c\.ljm/X.ljm/')" "$cmd $prof cut to $size bytes: what a file of $size bytes gives"
  is "$merr" "ljmemprof: X.ljm: warning: the file shrank from $big to $size bytes while it was read (another process truncated it)
$(echo "$err" | sed 's/c\.ljm/X.ljm/')" "$cmd $prof cut to $size bytes: the warnings of a cut profile, and why"
}
shrunk big.ljm 98304 info	# At a page: the first read past it faults.
shrunk big.ljm 100001 info	# Inside a page: zeros, then the size again.
shrunk bigs.ljm 131072 info
shrunk bigs.ljm 150001 report
shrunk big.ljm 98304 events	# Prints as it reads: nothing twice.
shrunk bigs.ljm 150001 events
# Cut to nothing (a new recording into the path truncates it first): the
# profile read ends early, at byte 0, as one cut short does.
cp big.ljm m.ljm
run env SHRINK_TO=0 LD_PRELOAD="$TMPD/shrink.so" "$MP" info m.ljm
is "$rc:$(printf '%s\n' "$out" | sed -n 3p):$err" "3:complete:   no, data ends at byte 0 (expected ljs prologue (7 bytes), found end of data):ljmemprof: m.ljm: warning: the file shrank from $(wc -c < big.ljm) to 0 bytes while it was read (another process truncated it)
ljmemprof: m.ljm: warning: data ends at byte 0 before the end of the profile (expected ljs prologue (7 bytes), found end of data); reporting what came before" \
  "info, the file cut to 0 bytes while mapped: status 3, a profile that ends early"

# -- Versions this reader does not know ------------------------------------

# An event stream of an unknown version or extension revision after a
# valid symtab: not a profile this reader can read (status 2), not a
# damaged one (3).
python3 -c 'import sys
d = bytearray(open("bigs.ljm", "rb").read()); d[12] = 9; open("rev.ljm", "wb").write(d)
d = bytearray(open("big.ljm", "rb").read()); d[11] = 4; open("v4.ljm", "wb").write(d)'
run "$MP" info rev.ljm
is "$rc:$out:$err" "2::ljmemprof: rev.ljm: unknown version of the event stream at byte 12: expected ljmemprof extension revision 1 or 2, found revision 9 (a newer ljmemprof wrote it)" \
  "info: an extension revision it does not know is status 2, unknown version"
run "$MP" report rev.ljm
is "$rc:$out:$err" "2::ljmemprof: rev.ljm: unknown version of the event stream at byte 12: expected ljmemprof extension revision 1 or 2, found revision 9 (a newer ljmemprof wrote it)" \
  "report: the same"
run "$MP" info v4.ljm
is "$rc:$out:$err" "2::ljmemprof: v4.ljm: unknown version of the event stream at byte 11: expected ljm version 1 to 3 or the ljmemprof extension (76), found version 4" \
  "info: an events version 4 is status 2, unknown version"
head -c 14 bigs.ljm > short.ljm
run "$MP" info short.ljm
is "$rc" 3 "an event stream's prologue cut short is still a cut profile (3)"

# -- Names from the command line, escaped -----------------------------------

esc=$(printf 'x\033[31mred\nline.ljm')
cp big.ljm "$esc"
run "$MP" info "$esc"
is "$(printf '%s\n' "$out" | head -n 1)" "file:       x\\x1b[31mred\\nline.ljm ($(wc -c < big.ljm) bytes)" \
  "info's file: line escapes the name (an escape sequence, a newline)"
head -c 30 big.ljm > "$esc"
run "$MP" report "$esc"
is "$rc:$err" '3:ljmemprof: x\x1b[31mred\nline.ljm: warning: data ends at byte 30 before the end of the profile (expected chunk name of 8 bytes, found end of data); reporting what came before' \
  "the warning of a cut profile escapes its name"
run "$MP" info "$(printf 'no\033]0;t\007pe.ljm')"
is "$rc:$err" '2:ljmemprof: no\x1b]0;t\x07pe.ljm: No such file or directory' \
  "an error names a missing file escaped"
run "$MP" report -o "$esc" "$esc"
is "$rc:$err" '2:ljmemprof report: -o x\x1b[31mred\nline.ljm: is the input profile x\x1b[31mred\nline.ljm (it would be overwritten)' \
  "report -o: both names escaped"
run "$MP" run -o "$(printf 'a\nb')/x.ljm" s.lua
is "$rc:$err" '2:ljmemprof: a\nb/x.ljm: No such file or directory' "run -o: the name escaped"
run "$MP" run --sample "$(printf '1\rX')" s.lua
is "$rc:$err" '2:ljmemprof run: --sample 1\rX: mean bytes between samples expected, e.g. 512K or 1M (at most 1T)' \
  "run: an option's value escaped"
run "$MP" run --sample 2T s.lua
is "$rc:$err" '2:ljmemprof run: --sample 2T: mean bytes between samples expected, e.g. 512K or 1M (at most 1T)' \
  "run: --sample past the agent's LJMP_SAMPLE_MAX"
done_testing
