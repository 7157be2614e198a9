#!/usr/bin/env bash
# The test command of README.md and CI: every workflow preset (configure, build, ctest), then
# the format check, then the hot-path and signal-safety checks. Stops at the first failure.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
tools/install-deps.sh  # what the tests need, on Debian/Ubuntu; nothing when it is all there

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

# The checks below exit 77 for "skipped" (not x86-64, no objdump, no clang++ or libFuzzer): a
# result, not a failure. Runs "$@" and says so when it skipped.
skippable() {
  local rc=0
  "$@" || rc=$?
  if ((rc == 77)); then
    echo "skipped: $*"
    return 0
  fi
  return "$rc"
}

step hot-path skippable bash tools/check-hot-path.sh
# The release build's entry points reach only async-signal-safe functions (the release
# workflow above built build/release/libvclock.so).
step signal-safety skippable bash tools/check-signal-safety.sh build/release/libvclock.so
# And the LD_PRELOAD shim's (its exported libc functions; built by the release preset too).
step shim-signal-safety skippable bash tools/check-signal-safety.sh \
  build/release/libvclock_preload.so
# A short fuzz of the attach validation (fuzz/, tools/fuzz.sh; the long run's figures are in
# fuzz/README.md).
step fuzz-short skippable bash tools/fuzz.sh 20
