#!/usr/bin/env bash
# Consumer test: installs a built vclock tree into a temporary prefix, then builds and runs
#   1. tests/consumer/ as a CMake project (find_package(vclock CONFIG)): C++ against
#      vclock::vclock, C against vclock::vclock_static,
#   2. tests/consumer/c_only/, a C-only CMake project (linked by the C driver): C against
#      vclock::vclock_static and vclock::vclock,
#   3. consumer.c with plain `cc consumer.c -I... -L... -lvclock` (API.md: no other flags),
#   4. consumer.c with `pkg-config --cflags --libs vclock`,
#   5. consumer.c against libvclock.a with `pkg-config --static --libs vclock`, the archive
#      chosen by -Wl,-Bstatic around -lvclock (libc and the rest stay shared),
#   6. the same fully `-static` (skipped when the machine cannot link a static program).
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

echo "== find_package(vclock CONFIG) from a C-only project"
"$cmake" -S "$here/c_only" -B "$work/build_c" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=Release
"$cmake" --build "$work/build_c"
"$work/build_c/consumer_c_static"
"$work/build_c/consumer_c_shared"

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

  # Static: `pkg-config --static` adds Libs.private, everything libvclock.a needs beyond libc.
  # -Wl,-Bstatic makes the linker take libvclock.a although libvclock.so lies beside it.
  static_flags=()
  found_lvclock=0
  for word in $(pkg-config --cflags --static --libs vclock); do
    if [[ $word == -lvclock ]]; then
      # shellcheck disable=SC2054 # the commas belong to the linker options
      static_flags+=(-Wl,-Bstatic -lvclock -Wl,-Bdynamic)
      found_lvclock=1
    else
      static_flags+=("$word")
    fi
  done
  if [[ $found_lvclock -ne 1 ]]; then
    echo "FAIL: pkg-config --static --libs vclock has no -lvclock" >&2
    exit 1
  fi
  echo "== $cc consumer.c ${static_flags[*]}"
  "$cc" "$here/consumer.c" "${static_flags[@]}" -o "$work/pkgconfig_static_c"
  if command -v readelf >/dev/null 2>&1 &&
     readelf -d "$work/pkgconfig_static_c" | grep -q 'NEEDED.*libvclock'; then
    echo "FAIL: pkgconfig_static_c needs libvclock.so; libvclock.a was not linked" >&2
    exit 1
  fi
  env -u LD_LIBRARY_PATH "$work/pkgconfig_static_c"

  flags=$(pkg-config --cflags --static --libs vclock)
  printf 'int main(void) { return 0; }\n' >"$work/trivial.c"
  if "$cc" -static "$work/trivial.c" -o "$work/trivial" >"$work/trivial.log" 2>&1 &&
     "$work/trivial"; then
    echo "== $cc -static consumer.c $flags"
    # shellcheck disable=SC2086 # the flags are words on purpose
    "$cc" -static "$here/consumer.c" $flags -o "$work/pkgconfig_fully_static_c"
    env -u LD_LIBRARY_PATH "$work/pkgconfig_fully_static_c"
  else
    echo "== SKIP: $cc -static cannot link a trivial program here (no static libc?);" \
      "fully static check skipped:"
    sed 's/^/   /' "$work/trivial.log"
  fi
else
  echo "== pkg-config not found; pkg-config checks (shared and static) skipped"
fi

echo "consumer: OK"
