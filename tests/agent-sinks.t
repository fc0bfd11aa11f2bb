#!/bin/sh
# The same events reach every kind of file: a regular file (written with
# O_DIRECT where the file system allows it), tmpfs (no O_DIRECT on older
# kernels: buffered fallback), a pipe, and odd buffer sizes (rounded up to
# 4 KiB; events straddling chunk ends are carried over intact).
. tests/lib/tap.sh

prog='
  local mp = require("ljmemprof")
  local path, bufsize = os.getenv("P"), tonumber(os.getenv("B"))
  collectgarbage("stop")
  assert(mp.start({ path = path, bufsize = bufsize }))
  local t = {}
  for i = 1, 100000 do t[i % 5000 + 1] = { i, "s" .. i } end
  assert(mp.stop())'
record() {	# PATH BUFSIZE -> exit status
  P="$1" B="$2" LUA_CPATH="$BUILD/?.so;;" timeout 60 luajit -joff -e "$prog" >/dev/null 2>&1
  echo $?
}
summary() {	# events of a profile, by kind and label, sorted
  $BUILD/ljmemprof events "$1" | sed -n 's/.*"event":"\([a-z]*\)".*"label":"\([^"]*\)".*/\1 \2/p' |
    sort | uniq -c | sed 's/^ *//' | tr '\n' ';'
}

is "$(record "$TMPD/a.bin" 1048576)" 0 "regular file, 1 MiB chunks"
is "$(complete "$TMPD/a.bin")" true "regular file: complete"
want=$(summary "$TMPD/a.bin")
ok $([ -n "$want" ] && echo 0 || echo 1) "events decoded"

is "$(record "$TMPD/b.bin" 5000)" 0 "regular file, 5000-byte chunks (rounded to 8 KiB)"
is "$(summary "$TMPD/b.bin")" "$want" "same events with small chunks"

if [ -d /dev/shm ] && [ -w /dev/shm ]; then
  shm=$(mktemp /dev/shm/ljmp-test.XXXXXX)
  is "$(record "$shm" 65536)" 0 "tmpfs file"
  is "$(summary "$shm")" "$want" "same events on tmpfs"
  rm -f "$shm"
else
  ok 0 "# SKIP no writable /dev/shm"; ok 0 "# SKIP no writable /dev/shm"
fi

mkfifo "$TMPD/fifo"
# Bounded: if the writer never opens the pipe, the reader gives up.
timeout 60 cat "$TMPD/fifo" > "$TMPD/c.bin" &
is "$(record "$TMPD/fifo" 65536)" 0 "pipe"
wait
is "$(summary "$TMPD/c.bin")" "$want" "same events through a pipe"
done_testing
