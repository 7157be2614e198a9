#!/usr/bin/env bash
# Checks the machine code of the hot path (issue 2: "check the generated assembly").
#
# Compiles tools/hot_path_probe.cc (read_fast<monotonic> with the default ordered counter
# read, lfence;rdtsc on x86-64, isb;mrs cntvct_el0 on arm64, and an out-of-line careful path)
# at -O2 and disassembles it. Fails, printing the disassembly, if the fast path
#   - calls or jumps to anything but the careful path (no PLT calls, no indirect branches),
#   - contains a conditional select (x86-64 cmov, arm64 csel and its kin: the clamp must be a
#     predictable branch) or a division,
#   - x86-64: has other than exactly one lfence and one rdtsc (and no mfence or rdtscp);
#     arm64: has other than exactly one isb and one mrs of cntvct_el0, or any other system
#     register access, barrier (dmb, dsb) or trap (svc, hvc, smc, brk);
#   - is longer than the limit (padding nops not counted);
# and, on x86-64, compiling src/lib/api.cc, fails if an entry point's dispatching function
# (the lfence and rdtscp variants, the relaxed ones, and the rdtscp variants of the functions
# that serve MONOTONIC_RAW, BOOTTIME and TAI) has a stack frame or makes a call.
# Usage: tools/check-hot-path.sh [arm64]
#   x86-64 (default): CXX picks the compiler (default g++).
#   arm64: the cross compiler and objdump (CXX_ARM64, default aarch64-linux-gnu-g++, and
#   aarch64-linux-gnu-objdump; on an arm64 machine g++ and objdump). The arm64 mode checks
#   the reader only, not the entry points' frames.
# Exit status: 0 pass, 1 a check failed, 77 skipped (no compiler or objdump for the
# architecture, or x86-64 mode on another machine).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

arch=${1:-x86_64}
fast=vclock_probe_fast
careful=vclock_probe_careful

# The limits: the measured length (docs/performance.md, "The hot path's length") and a
# little headroom, so that a limit catches a new load or branch, not a register shuffle.
case ${arch} in
  x86_64 | x86-64)
    arch=x86_64
    max_instructions=28
    cxx=${CXX:-g++}
    objdump=objdump
    if [[ $(uname -m) != x86_64 ]]; then
      echo "check-hot-path: skipped: the x86-64 checks need an x86-64 machine, this is $(uname -m)"
      exit 77
    fi
    ;;
  arm64 | aarch64)
    arch=arm64
    max_instructions=32
    if [[ $(uname -m) == aarch64 ]]; then
      cxx=${CXX_ARM64:-${CXX:-g++}}
      objdump=objdump
    else
      cxx=${CXX_ARM64:-aarch64-linux-gnu-g++}
      objdump=aarch64-linux-gnu-objdump
    fi
    read -ra cxx_probe <<< "${cxx}"
    if ! command -v "${cxx_probe[-1]}" >/dev/null; then
      echo "check-hot-path: skipped: no ${cxx} (tools/install-deps.sh installs it)"
      exit 77
    fi
    ;;
  *)
    echo "usage: tools/check-hot-path.sh [x86_64|arm64]" >&2
    exit 2
    ;;
esac
read -ra cxx_command <<< "${cxx}"  # CXX may carry a launcher or flags: "ccache g++"

if ! command -v "${objdump}" >/dev/null; then
  echo "check-hot-path: skipped: no ${objdump}"
  exit 77
fi

tmp=$(mktemp -d)
trap 'rm -rf "${tmp}"' EXIT

"${cxx_command[@]}" -std=c++20 -O2 -Iinclude -c tools/hot_path_probe.cc -o "${tmp}/probe.o"
# Relocations inline so that a call's target is named; AT&T syntax on x86-64.
syntax=()
[[ ${arch} == x86_64 ]] && syntax=(-M att)
"${objdump}" -dr --no-show-raw-insn "${syntax[@]}" "${tmp}/probe.o" \
  | awk -v fn="<${fast}>:" '$0 ~ fn {on = 1; next} on && /^$/ {exit} on {print}' > "${tmp}/fast.s"

if [[ ! -s ${tmp}/fast.s ]]; then
  echo "check-hot-path: FAIL: ${fast} not found in the probe's disassembly"
  "${objdump}" -dr --no-show-raw-insn "${tmp}/probe.o"
  exit 1
fi

# One line per instruction: "mnemonic operands [-> relocation target]", padding dropped.
awk '
  /^[[:space:]]+[0-9a-f]+:[[:space:]]+R_(X86_64|AARCH64)_/ {
    # A relocation line belongs to the instruction before it.
    if (n > 0) { sub(/[-+]0x[0-9a-f]+$/, "", $3); insn[n] = insn[n] " -> " $3 }
    next
  }
  /^[[:space:]]+[0-9a-f]+:/ {
    line = $0
    sub(/^[[:space:]]+[0-9a-f]+:[[:space:]]+/, "", line)
    sub(/[[:space:]]*\/\/.*$/, "", line)  # arm64: the comment objdump adds to a condition
    gsub(/\t/, " ", line)
    if (line ~ /^(cs |ds |data16 )*(nop|xchg +%ax,%ax)/) next
    insn[++n] = line
  }
  END { for (i = 1; i <= n; i++) print insn[i] }
' "${tmp}/fast.s" > "${tmp}/insns"

failures=()
count=$(wc -l < "${tmp}/insns")

if ((count > max_instructions)); then
  failures+=("${count} instructions, more than the limit of ${max_instructions}")
fi

check_arm64() {
  if grep -Eq '^(csel|csinc|csinv|csneg|cset|csetm|cinc|cinv|cneg|fcsel) ' "${tmp}/insns"; then
    failures+=("a conditional select (csel and its kin): the clamp must be a branch")
  fi
  if grep -Eq '^[us]div ' "${tmp}/insns"; then
    failures+=("a division")
  fi
  local isbs mrs
  isbs=$(grep -Ec '^isb( |$)' "${tmp}/insns" || true)
  mrs=$(grep -Ec '^mrs [a-z0-9]+, cntvct_el0$' "${tmp}/insns" || true)
  if [[ ${isbs} != 1 || ${mrs} != 1 ]]; then
    failures+=("${isbs} isb and ${mrs} mrs of cntvct_el0, expected exactly one of each")
  fi
  if grep -Ev '^mrs [a-z0-9]+, cntvct_el0$' "${tmp}/insns" | grep -Eq '^(mrs|msr|sys|sysl) '; then
    failures+=("another system register access: $(grep -E '^(mrs|msr|sys|sysl) ' "${tmp}/insns" \
      | grep -v cntvct_el0 | head -n 1)")
  fi
  if grep -Eq '^(dmb|dsb|svc|hvc|smc|brk|hlt|udf|wfe|wfi)( |$)' "${tmp}/insns"; then
    failures+=("a barrier or trap: $(grep -E '^(dmb|dsb|svc|hvc|smc|brk|hlt|udf|wfe|wfi)( |$)' \
      "${tmp}/insns" | head -n 1)")
  fi
  # Branches: one with a relocation must go to the careful path; an indirect one (br, blr,
  # and their pointer-authenticated forms) is never allowed; bl needs a relocation; a branch
  # without one stays inside the function. ret is the way out.
  local insn target
  while IFS= read -r insn; do
    case ${insn} in
      br\ * | bra[ab]* | blr* | reta* | eret*)
        failures+=("an indirect branch: ${insn}")
        ;;
      b\ * | b.* | bl\ * | bc.* | cbz* | cbnz* | tbz* | tbnz*)
        if [[ ${insn} == *' -> '* ]]; then
          target=${insn##* -> }
          [[ ${target} == "${careful}" ]] || failures+=("a branch out to ${target}: ${insn}")
        elif [[ ${insn} == bl\ * ]]; then
          failures+=("a call that is not to ${careful}: ${insn}")
        elif [[ ${insn} != *"<${fast}"* ]]; then
          failures+=("a branch out of the function: ${insn}")
        fi
        ;;
    esac
  done < "${tmp}/insns"
}

check_x86_64() {
  if grep -Eq '^cmov' "${tmp}/insns"; then
    failures+=("a cmov: the clamp must be a branch")
  fi
  if grep -Eq '^i?div' "${tmp}/insns"; then
    failures+=("a division")
  fi
  lfences=$(grep -Ec '^lfence' "${tmp}/insns" || true)
  rdtscs=$(grep -Ec '^rdtsc([[:space:]]|$)' "${tmp}/insns" || true)
  if [[ ${lfences} != 1 || ${rdtscs} != 1 ]]; then
    failures+=("${lfences} lfence and ${rdtscs} rdtsc, expected exactly one of each")
  fi
  if grep -Eq '^(mfence|rdtscp|cpuid)' "${tmp}/insns"; then
    failures+=("an mfence, rdtscp or cpuid in the lfence variant")
  fi
  # Calls and jumps: a call or a jump with a relocation must go to the careful path; an
  # indirect one is never allowed; a jump without a relocation stays inside the function.
  while IFS= read -r insn; do
    case ${insn} in
      call* | jmp* | j*)
        if [[ ${insn} == *'*'* ]]; then
          failures+=("an indirect branch: ${insn}")
        elif [[ ${insn} == *' -> '* ]]; then
          target=${insn##* -> }
          [[ ${target} == "${careful}" ]] || failures+=("a branch out to ${target}: ${insn}")
        elif [[ ${insn} == call* ]]; then
          failures+=("a call that is not to ${careful}: ${insn}")
        elif [[ ${insn} != *"<${fast}"* ]]; then
          failures+=("a jump out of the function: ${insn}")
        fi
        ;;
    esac
  done < "${tmp}/insns"
}

"check_${arch}"

if ((${#failures[@]} > 0)); then
  echo "check-hot-path: FAIL (${arch}, ${cxx}):"
  printf '  - %s\n' "${failures[@]}"
  echo "disassembly of ${fast}:"
  cat "${tmp}/fast.s"
  exit 1
fi

if [[ ${arch} == arm64 ]]; then
  echo "check-hot-path: ok (arm64, ${cxx} -O2): ${count} instructions" \
    "(limit ${max_instructions}), 1 isb, 1 mrs of cntvct_el0, no other system register," \
    "barrier or trap, no csel, no div, no branch out but to the careful path"
  exit 0
fi

# The entry points themselves (src/lib/api.cc, compiled as CMake compiles it): every
# variant of the dispatching functions is a leaf with no stack frame: no push, no stack
# adjustment, no call (the careful paths are reached by tail jumps, or from GCC's .cold
# clones, which are separate symbols). A frame would mean a register kept across the
# counter read: a regression of the hot path's layout (docs/design.md, section 4).
# GCC only: clang 14 gives the timespec and REALTIME paths a one-register frame (it keeps
# REALTIME's offset in rbx, and, knowing that careful_timespec() returns 0, calls it
# instead of jumping to it); measured, its MONOTONIC _ns path is as fast as GCC's.
if "${cxx_command[@]}" --version | grep -qi clang; then
  echo "check-hot-path: ok (${cxx} -O2): ${count} instructions (limit ${max_instructions})," \
    "1 lfence, 1 rdtsc, no cmov, no div, no call but to the careful path;" \
    "entry-point frames are checked with GCC only"
  exit 0
fi
"${cxx_command[@]}" -std=c++20 -O3 -fPIC -fvisibility=hidden \
  -fno-tree-slp-vectorize -Iinclude -Isrc -c src/lib/api.cc -o "${tmp}/api.o"
objdump -d --no-show-raw-insn -C -M att "${tmp}/api.o" > "${tmp}/api.s"
entry_failures=()
checked=0
for fn in 'gettime_ns<(vclock::arch::counter_ordering)1>(int)' \
  'gettime<(vclock::arch::counter_ordering)1>(int, timespec*)' \
  'gettime_ns<(vclock::arch::counter_ordering)3>(int)' \
  'gettime<(vclock::arch::counter_ordering)3>(int, timespec*)' \
  'gettimeofday<(vclock::arch::counter_ordering)3>(timeval*, void*)' \
  'gettime_ns_other<(vclock::arch::counter_ordering)3>(int)' \
  'gettime_other<(vclock::arch::counter_ordering)3>(int, timespec*)' \
  'vclock_gettime_ns_relaxed' 'vclock_gettime_relaxed'; do
  body=$(awk -v fn="${fn}>:" 'index($0, fn) && $0 ~ /^[0-9a-f]+ </ {on = 1; next}
    on && /^$/ {exit} on {print}' "${tmp}/api.s")
  if [[ -z ${body} ]]; then
    entry_failures+=("${fn} not found in api.o")
    continue
  fi
  checked=$((checked + 1))
  if grep -Eq $'\t(push|call|sub +\$0x[0-9a-f]+,%rsp)' <<< "${body}"; then
    entry_failures+=("${fn} has a stack frame or a call:")
    entry_failures+=("$(grep -E $'\t(push|call|sub +\$0x[0-9a-f]+,%rsp)' <<< "${body}")")
  fi
done
if ((${#entry_failures[@]} > 0)); then
  echo "check-hot-path: FAIL (${cxx}), entry points:"
  printf '  - %s\n' "${entry_failures[@]}"
  exit 1
fi
echo "check-hot-path: ok (${cxx} -O3, as Release): ${checked} entry-point variants are leaves, no stack frame"
echo "check-hot-path: ok (${cxx} -O2): ${count} instructions (limit ${max_instructions})," \
  "1 lfence, 1 rdtsc, no cmov, no div, no call but to the careful path"
