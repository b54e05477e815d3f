#!/usr/bin/env bash
# The Debian sources the portable build (make dist, cmake/deps.cmake) compiles in because Debian
# ships their library shared only: cpp-httplib, whose -dev package installs declarations only
# (the library is built split), so the full single header comes from the source package of the
# same version as the installed libcpp-httplib-dev, fetched by name with apt and with Debian's
# patches applied (dpkg-source -x). Idempotent: nothing is fetched when that version is already
# extracted.
#
#   scripts/dist-sources.sh [DIR]     (default build/dist-src; DIR/cpp-httplib/httplib.h)
#
# apt runs with a private source list and state under DIR/apt: the machine's apt configuration
# is not touched. Needs network access to deb.debian.org (or the mirror in
# $WATTWATCH_DEBIAN_MIRROR) and dpkg-dev (scripts/install-deps.sh installs it).
set -euo pipefail

dir=${1:-build/dist-src}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
mirror=${WATTWATCH_DEBIAN_MIRROR:-http://deb.debian.org/debian}

pkg=cpp-httplib
version=$(dpkg-query -W -f='${source:Version}' libcpp-httplib-dev 2>/dev/null || true)
if [[ -z $version ]]; then
  echo "dist-sources: libcpp-httplib-dev is not installed (scripts/install-deps.sh)" >&2
  exit 2
fi
stamp="$dir/$pkg/.debian-version"
if [[ -f $stamp && $(cat "$stamp") == "$version" && -f $dir/$pkg/httplib.h ]]; then
  exit 0
fi

# shellcheck source=/dev/null
codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
if [[ -z $codename ]]; then
  echo "dist-sources: no VERSION_CODENAME in /etc/os-release" >&2
  exit 2
fi
apt_dir="$dir/apt"
mkdir -p "$apt_dir/lists/partial" "$apt_dir/fetch"
{
  echo "deb-src $mirror $codename main"
  echo "deb-src $mirror $codename-updates main"
  echo "deb-src ${WATTWATCH_DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security} $codename-security main"
} >"$apt_dir/sources.list"
mkdir -p "$apt_dir/cache/archives/partial"
# Sources, lists and caches all under $apt_dir: no root needed, nothing of the machine's touched.
apt_opts=(-o "Dir::Etc::SourceList=$apt_dir/sources.list" -o Dir::Etc::SourceParts=/dev/null
  -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache"
  -o "APT::Sandbox::User=$(id -un)" -qq)
echo "dist-sources: fetching the Debian source of $pkg $version" >&2
apt-get "${apt_opts[@]}" update >&2
rm -rf "$apt_dir/fetch" && mkdir -p "$apt_dir/fetch"
(cd "$apt_dir/fetch" && apt-get "${apt_opts[@]}" source --download-only "$pkg=$version" >&2)
rm -rf "$dir/$pkg"
# --no-check: apt already checked the files against the signed Sources index.
dpkg-source --no-check -x "$apt_dir/fetch/${pkg}_${version#*:}.dsc" "$dir/$pkg" >/dev/null
# The single header, not the split one: the portable build compiles it into the binary.
if ! grep -q "^inline bool Server::listen" "$dir/$pkg/httplib.h"; then
  echo "dist-sources: $dir/$pkg/httplib.h is not the single-header cpp-httplib" >&2
  exit 1
fi
echo "$version" >"$stamp"
echo "dist-sources: $dir/$pkg/httplib.h ($pkg $version)" >&2
