#!/usr/bin/env bash
# Installs every Debian package wattwatch needs to build, test and benchmark.
# Idempotent: packages already present are skipped, and apt is not touched when nothing is missing.
set -euo pipefail

PKGS=(
  build-essential cmake ninja-build pkg-config ccache
  libcli11-dev nlohmann-json3-dev libfmt-dev libspdlog-dev libyaml-cpp-dev
  libcpp-httplib-dev libssl-dev libgtest-dev libgmock-dev libbenchmark-dev
  libpcre2-dev libzstd-dev zlib1g-dev libutf8proc-dev libsentencepiece-dev sentencepiece nodejs
  clang libclang-rt-14-dev clang-format clang-tidy
  prometheus wrk python3 python3-pandas chromium tmux
  slurm-wlm munge python3-torch
  help2man man-db lintian dpkg-dev
  libbrotli-dev binutils  # make dist: static brotli (cpp-httplib), objdump (the glibc floor)
  librocm-smi64-1  # the real ROCm SMI library, loaded by a test on this GPU-less machine
)

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PKGS[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
