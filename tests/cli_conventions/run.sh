#!/usr/bin/env bash
# Every --help is true (issue 21): for vclock's commands (its own --help's list, which is the
# dispatch table of src/cli/main.cc) and for vclockd,
#  - `vclock help CMD` prints what `vclock CMD --help` prints, and exits 0;
#  - every option the command's source registers with the parser (src/tool/args.h's add_*)
#    or compares by hand appears in its --help;
#  - every option its --help names is known to the parser: given with an empty value and an
#    unknown sentinel after it, the command refuses the sentinel or the value (exit 2), never
#    the option itself, and never runs.
# Each --help opens with "Usage: PROGRAM". And --version on both: exit 0, one line, the project version and the page ABI; and
# `vclock status` on a page that does not exist.
# Usage: run.sh BIN_DIR SOURCE_DIR
set -u
bin=$1
src=$2
vclock=$bin/vclock
vclockd=$bin/vclockd
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}
work=$(mktemp -d /tmp/vclock-cli-help.XXXXXX)
trap 'rm -rf "$work"' EXIT
# A stray `ns create` would write beside these (root: beside the page), not in the real ones.
export XDG_RUNTIME_DIR=$work VCLOCK_PAGE=$work/run/page

# The options a command's source knows: add_*("name" registrations and "--name" literals.
known_options() {
  perl -0777 -ne 'while (/add_(?:flag|int|real|string|choice)\(\s*"(?:--)?([a-z][a-z-]*)"/g) { print "--$1\n" }
                  while (/"(--[a-z][a-z-]*)"/g) { print "$1\n" }' "$@" |
    grep -vx -e --help -e -- | sort -u
}
# The options a --help text offers: those that open a line of its option list or stand in
# brackets on a usage line (prose may name another command's, as ns's 'vclock run --ns').
helped_options() {
  grep -oE -- '(^ +|\[)--[a-z][a-z-]*' | sed 's/^[ []*//' | grep -vx -e --help | sort -u
}
# How to give option $1 of help text $2 without running anything: "--opt=" when the help
# shows it taking a value (an empty one is refused or the sentinel after it is), else the
# bare flag (then the sentinel is refused).
probe_form() {
  if grep -qE -- "$1[ =][A-Z]" <<<"$2"; then echo "$1="; else echo "$1"; fi
}

declare -A sources=(
  [status]="src/cli/status/status.cc"
  [bound]="src/cli/status/bound.cc"
  [warp]="src/cli/measure/warp.cc"
  [track]="src/cli/measure/track.cc"
  [bench]="src/cli/bench/bench.cc"
  [run]="src/cli/run/run.cc src/timens/time_options.cc"
  [ns]="src/cli/ns/ns_command.cc src/timens/time_options.cc"
  [stamps]="src/cli/stamps/stamps_command.cc"
)
# time_options.cc serves both: --ns is run's only, --thaw and --allow-backward are `ns set`'s.
declare -A not_theirs=([run]="--thaw --allow-backward" [ns]="--ns")

commands=$("$vclock" --help | sed -n '/^commands:/,/^$/p' | awk 'NR > 1 && NF { print $1 }' |
  grep -vx help)
[ -n "$commands" ] || fail "vclock --help lists no commands"
for c in $commands; do
  [ -n "${sources[$c]:-}" ] || fail "$c: a command this test does not know: add its source"
done
for c in "${!sources[@]}"; do
  grep -qx "$c" <<<"$commands" || fail "$c: not listed by vclock --help"
done

# $1: the name in messages; $2: the help text; $3...: the command line before the option.
check_help() {
  local name=$1 help=$2 known
  shift 2
  known=$(cd "$src" && known_options ${sources[$name]})
  for o in $known; do
    [[ " ${not_theirs[$name]:-} " == *" $o "* ]] && continue
    grep -q -- "$o\b" <<<"$help" || fail "$name: $o is known to the parser but not in --help"
  done
  for o in $(helped_options <<<"$help"); do
    local out rc
    out=$(timeout 10 "$@" "$(probe_form "$o" "$help")" --zz-not-an-option 2>&1 >/dev/null)
    rc=$?
    if grep -q -- "unknown option '$o['=]" <<<"$out"; then
      fail "$name: --help names $o, which the parser does not know: $out"
    elif [ "$rc" -ne 2 ]; then
      fail "$name: '$* $(probe_form "$o" "$help") --zz-not-an-option' exited $rc, not 2: $out"
    fi
  done
}

# Every --help opens with its synopsis, "Usage: PROGRAM ...", as GNU's do: help2man makes the
# man pages' SYNOPSIS from that line, and finds none in any other spelling.
opens_with_usage() {
  head -n 1 <<<"$2" | grep -q "^Usage: $1\( \|$\)" ||
    fail "$1 --help opens with '$(head -n 1 <<<"$2")', not 'Usage: $1'"
}
opens_with_usage vclock "$("$vclock" --help)"
opens_with_usage vclockd "$("$vclockd" --help)"

for c in $commands; do
  help=$("$vclock" "$c" --help) || fail "vclock $c --help: exit $?"
  via_help=$("$vclock" help "$c") || fail "vclock help $c: exit $?"
  [ "$help" = "$via_help" ] || fail "vclock help $c differs from vclock $c --help"
  opens_with_usage "vclock $c" "$help"
  if [ "$c" = ns ]; then
    # Options belong to subcommands: known if any of them knows it.
    for o in $(helped_options <<<"$help"); do
      ok=0
      for sub in "create x" "set x" "show" "list"; do
        out=$(timeout 10 "$vclock" ns $sub "$(probe_form "$o" "$help")" --zz-not-an-option \
          2>&1 >/dev/null)
        grep -q -- "unknown option '$o['=]" <<<"$out" || ok=1
      done
      [ $ok = 1 ] || fail "ns: --help names $o, which no ns subcommand knows"
    done
    known=$(cd "$src" && known_options ${sources[ns]})
    for o in $known; do
      [[ " ${not_theirs[ns]} " == *" $o "* ]] && continue
      grep -q -- "$o\b" <<<"$help" || fail "ns: $o is known to the parser but not in --help"
    done
  else
    check_help "$c" "$help" "$vclock" "$c"
  fi
done

# `vclock run --help` names every clock function the shim interposes (src/shim/preload.cc).
run_help=$("$vclock" run --help)
for f in $(sed -n 's/^VCLOCK_SHIM_EXPORT [a-z_]* \**\([a-z_]*\)(.*/\1/p' "$src/src/shim/preload.cc"); do
  grep -q "\b$f\b" <<<"$run_help" || fail "run: --help does not name $f, which the shim interposes"
done
[ -n "$(sed -n '/^VCLOCK_SHIM_EXPORT/p' "$src/src/shim/preload.cc")" ] ||
  fail "src/shim/preload.cc exports nothing this test can see"

"$vclock" help help >"$work/help" || fail "vclock help help: exit $?"
"$vclock" --help | cmp -s - "$work/help" || fail "vclock help help differs from vclock --help"

sources[vclockd]="src/daemon/main.cc"
check_help vclockd "$("$vclockd" --help)" "$vclockd"

version=$(sed -n 's/^project(vclock VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
abi=$(sed -n 's/.*page_abi_major = \([0-9]*\);.*/\1/p; s/.*page_abi_minor = \([0-9]*\);.*/.\1/p' \
  "$src/include/vclock/page.h" | tr -d '\n')
for p in vclock vclockd; do
  out=$("$bin/$p" --version)
  rc=$?
  [ $rc -eq 0 ] || fail "$p --version: exit $rc"
  [ "$out" = "$p $version (page ABI $abi)" ] || fail "$p --version: '$out', not '$p $version (page ABI $abi)'"
done

# `vclock status` names a page only when it exists, and otherwise says why not (text, JSON).
missing=$work/none/page
out=$(VCLOCK_PAGE=$missing "$vclock" status)
grep -qE "^page +none \($missing: no such file\)$" <<<"$out" ||
  fail "status, missing page: no 'page none ($missing: no such file)' line: $(grep ^page <<<"$out")"
out=$(VCLOCK_PAGE=$missing "$vclock" status --json)
grep -q '"page": ""' <<<"$out" || fail "status --json, missing page: page is not \"\": $out"
grep -q "\"page_absent\": \"$missing: no such file\"" <<<"$out" ||
  fail "status --json, missing page: no page_absent: $out"

if [ $failures -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "every --help names exactly the options its parser knows; --version on both; status on a missing page"
