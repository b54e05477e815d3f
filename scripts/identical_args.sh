# Sourced by the scripts/check_*_identical.sh checks: reads "OLD_BIN NEW_BIN [OUT_DIR]" from the
# caller's arguments into OLD, NEW and OUT (a fresh temporary folder when none is given, named
# after $1, the check), and exits 2 with a usage line when they are wrong.
# usage: source scripts/identical_args.sh NAME "$@"
identical_name=$1
shift
if [ $# -lt 2 ] || [ $# -gt 3 ]; then
  echo "usage: $0 OLD_BIN NEW_BIN [OUT_DIR]" >&2
  exit 2
fi
OLD=$1
NEW=$2
OUT=${3:-$(mktemp -d "${TMPDIR:-/tmp}/$identical_name-identical-XXXXXX")}
for bin in "$OLD" "$NEW"; do
  if [ ! -x "$bin" ]; then
    echo "$0: $bin: not an executable" >&2
    exit 2
  fi
done

# side_bin SIDE: the binary that runs for SIDE (old or new).
side_bin() {
  if [ "$1" = new ]; then echo "$NEW"; else echo "$OLD"; fi
}
