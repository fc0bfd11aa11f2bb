#!/bin/sh
# manpage.sh: ljmemprof(1), made from the CLI's own manuals (`ljmemprof
# --help` and each command's `--help`), so the man page and --help are one
# text. Headings (capitals at the left margin) become sections; the rest
# keeps its layout (no-fill), with roff's special characters escaped.
#
# usage: scripts/manpage.sh path/to/ljmemprof > ljmemprof.1
set -eu
cli=$1
# roff LEVEL: the manual on stdin as roff; headings as .SH or .SS.
roff() {
  awk -v level="$1" '
    function esc(s) { gsub(/\\/, "\\e", s); if (s ~ /^[.\x27]/) s = "\\&" s; return s }
    /^[A-Z][A-Z ,()-]*$/ { if (nf) print ".fi"; nf = 0; print level " " $0; next }
    { if (!nf) { print ".nf"; nf = 1 } sub(/^    /, ""); print esc($0) }
    END { if (nf) print ".fi" }'
}
echo '.\" Generated from `ljmemprof --help` by scripts/manpage.sh: edit the CLI'"'"'s manuals.'
echo '.TH LJMEMPROF 1 "" "ljmemprof" "User Commands"'
"$cli" --help | roff .SH
cmds=$("$cli" --help | awk '/^COMMANDS$/ { on = 1; next } /^[A-Z]/ { on = 0 }
  on && /^    [a-z]+ / { print $1 }')
for c in $cmds; do
  [ "$c" = help ] && continue
  echo ".SH \"COMMAND: $c\""
  "$cli" "$c" --help | roff .SS
done
