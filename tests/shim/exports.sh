#!/usr/bin/env bash
# The shim exports exactly the functions it interposes, at the versions it means, and nothing
# else (issue 24): its dynamic symbol table's defined global symbols, compared with the list
# below for the target architecture (from the ELF header, so a cross build runs it too).
# A new export (a helper left without hidden visibility, a C++ symbol) would be interposed
# into every program the shim is preloaded into; a lost one is a function no longer served.
#
# The functions are the same on x86-64 and arm64; their old versions differ, which is why
# the count does (35 on x86-64, 34 on arm64). The defined version nodes (ABS symbols named
# after the version) are exported too: x86-64's glibc has three versions for them
# (pthread_cond_timedwait's default GLIBC_2.3.2, timer_*'s old GLIBC_2.3.3, and GLIBC_2.34),
# arm64's glibc, which starts at GLIBC_2.17, only two (GLIBC_2.17 for both, and GLIBC_2.34).
# Usage: exports.sh SHIM   Exit: 0 the list matches, 1 it does not, 77 no readelf.
set -euo pipefail

shim=$1

if ! command -v readelf >/dev/null 2>&1; then
  echo "SKIP: no readelf"
  exit 77
fi

machine=$(readelf -h "${shim}" | awk -F: '/Machine:/ { gsub(/^[ \t]+/, "", $2); print $2 }')
case ${machine} in
  *X86-64*)
    arch=x86_64 cond_default=GLIBC_2.3.2 timer_old=GLIBC_2.3.3 count=35
    ;;
  *AArch64*)
    arch=arm64 cond_default=GLIBC_2.17 timer_old=GLIBC_2.17 count=34
    ;;
  *)
    echo "FAIL: no export list for ${machine} (add one to $0)"
    exit 1
    ;;
esac

expected=$(
  for f in clock_getres clock_gettime clock_nanosleep epoll_pwait epoll_wait ftime \
    gettimeofday nanosleep poll ppoll pselect pthread_cond_clockwait select sem_clockwait \
    sem_timedwait sleep time timerfd_create timerfd_gettime timerfd_settime timespec_get \
    timespec_getres usleep; do
    echo "${f}"
  done
  echo "pthread_cond_timedwait@@${cond_default}"
  for f in timer_create timer_delete timer_gettime timer_settime; do
    echo "${f}@@GLIBC_2.34"
    echo "${f}@${timer_old}"
  done
  printf '%s\n' GLIBC_2.34 "${cond_default}" "${timer_old}"
)
expected=$(sort -u <<< "${expected}")

# readelf's columns: Num Value Size Type Bind Vis Ndx Name; the name may carry " (N)".
actual=$(readelf --dyn-syms -W "${shim}" \
  | awk '$1 ~ /^[0-9]+:$/ && $7 != "UND" && ($5 == "GLOBAL" || $5 == "WEAK") { print $8 }' \
  | sort -u)

if [[ ${actual} != "${expected}" ]]; then
  echo "FAIL: ${shim} (${arch}) exports other than the expected list:"
  diff <(echo "${expected}") <(echo "${actual}") | sed -n 's/^</  missing:/p; s/^>/  extra:  /p'
  exit 1
fi
if [[ $(wc -l <<< "${actual}") -ne ${count} ]]; then
  echo "FAIL: ${shim} (${arch}): $(wc -l <<< "${actual}") exports, expected ${count}"
  exit 1
fi
echo "ok: ${shim} (${arch}) exports the expected ${count} symbols"
