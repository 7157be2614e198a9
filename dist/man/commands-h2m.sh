#!/usr/bin/env bash
# Writes help2man's include for vclock(1): its own SEE ALSO (vclock.h2m) and a COMMANDS
# section holding each command's --help as printed, so the page and `vclock help CMD` are one
# text. Usage: commands-h2m.sh VCLOCK SEE_ALSO_H2M OUT
set -euo pipefail
vclock=$1
{
  cat "$2"
  echo "[COMMANDS]"
  for c in $("$vclock" --help | sed -n '/^commands:/,/^$/p' | awk 'NR > 1 && NF { print $1 }' |
    grep -vx help); do
    echo ".SS \"vclock $c\""
    echo ".nf"
    # Roff: a backslash is \e; a line may not begin with a control character.
    "$vclock" help "$c" | sed -e 's/\\/\\e/g' -e "s/^\([.']\)/\\\\\&\1/"
    echo ".fi"
  done
} >"$3.tmp"
mv "$3.tmp" "$3"
