#!/bin/bash
# Issue 10: vclock's REALTIME follows a step of the kernel's within 1 ms (the library's promise;
# the speed targets live in the benchmarks). `vclock track --steps --inject-steps 500` steps
# REALTIME by +500 us and -500 us every 50 ms (and puts it back) while it measures; run once
# against a private vclockd page and once with the in-process timekeeper.
#
# Usage: run.sh VCLOCK VCLOCKD. Exits 77 (skip) unless root with CAP_SYS_TIME.
set -u
vclock=$1
vclockd=$2

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

[ "$(id -u)" = 0 ] || skip "needs root: the test steps REALTIME"
cap_eff=$(sed -n 's/^CapEff:[[:space:]]*//p' /proc/self/status)
(( (16#${cap_eff:-0} >> 25) & 1 )) || skip "needs CAP_SYS_TIME (capability 25) to step REALTIME"

# mktemp -d makes the directory 0700: a page in it is one vclock accepts.
dir=$(mktemp -d /tmp/vclock-step-lag-XXXXXX) || fail "mktemp -d"

# shellcheck source=../support/daemon.sh
source "$(dirname "${BASH_SOURCE[0]}")/../support/daemon.sh"
stop_daemon_on_exit "$dir"
trap 'exit 1' INT TERM HUP

# Starts vclockd on $dir/page and waits until a reader attaches to it in counter mode.
start_step_daemon() {
  start_daemon "$dir/vclockd.log" env -u NOTIFY_SOCKET "$vclockd" --page "$dir/page" --tick-us 4000
  wait_attached "$vclock" "$dir/page" && return 0
  kill -0 "$daemon_pid" 2>/dev/null || fail "vclockd exited: $(cat "$dir/vclockd.log")"
  fail "no reader attached to vclockd's page in counter mode within 10 s: $attach_status"
}

# A top-level member of the JSON document in $out, as written ("shared" keeps its quotes).
field() { sed -n "s/^  \"$1\": \\(.*\\),\$/\\1/p" <<<"$out"; }

# Measures with VCLOCK_PAGE=$1 and checks the figures; $2 is the source that must be in use.
# Returns 3, having printed why, when a step was certainly late and nothing else failed; every
# other failure ends the test.
measure_once() {
  local page=$1 source=$2 rc
  out=$(VCLOCK_PAGE=$page "$vclock" track --steps --inject-steps 500 --seconds 2 --json \
        2>"$dir/track.err")
  rc=$?
  if [ "$rc" = 2 ] && grep -q "needs CAP_SYS_TIME" "$dir/track.err"; then
    skip "$(cat "$dir/track.err")"
  fi
  [ "$rc" = 0 ] || fail "$source: vclock track exited $rc: $(cat "$dir/track.err")"$'\n'"$out"
  local injected seen uncaught within over unresolved p50 p99 max restored
  local floor_policy floor_p50 floor_p99 wake_p50 wake_p99 publish_p50 publish_p99
  local pairs after_p50 after_p99
  injected=$(field steps_injected)
  seen=$(field steps_seen)
  uncaught=$(field steps_uncaught)
  within=$(field steps_within_1ms)
  over=$(field steps_over_1ms)
  unresolved=$(field steps_unresolved)
  p50=$(field lag_p50_ns)
  p99=$(field lag_p99_ns)
  max=$(field lag_max_ns)
  restored=$(field realtime_restored)
  floor_policy=$(field floor_policy | tr -d '"')
  floor_p50=$(field floor_lag_p50_ns)
  floor_p99=$(field floor_lag_p99_ns)
  wake_p50=$(field floor_wake_p50_ns)
  wake_p99=$(field floor_wake_p99_ns)
  publish_p50=$(field publish_p50_ns)
  publish_p99=$(field publish_p99_ns)
  pairs=$(field publish_after_floor_wake_steps)
  after_p50=$(field publish_after_floor_wake_p50_ns)
  after_p99=$(field publish_after_floor_wake_p99_ns)
  echo "$source: steps injected $injected, seen $seen, never caught up $uncaught;" \
       "lag p50 $p50 ns, p99 $p99 ns, max $max ns (upper bounds);" \
       "within 1 ms $within, over $over, unresolved $unresolved; REALTIME restored: $restored"
  # The floor (a bare thread woken by the same steps, at vclockd's priority): printed beside
  # the lag, not checked (issue 20's target, lag <= floor + 5 us, is a performance figure).
  echo "$source: floor $floor_policy: lag p50 $floor_p50 ns, p99 $floor_p99 ns (seen as vclock);" \
       "its wake-up p50 $wake_p50 ns, p99 $wake_p99 ns; the writer's publish p50 $publish_p50 ns," \
       "p99 $publish_p99 ns (each from the step, by the thread's own clock);" \
       "publish - floor wake per step p50 ${after_p50:--} ns, p99 ${after_p99:--} ns ($pairs steps)"
  [ -n "$floor_p50" ] || fail "$source: no floor figures"$'\n'"$out"
  [ "$(field source)" = "\"$source\"" ] || fail "$source: measured source $(field source)"
  [ "$restored" = true ] || fail "$source: REALTIME not restored"$'\n'"$out"
  (( injected > 0 && seen * 5 >= injected * 4 )) ||
    fail "$source: saw $seen of $injected injected steps"$'\n'"$out"
  (( uncaught == 0 )) || fail "$source: $uncaught steps never caught up with"$'\n'"$out"
  # The lag is bracketed by samples; a busy machine that preempts the sampler around a step
  # leaves that step unresolved. None may be certainly late, and most must be certainly on time.
  (( within * 5 >= injected * 4 )) ||
    fail "$source: only $within of $injected steps certainly caught up within 1 ms"$'\n'"$out"
  if (( over != 0 )); then
    echo "$source: $over steps certainly caught up with 1 ms late"$'\n'"$out"
    return 3
  fi
}

# One run, and a second only when a step was certainly late in the first: the thread that
# catches up (vclockd's or the in-process timekeeper) is an ordinary thread, and on a busy
# 2-vCPU VM a wake-up now and then waits milliseconds for a CPU. A clock late in both runs
# fails; so does one that missed the wake-up altogether (it would catch up at its next tick, up
# to 4 ms on: three steps in four late).
measure() {
  local rc=0
  measure_once "$@" || rc=$?
  (( rc == 3 )) || return 0
  echo "$2: measuring again: one late wake-up is the machine's, late steps in two runs are ours"
  rc=0
  measure_once "$@" || rc=$?
  (( rc == 0 )) || fail "$2: steps certainly late in two runs"
}

start_step_daemon
measure "$dir/page" shared
stop_daemon
measure off in-process
echo "PASS"
