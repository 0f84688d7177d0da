# Install rules, the package config files, the pkg-config file, and the build-tree export.
include(CMakePackageConfigHelpers)

set(CAIRN_CONFIG_INSTALL_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/cairn")

configure_package_config_file(
  "${CMAKE_CURRENT_LIST_DIR}/cairnConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/cairnConfig.cmake"
  INSTALL_DESTINATION "${CAIRN_CONFIG_INSTALL_DIR}")
# The version check compares the pointer size too as soon as a compiled part (a static library) is installed; the
# header-only core fits any architecture.
if(CAIRN_WITH_COMPILED OR CAIRN_WITH_SQLITE OR CAIRN_WITH_POSTGRES OR CAIRN_WITH_YAML)
  set(_cairn_arch_independent "")
else()
  set(_cairn_arch_independent ARCH_INDEPENDENT)
endif()
write_basic_package_version_file(
  "${PROJECT_BINARY_DIR}/cairnConfigVersion.cmake"
  COMPATIBILITY SameMinorVersion
  ${_cairn_arch_independent})

# The build tree can be used in place: find_package(cairn) with cairn_DIR pointing at the build folder.
export(TARGETS ${CAIRN_EXPORTED_TARGETS} NAMESPACE cairn:: FILE "${PROJECT_BINARY_DIR}/cairnTargets.cmake")

# cairn.pc describes the header-only core (the compiled parts are for CMake users). Requires names the .pc files
# Debian's nlohmann-json3-dev and libfmt-dev ship. Relocatable: the prefix is found from the file's own place.
set(CAIRN_PKGCONFIG_INSTALL_DIR "${CMAKE_INSTALL_DATADIR}/pkgconfig")
if(IS_ABSOLUTE "${CMAKE_INSTALL_DATADIR}")
  set(_cairn_pc_prefix "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH _cairn_pc_up "/root/${CAIRN_PKGCONFIG_INSTALL_DIR}" "/root")
  set(_cairn_pc_prefix "\${pcfiledir}/${_cairn_pc_up}")
  string(REGEX REPLACE "/$" "" _cairn_pc_prefix "${_cairn_pc_prefix}")
endif()
if(IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(_cairn_pc_includedir "${CMAKE_INSTALL_INCLUDEDIR}")
else()
  set(_cairn_pc_includedir "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
set(_cairn_pc_requires "nlohmann_json >= 3.11, fmt >= 9")
if(CAIRN_WITH_SCHEMA)
  string(APPEND _cairn_pc_requires ", re2")
endif()
file(WRITE "${PROJECT_BINARY_DIR}/cairn.pc" "prefix=${_cairn_pc_prefix}
includedir=${_cairn_pc_includedir}

Name: cairn
Description: ${PROJECT_DESCRIPTION} (header-only core, C++17)
Version: ${PROJECT_VERSION}
Requires: ${_cairn_pc_requires}
Cflags: -I\${includedir}
")

if(CAIRN_INSTALL)
  # Headers of the compiled parts are installed only with the part: a header without its library is a link error.
  set(_cairn_header_excludes "")
  if(NOT CAIRN_WITH_SQLITE)
    list(APPEND _cairn_header_excludes REGEX "/store/sqlite_store\\.hpp$" EXCLUDE)
  endif()
  if(NOT CAIRN_WITH_POSTGRES)
    list(APPEND _cairn_header_excludes REGEX "/store/postgres_store\\.hpp$" EXCLUDE)
  endif()
  if(NOT CAIRN_WITH_SPDLOG)
    list(APPEND _cairn_header_excludes REGEX "/observe/spdlog\\.hpp$" EXCLUDE)
  endif()
  if(NOT CAIRN_WITH_YAML)
    list(APPEND _cairn_header_excludes REGEX "/workflow/yaml\\.hpp$" EXCLUDE)
  endif()
  install(DIRECTORY include/ DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}"
          FILES_MATCHING PATTERN "*.hpp" ${_cairn_header_excludes})
  install(FILES "${PROJECT_BINARY_DIR}/include/cairn/build_config.hpp" DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/cairn")
  install(TARGETS ${CAIRN_EXPORTED_TARGETS} EXPORT cairnTargets
          ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}"
          LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}"
          RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")
  install(EXPORT cairnTargets NAMESPACE cairn:: DESTINATION "${CAIRN_CONFIG_INSTALL_DIR}")
  install(FILES "${PROJECT_BINARY_DIR}/cairnConfig.cmake" "${PROJECT_BINARY_DIR}/cairnConfigVersion.cmake"
          DESTINATION "${CAIRN_CONFIG_INSTALL_DIR}")
  install(FILES "${PROJECT_BINARY_DIR}/cairn.pc" DESTINATION "${CAIRN_PKGCONFIG_INSTALL_DIR}")
endif()
