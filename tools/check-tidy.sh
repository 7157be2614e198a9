#!/usr/bin/env bash
# clang-tidy over every translation unit of the dev build (src, tests, bench): fails on any
# warning. .clang-tidy says which checks; this says where and how strictly. The dev build is
# GCC's, whose flags clang does not all know: -Wno-unknown-warning-option keeps those quiet.
# Exit 77 (skipped) where clang-tidy or the dev build's compile_commands.json is missing.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

build=${1:-build/dev}
runner=$(command -v run-clang-tidy || command -v run-clang-tidy-14 || true)
if [[ -z ${runner} ]] || ! command -v clang-tidy >/dev/null; then
  echo "check-tidy: clang-tidy not installed" >&2
  exit 77
fi
if [[ ! -f ${build}/compile_commands.json ]]; then
  echo "check-tidy: ${build}/compile_commands.json missing (configure the dev preset first)" >&2
  exit 77
fi

log=$(mktemp)
trap 'rm -f "${log}"' EXIT
# The file regex selects our translation units; generated and third-party ones stay out.
"${runner}" -quiet -p "${build}" -j "$(nproc)" -extra-arg=-Wno-unknown-warning-option \
  "${VCLOCK_TIDY_FILES:-$(pwd)/(src|tests|bench)/}" 2>&1 | sed 's/\x1b\[[0-9;]*m//g' >"${log}" || true
# run-clang-tidy's own exit status counts the compiler's suppressed notes too; the verdict is
# the diagnostics it prints for our files. VCLOCK_TIDY_FILES: a narrower file regex.
if grep -E '(warning|error): ' "${log}" >/dev/null; then
  grep -E -A3 '(warning|error): ' "${log}" >&2
  echo "check-tidy: $(grep -cE '(warning|error): ' "${log}") diagnostics" >&2
  exit 1
fi
units=$(grep -c '^clang-tidy' "${log}" || true)
echo "check-tidy: ${units} translation units, no warnings"
