#!/usr/bin/env bash
# Error-bounded time through a real vclockd (started and stopped here, by pid) with the fake
# source, and the kernel source on this machine.
#   usage: run.sh VCLOCKD VCLOCK BOUND_PROBE
# Exit 0 all passed, 1 a check failed, 77 none failed but some could not run here (no chronyd,
# not root), with the reasons on the last line.
set -uo pipefail

vclockd=$1
vclock=$2
probe=$3
unset VCLOCK_NS LD_PRELOAD

dir=$(mktemp -d "${TMPDIR:-/tmp}/vclock-bound.XXXXXX") # 0700: a page in it is accepted
# shellcheck source=../support/daemon.sh
source "$(dirname "${BASH_SOURCE[0]}")/../support/daemon.sh"
stop_daemon_on_exit "$dir"

# shellcheck source=../support/results.sh
source "$(dirname "${BASH_SOURCE[0]}")/../support/results.sh"
field() { awk -v k="$2" '{ for (i = 1; i < NF; i++) if ($i == k) { print $(i + 1); exit } }' <<<"$1"; }
fake=$dir/fake.json
export VCLOCK_PAGE=$dir/page

# --- The fake source through a real vclockd ---------------------------------------------------
echo '{"status": "synced", "error_ns": 200000, "drift_ppb": 100}' >"$fake"
start_daemon "$dir/vclockd.log" "$vclockd" --page "$dir/page" --bound-source "fake:$fake"
wait_attached "$vclock" "$VCLOCK_PAGE"
if ! "$probe" wait 1 5000 >/dev/null; then
  fail "no synced bound within 5 s: $(cat "$dir/vclockd.log")"
  finish
fi
# error 200 us (+ 100 ppb since the file was read), vclock's deviation, vclock's slew bound
# over at most a validity window: within 1 % above the source's figure (2 % under TSan, whose
# slower timekeeper leaves a wider deviation: seen 202,162 ns), never below it; and no reading
# UNKNOWN (a page gone stale).
fake_sandwich() {
  out=$("$probe" sandwich 1000000)
  rc=$?
  min=$(field "$out" min_half)
  max=$(field "$out" max_half)
  wide=$(field "$out" wide)
  ((rc == 0 && min >= 200000 && max <= 204000 && wide < 10000)) &&
    [[ $(field "$out" unknown) == 0 && $(field "$out" outside) == 0 ]]
}
# A reading outside its interval, or one that misses its sandwich, fails at once. A daemon
# held off its CPU (in the middle of an update, or for three ticks) leaves readers no bound,
# and they rightly answer UNKNOWN; its deviation grows meanwhile. Seen once under TSan in CI on
# this 2-vCPU VM (1,357 of 10^6 UNKNOWN, the widest 204,220 ns; other runs 0 and at most
# 202,400): that is measured once more, and fails when it happens in both runs. A bound below
# the source's figure is a defect, never preemption: it fails at once, as does a reading
# outside its interval or its sandwich.
if fake_sandwich; then
  pass "fake source: every one of 10^6 readings inside its interval ($wide dropped: preempted" \
    "sandwiches); half-width $min-$max ns for 200 us"
elif first=$out && [[ $(field "$out" outside) == 0 && $(field "$out" disjoint) == 0 ]] &&
  (($(field "$out" min_half) >= 200000)) &&
  echo "fake source: measuring again after a stale page or a wide interval: $first" &&
  fake_sandwich; then
  pass "fake source, second run: every one of 10^6 readings inside its interval ($wide" \
    "dropped); half-width $min-$max ns for 200 us (the first: $first)"
else
  fail "fake source: $out"
fi

echo '{"status": "synced", "error_ns": 100000, "drift_ppb": 100}' >"$fake"
out=$("$probe" wait-below 150000 100) && pass "rewritten file seen $out" || fail "rewritten file: $out"

echo '{"status": "free_running", "error_ns": 5000000, "drift_ppb": 50000}' >"$fake"
out=$("$probe" wait 2 100) && pass "free_running seen $out" || fail "free_running: $out"

echo 'not json' >"$fake"
out=$("$probe" wait 0 100) && pass "malformed file: unknown $out" || fail "malformed file: $out"
sleep 0.05
grep -q 'not a JSON object' "$dir/vclockd.log" && pass "malformed file: the daemon's log says why" ||
  fail "malformed file: nothing in the log: $(tail -3 "$dir/vclockd.log")"
# Each bad file replaces a good one the daemon took (synced): only a rejection makes the
# bound unknown again, so an accepted bad file (synced, or a wrong status) fails.
for bad in '' '{"status": "synced", "error_ns": -1, "drift_ppb": 0}' \
  '{"status": "synced", "error_ns": 1, "drift_ppb": 0.5}' '{"status": "maybe", "error_ns": 1, "drift_ppb": 0}' \
  '{"status": "synced", "error_ns": 99999999999999999999, "drift_ppb": 0}'; do
  echo '{"status": "synced", "error_ns": 200000, "drift_ppb": 100}' >"$fake"
  "$probe" wait 1 1000 >/dev/null || fail "bad file '$bad': the good file before it not taken"
  printf '%s' "$bad" >"$fake"
  out=$("$probe" wait 0 1000) && pass "bad file '$bad' rejected: unknown $out" ||
    fail "bad file '$bad' accepted: $out"
done
rm -f "$fake"
out=$("$probe" wait 0 100) && pass "bad and missing files: unknown, daemon alive" || fail "missing file: $out"
kill -0 "$daemon_pid" || fail "vclockd died on bad input"

echo '{"status": "synced", "error_ns": 200000, "drift_ppb": 100}' >"$fake"
"$probe" wait 1 1000 >/dev/null || fail "synced again"
kill -STOP "$daemon_pid"
out=$("$probe" wait 0 200) && pass "stopped daemon: unknown $out (3 ticks of 4 ms)" ||
  fail "stopped daemon: $out"
kill -CONT "$daemon_pid"
out=$("$probe" wait 1 1000) && pass "continued daemon: synced again $out" || fail "continued: $out"

# A REALTIME step makes it disrupted until the source is read again (needs CAP_SYS_TIME).
cap_eff=$(sed -n 's/^CapEff:[[:space:]]*//p' /proc/self/status)
if [[ $(id -u) -eq 0 ]] && (((16#${cap_eff:-0} >> 25) & 1)); then
  "$probe" wait 4 3000 >"$dir/disrupted" &
  watcher=$!
  sleep 0.2
  # Steps of +10 us and -10 us (clock_adjtime ADJ_SETOFFSET, undone exactly at the end).
  "$vclock" track --steps --inject-steps 10 --seconds 1 >/dev/null 2>&1
  wait "$watcher" && pass "REALTIME stepped: disrupted seen $(cat "$dir/disrupted")" ||
    fail "REALTIME stepped: $(cat "$dir/disrupted")"
  "$probe" wait 1 1000 >/dev/null && pass "then synced again" || fail "not synced after the step"
else
  skip "disrupted: needs root with CAP_SYS_TIME"
fi
stop_daemon

# --- chronyd, started here with -x (it never touches the clock) -------------------------------
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
chronyd=${CHRONYD:-}
for candidate in "$(command -v chronyd 2>/dev/null)" /usr/sbin/chronyd \
  "$here/../../build/chrony/usr/sbin/chronyd"; do
  [[ -z $chronyd && -n $candidate && -x $candidate ]] && chronyd=$candidate
done
chrony_pid=
stop_chronyd() {
  stop_pid "$chrony_pid"
  chrony_pid=
}
start_chronyd() { # CONF_EXTRA: starts chronyd -x on $chrony_port, with CONF_EXTRA in its file
  mkdir -p -m 700 "$dir/chrony"
  printf 'cmdport %s\nbindcmdaddress 127.0.0.1\nbindcmdaddress %s/chrony/chronyd.sock\n' \
    "$chrony_port" "$dir" >"$dir/chrony.conf"
  printf 'pidfile %s/chrony/chronyd.pid\ndriftfile %s/chrony/drift\nport 0\n%s\n' \
    "$dir" "$dir" "$1" >>"$dir/chrony.conf"
  "$chronyd" -x -d -u root -f "$dir/chrony.conf" >"$dir/chronyd.log" 2>&1 &
  chrony_pid=$!
}
if [[ -z $chronyd ]]; then
  skip "chrony source: no chronyd (Debian: chrony; .ci/run extracts it into build/chrony)"
elif [[ $(id -u) -ne 0 ]]; then
  skip "chrony source: chronyd -x is started as root here"
else
  chrony_port=$((20000 + $$ % 10000))
  trap 'stop_chronyd; stop_daemon; rm -rf "$dir"' EXIT
  # "local stratum 10": chronyd serves its own clock, synchronised, with (nearly) no error.
  start_chronyd "local stratum 10"
  export VCLOCK_PAGE=$dir/chrony-page
  start_daemon "$dir/vclockd.log" \
    "$vclockd" --page "$VCLOCK_PAGE" --bound-source "chrony:$chrony_port"
  wait_attached "$vclock" "$VCLOCK_PAGE"
  if out=$("$probe" wait 1 5000); then
    json=$("$vclock" bound --json)
    grep -q '"source": "chrony"' <<<"$json" && pass "chrony source: synced $out" ||
      fail "chrony source: $json"
    # chronyd serving its own clock claims (nearly) no error: the bound is vclock's own
    # deviation from the kernel, a few hundred ns, no wider than the sandwich itself. The
    # kernel's time at each reading must lie in the interval: it meets every sandwich.
    # And it must be a bound at all: no reading UNKNOWN (chronyd stays synchronised
    # throughout), and the half-width under 1 ms, a thousand times the few hundred ns expected
    # and a thousand times below a +-1 s source, which would otherwise pass.
    out=$("$probe" sandwich 100000 2>/dev/null)
    rc=$?
    ((rc == 0)) && [[ $(field "$out" unknown) == 0 ]] &&
      (($(field "$out" max_half) < 1000000)) &&
      pass "chrony source: 10^5 intervals, each meets its kernel sandwich: $out" ||
      fail "chrony source (exit $rc): $out"
    kill -STOP "$chrony_pid"
    out=$("$probe" wait 2 6000) && pass "chronyd stopped: free_running $out" ||
      fail "chronyd stopped: $out"
    stop_chronyd
    # No reference at all: chronyd says it is not synchronised.
    start_chronyd ""
    out=$("$probe" wait 3 6000) && pass "chronyd with no source: unsynced $out" ||
      fail "chronyd with no source: $out ($(tail -2 "$dir/vclockd.log"))"
  else
    fail "chrony source: not synced within 5 s: $out; vclockd: $(tail -3 "$dir/vclockd.log");" \
      "chronyd: $(tail -3 "$dir/chronyd.log")"
  fi
  stop_daemon
  stop_chronyd
  export VCLOCK_PAGE=$dir/page
fi

# --- The kernel source on this machine --------------------------------------------------------
kernel=$("$probe" adjtimex)
out=$(VCLOCK_PAGE=off "$vclock" bound --json)
status=$(sed -n 's/^  "status": "\(.*\)",$/\1/p' <<<"$out")
bound=$(sed -n 's/^  "bound_ns": \(.*\),$/\1/p' <<<"$out")
maxerror_ns=$(($(field "$kernel" maxerror_us) * 1000))
if [[ $(field "$kernel" unsync) == 1 || $(field "$kernel" state) == 5 ]]; then
  [[ $status == unsynced ]] && ((bound >= maxerror_ns && bound >= 16000000000)) &&
    pass "kernel source: $kernel: unsynced, +-$bound ns" || fail "kernel source: $kernel: $out"
else
  [[ $status == synced ]] && ((bound >= maxerror_ns)) &&
    pass "kernel source: $kernel: synced, +-$bound ns" || fail "kernel source: $kernel: $out"
fi
out=$("$vclockd" --page "$dir/other" --bound-source chrony:0 2>&1)
(($? == 2)) && pass "--bound-source chrony:0: exit 2: $out" || fail "--bound-source chrony:0: $out"
out=$("$vclockd" --page "$dir/other" --bound-source sundial 2>&1)
(($? == 2)) && pass "--bound-source sundial: exit 2: $out" || fail "--bound-source sundial: $out"

finish
