#!/usr/bin/env bash
# The demo of README.md: builds only the command-line tool of the release preset, then shows
# what the clock is doing on this machine and how fast it is against the kernel.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

tools/install-deps.sh --build  # what the release preset needs; nothing when it is all there
if ! cmake --preset release >/tmp/vclock-demo-configure.log 2>&1; then
  cat /tmp/vclock-demo-configure.log >&2
  echo "demo: configuring failed (see above)" >&2
  exit 1
fi
cmake --build build/release --target vclock_cli

echo
echo '$ build/release/vclock status'
build/release/vclock status
echo
echo '$ build/release/vclock bench --quick'
build/release/vclock bench --quick
