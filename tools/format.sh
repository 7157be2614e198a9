#!/usr/bin/env bash
# Formats every C and C++ file of the tree in place with .clang-format (clang-format 14).
# `tools/format.sh --check` changes nothing and fails on the first difference, as CI does.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

mode=(-i)
if [[ ${1:-} == --check ]]; then
  mode=(--dry-run --Werror)
elif [[ $# -gt 0 ]]; then
  echo "usage: $0 [--check]" >&2
  exit 2
fi

dirs=()
for d in include src tests bench fuzz tools; do
  if [[ -d $d ]]; then dirs+=("$d"); fi
done
find "${dirs[@]}" -type f \( -name '*.h' -o -name '*.hpp' -o -name '*.cc' -o -name '*.c' \) \
  -print0 | sort -z | xargs -0 --no-run-if-empty clang-format "${mode[@]}"
