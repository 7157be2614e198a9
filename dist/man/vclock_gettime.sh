#!/bin/sh
# help2man's view of vclock_gettime(3): a --help (the text beside this script, the page's one
# source) and a --version (the project version, from CMake).
case $1 in
  --help) cat "$(dirname "$0")/vclock_gettime.txt" ;;
  --version) echo "vclock_gettime ${VCLOCK_VERSION:?}" ;;
  *) exit 2 ;;
esac
