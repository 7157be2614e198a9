#!/usr/bin/env bash
# What `vclock run`'s vDSO handover costs (docs/performance.md, "The vDSO handover"): each row
# measured side by side in one run, with and without `vclock run`, alternating:
#   - a static program taking 10,000 SIGALRMs a second (alarm_probe.c): its work's wall time,
#     fastest of N (every signal stops it once in the tracer);
#   - a Go program with 4 busy goroutines on GOMAXPROCS=2 (go_probe.go busy: the runtime
#     preempts them with SIGURG): its wall time, fastest of N;
#   - start-up: `vclock run -- busybox true` against `busybox true`, median of 20, with a
#     vclockd serving (VCLOCK_PAGE: the test's own, started and stopped by pid) and without
#     (each `vclock run` starts a private one and waits for its READY);
#   - execs: a shell running `busybox true` 100 times, plain and under `vclock run`, median of 20
#     (each exec waits for the tracer);
#   - the hot path, with the test's vclockd serving and calibrated: Go's time.Now() loop
#     (go_probe loop) plain (the kernel's vDSO) and under `vclock run` (the image), and a static
#     C probe's clock_gettime(MONOTONIC) loop (loop_probe.c) under `vclock run` against the same
#     loop calling libvclock's vclock_gettime directly: ns per call, fastest of N each.
# Prints the machine (CPU, clocksource) and the load before each row. Not a ctest: a figure.
#   usage: bench.sh VCLOCK [N]      (N: runs per side, default 7)
set -uo pipefail

vclock=$1
runs=${2:-7}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../support/daemon.sh
source "${here}/../support/daemon.sh"
# shellcheck source=build_go_probe.sh
source "${here}/build_go_probe.sh"
unset VCLOCK_NS VCLOCK_PAGE LD_PRELOAD
work=$(mktemp -d "${TMPDIR:-/tmp}/vclock-handover-bench.XXXXXX")
export TMPDIR=$work/tmp
mkdir -m 1777 "$TMPDIR"
daemon_pid=
# The daemon is stopped by its pid on any exit this script sees; it is also started with
# --exit-with-pid $$, so that a bench killed outright (SIGKILL, a timeout) leaves no vclockd.
cleanup() {
  stop_pid "$daemon_pid"
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

echo "cpu: $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo), $(nproc) CPUs;" \
  "clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
load() { echo "load $(cut -d' ' -f1-3 /proc/loadavg)"; }
field() { awk -v k="$2" '{ for (i = 1; i < NF; i++) if ($i == k) { print $(i + 1); exit } }' <<<"$1"; }
# ratio A B: A/B to 3 places
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }

# side_by_side LABEL FIELD CMD...: CMD plain and under `vclock run`, alternating, runs times
# each; prints the fastest FIELD of each and their ratio.
side_by_side() {
  local label=$1 key=$2 best_plain='' best_under='' plain_line='' under_line='' v i out
  shift 2
  for ((i = 0; i < runs; i++)); do
    out=$("$@") && v=$(field "$out" "$key")
    if [[ $v =~ ^[0-9]+$ ]] && { [[ -z $best_plain ]] || ((v < best_plain)); }; then
      best_plain=$v plain_line=$out
    fi
    out=$("$vclock" run -- "$@") && v=$(field "$out" "$key")
    if [[ $v =~ ^[0-9]+$ ]] && { [[ -z $best_under ]] || ((v < best_under)); }; then
      best_under=$v under_line=$out
    fi
  done
  if [[ -z $best_plain || -z $best_under ]]; then
    echo "$label: no reading ('$out')"
    return
  fi
  echo "$label: plain $((best_plain / 1000)) us, under vclock run $((best_under / 1000)) us:" \
    "$(ratio "$best_under" "$best_plain")x (fastest of $runs each; $(load) after)"
  echo "  fastest plain: $plain_line; fastest under vclock run: $under_line"
}

cc=${CC:-cc}
if "$cc" -O2 -static -o "$work/alarm_probe" "$here/alarm_probe.c"; then
  out=$("$work/alarm_probe")
  echo "alarm_probe: $out (a plain run)"
  side_by_side "static, 10,000 SIGALRM/s" work_ns "$work/alarm_probe"
else
  echo "alarm_probe: cannot link it -static"
fi

if command -v go >/dev/null; then
  if build_go_probe; then
    GOMAXPROCS=2 side_by_side "Go, 4 busy goroutines, GOMAXPROCS=2" busy_ns "$work/go_probe" busy
  else
    echo "go: the probe did not build: $(head -c 300 "$work/go.err")"
  fi
else
  echo "go: not here"
fi

# median_ms CMD...: the median of 20 wall times of CMD, in ms (bash's EPOCHREALTIME, us).
median_ms() {
  local t0 t1 times=()
  for _ in $(seq 20); do
    t0=${EPOCHREALTIME/./}
    "$@" >/dev/null 2>&1
    t1=${EPOCHREALTIME/./}
    times+=($((t1 - t0)))
  done
  printf '%s\n' "${times[@]}" | sort -n | awk '{ v[NR] = $1 } END { printf "%.1f", (v[10] + v[11]) / 2000 }'
}
busybox=$(command -v busybox)
if [[ -n $busybox ]] && ! file -L "$busybox" 2>/dev/null | grep -q 'dynamically linked'; then
  vclockd=$(dirname "$vclock")/vclockd
  plain=$(median_ms "$busybox" true)
  private=$(median_ms "$vclock" run -- "$busybox" true)
  nohand=$(median_ms "$vclock" run --no-vdso -- "$busybox" true)
  echo "start-up, no vclockd (a private one each run): busybox true $plain ms," \
    "vclock run -- busybox true $private ms, with --no-vdso $nohand ms (median of 20; $(load))"
  mkdir -m 755 "$work/daemon"
  "$vclockd" --page "$work/daemon/page" --exit-with-pid $$ 2>"$work/vclockd.log" &
  daemon_pid=$!
  if wait_attached "$vclock" "$work/daemon/page"; then
    plain=$(median_ms "$busybox" true)
    served=$(VCLOCK_PAGE=$work/daemon/page median_ms "$vclock" run -- "$busybox" true)
    nohand=$(VCLOCK_PAGE=$work/daemon/page median_ms "$vclock" run --no-vdso -- "$busybox" true)
    echo "start-up, vclockd serving: busybox true $plain ms, vclock run -- busybox true" \
      "$served ms, with --no-vdso $nohand ms (median of 20; $(load))"
    # Each exec waits for the tracer: 100 of them from one shell, the whole loop's wall time.
    # shellcheck disable=SC2016 # the inner shell expands them
    loop='i=0; while [ $i -lt 100 ]; do "$0" true; i=$((i + 1)); done'
    plain=$(median_ms sh -c "$loop" "$busybox")
    served=$(VCLOCK_PAGE=$work/daemon/page median_ms "$vclock" run -- sh -c "$loop" "$busybox")
    nohand=$(VCLOCK_PAGE=$work/daemon/page median_ms "$vclock" run --no-vdso -- sh -c "$loop" \
      "$busybox")
    echo "100 execs of busybox true from one shell, vclockd serving: plain $plain ms, under" \
      "vclock run $served ms, with --no-vdso $nohand ms (median of 20; $(load))"
  else
    echo "start-up with vclockd: its page not ready in 10 s"
  fi
else
  echo "busybox-static: not here"
fi

# alternating LABEL KEY A-NAME B-NAME: runs the functions row_a and row_b in turn, runs times
# each; prints the fastest KEY of each and B/A.
alternating() {
  local label=$1 key=$2 a_name=$3 b_name=$4 best_a='' best_b='' v i out
  for ((i = 0; i < runs; i++)); do
    out=$(row_a) && v=$(field "$out" "$key")
    if [[ $v =~ ^[0-9.]+$ ]] && { [[ -z $best_a ]] || awk -v v="$v" -v b="$best_a" 'BEGIN { exit !(v < b) }'; }; then
      best_a=$v
    fi
    out=$(row_b) && v=$(field "$out" "$key")
    if [[ $v =~ ^[0-9.]+$ ]] && { [[ -z $best_b ]] || awk -v v="$v" -v b="$best_b" 'BEGIN { exit !(v < b) }'; }; then
      best_b=$v
    fi
  done
  if [[ -z $best_a || -z $best_b ]]; then
    echo "$label: no reading ('$out')"
    return
  fi
  echo "$label: $a_name $best_a ns, $b_name $best_b ns: $(ratio "$best_b" "$best_a")x" \
    "(fastest of $runs each, alternating; $(load) after)"
}

# The hot path: the daemon's page, calibrated (until then every reader asks the kernel).
build=$(dirname "$vclock")
page=$work/daemon/page
if [[ -n $daemon_pid ]] && kill -0 "$daemon_pid" 2>/dev/null; then
  calibrated=
  for _ in $(seq 100); do
    status_json=$(VCLOCK_PAGE=$page "$vclock" status --json 2>/dev/null)
    if grep -q '"mode": "counter"' <<<"$status_json" && ! grep -q calibrating <<<"$status_json"; then
      calibrated=1
      break
    fi
    sleep 0.1
  done
  [[ -n $calibrated ]] || echo "hot path: the page is not calibrated after 10 s (figures follow)"
  if [[ -x $work/go_probe ]]; then
    row_a() { "$work/go_probe" loop; }
    row_b() { VCLOCK_PAGE=$page "$vclock" run -- "$work/go_probe" loop; }
    alternating "Go time.Now() loop" ns_per_call plain "under the image"
  fi
  src=$(cd "$here/../.." && pwd)
  if "$cc" -O2 -static -o "$work/loop_probe" "$here/loop_probe.c" 2>"$work/cc.err" &&
    "$cc" -O2 -DVCLOCK_DIRECT -I"$src/include" -o "$work/loop_direct" "$here/loop_probe.c" \
      -L"$build" -lvclock -Wl,-rpath,"$build" 2>>"$work/cc.err"; then
    row_a() { VCLOCK_PAGE=$page "$work/loop_direct"; }
    row_b() { VCLOCK_PAGE=$page "$vclock" run -- "$work/loop_probe"; }
    alternating "static C clock_gettime(MONOTONIC) loop" ns_per_call "vclock_gettime directly" \
      "under the image"
  else
    echo "loop_probe: did not build: $(head -c 300 "$work/cc.err")"
  fi
else
  echo "hot path: no vclockd of this run's own"
fi
