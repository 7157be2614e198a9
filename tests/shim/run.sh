#!/usr/bin/env bash
# The shim under real programs that nobody here wrote (issue: "Unmodified programs"): date,
# python3, perl, node, Java, a Rust and a C++ std::chrono probe, and C probes for the versioned
# clock_gettime@GLIBC_2.2.5, time, gettimeofday, timespec_get and ftime, errno cases, a 10 kHz
# signal handler, an ASan-built program, jemalloc, a static binary, a setuid one and setpriv
# (glibc's all-threads set*id). Each runs three times: LD_PRELOAD with a vclockd that this
# script starts (mode "shared"); through `vclock run` with no vclockd, which starts a private
# one for the command (mode "run", source "shared" too); and LD_PRELOAD with no page at all
# (VCLOCK_PAGE=off, mode "off": the shim passes every call to the kernel, source "kernel").
# Checks, one line each with its figures:
#   * exit status 0, under a watchdog (a hang is a failure, not a stalled suite);
#   * every REALTIME reading the program prints lies within a kernel bracket that this script
#     takes outside the shim just before the start and just after the exit;
#   * so does every reading of another clock (MONOTONIC, BOOTTIME, MONOTONIC_RAW, TAI, the
#     coarse ones) that the program prints, and, as a run lasts ~300 ms and a wrong reading
#     taken early would still lie inside that bracket, the reading minus the program's own
#     REALTIME readings just before and after it equals the kernel's offset between the two
#     clocks (taken by shim_kernel_clocks with the raw system call, before and after the run)
#     to 100 us (down to two ticks and 1 ms below for a coarse clock): a clock answered from
#     another clock's line, or 10 ms off, fails;
#   * VCLOCK_SHIM_STATS has the program's line (its pid, its exe) with the expected source and
#     served > 0 (forwarded > 0 and served 0 in mode off; in mode run, served may be 0: the
#     private vclockd's counter may not be calibrated yet); static and setuid programs must not
#     be served at all (the loader ignores LD_PRELOAD for them), and must still be right.
# A probe prints `pid N`, `realtime NAME NS GRAIN_NS` (its last REALTIME reading in ns, and
# how much the call truncates it), `clock LABEL CLOCK NS REAL1_NS REAL2_NS GRAIN_NS
# REAL_GRAIN_NS` for each other clock it reads (a reading of CLOCK, a kernel clock's name,
# between two REALTIME readings, and how much each truncates), optionally `calls N` (calls to
# the interposed function, which served + forwarded must cover), `secure 0|1` (AT_SECURE) and
# other `key value` lines, shown as figures; it checks itself that its readings never go
# back, and exits 1 if not.
#
# Usage: run.sh [--no-shim] SHIM_SO VCLOCKD VCLOCK PROBE_DIR
#   SHIM_SO    libvclock_preload.so; if it does not exist: exit 77 (skipped)
#   VCLOCKD    vclockd; VCLOCK the `vclock` tool (its `status --json` tells when a page is up)
#   PROBE_DIR  where tests/shim/CMakeLists.txt built the C and C++ probes and
#              shim_kernel_clocks
#   --no-shim  runs every program without LD_PRELOAD (the probes' own and bracket checks
#              only): to check the probes themselves, and the machine, without a shim
# Environment: CC (compiles the static and ASan probes; default cc), PYTHON, PERL, NODE, JAVA,
# JAVAC, RUSTC (default: from PATH), JEMALLOC (default Debian's libjemalloc.so.2),
# SHIM_TIMEOUT (seconds per program, default 30). A program that is missing is skipped with a
# one-line message. Exit status: 0 all passed, 1 a check failed, 77 no shim, or none failed but
# some could not run here (a program missing, not root), with the reasons on the last line.
set -euo pipefail
export LC_ALL=C # EPOCHREALTIME's decimal point

no_shim=0
if [[ ${1:-} == --no-shim ]]; then
  no_shim=1
  shift
fi
if [[ $# -ne 4 ]]; then
  echo "usage: $0 [--no-shim] SHIM_SO VCLOCKD VCLOCK PROBE_DIR" >&2
  exit 2
fi
shim=$1
vclockd=$2
vclock=$3
probe_dir=$4
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
limit=${SHIM_TIMEOUT:-30}
cc=${CC:-cc}
script_start_us=${EPOCHREALTIME/./}

if ((!no_shim)) && [[ ! -f $shim ]]; then
  echo "SKIP: the shim is not built: $shim"
  exit 77
fi
[[ $shim == /* ]] || shim=$PWD/$shim # LD_PRELOAD wants a path that works from anywhere
for f in "$vclockd" "$vclock" "$probe_dir"/shim_{calls,errno,signal,chrono}_probe \
  "$probe_dir/shim_kernel_clocks"; do
  if [[ ! -x $f ]]; then
    echo "FAIL: $f is missing or not executable" >&2
    exit 1
  fi
done

# This script and the tools it runs (vclockd above all) must not be shimmed themselves, nor
# steered by a caller's settings.
unset LD_PRELOAD VCLOCK_DISABLE VCLOCK_NS VCLOCK_PAGE VCLOCK_SHIM_STATS NOTIFY_SOCKET

# A sanitizer build's shim needs the sanitizer's runtime first in every program's LD_PRELOAD
# (and TSan cannot be preloaded into a foreign program at all): this test skips such builds,
# and runs in the dev and release presets. The probes are checked too, as CMake gives them the
# preset's flags.
if ((!no_shim)) && command -v readelf >/dev/null 2>&1; then
  for f in "$shim" "$probe_dir/shim_calls_probe"; do
    if readelf -d "$f" 2>/dev/null | grep -Eq 'NEEDED.*lib(asan|tsan|ubsan|hwasan)'; then
      echo "SKIP: $f is built with a sanitizer; preloading it into programs built without" \
        "one is not supported (the dev and release builds run this test)"
      exit 77
    fi
  done
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/vclock-shim.XXXXXX")
chmod 755 "$work" # the setuid case runs as another user and must reach its copy
daemon_dir=
daemon_pid=
cleanup() {
  if [[ -n $daemon_pid ]] && kill -0 "$daemon_pid" 2>/dev/null; then
    kill -TERM "$daemon_pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$daemon_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$daemon_pid" 2>/dev/null || true
    wait "$daemon_pid" 2>/dev/null || true
  fi
  rm -rf "$work" ${daemon_dir:+"$daemon_dir"}
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# shellcheck source=../support/results.sh
source "$here/../support/results.sh"

# Nanoseconds as milliseconds with three decimals.
ms() {
  local n=$1 sign=
  if ((n < 0)); then sign=- n=$((-n)); fi
  printf '%s%d.%03d ms' "$sign" $((n / 1000000)) $((n / 1000 % 1000))
}

# --- What this machine has ---------------------------------------------------------------
find_program() { # VAR NAME...: the first NAME on PATH, or empty
  local var=$1 name
  shift
  for name in "$@"; do
    if command -v "$name" >/dev/null 2>&1; then
      printf -v "$var" '%s' "$(command -v "$name")"
      return
    fi
  done
  printf -v "$var" '%s' ""
}
find_program python "${PYTHON:-python3}"
find_program perl "${PERL:-perl}"
find_program node "${NODE:-node}" nodejs
find_program java "${JAVA:-java}"
find_program javac "${JAVAC:-javac}"
find_program rustc "${RUSTC:-rustc}"
jemalloc=${JEMALLOC:-/usr/lib/x86_64-linux-gnu/libjemalloc.so.2}

# Wrappers such as pyenv's shims are shell scripts that start more programs: run the
# interpreter itself, so the stats line to look for is the probe's own.
if [[ -n $python ]]; then
  python=$("$python" -c 'import sys; print(sys.executable)' 2>/dev/null) || python=
fi
if [[ -n $perl ]] && ! "$perl" -MTime::HiRes -e 1 2>/dev/null; then
  echo "note: $perl has no Time::HiRes"
  perl=
fi

echo "== preparing the probes (without the shim)"
java_dir=
if [[ -n $java && -n $javac ]]; then
  t0=${EPOCHREALTIME/./}
  if "$javac" -d "$work/java" "$here/Probe.java" >"$work/javac.log" 2>&1; then
    java_dir=$work/java
    echo "javac Probe.java: $(ms $(((${EPOCHREALTIME/./} - t0) * 1000)))"
  else
    echo "FAIL  javac Probe.java:" && sed 's/^/   /' "$work/javac.log"
    failed=$((failed + 1))
  fi
fi
rust_probe=
if [[ -n $rustc ]]; then
  t0=${EPOCHREALTIME/./}
  if "$rustc" -O --edition 2021 "$here/probe.rs" -o "$work/rust_probe" >"$work/rustc.log" 2>&1
  then
    rust_probe=$work/rust_probe
    echo "rustc probe.rs: $(ms $(((${EPOCHREALTIME/./} - t0) * 1000)))"
  else
    echo "FAIL  rustc probe.rs:" && sed 's/^/   /' "$work/rustc.log"
    failed=$((failed + 1))
  fi
fi
static_probe=
if "$cc" -static -O1 -DCALLS_PROBE_STATIC "$here/calls_probe.c" -o "$work/calls_probe_static" \
  >"$work/static.log" 2>&1; then
  static_probe=$work/calls_probe_static
else
  echo "note: $cc -static cannot link here (no static libc?):" && sed 's/^/   /' "$work/static.log"
fi
asan_probe=
asan_runtime=
if "$cc" -fsanitize=address -fno-omit-frame-pointer -g -O1 "$here/calls_probe.c" \
  -o "$work/calls_probe_asan" >"$work/asan.log" 2>&1; then
  asan_probe=$work/calls_probe_asan
  # GCC links libasan.so, which must come first in the initial library list, before the shim;
  # clang links its runtime into the program, and the shim alone is preloaded.
  asan_runtime=$(ldd "$asan_probe" | awk '/libasan/ { print $3; exit }')
else
  echo "note: $cc cannot build with -fsanitize=address here:" && sed 's/^/   /' "$work/asan.log"
fi
# What the shim exports: the interposed libc names, timer_* in their two current versions and
# pthread_cond_timedwait in its current one (src/shim/preload.map.in), nothing of vclock's own.
# x86-64's versions: on arm64 they are GLIBC_2.17 and GLIBC_2.34 (shim.glibc_versions checks
# them against the target's libc in every build; this script cannot run in a cross build).
if command -v objdump >/dev/null 2>&1; then
  exported=$(objdump -T "$shim" | awk '$2 == "g" && $4 != "*UND*" { print $(NF-1) ":" $NF }' |
    sort | tr '\n' ' ')
  expected="(GLIBC_2.3.3):timer_create (GLIBC_2.3.3):timer_delete (GLIBC_2.3.3):timer_gettime"
  expected+=" (GLIBC_2.3.3):timer_settime Base:clock_getres Base:clock_gettime"
  expected+=" Base:clock_nanosleep Base:epoll_pwait Base:epoll_wait Base:ftime Base:gettimeofday"
  expected+=" Base:nanosleep Base:poll Base:ppoll Base:pselect Base:pthread_cond_clockwait"
  expected+=" Base:select Base:sem_clockwait Base:sem_timedwait Base:sleep Base:time"
  expected+=" Base:timerfd_create Base:timerfd_gettime Base:timerfd_settime Base:timespec_get"
  expected+=" Base:timespec_getres Base:usleep GLIBC_2.3.2:GLIBC_2.3.2"
  expected+=" GLIBC_2.3.2:pthread_cond_timedwait GLIBC_2.3.3:GLIBC_2.3.3 GLIBC_2.34:GLIBC_2.34"
  expected+=" GLIBC_2.34:timer_create GLIBC_2.34:timer_delete GLIBC_2.34:timer_gettime"
  expected+=" GLIBC_2.34:timer_settime "
  if [[ $exported == "$expected" ]]; then
    pass "the shim exports the interposed names only ($(wc -w <<<"$exported") symbols)"
  else
    fail "the shim exports: $exported"
  fi
fi
# The versioned probe is only worth its name if the binary really asks for GLIBC_2.2.5.
if command -v objdump >/dev/null 2>&1; then
  if objdump -T "$probe_dir/shim_calls_probe" | grep -q '(GLIBC_2\.2\.5) *clock_gettime$'; then
    pass "shim_calls_probe references clock_gettime@GLIBC_2.2.5"
  else
    fail "shim_calls_probe has no reference to clock_gettime@GLIBC_2.2.5"
  fi
fi
setuid_probe=
if [[ $(id -u) -eq 0 ]] && command -v setpriv >/dev/null 2>&1; then
  # Owned by uid 1 (daemon), run by uid 65534 (nobody): secure execution without root.
  mkdir -m 755 "$work/setuid"
  cp "$probe_dir/shim_calls_probe" "$work/setuid/"
  chown 1:1 "$work/setuid/shim_calls_probe"
  chmod 4755 "$work/setuid/shim_calls_probe"
  setuid_probe=$work/setuid/shim_calls_probe
  # What nobody runs must be reachable by nobody: the build tree may lie in a directory only
  # root can enter (a CI clone in a mode-0700 temporary directory), so copies.
  mkdir -m 755 "$work/nobody"
  cp "$shim" "$vclock" "$vclockd" "$probe_dir/shim_calls_probe" "$work/nobody/"
  chmod -R a+rX "$work/nobody"
fi

# The kernel's clocks (shim_kernel_clocks: raw system calls), before or after a run, into
# k_before or k_after (each clock's reading) and k_before_off or k_after_off (its offset from
# REALTIME), and the tick into `tick`.
declare -A k_before k_before_off k_after k_after_off
tick=0
read_kernel() { # before|after
  local name value offset
  while read -r name value offset; do
    if [[ $name == tick ]]; then
      tick=$value
    elif [[ $1 == before ]]; then
      k_before[$name]=$value k_before_off[$name]=$offset
    else
      k_after[$name]=$value k_after_off[$name]=$offset
    fi
  done < <("$probe_dir/shim_kernel_clocks")
}

# --- One program, one mode ------------------------------------------------------------------
mode=          # shared, run or off (see the top)
page=          # VCLOCK_PAGE for the programs (modes shared and off)
counter_ok=1   # 0 where vclock does not trust the counter: nothing can be served
wrapper=()     # what runs the program's `env`, unshimmed (setpriv for the setuid case)
case_number=0

# run_case LABEL EXPECT EXE_REGEX PRELOAD_BEFORE CMD...
#   EXPECT: served (source as the mode, served > 0), present (a stats line with the source,
#   served may be 0), forwarded (present, forwarded > 0), unserved (no stats line, or served
#   0), setuid (unserved, and the probe must say it ran in secure execution), anywhere (a
#   stats line, any source: a program that cannot open the page). In mode off, served means
#   forwarded > 0 and served 0. EXE_REGEX:
#   what the stats line's exe's base name must match. PRELOAD_BEFORE: libraries to put in
#   LD_PRELOAD before the shim (jemalloc, libasan), or empty.
run_case() {
  local label=$1 expect=$2 exe_re=$3 before_libs=$4
  shift 4
  local tag="[$mode] $label"
  case_number=$((case_number + 1))
  local out=$work/out.$case_number err=$work/err.$case_number stats=$work/stats.$case_number
  # Created here and writable by anyone: a setuid program that the loader did shim after all
  # must be able to say so.
  : >"$stats"
  chmod 666 "$stats"
  local preload=${before_libs:+$before_libs }$shim
  if ((no_shim)); then preload=$before_libs; fi
  local env_args=(VCLOCK_SHIM_STATS="$stats" ASAN_OPTIONS=detect_leaks=0) run_prefix=()
  if [[ $mode == run ]] && ((!no_shim)); then
    # `vclock run` adds the shim itself (after a sanitizer runtime, which must stay first).
    run_prefix=("$vclock" run --shim "$shim" --)
    preload=$before_libs
  else
    env_args+=(VCLOCK_PAGE="$page")
  fi
  [[ -n $preload ]] && env_args+=(LD_PRELOAD="$preload")
  # LeakSanitizer (detect_leaks) stops the world with ptrace, which containers often forbid;
  # leaks are not what the ASan case is about.

  read_kernel before
  local start_us=${EPOCHREALTIME/./} rc=0
  timeout -k 5 "$limit" "${wrapper[@]}" env "${env_args[@]}" "${run_prefix[@]}" "$@" \
    >"$out" 2>"$err" </dev/null || rc=$?
  local end_us=${EPOCHREALTIME/./}
  read_kernel after
  local before_ns=$((start_us * 1000)) after_ns=$(((end_us + 1) * 1000))
  local took=$(((end_us - start_us) * 1000))

  local figures
  figures=$(awk '$1 !~ /^(pid|realtime|clock|secure|ok|FAIL)$/ && NF == 2 {
    printf ", %s %s", $1, $2 }' "$out")
  if ((rc == 124 || rc == 137)); then
    fail "$tag: hung: killed after ${limit} s$figures"
    sed 's/^/   /' "$err" | tail -n 20
    return
  fi
  if ((rc != 0)); then
    fail "$tag: exit $rc after $(ms "$took")$figures"
    grep '^FAIL' "$out" | sed 's/^/   /' | head -n 20 || true
    sed 's/^/   /' "$err" | tail -n 20
    return
  fi
  pass "$tag: exit 0 after $(ms "$took")$figures"

  local pid
  pid=$(awk '$1 == "pid" { print $2; exit }' "$out")
  if [[ -z $pid ]]; then
    fail "$tag: printed no \`pid\` line"
    return
  fi
  if [[ $expect == setuid ]] && ! grep -q '^secure 1$' "$out"; then
    skip "$tag: not in secure execution (a nosuid mount, or no_new_privs?): nothing to check"
    return
  fi

  # The kernel bracket. Lower: a reading truncates (GRAIN) and a coarse clock lags its fine
  # clock by up to `lag`: the tick (vclock's timekeeper's, 4 ms, or the kernel's if longer),
  # two of them on a busy machine (docs/design.md, "Coarse clocks under saturation": the
  # kernel's own coarse clocks reach two ticks; 7.03 ms seen here on a loaded 2-vCPU VM with
  # no shim at all), and 1 ms for a wake-up: 9 ms, still less than a clock 10 ms off. Upper:
  # vclock may lead the kernel by its error, tens of ns (100 us is ample, and still far less
  # than a wrong offset).
  local slack=100000 lag=$((2 * (tick > 4000000 ? tick : 4000000) + 1000000))
  local name ns grain
  while read -r _ name ns grain; do
    if ((ns >= before_ns - grain - lag && ns <= after_ns + slack)); then
      pass "$tag: $name $ns: $(ms $((ns - before_ns))) after the start, $(ms $((after_ns - ns))) before the exit"
    else
      fail "$tag: $name $ns outside the kernel bracket [$before_ns, $after_ns]:" \
        "$(ms $((ns - before_ns))) after the start, $(ms $((after_ns - ns))) before the exit"
    fi
  done < <(grep '^realtime ' "$out")
  if ! grep -q '^realtime ' "$out"; then fail "$tag: printed no \`realtime\` line"; fi

  # Every other clock: within the kernel's bracket of that clock (as REALTIME above; a coarse
  # reading may also lead the kernel's coarse `after` by a tick, taken at an earlier tick),
  # and at the kernel's offset from REALTIME. The program's REALTIME at the moment of its
  # reading X lies in [R1, R2 + REAL_GRAIN], X's true value in [X, X + GRAIN]: the offset it
  # saw, in [X - R2 - REAL_GRAIN, X + GRAIN - R1], must meet the kernel's before and after the
  # run (which differ only by MONOTONIC_RAW's drift, ppm, or a step of REALTIME) widened by
  # `slack` (vclock's error both ways), and for a coarse clock by `lag` below (it lags its fine
  # clock, whose offset the kernel's gives).
  local label clock x r1 r2 xgrain rgrain fine number='^-?[0-9]+$'
  while read -r _ label clock x r1 r2 xgrain rgrain; do
    if [[ -z ${k_before[$clock]:-} || ! $x =~ $number || ! $r1 =~ $number ||
      ! $r2 =~ $number || ! $xgrain =~ $number || ! $rgrain =~ $number ]]; then
      fail "$tag: $label: malformed: clock $clock $x $r1 $r2 $xgrain $rgrain"
      continue
    fi
    fine=${clock%_COARSE}
    local lo=$((k_before[$clock] - xgrain - slack)) hi=$((k_after[$clock] + slack))
    local off_lo=${k_before_off[$fine]} off_hi=${k_after_off[$fine]}
    if ((off_lo > off_hi)); then local t=$off_lo; off_lo=$off_hi off_hi=$t; fi
    local mid=$(((off_lo + off_hi) / 2))
    off_lo=$((off_lo - slack)) off_hi=$((off_hi + slack))
    if [[ $clock == *_COARSE ]]; then
      lo=$((lo - lag)) hi=$((hi + lag)) off_lo=$((off_lo - lag))
    fi
    local seen_lo=$((x - r2 - rgrain)) seen_hi=$((x + xgrain - r1))
    local seen=$(((seen_lo + seen_hi) / 2))
    local what
    what="$tag: $label ($clock) $x: $(ms $((x - k_before[$clock]))) after the start,"
    what+=" $(ms $((k_after[$clock] - x))) before the exit; offset from the program's REALTIME"
    what+=" $(ms $((seen - mid))) from the kernel's (REALTIME reads $(ms $((r2 - r1))) apart)"
    if ((x < lo || x > hi)); then
      fail "$what: outside the kernel bracket [$lo, $hi]"
    elif ((seen_lo > off_hi || seen_hi < off_lo)); then
      fail "$what: offset from REALTIME [$seen_lo, $seen_hi], the kernel's [$off_lo, $off_hi]"
    else
      pass "$what"
    fi
  done < <(grep '^clock ' "$out")

  ((no_shim)) && return
  local line
  line=$(grep -E "\"pid\": *${pid}[,}]" "$stats" | tail -n 1 || true)
  if [[ $expect == unserved || $expect == setuid ]]; then
    local unserved_served=0
    [[ $line =~ \"served\":\ *([0-9]+) ]] && unserved_served=${BASH_REMATCH[1]}
    if [[ -z $line ]]; then
      pass "$tag: not served (no stats line: the loader ignored LD_PRELOAD)"
    elif ((unserved_served == 0)); then
      pass "$tag: not served (stats: $line)"
    else
      fail "$tag: served $unserved_served calls, but it must not be shimmed: $line"
    fi
    return
  fi
  if [[ -z $line ]]; then
    fail "$tag: no stats line for pid $pid in VCLOCK_SHIM_STATS ($(wc -l <"$stats") other lines)"
    return
  fi
  local exe="" source="" served="" forwarded=""
  [[ $line =~ \"exe\":\ *\"([^\"]*)\" ]] && exe=${BASH_REMATCH[1]}
  [[ $line =~ \"source\":\ *\"([^\"]*)\" ]] && source=${BASH_REMATCH[1]}
  [[ $line =~ \"served\":\ *([0-9]+) ]] && served=${BASH_REMATCH[1]}
  [[ $line =~ \"forwarded\":\ *([0-9]+) ]] && forwarded=${BASH_REMATCH[1]}
  local summary="stats pid $pid exe $exe: source $source, served $served, forwarded $forwarded"
  local want_source=shared
  [[ $mode == off ]] && want_source=kernel
  local problems=()
  [[ -z $served || -z $forwarded ]] && problems+=("no served/forwarded counts")
  [[ ${exe##*/} =~ $exe_re ]] || problems+=("exe should match /$exe_re/")
  if [[ $expect != anywhere && $source != "$want_source" ]]; then
    problems+=("source should be $want_source")
  fi
  if [[ -n $served && -n $forwarded ]]; then
    if [[ $mode == off && $expect == served ]]; then
      ((served == 0)) || problems+=("served $served with no page")
      expect=forwarded
    fi
    # A private vclockd is ready (and the command started) once its page is valid, before its
    # counter is calibrated (a few hundred ms later): a short command is answered by the kernel
    # meanwhile, exactly, and counted as forwarded. The source must still be its page.
    [[ $mode == run && $expect == served ]] && expect=present
    case $expect in
      served)
        if ((counter_ok)); then ((served > 0)) || problems+=("nothing served"); fi ;;
      forwarded) ((forwarded > 0)) || problems+=("nothing forwarded") ;;
    esac
    local calls
    calls=$(awk '$1 == "calls" { print $2; exit }' "$out")
    if [[ -n $calls ]] && ((served + forwarded < calls)); then
      problems+=("served + forwarded < the probe's $calls calls")
    fi
  fi
  if ((${#problems[@]} == 0)); then
    pass "$tag: $summary"
  else
    local IFS=';'
    fail "$tag: $summary: ${problems[*]}"
  fi
}

# Every program, in the current mode.
run_all() {
  echo "== $mode$([[ $mode == run ]] || echo ": VCLOCK_PAGE=$page")"
  run_case "date" served '^date$' "" \
    bash -c 'echo "pid $$"; exec date "+realtime date %s%N 1"'

  if [[ -n $python ]]; then
    run_case "python3" served '^python' "" "$python" "$here/probe.py"
  else
    skip "[$mode] python3: not installed"
  fi
  if [[ -n $perl ]]; then
    run_case "perl" served '^perl' "" "$perl" "$here/probe.pl"
  else
    skip "[$mode] perl: not installed (or no Time::HiRes)"
  fi
  if [[ -n $node ]]; then
    run_case "node" served '^node(js)?$' "" "$node" "$here/probe.js"
  else
    skip "[$mode] node: not installed"
  fi
  if [[ -n $java_dir ]]; then
    run_case "java" served '^java$' "" "$java" -XX:+UseSerialGC -cp "$java_dir" Probe
  else
    skip "[$mode] java: java or javac not installed"
  fi
  if [[ -n $rust_probe ]]; then
    run_case "rust std" served '^rust_probe$' "" "$rust_probe"
  else
    skip "[$mode] rust std: rustc not installed"
  fi
  run_case "c++ chrono" served '^shim_chrono_probe$' "" "$probe_dir/shim_chrono_probe"

  local func
  for func in clock_gettime clock_gettime@GLIBC_2.2.5 time gettimeofday timespec_get ftime; do
    run_case "$func" served '^shim_calls_probe$' "" "$probe_dir/shim_calls_probe" "$func"
  done
  local null_tp=()
  ((no_shim)) || null_tp=(--null-tp)
  run_case "errno cases" forwarded '^shim_errno_probe$' "" \
    "$probe_dir/shim_errno_probe" "${null_tp[@]}"
  run_case "10 kHz SIGALRM" served '^shim_signal_probe$' "" "$probe_dir/shim_signal_probe"

  if [[ -n $asan_probe ]]; then
    run_case "ASan program" present '^calls_probe_asan$' "$asan_runtime" "$asan_probe"
  else
    skip "[$mode] ASan program: $cc cannot build one"
  fi
  if [[ -f $jemalloc ]]; then
    if [[ -n $python ]]; then
      run_case "jemalloc + python3" served '^python' "$jemalloc" "$python" "$here/probe.py"
    fi
    run_case "jemalloc + c++ chrono" served '^shim_chrono_probe$' "$jemalloc" \
      "$probe_dir/shim_chrono_probe"
  else
    skip "[$mode] jemalloc: $jemalloc not found (Debian: libjemalloc2)"
  fi
  if [[ -n $static_probe ]]; then
    run_case "static" unserved '' "" "$static_probe"
  else
    skip "[$mode] static: $cc cannot link a static program"
  fi
  if [[ -n $setuid_probe ]]; then
    # nobody's copies of the shim and the tools (above).
    local saved_shim=$shim saved_vclock=$vclock
    shim=$work/nobody/${shim##*/}
    vclock=$work/nobody/${vclock##*/}
    wrapper=(setpriv --reuid=65534 --regid=65534 --clear-groups --)
    run_case "setuid" setuid '' "" "$setuid_probe"
    wrapper=()
    # setpriv under the shim: it changes its own thread's capabilities between setresuid and
    # setresgid, which glibc applies to every thread, aborting if one fails. The shim starts
    # no thread, so it is safe. As nobody, the probe cannot open a page in a root-only
    # directory: any source.
    run_case "setpriv" anywhere '^shim_calls_probe$' "" \
      setpriv --reuid=65534 --regid=65534 --clear-groups -- \
      "$work/nobody/shim_calls_probe" clock_gettime
    shim=$saved_shim
    vclock=$saved_vclock
  else
    skip "[$mode] setuid, setpriv: need root and setpriv"
  fi
}

# Whether vclock trusts the counter here: if not, every call is forwarded by design, and the
# served > 0 checks are left out (said once, here).
check_counter() { # STATUS_JSON
  if [[ $1 != *'"counter_mode": true'* ]]; then
    counter_ok=0
    echo "note: vclock does not use the counter here (see \`vclock status\`): served > 0 not checked"
  fi
}

# --- With a private daemon ------------------------------------------------------------------
daemon_dir=$(mktemp -d "${TMPDIR:-/tmp}/vclock-shim-page.XXXXXX")
"$vclockd" --page "$daemon_dir/page" >"$daemon_dir/vclockd.log" 2>&1 &
daemon_pid=$!
status_json=
for _ in $(seq 100); do
  status_json=$(VCLOCK_PAGE=$daemon_dir/page "$vclock" status --json 2>/dev/null || true)
  # Ready before calibrated (vclockd.md): wait for the counter too, where it is used.
  [[ $status_json == *'"source": "shared"'* && $status_json != *calibrating* ]] && break
  if ! kill -0 "$daemon_pid" 2>/dev/null; then break; fi
  sleep 0.1
done
if [[ $status_json != *'"source": "shared"'* ]]; then
  fail "vclockd --page $daemon_dir/page: no shared page after 10 s:"
  sed 's/^/   /' "$daemon_dir/vclockd.log"
  exit 1
fi
pass "vclockd (pid $daemon_pid) publishes $daemon_dir/page; vclock status: source shared"
check_counter "$status_json"
mode=shared
page=$daemon_dir/page
run_all

rc=0
kill -TERM "$daemon_pid"
wait "$daemon_pid" || rc=$?
daemon_pid=
if ((rc == 0)); then pass "vclockd: exit 0 on SIGTERM"; else fail "vclockd: exit $rc on SIGTERM"; fi

# --- `vclock run` with no vclockd: a private one per command -------------------------------
# (Unless a vclockd serves this machine at /run/vclock/page: then `vclock run` uses it, and the
# source is "shared" all the same.)
# Their directories go to a TMPDIR of this test's own (sticky and open to all, like /tmp: the
# setuid case runs `vclock run` as nobody), so that what other programs do in /tmp meanwhile
# cannot be taken for a leftover.
mode=run
page=
run_tmp=$work/run-tmp
mkdir -m 1777 "$run_tmp"
saved_tmpdir=${TMPDIR-}
export TMPDIR=$run_tmp
run_all
# `vclock run` does not wait for its private daemon: a command that ends before the daemon has
# looked for it (often, with no tracer to wait for) leaves it nothing to serve, and it must
# still remove the page and the directory (vclockd --exit-with-pid: the process is gone).
for _ in $(seq 10); do "$vclock" run --no-vdso -- true; done
# The child that started the daemon is reaped before the exec: the command starts with no child
# it did not make (read from the shell itself, a builtin: no child of its own yet).
# shellcheck disable=SC2016 # the inner shell expands it
children=$("$vclock" run -- sh -c 'read -r c < /proc/$$/task/$$/children; echo "[$c]"')
if [[ $children == "[]" ]]; then
  pass "[run] the command starts with no child of vclock run's"
else
  fail "[run] the command starts with children $children"
fi
# The private daemon is exec'd only once the command has run a while (private_daemon_delay_ms,
# 20 ms): vclockd's start would otherwise compete with the tracer and the command for the CPUs
# at start-up, and its counter is not calibrated for hundreds of ms anyway. A short command gets
# none (its page is removed all the same: the leftover check below), a longer one gets one. A
# stand-in vclockd beside a copy of vclock says whether it was run (and removes the page as
# vclockd would). A loaded machine may hold `true` up past the delay: a few tries.
late=$work/late-daemon
mkdir "$late"
cp "$vclock" "$late/"
for f in "$shim" "$(dirname "$shim")/vclock-vdso.so"; do [[ -e $f ]] && ln -s "$f" "$late/"; done
# shellcheck disable=SC2016 # the stand-in expands them
printf '#!/bin/sh\ntouch "${0%%/*}/started"\nrm -f "$2"\nrmdir "${2%%/*}"\n' >"$late/vclockd"
chmod 755 "$late/vclockd"
short_started=yes
for _ in 1 2 3 4 5; do
  rm -f "$late/started"
  "$late/${vclock##*/}" run --shim "$late/${shim##*/}" -- true
  sleep 0.1
  if [[ ! -e $late/started ]]; then
    short_started=no
    break
  fi
done
rm -f "$late/started"
"$late/${vclock##*/}" run --shim "$late/${shim##*/}" -- sleep 0.3
if [[ $short_started == no && -e $late/started ]]; then
  pass "[run] the private daemon starts for a command that runs a while, not for a short one"
else
  fail "[run] private daemon started: for a short command $short_started, for a 0.3 s one" \
    "$([[ -e $late/started ]] && echo yes || echo no)"
fi
# `vclock run` keeps the library's timekeeper off while it runs (VCLOCK_DISABLE=1 set before the
# library loads, cli/main.cc): the command gets the variable as it was given, set or not.
# shellcheck disable=SC2016 # the inner shell expands it
seen=$(
  unset VCLOCK_DISABLE
  "$vclock" run --no-vdso -- sh -c 'echo "[${VCLOCK_DISABLE-unset}]"'
)$(VCLOCK_DISABLE=0 "$vclock" run --no-vdso -- sh -c 'echo "[${VCLOCK_DISABLE-unset}]"')
if [[ $seen == "[unset][0]" ]]; then
  pass "[run] the command gets VCLOCK_DISABLE as it was given"
else
  fail "[run] the command got VCLOCK_DISABLE $seen, not [unset][0]"
fi
# ...and so starts no thread, in itself or in the children it forks (a thread is start-up time
# on the command's way). strace sees every clone; --no-vdso, since the tracer would find
# `vclock run` already traced; VCLOCK_PAGE=off: no private vclockd (which has threads).
if command -v strace >/dev/null; then
  threads=$(VCLOCK_PAGE=off strace -f -qq -e trace=clone,clone3 -o /dev/stdout \
    "$vclock" run --no-vdso -- true | grep -c CLONE_THREAD || true)
  if [[ $threads == 0 ]]; then
    pass "[run] vclock run starts no thread"
  else
    fail "[run] vclock run started $threads threads"
  fi
  # The command is looked for in PATH before the exec, so that only its exec goes through the
  # tracer (each exec is a round trip to it), not one per directory tried.
  # (Not `failed`: that is the count of failed checks, which finish reads.)
  failed_execs=$(PATH=/nonexistent-1:/nonexistent-2:$PATH VCLOCK_PAGE=off \
    strace -f -qq -e trace=execve -o /dev/stdout "$vclock" run --no-vdso -- true |
    grep -c ENOENT || true)
  if [[ $failed_execs == 0 ]]; then
    pass "[run] the command found in PATH first: one exec"
  else
    fail "[run] $failed_execs execs failed on the command's way (PATH tried exec by exec)"
  fi
else
  echo "NOTE  [run] no strace: whether vclock run starts a thread is not checked"
fi
# The private daemon starts with the tracer (from its starter child) where there is one: a
# `vclock run` that ends before either (time options, and no vDSO image beside a copy of it
# and of the shim) leaves no page of it behind (the leftover check below).
mkdir "$work/no-image"
cp "$vclock" "$(dirname "$vclock")/vclockd" "$shim" "$work/no-image/"
rc=0
"$work/no-image/${vclock##*/}" run --shim "$work/no-image/${shim##*/}" --realtime +1d -- true \
  2>"$work/no-image/err" || rc=$?
if ((rc == 1)) && grep -q "no vclock-vdso.so" "$work/no-image/err"; then
  pass "[run] no vDSO image, time options: exit 1, the reason said"
else
  fail "[run] no vDSO image, time options: exit $rc, $(head -c 300 "$work/no-image/err")"
fi
sleep 0.5 # the last private daemon sees its command exit and cleans up
leftover=$(find "$run_tmp" -mindepth 1 -maxdepth 1 -name 'vclock-run.*' 2>/dev/null | head -n 3)
if [[ -n $saved_tmpdir ]]; then export TMPDIR=$saved_tmpdir; else unset TMPDIR; fi
if [[ -z $leftover ]]; then
  pass "[run] every private vclockd removed its page and directory"
else
  fail "[run] private pages left behind: $leftover"
fi

# --- No page at all: the shim passes through -------------------------------------------------
mode=off
page=off
run_all

total_ns=$(((${EPOCHREALTIME/./} - script_start_us) * 1000))
finish "in $(ms "$total_ns")$( ((no_shim)) && echo ' (--no-shim: no stats checked)')"
