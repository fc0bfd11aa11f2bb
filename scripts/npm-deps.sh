#!/bin/sh
# npm-deps.sh: install, under DIR (build/npm), the npm packages a test
# needs: Chrome DevTools' frontend, whose HeapSnapshot loader
# tests/snapshot-read.t runs on our .heapsnapshot export, and TypeScript,
# which turns those sources into JavaScript as node loads them. Exact
# versions, nothing global, no install scripts; done once (a stamp file
# names the versions). Without node and npm it says so and does nothing:
# the test then says it could not run (and fails under CI).
#
# usage: scripts/npm-deps.sh DIR
set -eu
dir=$1
pkgs="chrome-devtools-frontend@1.0.1705227 typescript@5.9.3"
stamp="$dir/.installed"
[ -f "$stamp" ] && [ "$(cat "$stamp")" = "$pkgs" ] && exit 0
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "deps: node and npm not found: tests/snapshot-read.t cannot load the" \
       ".heapsnapshot export with DevTools (install Node.js 20 and npm)" >&2
  exit 0
fi
mkdir -p "$dir"
echo "deps: npm install under $dir: $pkgs"
# shellcheck disable=SC2086
npm install --prefix "$dir" --no-audit --no-fund --ignore-scripts \
  --no-save --loglevel=error $pkgs >/dev/null
echo "$pkgs" >"$stamp"
