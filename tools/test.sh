#!/usr/bin/env bash
# The test command of README.md and CI: every workflow preset (configure, build, ctest), then
# the format check, then the hot-path and signal-safety checks. Stops at the first failure.
# Ends with the results counted (tools/test-results.sh): each failure, each skip with its
# reason (expected on CI's machine, tools/expected-skips, or not: then it fails the run), and
# last, alone on its line, "N passed, M failed, K skipped" (every ctest test of every preset,
# and each check after them).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
tools/install-deps.sh  # what the tests need, on Debian/Ubuntu; nothing when it is all there

presets=(dev asan tsan release)
logs=build/test-logs # each step's output, and the results (one line per test)
rm -rf "${logs}"
mkdir -p "${logs}"
results=${logs}/results.tsv
: >"${results}"

declare -a timings=()
step() {
  local name=$1
  shift
  echo "::: ${name}"
  local start=$SECONDS rc=0
  rm -f "${logs}/skipped"
  "$@" 2>&1 | tee "${logs}/${name}.log" || rc=$?
  record "${name}" "${rc}"
  timings+=("$(printf '%-13s %4ds  %s' "${name}" $((SECONDS - start)) \
    "$([[ ${rc} -eq 0 ]] && echo ok || echo "FAILED (exit ${rc})")")")
  return "${rc}"
}

# A preset's ctest results, or a check's own: passed, failed, or skipped (skippable below).
record() {
  local name=$1 rc=$2
  if [[ " ${presets[*]} " == *" ${name} "* ]]; then
    bash tools/test-results.sh ctest "${name}" "${logs}/${name}.log" \
      "build/${name}/Testing/Temporary/LastTest.log" >>"${results}"
    if ((rc != 0)) && ! awk -F '\t' -v p="${name}" '$1 == p && $3 == "failed" { f = 1 }
        END { exit !f }' "${results}"; then
      printf '%s\tworkflow\tfailed\tconfigure or build: exit %s\n' "${name}" "${rc}" >>"${results}"
    fi
  elif ((rc != 0)); then
    printf 'check\t%s\tfailed\texit %s\n' "${name}" "${rc}" >>"${results}"
  elif [[ -f ${logs}/skipped ]]; then
    local reason
    reason=$(grep -i 'skip' "${logs}/${name}.log" | grep -v '^skipped: ' | tail -n 1 || true)
    printf 'check\t%s\tskipped\t%s\n' "${name}" "${reason:-$(cat "${logs}/skipped")}" \
      >>"${results}"
  else
    printf 'check\t%s\tpassed\t\n' "${name}" >>"${results}"
  fi
}

finish() {
  local rc=$?
  if ((${#timings[@]})); then
    echo "::: timings"
    printf '  %s\n' "${timings[@]}"
  fi
  echo "::: results"
  bash tools/test-results.sh summary "${results}" || rc=1
  exit "${rc}"
}
trap finish EXIT

for preset in "${presets[@]}"; do
  step "${preset}" cmake --workflow --preset "${preset}"
done

# arm64 (issue 24): cross-built (cmake/aarch64-linux-gnu.cmake) and the suite run under
# qemu-user; what cannot mean anything under emulation skips with its reason, and each such skip
# is listed in tools/expected-skips. Only where the cross compiler and qemu are (install-deps
# installs both); no sanitizer presets for arm64 (they would double the run for little).
if command -v aarch64-linux-gnu-g++ >/dev/null 2>&1 && command -v qemu-aarch64 >/dev/null 2>&1; then
  presets+=(arm64)
  step arm64 cmake --workflow --preset arm64
else
  echo "::: arm64: no aarch64-linux-gnu-g++ or qemu-aarch64 here (tools/install-deps.sh): not run"
fi

format_check() {
  local dirs=()
  for d in include src tests bench fuzz; do
    [[ -d $d ]] && dirs+=("$d")
  done
  find "${dirs[@]}" -type f \( -name '*.h' -o -name '*.hpp' -o -name '*.cc' -o -name '*.c' \) \
    -print0 | sort -z | xargs -0 --no-run-if-empty clang-format --dry-run --Werror
}
step clang-format format_check
# The map of docs/architecture.md: which rooms each room may include.
step layout bash tools/check-layout.sh

# The checks below exit 77 for "skipped" (not x86-64, no objdump, no clang++ or libFuzzer): a
# result, not a failure, counted as such (its reason: the check's last line that says skip).
skippable() {
  local rc=0
  "$@" || rc=$?
  if ((rc == 77)); then
    echo "skipped: $*"
    echo "$*" >"${logs}/skipped"
    return 0
  fi
  return "$rc"
}

step clang-tidy skippable bash tools/check-tidy.sh build/dev
step hot-path skippable bash tools/check-hot-path.sh
# The release build's entry points reach only async-signal-safe functions (the release
# workflow above built build/release/libvclock.so).
step signal-safety skippable bash tools/check-signal-safety.sh build/release/libvclock.so
# And the LD_PRELOAD shim's (its exported libc functions; built by the release preset too).
step shim-signal-safety skippable bash tools/check-signal-safety.sh \
  build/release/libvclock_preload.so
# The same three for arm64: the reader cross-compiled, and the arm64 preset's libraries (a
# Release build, as the release preset's); skipped, as above, where that preset did not run.
step hot-path-arm64 skippable bash tools/check-hot-path.sh arm64
arm64_check() {
  if [[ ! -f build/arm64/libvclock.so ]]; then
    echo "skipped: no build/arm64 (the arm64 preset did not run here)"
    return 77
  fi
  bash tools/check-signal-safety.sh "$@"
}
step signal-safety-arm64 skippable arm64_check build/arm64/libvclock.so
step shim-signal-safety-arm64 skippable arm64_check build/arm64/libvclock_preload.so
# A short fuzz of the attach validation (fuzz/, tools/fuzz.sh; the long run's figures are in
# fuzz/README.md).
step fuzz-short skippable bash tools/fuzz.sh 20
