#!/usr/bin/env bash
# The man.render test: each page given renders with groff, every warning on and none printed,
# is not empty, and has a SYNOPSIS section that names its program (help2man writes it from
# the --help's "Usage:" line; a text without one gives a page without it).
# Usage: check-pages.sh PAGE...   Exit status: 0 all hold, 1 one does not.
set -u
failures=0
for page; do
  if [ ! -s "$page" ]; then
    echo "$page: missing or empty"
    failures=$((failures + 1))
    continue
  fi
  out=$(groff -man -Tutf8 -ww "$page" 2>&1 >/dev/null)
  if [ -n "$out" ]; then
    echo "$page: $out"
    failures=$((failures + 1))
  fi
  # The program: the page's name less its section (vclockd.8 -> vclockd).
  program=$(basename "$page")
  program=${program%.*}
  # The section's first line after the heading: ".B PROGRAM ..." (vclock_gettime(3): its
  # #include line, from vclock_gettime.txt's "Usage:").
  first=$(awk '/^\.SH SYNOPSIS/ { getline; print; exit }' "$page")
  if [ -z "$first" ]; then
    echo "$page: no SYNOPSIS section"
    failures=$((failures + 1))
  elif [[ $first != ".B $program"* && $first != ".B #include"* ]]; then
    echo "$page: SYNOPSIS opens with '$first', not $program"
    failures=$((failures + 1))
  fi
  # vclock(1): each command of its COMMANDS section has its line in the SYNOPSIS too.
  for c in $(sed -n 's/^\.SS "vclock \([a-z]*\)"$/\1/p' "$page"); do
    awk '/^\.SH SYNOPSIS/ { s = 1; next } /^\.SH / { s = 0 } s' "$page" | grep -q "^\.B vclock $c\$" ||
      { echo "$page: no 'vclock $c' in the SYNOPSIS"; failures=$((failures + 1)); }
  done
done
[ "$failures" -eq 0 ] || exit 1
echo "rendered, each with a SYNOPSIS: $*"
