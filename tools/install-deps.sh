#!/usr/bin/env bash
# Installs what building and testing vclock needs and this machine lacks, on Debian 12 or
# Ubuntu 22.04 and later: the one set-up step of tools/demo.sh, tools/test.sh and .ci/run.
# Nothing when everything is there (no apt-get, no sudo, no network). As root, or through
# sudo; elsewhere (another distribution, no sudo) it names what is missing and stops.
#
#   tools/install-deps.sh           everything tools/test.sh uses
#   tools/install-deps.sh --build   only what building the release preset needs (tools/demo.sh)
#
# The test set: systemd brings systemd-analyze and systemd-sysusers, with which the
# systemd.unit test checks vclockd's unit (it does not make systemd the init system: that is
# systemd-sysv). clang and libclang-rt-14-dev (libFuzzer; only a Recommends of clang) build
# the attach fuzz target. libjemalloc2 and libfaketime: the shim with jemalloc (a test) and
# against libfaketime (a bench row). abseil is an optional peer and is deliberately not
# installed. help2man makes the man pages (a build without it skips them, with a message).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

build_packages=(cmake ninja-build g++ libgtest-dev libbenchmark-dev pkg-config)
test_packages=(clang-format clang-tidy systemd clang libclang-rt-14-dev libjemalloc2 libfaketime help2man)
# The vDSO handover's test (tests/vdso/handover.sh): static probes, busybox, Go, strace.
test_packages+=(busybox-static musl-tools golang-go strace)
# The arm64 stage of tools/test.sh: the cross compiler, qemu-user to run what it builds, and
# GoogleTest's sources (built for arm64 there: no distribution packages it for another arch).
test_packages+=(g++-aarch64-linux-gnu qemu-user googletest)

only_build=false
case ${1:-} in
  '') ;;
  --build) only_build=true ;;
  *)
    echo "usage: $0 [--build]" >&2
    exit 2
    ;;
esac

packages=("${build_packages[@]}")
$only_build || packages+=("${test_packages[@]}")

# Not Debian or Ubuntu: no package names to check. Name the tools that matter and stop only
# when one is missing, so that a machine set up by hand is not held up.
if ! command -v dpkg >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
  absent=()
  for tool in cmake ninja c++ pkg-config; do
    command -v "$tool" >/dev/null 2>&1 || absent+=("$tool")
  done
  if ((${#absent[@]})); then
    echo "install-deps: this is not Debian or Ubuntu (no dpkg/apt-get), and ${absent[*]}" \
      "cannot be found. Install CMake 3.25+, Ninja, GCC 12+ or Clang 14+, pkg-config," \
      "GoogleTest and Google Benchmark with this system's package manager" \
      "(Debian names: ${packages[*]})." >&2
    exit 1
  fi
  exit 0
fi

missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ! $only_build; then
  # The shim's real-program test (tests/shim/run.sh) runs programs nobody here wrote: each
  # one's Debian package, unless the machine has the program already (node, java or rustc
  # may come from elsewhere: nodesource, rustup).
  declare -A program_packages=([python3]=python3 [perl]=perl [node]=nodejs
    [javac]=default-jdk-headless [rustc]=rustc)
  for program in "${!program_packages[@]}"; do
    command -v "$program" >/dev/null 2>&1 || missing+=("${program_packages[$program]}")
  done
  # Time::HiRes is in perl, not perl-base.
  perl -MTime::HiRes -e 1 >/dev/null 2>&1 || missing+=(perl)
fi

if ((${#missing[@]})); then
  sudo=()
  if [[ $(id -u) -ne 0 ]]; then
    if ! command -v sudo >/dev/null 2>&1; then
      echo "install-deps: missing ${missing[*]}; run as root, or install sudo, or:" \
        "apt-get install ${missing[*]}" >&2
      exit 1
    fi
    sudo=(sudo)
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -q
  # A release that lacks a package (libclang-rt-14-dev before Debian 12) installs the rest:
  # the tests that need it skip.
  available=()
  for p in "${missing[@]}"; do
    if [[ $(apt-cache policy "$p" 2>/dev/null | awk '/Candidate:/ {print $2}') =~ ^(|\(none\))$ ]]; then
      echo "::: $p is not available on this release: the tests that need it will skip"
    else
      available+=("$p")
    fi
  done
  if ((${#available[@]})); then
    echo "::: installing ${available[*]}"
    "${sudo[@]}" apt-get install -y -q --no-install-recommends "${available[@]}"
  fi
fi

$only_build && exit 0

# chronyd for the error bound's chrony test (tests/bound/run.sh starts it with -x: it never
# touches the clock). Extracted from its package into build/chrony rather than installed: an
# installed chrony would start a real chronyd (where services may start), which would
# discipline this machine's clock under every other test. The test skips where it is absent.
if ! command -v chronyd >/dev/null 2>&1 && [[ ! -x build/chrony/usr/sbin/chronyd ]]; then
  mkdir -p build/chrony-deb
  if (cd build/chrony-deb && apt-get download chrony >/dev/null 2>&1) &&
    dpkg -x build/chrony-deb/chrony_*.deb build/chrony; then
    echo "::: chronyd extracted into build/chrony"
  else
    echo "::: chrony's package is not available: the chrony test will skip"
  fi
fi
