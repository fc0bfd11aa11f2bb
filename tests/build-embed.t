#!/bin/sh
# The files embedded at build time (scripts/gen-embed.pl) are what they
# say: the page's script parses as JavaScript (node --check), run's start
# chunk compiles as Lua as it is and as spliced with cmd_run.c's names,
# the page is page.html with page.css, its data and page.js byte for byte
# where its markers are, and the generator keeps every byte of a file
# (quotes, backslashes, trigraphs, tabs, bytes above 127, no final
# newline).
. tests/lib/tap.sh
MP=$BUILD/ljmemprof

if command -v node >/dev/null; then
  run node --check src/render/page.js
  is "$rc:$err" "0:" "page.js parses as JavaScript (node --check)"
  run node --check src/render/snap_page.js
  is "$rc:$err" "0:" "snap_page.js (the snapshot's page) parses as JavaScript"
else
  ok 1 "node is installed (Debian nodejs; make deps)"
fi

run luajit -bl src/cli/run_start.lua
is "$rc:$err" "0:" "run_start.lua compiles as Lua as it is (luajit -bl)"

# The chunk run passes to luajit: the header with cmd_run.c's own names.
{ grep '^#define ENV_' src/cli/cmd_run.c
  echo '#include <stdio.h>'
  echo '#include "run_start.h"'
  echo 'int main(void) { fputs(mp_run_start, stdout); return 0; }'
} > "$TMPD/chunk.c"
run cc -I"$BUILD/gen" -o "$TMPD/chunk" "$TMPD/chunk.c"
is "$rc:$err" "0:" "the generated start chunk compiles with cmd_run.c's names"
"$TMPD/chunk" > "$TMPD/chunk.lua"
run luajit -bl "$TMPD/chunk.lua"
is "$rc:$err" "0:" "the spliced start chunk compiles as Lua"
is "$(grep -c '@[A-Z]' "$TMPD/chunk.lua"):$(grep -c "os.getenv('LJMEMPROF_RUN_[A-Z_]*')" "$TMPD/chunk.lua")" \
  "0:6" "every @NAME@ became a name: six os.getenv('LJMEMPROF_RUN_...')"

# The page holds the files exactly: its <style> and its last <script>.
printf 'local t = {} for i = 1, 100 do t[i] = {i} end\n' > "$TMPD/p.lua"
lj -e "assert(require('ljmemprof').start('$TMPD/p.ljm'))" "$TMPD/p.lua"
run "$MP" report --format html -o "$TMPD/p.html" "$TMPD/p.ljm"
is "$rc" 0 "a page is written"
sed -n '/^<style>$/,/^<\/style>/p' "$TMPD/p.html" | sed '1d;$d' > "$TMPD/style"
cmp -s "$TMPD/style" src/render/page.css
ok $? "the page's style is page.css byte for byte"
awk '/^<script>$/ { on = 1; next } /^<\/script>$/ { on = 0 } on' "$TMPD/p.html" > "$TMPD/script"
cmp -s "$TMPD/script" src/render/page.js
ok $? "the page's script is page.js byte for byte"
# The whole page: page.html, its markers replaced by the files and the data.
perl -0ne 'print $1 if /<script id="data" type="application\/json">(.*?)<\/script>/s' \
  "$TMPD/p.html" > "$TMPD/data"
# (The title, twice: the profile's name.)
D="$TMPD/data" T="ljmemprof: $TMPD/p.ljm" perl -0pe 'BEGIN { local $/; for my $k (qw(css js)) { open(my $f, "<", "src/render/page.$k") or die;
    $x{$k} = <$f> } open(my $d, "<", $ENV{D}) or die; $x{data} = <$d> }
  s/\@TITLE\@/$ENV{T}/g; s/\@STYLE\@/$x{css}/; s/\@DATA\@/$x{data}/; s/\@SCRIPT\@/$x{js}/' src/render/page.html > "$TMPD/want.html"
is "$(head -c 16 "$TMPD/data"):$(grep -c '@[A-Z]*@' "$TMPD/p.html")" '{"kind":"report":0' \
  "the page has its data, and no marker is left"
cmp -s "$TMPD/want.html" "$TMPD/p.html"
ok $? "the page is page.html with its markers replaced by the title, page.css, the data and page.js"

# The generator on a file of every awkward byte: the C string is the file.
printf 'a "quoted" \\back\\slash ??= ??/ ?\n\ttab \001\177\200\377 end 0\n\n7' > "$TMPD/odd"
scripts/gen-embed.pl odd="$TMPD/odd" > "$TMPD/odd.h"
{ echo '#include <stdio.h>'
  echo "#include \"$TMPD/odd.h\""
  echo 'int main(void) { fwrite(odd, 1, sizeof(odd) - 1, stdout); return 0; }'
} > "$TMPD/odd.c"
run cc -Wall -Werror -Wtrigraphs -o "$TMPD/oddc" "$TMPD/odd.c"
is "$rc:$err" "0:" "the generated header compiles without a warning"
"$TMPD/oddc" > "$TMPD/odd.out"
cmp -s "$TMPD/odd.out" "$TMPD/odd"
ok $? "the embedded string is the file byte for byte"
run scripts/gen-embed.pl "bad name=$TMPD/odd"
is "$rc:$err" "255:scripts/gen-embed.pl: not NAME=FILE: bad name=$TMPD/odd" "a bad NAME=FILE is an error"
run scripts/gen-embed.pl "x=$TMPD/none"
is "$rc:$err" "2:scripts/gen-embed.pl: $TMPD/none: No such file or directory" "a missing file is an error"
done_testing
