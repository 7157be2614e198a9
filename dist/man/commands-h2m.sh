#!/usr/bin/env bash
# Writes help2man's include for vclock(1): its own SEE ALSO (vclock.h2m), the SYNOPSIS lines
# of every command after vclock's own (help2man makes that one from `vclock --help`'s
# "Usage:" line), and a COMMANDS section holding each command's --help as printed, so the page
# and `vclock help CMD` are one text. Every --help must open with "Usage: vclock": a text
# that does not fails the build here rather than give a page without its synopsis.
# Usage: commands-h2m.sh VCLOCK SEE_ALSO_H2M OUT
set -euo pipefail
vclock=$1

# Roff: a backslash is \e; a line may not begin with a control character.
roff_text() { sed -e 's/\\/\\e/g' -e "s/^\([.']\)/\\\\\&\1/"; }

# The usage lines of help text $2 (command $1): the "Usage: " line and the lines under it
# that name vclock again, without the "Usage:" and the indent.
usage_lines() {
  awk -v c="$1" '
    NR == 1 { if ($1 != "Usage:" || $2 != "vclock") { bad = 1; exit } sub(/^Usage: +/, ""); print; next }
    /^ +vclock / { sub(/^ +/, ""); print; next }
    { exit }
    END { if (bad || NR == 0) { print "commands-h2m.sh: vclock " c "'\''s --help does not open with \"Usage: vclock\"" > "/dev/stderr"; exit 1 } }'
}

# Each text is read whole first: awk stops reading at the end of the usage lines.
top=$("$vclock" --help)
usage_lines "" <<<"$top" >/dev/null
commands=$(sed -n '/^commands:/,/^$/p' <<<"$top" | awk 'NR > 1 && NF { print $1 }' |
  grep -vx help)
{
  cat "$2"
  echo "[>SYNOPSIS]"
  for c in $commands; do
    help=$("$vclock" help "$c")
    usage_lines "$c" <<<"$help" >"$3.usage"
    while read -r program command rest; do
      # As help2man sets its own line: "vclock CMD" in bold, the rest roman, \- for a dash;
      # \& first, since help2man would take a line opening with "[" for a section's name.
      echo ".br"
      echo ".B $program $command"
      printf '%s\n' "$rest" | sed -e 's/\\/\\e/g' -e 's/-/\\-/g' -e 's/^/\\\&/'
    done <"$3.usage"
  done
  echo "[COMMANDS]"
  for c in $commands; do
    echo ".SS \"vclock $c\""
    echo ".nf"
    "$vclock" help "$c" | roff_text
    echo ".fi"
  done
} >"$3.tmp"
rm -f "$3.usage"
mv "$3.tmp" "$3"
