#!/usr/bin/env bash
# The test command of README.md and CI: every workflow preset (configure, build, ctest), then
# the format check, then the hot-path and signal-safety checks. Stops at the first failure.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

declare -a timings=()
step() {
  local name=$1
  shift
  echo "::: ${name}"
  local start=$SECONDS rc=0
  "$@" || rc=$?
  timings+=("$(printf '%-13s %4ds  %s' "${name}" $((SECONDS - start)) \
    "$([[ ${rc} -eq 0 ]] && echo ok || echo "FAILED (exit ${rc})")")")
  return "${rc}"
}

print_timings() {
  ((${#timings[@]})) || return 0
  echo "::: timings"
  printf '  %s\n' "${timings[@]}"
}
trap print_timings EXIT

for preset in dev asan tsan release; do
  step "${preset}" cmake --workflow --preset "${preset}"
done

format_check() {
  local dirs=()
  for d in include src tests bench fuzz; do
    [[ -d $d ]] && dirs+=("$d")
  done
  find "${dirs[@]}" -type f \( -name '*.h' -o -name '*.hpp' -o -name '*.cc' -o -name '*.c' \) \
    -print0 | sort -z | xargs -0 --no-run-if-empty clang-format --dry-run --Werror
}
step clang-format format_check

# Exit 77 means "skipped" (not x86-64): a result, not a failure.
hot_path_check() {
  local rc=0
  bash tools/check-hot-path.sh || rc=$?
  if ((rc == 77)); then
    echo "hot-path check skipped"
    return 0
  fi
  return "$rc"
}
step hot-path hot_path_check

# The release build's entry points reach only async-signal-safe functions (the release
# workflow above built build/release/libvclock.so). 77 is "skipped" here too.
signal_safety_check() {
  local rc=0
  bash tools/check-signal-safety.sh build/release/libvclock.so || rc=$?
  if ((rc == 77)); then
    echo "signal-safety check skipped"
    return 0
  fi
  return "$rc"
}
step signal-safety signal_safety_check

# A short fuzz of the attach validation (fuzz/, tools/fuzz.sh; the long run's figures are in
# fuzz/README.md). 77 is "skipped": no clang++ or no libFuzzer.
fuzz_short() {
  local rc=0
  bash tools/fuzz.sh 20 || rc=$?
  if ((rc == 77)); then
    echo "fuzz skipped"
    return 0
  fi
  return "$rc"
}
step fuzz-short fuzz_short
