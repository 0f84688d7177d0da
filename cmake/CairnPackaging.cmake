# Install rules, the package config files, and the build-tree export.
include(CMakePackageConfigHelpers)

set(CAIRN_CONFIG_INSTALL_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/cairn")

configure_package_config_file(
  "${CMAKE_CURRENT_LIST_DIR}/cairnConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/cairnConfig.cmake"
  INSTALL_DESTINATION "${CAIRN_CONFIG_INSTALL_DIR}")
write_basic_package_version_file(
  "${PROJECT_BINARY_DIR}/cairnConfigVersion.cmake"
  COMPATIBILITY SameMinorVersion
  ARCH_INDEPENDENT)

# The build tree can be used in place: find_package(cairn) with cairn_DIR pointing at the build folder.
export(TARGETS ${CAIRN_EXPORTED_TARGETS} NAMESPACE cairn:: FILE "${PROJECT_BINARY_DIR}/cairnTargets.cmake")

if(CAIRN_INSTALL)
  install(DIRECTORY include/ DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}" FILES_MATCHING PATTERN "*.hpp")
  install(TARGETS ${CAIRN_EXPORTED_TARGETS} EXPORT cairnTargets
          ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}"
          LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}"
          RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")
  install(EXPORT cairnTargets NAMESPACE cairn:: DESTINATION "${CAIRN_CONFIG_INSTALL_DIR}")
  install(FILES "${PROJECT_BINARY_DIR}/cairnConfig.cmake" "${PROJECT_BINARY_DIR}/cairnConfigVersion.cmake"
          DESTINATION "${CAIRN_CONFIG_INSTALL_DIR}")
endif()
