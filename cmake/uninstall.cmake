# Uninstall, as `cmake --install` installed (docs/build.md): vclock_uninstall_rules() is
# called before any other install rule. Its first rule writes down, at install time, each
# directory the install is about to create (one that does not exist yet), to
# <build>/install_dirs.txt; `cmake -P <build>/uninstall.cmake` (or the `uninstall` target)
# removes every file of install_manifest.txt, then those directories, deepest first, each only
# if empty. So an uninstall leaves the prefix as it found it: no empty lib/systemd/system, and
# never a directory that was there before (Debian ships /usr/local/include empty).

# The directories the install rules write to, relative to the prefix (or absolute), written
# when the top-level directory is done, so that every destination variable is set. A
# destination added to an install rule must be added here: the install.uninstall test
# installs into an empty prefix and fails when an uninstall leaves a directory behind.
function(_vclock_write_install_dirs)
  set(dirs ${CMAKE_INSTALL_BINDIR} ${CMAKE_INSTALL_LIBDIR} ${CMAKE_INSTALL_DOCDIR}
      ${CMAKE_INSTALL_LIBDIR}/cmake/vclock ${CMAKE_INSTALL_LIBDIR}/pkgconfig
      ${VCLOCK_SYSTEMD_UNIT_DIR} ${VCLOCK_SYSUSERS_DIR}
      ${CMAKE_INSTALL_MANDIR}/man1 ${CMAKE_INSTALL_MANDIR}/man3 ${CMAKE_INSTALL_MANDIR}/man8
      ${CMAKE_INSTALL_DATADIR}/bash-completion/completions)
  # include/vclock and every directory under it (install(DIRECTORY include/vclock)).
  file(GLOB_RECURSE headers LIST_DIRECTORIES true RELATIVE ${PROJECT_SOURCE_DIR}/include
       ${PROJECT_SOURCE_DIR}/include/vclock/*)
  list(APPEND dirs ${CMAKE_INSTALL_INCLUDEDIR}/vclock)
  foreach(h IN LISTS headers)
    if(IS_DIRECTORY ${PROJECT_SOURCE_DIR}/include/${h})
      list(APPEND dirs ${CMAKE_INSTALL_INCLUDEDIR}/${h})
    endif()
  endforeach()
  list(JOIN dirs "\n" text)
  file(WRITE ${PROJECT_BINARY_DIR}/install_dest_dirs.txt "${text}\n")
endfunction()

function(vclock_uninstall_rules)
  cmake_language(DEFER DIRECTORY ${PROJECT_SOURCE_DIR} CALL _vclock_write_install_dirs)
  install(CODE "
    # Each destination and the directories above it, up to /, that do not exist yet.
    file(STRINGS \"${PROJECT_BINARY_DIR}/install_dest_dirs.txt\" vclock_dest)
    set(vclock_made)
    if(EXISTS \"${PROJECT_BINARY_DIR}/install_dirs.txt\")
      file(STRINGS \"${PROJECT_BINARY_DIR}/install_dirs.txt\" vclock_made)
    endif()
    foreach(d IN LISTS vclock_dest)
      if(NOT IS_ABSOLUTE \"\${d}\")
        set(d \"\${CMAKE_INSTALL_PREFIX}/\${d}\")
      endif()
      set(d \"\$ENV{DESTDIR}\${d}\")
      cmake_path(NORMAL_PATH d)
      while(NOT EXISTS \"\${d}\")
        list(APPEND vclock_made \"\${d}\")
        cmake_path(GET d PARENT_PATH d)
      endwhile()
    endforeach()
    list(REMOVE_DUPLICATES vclock_made)
    list(JOIN vclock_made \"\\n\" vclock_made)
    file(WRITE \"${PROJECT_BINARY_DIR}/install_dirs.txt\" \"\${vclock_made}\\n\")
  ")
  configure_file(${PROJECT_SOURCE_DIR}/cmake/uninstall.cmake.in
                 ${PROJECT_BINARY_DIR}/uninstall.cmake @ONLY)
  # Not in a parent's build, which may have an `uninstall` of its own.
  if(PROJECT_IS_TOP_LEVEL AND NOT TARGET uninstall)
    add_custom_target(uninstall COMMAND ${CMAKE_COMMAND} -P ${PROJECT_BINARY_DIR}/uninstall.cmake
                      VERBATIM)
  endif()
endfunction()
