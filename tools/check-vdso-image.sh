#!/usr/bin/env bash
# Checks the vclock vDSO image (docs/vdso.md) as a loader that is not a
# loader will use it: glibc, musl and Go find symbols in it and call them,
# nothing more. Fails on any relocation, undefined symbol, PLT or GOT, more
# than one PT_LOAD or one whose offset is not its address, a writable
# segment, a missing hash table or LINUX_2.6 version, a direct call or jump
# outside the image, or a function whose stack frame exceeds the budget.
# usage: check-vdso-image.sh IMAGE [STACK_USAGE_FILE]
set -euo pipefail
image=$1
su=${2:-}
max_frame=${VCLOCK_VDSO_MAX_FRAME:-200}
fail() { echo "check-vdso-image: ${image}: $*" >&2; exit 1; }

readelf -r "${image}" | grep -q "There are no relocations" || fail "has relocations"
headers=$(readelf -lW "${image}")
loads=$(grep -c '^ *LOAD ' <<<"${headers}" || true)
[[ ${loads} == 1 ]] || fail "${loads} PT_LOAD segments, want 1"
read -r _ off vaddr _ _ _ flags _ < <(grep '^ *LOAD ' <<<"${headers}")
[[ $((off)) == $((vaddr)) ]] || fail "PT_LOAD offset ${off} != vaddr ${vaddr}"
[[ ${flags} == "R" && $(grep '^ *LOAD ' <<<"${headers}") == *"R E"* ]] ||
  fail "PT_LOAD is not R+X"
grep -q '^ *DYNAMIC ' <<<"${headers}" || fail "no PT_DYNAMIC"
dynamic=$(readelf -dW "${image}")
for tag in HASH GNU_HASH VERSYM VERDEF; do
  grep -q "(${tag})" <<<"${dynamic}" || fail "no DT_${tag}"
done
grep -qE '\((NEEDED|TEXTREL|JMPREL|RELA|REL|PLTGOT)\)' <<<"${dynamic}" &&
  fail "needs a loader: $(grep -E '\((NEEDED|TEXTREL|JMPREL|RELA|REL|PLTGOT)\)' <<<"${dynamic}")"
sections=$(readelf -SW "${image}")
grep -qE '\.(plt|got|init_array|fini_array|tdata|tbss)' <<<"${sections}" && fail "has a PLT, GOT, constructor or TLS section"
dynsym=$(readelf --dyn-syms -W "${image}")
undefined=$(awk '$7 == "UND" && $8 != "" {print $8}' <<<"${dynsym}")
[[ -z ${undefined} ]] || fail "undefined symbols: ${undefined}"
for name in clock_gettime gettimeofday time clock_getres; do
  for sym in "__vdso_${name}" "${name}"; do
    grep -qE " ${sym}@@LINUX_2\.6$" <<<"${dynsym}" || fail "no ${sym}@@LINUX_2.6"
  done
done
# Direct calls and jumps stay inside the image (indirect ones go to the
# kernel's vDSO, through the config page).
size=$(readelf -lW "${image}" | awk '/^ *LOAD /{print $6}')
while read -r target; do
  (( 16#${target} < size )) || fail "a call or jump outside the image, to ${target}"
done < <(objdump -d --no-show-raw-insn "${image}" |
  awk '$2 ~ /^(call|jmp|j[a-z]+)$/ && $3 ~ /^[0-9a-f]+$/ {print $3}')
if [[ -n ${su} ]]; then
  big=$(awk -F'\t' -v max="${max_frame}" '$2 + 0 > max {print}' "${su}")
  [[ -z ${big} ]] || fail "stack frames over ${max_frame} bytes: ${big}"
fi
echo "check-vdso-image: ${image}: ok"
