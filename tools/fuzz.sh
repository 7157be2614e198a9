#!/usr/bin/env bash
# Fuzzes the attach validation (fuzz/attach_fuzz.cc) for SECONDS (default 20): configures a
# clang build with libFuzzer, ASan and UBSan in build/fuzz, builds vclock_fuzz_attach, writes
# the seed corpus and runs the fuzzer over it and build/fuzz/corpus (which keeps what it finds
# from one run to the next).
#
#   tools/fuzz.sh [SECONDS]      VCLOCK_FUZZ_CXX=clang++-14 picks another clang
#
# Exit 0: no crash. 77: skipped (no clang++, or it cannot link -fsanitize=fuzzer; on Debian 12
# apt-get install clang libclang-rt-14-dev). Anything else: a build failure, a crash or a
# broken invariant; the input that caused it is in build/fuzz/artifacts/, and
# `build/fuzz/fuzz/vclock_fuzz_attach FILE` replays it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

seconds=${1:-20}
if [[ ! ${seconds} =~ ^[0-9]+$ ]] || ((seconds == 0)); then
  echo "usage: tools/fuzz.sh [SECONDS]" >&2
  exit 2
fi

cxx=${VCLOCK_FUZZ_CXX:-clang++}
if ! command -v "${cxx}" >/dev/null 2>&1; then
  echo "fuzz: skipped: no ${cxx}"
  exit 77
fi
if ! "${cxx}" --version 2>/dev/null | grep -q clang; then
  echo "fuzz: skipped: ${cxx} is not clang (libFuzzer is clang's)"
  exit 77
fi
probe=$(mktemp -d)
trap 'rm -rf "${probe}"' EXIT
printf '%s\n' '#include <cstddef>' '#include <cstdint>' \
  'extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t*, std::size_t) { return 0; }' \
  >"${probe}/probe.cc"
if ! "${cxx}" -fsanitize=fuzzer,address,undefined "${probe}/probe.cc" -o "${probe}/probe" \
  >"${probe}/log" 2>&1; then
  echo "fuzz: skipped: ${cxx} cannot link -fsanitize=fuzzer (Debian: libclang-rt-14-dev)"
  sed 's/^/  /' "${probe}/log" | tail -5
  exit 77
fi

if ! grep -Eq '^[[:space:]]*add_subdirectory\(fuzz\)' CMakeLists.txt; then
  echo "fuzz: the top-level CMakeLists.txt does not add_subdirectory(fuzz)" >&2
  exit 1
fi

build=build/fuzz
mkdir -p "${build}"
generator=()
if [[ ! -f ${build}/CMakeCache.txt ]] && command -v ninja >/dev/null 2>&1; then
  generator=(-G Ninja)
fi
cc=${cxx/clang++/clang}
c_compiler=()
command -v "${cc}" >/dev/null 2>&1 && c_compiler=(-DCMAKE_C_COMPILER="${cc}")
echo "::: fuzz: configure and build (${cxx})"
cmake -S . -B "${build}" "${generator[@]}" -DCMAKE_CXX_COMPILER="${cxx}" "${c_compiler[@]}" \
  -DVCLOCK_BUILD_FUZZ=ON -DVCLOCK_BUILD_TESTS=OFF -DVCLOCK_BUILD_BENCH=OFF \
  -DVCLOCK_BUILD_CLI=OFF -DVCLOCK_INSTALL=OFF >"${build}/configure.log" 2>&1 || {
  cat "${build}/configure.log"
  exit 1
}
cmake --build "${build}" --target vclock_fuzz_attach
fuzzer=${build}/fuzz/vclock_fuzz_attach
if [[ ! -x ${fuzzer} ]]; then
  # CMake found no libFuzzer where the probe above did: say why, and fail.
  grep -i 'fuzz' "${build}/configure.log" >&2 || true
  echo "fuzz: ${fuzzer} was not built" >&2
  exit 1
fi

rm -rf "${build}/seeds" "${build}/tmp"
mkdir -p "${build}/corpus" "${build}/artifacts" "${build}/tmp"
VCLOCK_FUZZ_WRITE_SEEDS=${build}/seeds "${fuzzer}" >"${build}/seeds.log" 2>&1 || {
  cat "${build}/seeds.log"
  exit 1
}
log=${build}/fuzz.log
echo "::: fuzz: ${seconds} s, corpus ${build}/corpus + $(ls "${build}/seeds" | wc -l) seeds"
rc=0
# libFuzzer's own exit code for a crash is 77, which tools/test.sh reads as "skipped": 1 here.
# -max_len: an input that is a whole page file, plus its mode byte and two option bytes.
TMPDIR=${PWD}/${build}/tmp "${fuzzer}" -max_total_time="${seconds}" -error_exitcode=1 \
  -timeout_exitcode=1 -timeout=10 -max_len=4160 -dict=fuzz/attach.dict \
  -artifact_prefix="${build}/artifacts/" -print_final_stats=1 \
  "${build}/corpus" "${build}/seeds" >"${log}" 2>&1 || rc=$?

final_stat() { sed -n "s/^stat::$1: *//p" "${log}" | tail -1; }
done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "${log}" | tail -1 || true)
field() { sed -n "s/.* $1: \([^ ]*\).*/\1/p" <<<"${done_line}"; }
if ((rc != 0)); then
  echo "fuzz: FAILED (fuzzer exit ${rc}); the end of ${log}:"
  tail -n 60 "${log}"
  echo "fuzz: inputs that failed (replay one: ${fuzzer} FILE):"
  ls -l "${build}/artifacts/"
  exit 1
fi
corpus=$(field corp)
printf 'fuzz: %s runs in %s s (%s/s), cov %s, ft %s, corpus %s inputs (%s), 0 crashes\n' \
  "$(final_stat number_of_executed_units)" "${seconds}" "$(final_stat average_exec_per_sec)" \
  "$(field cov)" "$(field ft)" "${corpus%%/*}" "${corpus#*/}"
