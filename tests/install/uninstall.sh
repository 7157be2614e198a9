#!/usr/bin/env bash
# The install.uninstall test: install this build into a prefix that does not exist yet, check
# a few files landed, run the uninstall (cmake -P BUILD/uninstall.cmake, as docs/build.md
# says), and check that nothing is left: no file and no directory, the prefix included,
# since the install created it. And a directory that existed before, empty, stays.
# The build's install_manifest.txt and install_dirs.txt are the record of a real install
# from this tree, if any: kept aside and put back.
# Usage: uninstall.sh BUILD_DIR   Exit status: 0 it holds, 1 it does not, 77 skipped.
set -u
build=$(cd "$1" && pwd)
cmake=${CMAKE_COMMAND:-cmake}
work=$(mktemp -d /tmp/vclock-uninstall.XXXXXX)
for f in install_manifest.txt install_dirs.txt; do
  [ -e "$build/$f" ] && cp -p "$build/$f" "$work/$f.kept"
done
restore() {
  for f in install_manifest.txt install_dirs.txt; do
    if [ -e "$work/$f.kept" ]; then cp -p "$work/$f.kept" "$build/$f"; else rm -f "$build/$f"; fi
  done
  rm -rf "$work"
}
trap restore EXIT
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# The prefix's parent and an empty directory beside the prefix exist before: they stay.
prefix=$work/root/prefix
mkdir -p "$work/root/prefix-sibling"
"$cmake" --install "$build" --prefix "$prefix" >"$work/install.log" 2>&1 ||
  { cat "$work/install.log"; echo "FAIL: cmake --install"; exit 1; }
[ -f "$prefix/include/vclock/vclock.h" ] || fail "install: no include/vclock/vclock.h"
ls "$prefix"/lib*/libvclock.so* >/dev/null 2>&1 || fail "install: no libvclock.so"
n=$(wc -l <"$build/install_manifest.txt")

# A second install over the first: the record of what the first created must survive it.
"$cmake" --install "$build" --prefix "$prefix" >>"$work/install.log" 2>&1 || fail "second install"

"$cmake" -P "$build/uninstall.cmake" >"$work/uninstall.log" 2>&1 ||
  { cat "$work/uninstall.log"; fail "uninstall exited $?"; }
if [ -e "$prefix" ]; then
  fail "uninstall left the prefix the install created: $(cd "$prefix" && find . | tr "\n" " ")"
fi
[ -d "$work/root/prefix-sibling" ] || fail "uninstall removed a directory it did not create"
[ -d "$work/root" ] || fail "uninstall removed the prefix's parent, which existed before"

if [ $failures -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "installed $n files into a new prefix, uninstalled: nothing left, the parent kept"
