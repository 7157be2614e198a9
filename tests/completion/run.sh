#!/usr/bin/env bash
# The bash completion (dist/bash-completion/vclock) loads in a plain bash, registers both
# executables, and completes a command, a subcommand and an option from their --help.
# Usage: run.sh BIN_DIR COMPLETION_FILE
set -u
export PATH=$1:$PATH
script=$2
command -v vclock >/dev/null && command -v vclockd >/dev/null || {
  echo "FAIL: no vclock and vclockd in $1"
  exit 1
}
out=$(bash --norc --noprofile -c '
source "$1" || exit 1
complete -p vclock && complete -p vclockd || exit 1
t() {
  COMP_WORDS=("${@:2}"); COMP_CWORD=$(($# - 2)); COMPREPLY=()
  "$1"
  echo "${*:2} -> ${COMPREPLY[*]}"
}
t _vclock vclock stat
t _vclock vclock help tr
t _vclock vclock bench --qu
t _vclock vclock ns cr
t _vclock vclock stamps con
t _vclock vclock run --kernel
t _vclock vclock --vers
t _vclockd vclockd --tick
' bash "$script" 2>&1)
echo "$out"
failures=0
expect() {
  grep -qxF -- "$1" <<<"$out" || {
    echo "FAIL: expected '$1'"
    failures=$((failures + 1))
  }
}
expect "complete -F _vclock vclock"
expect "complete -F _vclockd vclockd"
expect "vclock stat -> status"
expect "vclock help tr -> track"
expect "vclock bench --qu -> --quick"
expect "vclock stamps con -> convert"
expect "vclock ns cr -> create"
expect "vclock run --kernel -> --kernel-timens"
expect "vclock --vers -> --version"
expect "vclockd --tick -> --tick-us"
exit $((failures != 0))
