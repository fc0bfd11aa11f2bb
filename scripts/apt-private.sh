# apt-private.sh: a private apt configuration under build/, sourced by the
# fetch scripts. The system's apt sources, lists and caches are never
# touched: the private sources are derived from the system's `deb` entries
# (both apt formats), once as `deb` (binary packages to download and unpack
# under build/, never to install) and once as `deb-src` (source packages).
#
#   . scripts/apt-private.sh; apt_private_init APTDIR; apt_private ARGS...
apt_private_init() {
  _apt_dir=$1
  mkdir -p "$_apt_dir/lists/partial" "$_apt_dir/sources.list.d" \
    "$_apt_dir/archives/partial"
  _apt_dir=$(cd "$_apt_dir" && pwd)
  _sources="$_apt_dir/sources.list.d/ljmp.sources"
  _list="$_apt_dir/sources.list.d/ljmp.list"
  : > "$_sources.new"
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    sed -e 's/^Types:[[:space:]]*deb[[:space:]]*$/Types: deb deb-src/' "$f" >> "$_sources.new"
    echo >> "$_sources.new"
  done
  : > "$_list.new"
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    sed -n -e 's/^[[:space:]]*deb[[:space:]]/deb /p' \
      -e 's/^[[:space:]]*deb[[:space:]]/deb-src /p' "$f" >> "$_list.new"
  done
  # Update the private lists when the sources changed or the lists are
  # older than a day (a first fetch, or a new mirror).
  if ! cmp -s "$_sources.new" "$_sources" || ! cmp -s "$_list.new" "$_list" ||
     [ ! -f "$_apt_dir/updated" ] ||
     [ -n "$(find "$_apt_dir/updated" -mmin +1440 2>/dev/null)" ]; then
    mv "$_sources.new" "$_sources"
    mv "$_list.new" "$_list"
    apt_private -qq update >&2
    touch "$_apt_dir/updated"
  else
    rm -f "$_sources.new" "$_list.new"
  fi
}
# apt-get (or apt-cache, as APT_TOOL) with the private configuration.
apt_private() {
  # shellcheck disable=SC2086
  ${APT_TOOL:-apt-get} -o APT::Sandbox::User=root -o Dir::Etc::SourceList=/dev/null \
    -o Dir::Etc::SourceParts="$_apt_dir/sources.list.d" \
    -o Dir::State::Lists="$_apt_dir/lists" \
    -o Dir::Cache::Archives="$_apt_dir/archives" \
    -o Dir::Cache::pkgcache="" -o Dir::Cache::srcpkgcache="" \
    -o Debug::NoLocking=1 "$@"
}
