#!/bin/sh
# make deps (scripts/deps.sh) never removes a package: it simulates the
# install first and refuses, naming what would go and the exact command,
# when anything would be removed; otherwise it installs with --no-remove.
# apt-get is replaced by a stand-in that runs only simulations (-s) for
# real and logs any other call, so the test changes nothing on the machine.
. tests/lib/tap.sh
mkdir -p "$TMPD/bin"
real=$(command -v apt-get)
cat > "$TMPD/bin/apt-get" <<EOF2
#!/bin/sh
for a in "\$@"; do [ "\$a" = -s ] && exec $real "\$@"; done
echo "apt-get \$*" >> "$TMPD/calls"
EOF2
chmod +x "$TMPD/bin/apt-get"
deps() { PATH="$TMPD/bin:$PATH" run scripts/deps.sh "$@"; }
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'ok installed'; }

# The other flavour's interpreter conflicts with the installed one.
if installed luajit; then other=luajit2 gone=luajit
elif installed luajit2; then other=luajit gone=luajit2
else other=""; fi
if [ -z "$other" ]; then
  ok 0 "# SKIP neither luajit nor luajit2 is installed: nothing to conflict with"
else
  : > "$TMPD/calls"
  deps make "$other"
  is "$rc" 1 "installing $other (it would remove $gone): refused, status 1"
  case $err in
    *"would remove: "*"$gone "*"refusing"*"run: apt-get install -y $other") ok 0 "the refusal names what would go and the exact command" ;;
    *) ok 1 "the refusal names what would go and the exact command"; echo "$err" | sed 's/^/# /' ;;
  esac
  is "$(cat "$TMPD/calls")" "" "nothing but a simulation ran"
fi

# Installed packages only: nothing to do.
: > "$TMPD/calls"
deps make dpkg
is "$rc:$err:$(cat "$TMPD/calls")" "0::" "all installed: nothing runs"

# A package that removes nothing: installed (as root) with --no-remove.
if installed hello; then
  ok 0 "# SKIP the package 'hello' is installed already"
elif [ "$(id -u)" != 0 ]; then
  deps hello
  is "$rc:$err" "1:deps: missing Debian packages; run: sudo apt-get install -y hello" \
    "not root: the command to run, nothing else"
else
  : > "$TMPD/calls"
  deps make hello
  is "$rc:$(cat "$TMPD/calls")" "0:apt-get install -y -q --no-remove hello" \
    "a package that removes nothing: installed, with --no-remove"
fi
done_testing
