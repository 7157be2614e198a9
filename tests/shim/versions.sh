#!/usr/bin/env bash
# The shim's symbol versions are the target's (issue 24): for every function
# libvclock_preload.so exports, compared with what the target's libc (and
# libpthread, librt) export under that name:
#   - each version the shim exports it at (@@ or @) is one the target has for it: a
#     version the target lacks is never bound to, so the function is not interposed;
#   - the shim's default (@@) version is the target's default one, the version every
#     program linked against that libc asks for;
#   - an unversioned export (served to any version of the name) names a function the
#     target has;
#   - each GLIBC_ version string in the shim's read-only data (what it passes dlvsym to
#     find libc's own) is a version the target's libraries define functions at.
# Reads ELF only (readelf), so it runs in a cross build too: the target's libraries are
# the ones its compiler links against (CC -print-file-name).
# Usage: versions.sh SHIM CC   Exit: 0 all hold, 1 one does not, 77 no readelf or libc.
set -euo pipefail

shim=$1
cc=$2

if ! command -v readelf >/dev/null 2>&1; then
  echo "SKIP: no readelf"
  exit 77
fi

libs=()
for name in libc.so.6 libpthread.so.0 librt.so.1; do
  path=$("$cc" -print-file-name="$name" 2>/dev/null || true)
  # Without the file, -print-file-name echoes the bare name.
  if [[ $path == */* && -f $path ]]; then libs+=("$path"); fi
done
if [[ ${#libs[@]} -eq 0 || ${libs[0]} != */libc.so.6 ]]; then
  echo "SKIP: $cc finds no libc.so.6 (-print-file-name)"
  exit 77
fi
echo "target: ${libs[*]}"

# Defined functions (FUNC, or IFUNC: x86-64's time and gettimeofday) as NAME DEFAULT
# VERSION lines: DEFAULT is @@, @ or - (unversioned: readelf writes NAME alone, or
# NAME@@Base in some versions). readelf's name column is NAME@@V, NAME@V, or NAME@V (N)
# with the version's index.
defined_functions() {
  readelf --dyn-syms --wide "$@" | awk '
    ($4 == "FUNC" || $4 == "IFUNC") && ($5 == "GLOBAL" || $5 == "WEAK") && $7 != "UND" {
      name = $8
      if (index(name, "@@") > 0) {
        split(name, part, "@@"); at = "@@"
      } else if (index(name, "@") > 0) {
        split(name, part, "@"); at = "@"
      } else {
        part[1] = name; part[2] = ""; at = "-"
      }
      if (part[2] == "Base") { part[2] = ""; at = "-" }
      print part[1], at, part[2]
    }' | sort -u
}

target=$(defined_functions "${libs[@]}")
exported=$(defined_functions "$shim")
if [[ -z $exported ]]; then
  echo "FAIL: $shim exports no functions"
  exit 1
fi

failures=0
checked=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

while read -r name at version; do
  checked=$((checked + 1))
  has=$(awk -v n="$name" '$1 == n { print $3 }' <<<"$target" | sort -u | xargs)
  target_default=$(awk -v n="$name" '$1 == n && $2 == "@@" { print $3 }' <<<"$target" | head -1)
  if ! awk -v n="$name" '$1 == n { f = 1 } END { exit !f }' <<<"$target"; then
    fail "$name: the shim exports it; the target's libraries do not define it"
    continue
  fi
  case $at in
    -)
      echo "ok: $name unversioned (serves every version: target has ${has:-none})"
      ;;
    @@ | @)
      if [[ " $has " != *" $version "* ]]; then
        fail "$name$at$version: the target has $name at ${has:-no version} only"
      elif [[ $at == @@ && $version != "$target_default" ]]; then
        fail "$name@@$version: the target's default is $name@@${target_default:-(none)}"
      else
        echo "ok: $name$at$version (target: $has; default ${target_default:-none})"
      fi
      ;;
  esac
done <<<"$exported"

# The versions dlvsym is given: the GLIBC_ strings in the shim's read-only data.
target_versions=$(awk '$3 != "" { print $3 }' <<<"$target" | sort -u)
lookups=$(readelf --string-dump=.rodata --wide "$shim" 2>/dev/null |
            grep -oE 'GLIBC_[0-9]+(\.[0-9]+)*' | sort -u || true)
for version in $lookups; do
  checked=$((checked + 1))
  if grep -qx "$version" <<<"$target_versions"; then
    echo "ok: dlvsym version $version (the target defines it)"
  else
    fail "dlvsym version $version: the target's libraries define no such version"
  fi
done
if [[ -z $lookups ]]; then
  fail "no GLIBC_ version string in the shim's .rodata: the dlvsym lookups moved (update this check)"
fi

if ((failures > 0)); then
  echo "FAIL: ${failures} of ${checked} checks"
  exit 1
fi
echo "PASS: ${checked} checks: every exported function's versions and every dlvsym version are the target's"
