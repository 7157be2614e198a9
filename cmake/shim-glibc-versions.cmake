# The glibc symbol versions libvclock_preload.so interposes, per architecture: the one place
# they are written (issue 24). glibc's oldest version differs by architecture (x86-64's
# ABI starts at GLIBC_2.2.5, arm64's at GLIBC_2.17), so the version a function's current ABI
# carries does too; a shim exporting another architecture's version is never bound to.
# From here come both the version script's nodes (src/shim/preload.map.in) and the strings
# the sources give .symver and dlvsym (src/shim/glibc_versions.h.in). tests/shim/versions.sh
# checks the built shim against the target's libc.
#
# VCLOCK_GLIBC_COND_TIMEDWAIT: pthread_cond_timedwait's current condvar (x86-64 also has
#   GLIBC_2.2.5's old one, left to glibc; arm64 has only this one).
# VCLOCK_GLIBC_TIMER: timer_* since they moved into libc (the default version everywhere).
# VCLOCK_GLIBC_TIMER_LIBRT: the same timer_* ABI as it was versioned in librt before 2.34
#   (x86-64 also has GLIBC_2.2.5's int timer_t, left to glibc).
# Sets vclock_shim_glibc_known to FALSE on an architecture not listed here.
set(vclock_shim_glibc_known TRUE)
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  set(VCLOCK_GLIBC_COND_TIMEDWAIT GLIBC_2.3.2)
  set(VCLOCK_GLIBC_TIMER_LIBRT GLIBC_2.3.3)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64|ARM64)$")
  set(VCLOCK_GLIBC_COND_TIMEDWAIT GLIBC_2.17)
  set(VCLOCK_GLIBC_TIMER_LIBRT GLIBC_2.17)
else()
  set(vclock_shim_glibc_known FALSE)
endif()
set(VCLOCK_GLIBC_TIMER GLIBC_2.34)

# Writes the version script to `map_out` and the header to `header_dir`/shim/glibc_versions.h.
# The script has one node per distinct version (arm64's two functions share GLIBC_2.17), each
# inheriting the one before, the oldest holding the local: patterns.
function(vclock_shim_glibc_files map_out header_dir)
  set(versions ${VCLOCK_GLIBC_COND_TIMEDWAIT} ${VCLOCK_GLIBC_TIMER_LIBRT} ${VCLOCK_GLIBC_TIMER})
  list(REMOVE_DUPLICATES versions)
  set(VCLOCK_SHIM_VERSION_NODES "")
  set(previous "")
  foreach(version IN LISTS versions)
    if(previous STREQUAL "")
      string(APPEND VCLOCK_SHIM_VERSION_NODES
        "${version} {\n  local:\n    vclock_shim_*;\n    _Z*;\n};\n")
    else()
      string(APPEND VCLOCK_SHIM_VERSION_NODES "${version} {\n} ${previous};\n")
    endif()
    set(previous ${version})
  endforeach()
  configure_file(${PROJECT_SOURCE_DIR}/src/shim/preload.map.in ${map_out} @ONLY)
  configure_file(${PROJECT_SOURCE_DIR}/src/shim/glibc_versions.h.in
    ${header_dir}/shim/glibc_versions.h @ONLY)
endfunction()
