# shellcheck shell=bash
# Shell helpers for the tests that run a vclockd as a real process (sourced).

# stop_pid PID: stops that process by its pid (never by name): SIGCONT (it may be stopped),
# SIGTERM, up to 5 s, then SIGKILL; reaps it when it is a child of this shell.
stop_pid() {
  local pid=$1
  [[ -n $pid ]] || return 0
  kill -CONT "$pid" 2>/dev/null
  kill -TERM "$pid" 2>/dev/null
  for _ in $(seq 50); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  return 0
}

# The test's vclockd: start_daemon keeps its pid here, stop_daemon stops it by that pid.
daemon_pid=

# start_daemon LOG COMMAND...: runs COMMAND (vclockd and its options) in the background, its
# stderr to LOG, and keeps its pid in daemon_pid.
start_daemon() {
  local log=$1
  shift
  "$@" 2>"$log" &
  daemon_pid=$!
}

# stop_daemon: stops start_daemon's vclockd, if one runs (stop_pid).
stop_daemon() {
  stop_pid "$daemon_pid"
  daemon_pid=
}

# stop_daemon_on_exit DIR: on exit, however the test ends, stops the daemon and removes DIR
# (the test's scratch directory). A test that starts more processes sets its own EXIT trap.
stop_daemon_on_exit() {
  local quoted
  printf -v quoted '%q' "$1"
  # shellcheck disable=SC2064 # the directory is fixed now, quoted once
  trap "stop_daemon; rm -rf ${quoted}" EXIT
}

# wait_attached VCLOCK PAGE: 0 once a process started now attaches to PAGE in counter mode
# (processes attach when they start); 1 after 10 s, or at once when start_daemon's vclockd has
# exited (waiting for it would only hide why). The last status read is left in attach_status.
attach_status=
wait_attached() {
  local vclock=$1 page=$2
  for _ in $(seq 100); do
    attach_status=$(VCLOCK_PAGE=$page "$vclock" status --json 2>/dev/null)
    if grep -q '"source": "shared"' <<<"$attach_status" &&
       grep -q '"mode": "counter"' <<<"$attach_status"; then
      return 0
    fi
    if [[ -n $daemon_pid ]] && ! kill -0 "$daemon_pid" 2>/dev/null; then
      return 1
    fi
    sleep 0.1
  done
  return 1
}
