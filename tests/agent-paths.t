#!/bin/sh
# Hostile profile paths. A symbolic link as the last component is never
# followed, by mp.start, LJMEMPROF or a signal's start: a link planted in
# a shared sticky directory must not make the profile overwrite its target
# (which keeps its bytes and mode) or create a file where a dangling one
# points; the error names the path and says why. Links in the directories
# are followed. A FIFO that no one reads fails after 5 s (it blocked
# start in open() forever); one whose reader comes gets the profile. A start that
# runs out of memory says ENOMEM (12), not EINVAL.
. tests/lib/tap.sh
lj_e() { with_timeout 20 env LUA_CPATH="$BUILD/?.so;;" $LUAJIT "$@"; }
mkdir "$TMPD/shared"
printf 'precious\n' > "$TMPD/target"
chmod 644 "$TMPD/target"
ln -s "$TMPD/target" "$TMPD/shared/link.ljm"
ln -s "$TMPD/nowhere.ljm" "$TMPD/shared/dangling.ljm"
untouched() {
  is "$(cat "$TMPD/target"):$(stat -c %a "$TMPD/target"):$(ls "$TMPD/nowhere.ljm" 2>/dev/null)" \
    "precious:644:" "$1: the link's target is untouched, no file where the dangling one points"
}
msg="is a symbolic link, which the profiler never follows (give the path of the file itself)"

# mp.start, both links.
for l in link dangling; do
  out=$(lj_e -e "
    local mp = require('ljmemprof')
    print(mp.start('$TMPD/shared/$l.ljm'))
    print(mp.start({ path = '$TMPD/shared/$l.ljm', stacks = 4 }))
    print(mp.running())")
  is "$out" "nil	$TMPD/shared/$l.ljm: $msg	40
nil	$TMPD/shared/$l.ljm: $msg	40
false" "mp.start on a $l symlink: nil, the path and why, ELOOP; not running"
  untouched "mp.start, $l"
done

# LJMEMPROF: the module does not load, saying why.
for l in link dangling; do
  run env LJMEMPROF="$TMPD/shared/$l.ljm" LUA_CPATH="$BUILD/?.so;;" $LUAJIT -l ljmemprof -e 'print("ran")'
  is "$rc:$out:$(echo "$err" | head -n 1 | sed 's/^[^ ]*luajit: //')" \
    "1::ljmemprof: LJMEMPROF: $TMPD/shared/$l.ljm: $msg" "LJMEMPROF on a $l symlink"
  untouched "LJMEMPROF, $l"
done

# A signal's start says it on stderr; the program goes on.
run env LUA_CPATH="$BUILD/?.so;;" $LUAJIT -e "
  local mp = require('ljmemprof')
  assert(mp.signal('USR2', '$TMPD/shared/link.ljm'))
  local ffi = require('ffi')
  ffi.cdef('int kill(int, int); int getpid(void);')
  ffi.C.kill(ffi.C.getpid(), 12)
  local t = {} for i = 1, 100 do t[i] = {} end
  print(mp.running())"
is "$rc:$out:$err" "0:false:ljmemprof: starting at a signal ($TMPD/shared/link.ljm): $msg" \
  "a signal's start on a symlink: refused, said on stderr"
untouched "the signal's start"

# A link in a directory component is followed; a plain file is replaced.
ln -s "$TMPD/shared" "$TMPD/dirlink"
out=$(lj_e -e "local mp = require('ljmemprof') print(mp.start('$TMPD/dirlink/p.ljm')) print(mp.stop())")
is "$out:$(complete "$TMPD/shared/p.ljm")" "true
true:true" "a symlink to the directory is followed"
printf 'old\n' > "$TMPD/plain.ljm"
out=$(lj_e -e "local mp = require('ljmemprof') print(mp.start('$TMPD/plain.ljm')) print(mp.stop())")
is "$out:$(complete "$TMPD/plain.ljm")" "true
true:true" "an existing file is truncated and rewritten"

# A FIFO without a reader: an error after 5 s (it blocked forever).
mkfifo "$TMPD/fifo"
t0=$(date +%s)
out=$(lj_e -e "local mp = require('ljmemprof') print(mp.start('$TMPD/fifo')) print(mp.running())")
is "$?:$out" "0:nil	$TMPD/fifo: is a FIFO that no process read within 5 s (start the reader first)	6
false" "a FIFO with no reader: nil, why, ENXIO (no block)"
t1=$(date +%s)
[ $((t1 - t0)) -ge 4 ] && [ $((t1 - t0)) -le 15 ]; ok $? "...after about 5 s ($((t1 - t0)) s)"
# With a reader that comes a little later: the profile goes through it,
# writes block as they should.
(sleep 1; exec cat "$TMPD/fifo") > "$TMPD/fromfifo.ljm" &
reader=$!
out=$(lj_e -e "
  local mp = require('ljmemprof')
  local ok = mp.start({ path = '$TMPD/fifo', bufsize = 4096 })
  local t = {} for i = 1, 5000 do t[i] = { i } end
  print(ok, mp.stop())")
wait $reader
is "$out:$(complete "$TMPD/fromfifo.ljm")" "true	true:true" "a FIFO with a reader gets the whole profile"

# Out of memory at start: errno 12. Four chunks of 1 GiB do not fit in
# 1.5 GB of address space.
out=$(ulimit -v 1500000 && lj_e -e "
  local mp = require('ljmemprof')
  print(mp.start({ path = '$TMPD/big.ljm', bufsize = 1073741824 }))
  print(mp.running())")
is "$out:$(ls "$TMPD/big.ljm" 2>/dev/null)" "nil	not enough memory for the profiler	12
false:" "start out of memory: nil, why, ENOMEM (12); no file"
done_testing
