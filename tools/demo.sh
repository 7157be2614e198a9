#!/usr/bin/env bash
# The demo of README.md: builds only the command-line tool of the release preset, then shows
# what the clock is doing on this machine and how fast it is against the kernel.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if ! cmake --preset release >/tmp/vclock-demo-configure.log 2>&1; then
  cat /tmp/vclock-demo-configure.log >&2
  echo "demo: configuring failed; on Debian 12 run: apt-get install cmake ninja-build g++" \
       "libgtest-dev libbenchmark-dev (or run .ci/run, which installs them)" >&2
  exit 1
fi
cmake --build build/release --target vclock_cli

echo
echo '$ build/release/vclock status'
build/release/vclock status
echo
echo '$ build/release/vclock bench --quick'
build/release/vclock bench --quick
