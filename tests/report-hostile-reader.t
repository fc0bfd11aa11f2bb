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

done_testing
