# shellcheck shell=bash
# The script tests' results (sourced): pass, fail and skip print one line each and count;
# finish prints the counts and exits with the test's result. A check that could not run here
# is a skip, and a skip is a result: the test exits 77 (ctest's SKIP_RETURN_CODE) when nothing
# failed but something was skipped, with the reasons on its last line, which tools/test.sh
# lists (tools/test-results.sh: the last line of a test's output that starts with "SKIP").
passed=0
failed=0
skipped=()
pass() { echo "PASS  $*"; passed=$((passed + 1)); }
fail() { echo "FAIL  $*"; failed=$((failed + 1)); }
skip() { echo "SKIP  $*"; skipped+=("$*"); }

# finish [NOTE]: "== N passed, M failed, K skipped NOTE"; exit 1 if a check failed, else 77 if
# one was skipped (its reasons once each, a leading "[mode] " left out), else 0.
finish() {
  echo "== ${passed} passed, ${failed} failed, ${#skipped[@]} skipped${1:+ $1}"
  ((failed == 0)) || exit 1
  ((${#skipped[@]} == 0)) && exit 0
  local reasons
  reasons=$(printf '%s\n' "${skipped[@]}" | sed 's/^\[[^]]*\] //' | awk '!seen[$0]++' |
    paste -sd';' | sed 's/;/; /g')
  echo "SKIP: ${#skipped[@]} checks could not run here: ${reasons}"
  exit 77
}
