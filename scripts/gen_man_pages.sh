#!/usr/bin/env bash
# Writes the man pages of wattwatch from its own --help, so they cannot drift from the CLI: one
# page a command (wattwatch-triage.1.gz, ...) named after the commands `wattwatch --help` lists, and
# wattwatch.1 for the whole tool. help2man (Debian package help2man) turns each --help into roff.
# Run by the build (the `man` target) after wattwatch is linked.
#
# usage: scripts/gen_man_pages.sh WATTWATCH OUT_DIR
# Exit: 0 written; 1 help2man failed or the binary lists no command; 2 usage.
set -euo pipefail
if [ $# -ne 2 ]; then
  echo "usage: $0 WATTWATCH OUT_DIR" >&2
  exit 2
fi
ww=$(realpath "$1")
out=$2
mkdir -p "$out/.bin"
version=$("$ww" --version | awk '{ print $2 }')
# Pages dated by the commit, not the build (reproducible builds honour SOURCE_DATE_EPOCH).
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
  SOURCE_DATE_EPOCH=$(git -C "$(dirname "$0")/.." log -1 --format=%ct 2> /dev/null || date +%s)
  export SOURCE_DATE_EPOCH
fi
h2m=(help2man --no-info --no-discard-stderr --version-string "$version")
n=0
while read -r name desc; do
  # The page's one-line description: the command's first sentence.
  short=$(printf '%s\n' "$desc" | sed -E 's/([.:])( .*)?$//')
  wrapper=$out/.bin/wattwatch-$name
  printf '#!/bin/sh\nexec "%s" %s "$@"\n' "$ww" "$name" > "$wrapper"
  chmod +x "$wrapper"
  "${h2m[@]}" --name "$short" -o "$out/wattwatch-$name.1" "$wrapper"
  n=$((n + 1))
done < <("$ww" --help | awk '/^Subcommands:/ { on = 1; next } on && /^  [a-z]/')
if [ "$n" -eq 0 ]; then
  echo "$0: '$ww --help' lists no command" >&2
  exit 1
fi
"${h2m[@]}" --name "keeps large GPU training jobs honest" -o "$out/wattwatch.1" "$ww"
rm -rf "$out/.bin"
gzip -9nf "$out"/*.1  # compressed, as Debian policy wants installed pages
