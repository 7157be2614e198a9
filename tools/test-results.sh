#!/usr/bin/env bash
# The results of tools/test.sh, counted: which tests passed, failed or were skipped, and why
# each skip happened. A skip is a result, not a pass: each one is listed with its reason, and
# one that CI's machine is not expected to have (tools/expected-skips) fails the run.
#
#   test-results.sh ctest PRESET CONSOLE_LOG LAST_TEST_LOG
#       One line per test that ctest ran, tab-separated: PRESET NAME RESULT REASON, RESULT
#       passed, failed or skipped. CONSOLE_LOG is what ctest printed (its "Test #N: NAME
#       ... Passed|***Skipped|***Failed|..." lines: the only place that tells a skip by exit
#       status 77 from a pass); LAST_TEST_LOG is its Testing/Temporary/LastTest.log (each
#       test's output, where the reason is). The reason of a skip: the last line of its output
#       that starts with "SKIP" (the scripts' convention), or the line after GoogleTest's
#       "FILE:LINE: Skipped" (GTEST_SKIP's message).
#   test-results.sh summary RESULTS [EXPECTED]
#       From RESULTS (lines as above): each failure, each skip with its reason and whether it
#       is expected on CI's machine (EXPECTED, default tools/expected-skips: an unexpected one
#       counts as failed), then, alone on the last line, "N passed, M failed, K skipped".
#       Exit status 0 when nothing failed, else 1.
set -euo pipefail

ctest_results() {
  local preset=$1 console=$2 last=$3
  [[ -f $last ]] || last=/dev/null
  awk -v preset="$preset" '
    # LastTest.log: "N/M Testing: NAME", then "Output:", a rule, the output, "<end of output>".
    FNR == NR {
      if ($0 ~ /^[0-9]+\/[0-9]+ Testing: /) { name = $3; output = 0; after_gtest = 0; next }
      if ($0 == "Output:") { output = 1; getline; next }
      if ($0 == "<end of output>") { output = 0; next }
      if (!output) next
      if (after_gtest) { gtest[name] = $0; after_gtest = 0 }
      if ($0 ~ /: Skipped$/) after_gtest = 1
      if ($0 ~ /^(== )?SKIP[: ]/) { line = $0; sub(/^(== )?SKIP:? +/, "", line); script[name] = line }
      next
    }
    # The console: "  3/40 Test  #3: NAME .....   Passed    0.05 sec" (or ***Skipped, ***Failed,
    # ***Timeout, ***Exception: ..., ***Not Run).
    match($0, /Test +#[0-9]+: /) {
      rest = substr($0, RSTART + RLENGTH)
      name = rest
      sub(/ .*/, "", name)
      status = rest
      sub(/^[^ ]* \.*/, "", status)
      if (status ~ /^ *Passed/) result = "passed"
      else if (status ~ /Skipped|Disabled/) result = "skipped"
      else result = "failed"
      reason = ""
      if (result == "skipped") {
        reason = (name in script) ? script[name] : (name in gtest) ? gtest[name] : "no reason printed"
      } else if (result == "failed") {
        reason = status
        sub(/^\*+/, "", reason)
        sub(/ +[0-9.]+ sec$/, "", reason)
      }
      gsub(/\t/, " ", reason)
      printf "%s\t%s\t%s\t%s\n", preset, name, result, reason
    }
  ' "$last" "$console"
}

summary() {
  local results=$1 expected=${2:-$(dirname "${BASH_SOURCE[0]}")/expected-skips}
  [[ -f $expected ]] || expected=/dev/null
  awk -F '\t' '
    # tools/expected-skips: PRESETS TEST WHY..., PRESETS and TEST extended regular expressions
    # matched against the whole preset and test name.
    FNR == NR {
      if ($0 ~ /^[ \t]*(#|$)/) next
      n = split($0, f, /[ \t]+/)
      k++
      want_preset[k] = f[1]
      want_test[k] = f[2]
      why = $0
      sub(/^[ \t]*[^ \t]+[ \t]+[^ \t]+[ \t]+/, "", why)
      want_why[k] = why
      next
    }
    $3 == "passed" { passed++ }
    $3 == "failed" { failed++; print "failed: " $1 " " $2 ($4 == "" ? "" : ": " $4) }
    $3 == "skipped" {
      why = ""
      for (i = 1; i <= k; i++) {
        if ($1 ~ ("^(" want_preset[i] ")$") && $2 ~ ("^(" want_test[i] ")$")) { why = want_why[i]; break }
      }
      if (why != "") {
        skipped++
        print "skipped: " $1 " " $2 ": " $4 " (expected on CI: " why ")"
      } else {
        failed++
        print "skipped: " $1 " " $2 ": " $4 " (UNEXPECTED on CI: counted as failed)"
      }
    }
    END {
      printf "%d passed, %d failed, %d skipped\n", passed, failed, skipped
      exit failed > 0
    }
  ' "$expected" "$results"
}

case ${1:-} in
  ctest) shift && ctest_results "$@" ;;
  summary) shift && summary "$@" ;;
  *)
    echo "usage: $0 ctest PRESET CONSOLE_LOG LAST_TEST_LOG | summary RESULTS [EXPECTED]" >&2
    exit 2
    ;;
esac
