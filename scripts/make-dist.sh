#!/usr/bin/env bash
# The portable tarball from a WATTWATCH_PORTABLE build folder (make dist): the install rules run
# with the prefix /opt/wattwatch into a staging folder, and the tarball holds that tree under one
# top folder, `wattwatch/`, so `tar -C /opt -xzf` puts every file where the units expect it.
#
#   scripts/make-dist.sh BUILD_DIR      -> BUILD_DIR/wattwatch-<version>-linux-<arch>.tar.gz
#
# It refuses a binary that needs a shared library outside glibc (the point of the tarball) and
# writes into the tarball the oldest glibc the binary runs on: the highest GLIBC_x.y symbol
# version it imports.
set -euo pipefail

build=${1:?usage: make-dist.sh BUILD_DIR}
build=$(cd "$build" && pwd)
bin="$build/wattwatch"
[[ -x $bin ]] || { echo "make-dist: $bin is not built" >&2; exit 2; }
grep -q '^WATTWATCH_PORTABLE:BOOL=ON' "$build/CMakeCache.txt" || {
  echo "make-dist: $build is not a WATTWATCH_PORTABLE build (make dist makes one)" >&2
  exit 2
}

# glibc's own libraries and the kernel's vDSO; anything else in `ldd` is a dependency the
# tarball would not carry.
glibc_re='^(linux-vdso\.so|linux-gate\.so|libc\.so|libm\.so|libdl\.so|libpthread\.so|librt\.so|libresolv\.so|libutil\.so|ld-linux[-a-z0-9_]*\.so)'
others=$(ldd "$bin" | awk '{print $1}' | sed 's|.*/||' | grep -Ev "$glibc_re" || true)
if [[ -n $others ]]; then
  echo "make-dist: $bin needs shared libraries outside glibc:" >&2
  echo "$others" >&2
  exit 1
fi

version=$("$bin" --version | awk '{print $2; exit}')
arch=$(uname -m)
min_glibc=$(objdump -T "$bin" | grep -o 'GLIBC_[0-9][0-9.]*' | sort -uV | tail -1)
build_glibc=$(getconf GNU_LIBC_VERSION)
os=$(. /etc/os-release && echo "$PRETTY_NAME")

stage="$build/dist-staging"
rm -rf "$stage"
DESTDIR="$stage" cmake --install "$build" --prefix /opt/wattwatch >/dev/null
cat >"$stage/opt/wattwatch/PORTABLE.txt" <<EOF
wattwatch $version, portable build for Linux $arch ($($bin --version))

Built on $os ($build_glibc). The binary links every library but glibc statically
and runs on glibc ${min_glibc#GLIBC_} or newer (the newest glibc symbol version it imports).
NVML (libnvidia-ml.so.1) is loaded at run time, as in every build; SentencePiece is not
included: \`wattwatch tokenize\` takes the model's tokenizer.json instead of tokenizer.model.

Install:   sudo tar -C /opt -xzf wattwatch-$version-linux-$arch.tar.gz
           sudo ln -s /opt/wattwatch/bin/wattwatch /usr/local/bin/wattwatch
Units:     /opt/wattwatch/lib/systemd/system/wattwatch.service and wattwatch-fleet.service run
           /opt/wattwatch/bin/wattwatch with the site flags of /opt/wattwatch/etc/default/;
           link them into /etc/systemd/system, then systemctl daemon-reload.
Man pages: MANPATH=/opt/wattwatch/share/man man wattwatch-triage
Rules and dashboards: /opt/wattwatch/share/wattwatch/

For an older distribution, build the tarball there: the binary then needs that machine's glibc
or newer (README, Install).
EOF
tarball="$build/wattwatch-$version-linux-$arch.tar.gz"
tar --sort=name --owner=0 --group=0 --numeric-owner -C "$stage/opt" -czf "$tarball" wattwatch
rm -rf "$stage"
echo "$tarball (glibc ${min_glibc#GLIBC_} or newer)"
