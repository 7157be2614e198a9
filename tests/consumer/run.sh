#!/usr/bin/env bash
# Consumer test: installs a built vclock tree into a temporary prefix, then builds and runs
#   1. tests/consumer/ as a CMake project (find_package(vclock CONFIG)),
#   2. consumer.c with plain `cc consumer.c -I... -L... -lvclock` (API.md: no other flags),
#   3. consumer.c with `pkg-config --cflags --libs vclock`.
# Usage: run.sh BUILD_DIR. Exit status 77 means skipped (ctest SKIP_RETURN_CODE).
# Uses $CMAKE_COMMAND, $CMAKE_GENERATOR, $CC and $CXX when set (ctest sets them).
set -euo pipefail

if [[ $# -ne 1 ]]; then
  echo "usage: $0 BUILD_DIR" >&2
  exit 2
fi
build_dir=$(cd "$1" && pwd)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cmake=${CMAKE_COMMAND:-cmake}
cc=${CC:-cc}

if ! command -v "$cc" >/dev/null 2>&1; then
  echo "SKIP: no C compiler ($cc)"
  exit 77
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/vclock-consumer.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

echo "== cmake --install $build_dir --prefix $prefix"
"$cmake" --install "$build_dir" --prefix "$prefix" >"$work/install.log" || {
  cat "$work/install.log"
  exit 1
}

lib=$(find "$prefix" -name 'libvclock.so' -print -quit)
if [[ -z $lib ]]; then
  echo "FAIL: libvclock.so was not installed under $prefix" >&2
  exit 1
fi
libdir=$(dirname "$lib")
for f in include/vclock/vclock.h include/vclock/vclock.hpp; do
  [[ -f $prefix/$f ]] || { echo "FAIL: $f was not installed" >&2; exit 1; }
done
[[ -f $libdir/libvclock.a ]] || { echo "FAIL: libvclock.a was not installed" >&2; exit 1; }

echo "== find_package(vclock CONFIG) project"
"$cmake" -S "$here" -B "$work/build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release
"$cmake" --build "$work/build"
"$work/build/consumer_cxx"
"$work/build/consumer_c"

echo "== $cc consumer.c -I\$prefix/include -L\$libdir -lvclock"
"$cc" "$here/consumer.c" -I"$prefix/include" -L"$libdir" -lvclock -o "$work/plain_c"
LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$work/plain_c"

if command -v pkg-config >/dev/null 2>&1; then
  export PKG_CONFIG_PATH=$libdir/pkgconfig
  flags=$(pkg-config --cflags --libs vclock)
  echo "== $cc consumer.c $flags"
  # shellcheck disable=SC2086 # the flags are words on purpose
  "$cc" "$here/consumer.c" $flags -o "$work/pkgconfig_c"
  LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$work/pkgconfig_c"
else
  echo "== pkg-config not found; pkg-config check skipped"
fi

echo "consumer: OK"
