#!/usr/bin/env bash
# The map of docs/architecture.md, checked: which rooms each room's files may include.
#
# Every quoted include in include/ and src/ is spelled from one root ("lib/runtime.h",
# "vclock/page.h"); its first path component (two for the CLI's families) names a room.
# A file may include its own room and the rooms listed for it below, nothing else. Tests,
# benchmarks and fuzz targets may include any room and are not checked.
# Usage: tools/check-layout.sh   Exit status: 0 the map holds, 1 a forbidden include.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# room: the rooms it may include besides itself (written once; docs/architecture.md says why).
declare -A allowed=(
  [vclock]=""                                          # include/vclock: the public API, page ABI
  [lib]="vclock"                                       # libvclock
  [shim]="vclock lib"                                  # libvclock_preload.so
  [vdso]="vclock"                                      # the vclock vDSO image: freestanding
  [tool]="vclock"                                      # what both executables share
  [timens]="vclock lib tool"                           # virtual-time namespaces
  [daemon]="vclock lib timens tool"                    # vclockd: never the CLI
  [cli]="vclock lib timens tool cli/bench cli/measure cli/ns cli/run cli/status cli/stamps"  # main, shared
  [cli/bench]="vclock lib timens tool cli cli/run"     # find_shim: the shim `vclock run` loads
  [cli/measure]="vclock lib timens tool cli"
  [cli/ns]="vclock lib timens tool cli"
  [cli/run]="vclock lib timens tool cli vdso"          # vdso: the image_config contract
  [cli/status]="vclock lib timens tool cli vdso"       # vdso: whether a pid runs on the image
  [cli/stamps]="vclock lib tool cli"
)

# The room of a path relative to include/ or src/ ("cli/bench/bench.h" -> cli/bench,
# "cli/cpu.h" -> cli, "lib/runtime.h" -> lib).
room_of() {
  local path=$1
  if [[ ${path} == cli/*/* ]]; then
    path=${path#cli/}
    echo "cli/${path%%/*}"
  else
    echo "${path%%/*}"
  fi
}

failures=0
checked=0
while IFS= read -r -d '' file; do
  rel=${file#include/}
  rel=${rel#src/}
  from=$(room_of "${rel}")
  if [[ ! -v allowed[${from}] ]]; then
    echo "check-layout: ${file}: room '${from}' is not on the map (tools/check-layout.sh)"
    failures=$((failures + 1))
    continue
  fi
  while IFS=: read -r line target; do
    if [[ ! -e include/${target} && ! -e src/${target} ]]; then
      if [[ -e $(dirname "${file}")/${target} ]]; then
        echo "check-layout: ${file}:${line}: \"${target}\" is not spelled from the include root"
        failures=$((failures + 1))
      fi
      continue  # another project's header ("absl/time/clock.h")
    fi
    checked=$((checked + 1))
    to=$(room_of "${target}")
    if [[ ${to} != "${from}" && " ${allowed[${from}]} " != *" ${to} "* ]]; then
      echo "check-layout: ${file}:${line}: ${from} may not include ${to} (\"${target}\")"
      failures=$((failures + 1))
    fi
  done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "${file}" \
             | sed 's/^\([0-9]*\):[^"]*"\([^"]*\)".*/\1:\2/' || true)
done < <(find include src -type f \( -name '*.h' -o -name '*.hpp' -o -name '*.cc' -o -name '*.c' \) \
           -print0 | sort -z)

# Architecture tests (#if defined(__x86_64__), __aarch64__, ...) belong in the arch layer,
# include/vclock/detail/arch.h and include/vclock/detail/arch/, so that a new architecture is
# one header, not a hunt through the tree (issues 18 and 24); everything else decides by
# arch:: (CPU features: include/vclock/detail/arch/cpu_features.h). A file listed below may
# still hold such a test; the list is empty and may only shrink: a file not on it fails, and
# so does a listed file that no longer needs to be on it.
arch_debt=(
)
arch_test='^[[:space:]]*#[[:space:]]*(if|elif|ifdef|ifndef).*__(x86_64|amd64|i386|aarch64|arm|arm64|ARM_ARCH|riscv|powerpc64|s390x)__'
arch_files=0
while IFS= read -r -d '' file; do
  [[ ${file} == include/vclock/detail/arch.h || ${file} == include/vclock/detail/arch/* ]] && continue
  listed=0
  for debt in "${arch_debt[@]}"; do
    if [[ ${file} == "${debt}" ]]; then listed=1; fi
  done
  if grep -Eq "${arch_test}" "${file}"; then
    arch_files=$((arch_files + 1))
    if ((listed == 0)); then
      grep -En "${arch_test}" "${file}" | sed "s|^|check-layout: ${file}:|;s|\$| (an architecture test outside include/vclock/detail/arch)|"
      failures=$((failures + 1))
    fi
  fi
done < <(find include src tests bench fuzz tools -type f \
           \( -name '*.h' -o -name '*.hpp' -o -name '*.cc' -o -name '*.c' \) -print0 | sort -z)
for debt in "${arch_debt[@]}"; do
  if [[ ! -f ${debt} ]] || ! grep -Eq "${arch_test}" "${debt}"; then
    echo "check-layout: ${debt} holds no architecture test any more: take it off arch_debt"
    failures=$((failures + 1))
  fi
done

if ((failures > 0)); then
  echo "check-layout: FAIL: ${failures} forbidden include(s) or architecture test(s); the map is docs/architecture.md"
  exit 1
fi
echo "check-layout: ok: ${checked} includes follow the map; ${arch_files} file(s) still test the architecture outside the arch layer (arch_debt)"
