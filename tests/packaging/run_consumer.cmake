# cmake -P run_consumer.cmake: configures, builds and runs one consumer project.
#   CONSUMER  folder of the consumer's CMakeLists.txt      BUILD  its build folder
#   ARGS      extra configure arguments (a ;-list)          INSTALL_FROM / PREFIX  install cairn first
if(INSTALL_FROM)
  file(REMOVE_RECURSE "${PREFIX}")
  execute_process(COMMAND "${CMAKE_COMMAND}" --install "${INSTALL_FROM}" --prefix "${PREFIX}"
                  OUTPUT_QUIET COMMAND_ERROR_IS_FATAL ANY)
  if(NOT EXISTS "${PREFIX}/lib/cmake/cairn/cairnConfig.cmake" AND NOT EXISTS "${PREFIX}/lib64/cmake/cairn/cairnConfig.cmake")
    file(GLOB_RECURSE _cfg "${PREFIX}/*cairnConfig.cmake")
    if(NOT _cfg)
      message(FATAL_ERROR "cmake --install did not produce cairnConfig.cmake under ${PREFIX}")
    endif()
  endif()
  # A build that made the MCP server installs it too.
  if(EXISTS "${INSTALL_FROM}/examples/cairn-mcp" AND NOT EXISTS "${PREFIX}/bin/cairn-mcp")
    message(FATAL_ERROR "cmake --install did not install cairn-mcp into ${PREFIX}/bin")
  endif()
endif()
file(REMOVE_RECURSE "${BUILD}")
execute_process(COMMAND "${CMAKE_COMMAND}" -S "${CONSUMER}" -B "${BUILD}" -G "${GENERATOR}"
                        "-DCMAKE_CXX_COMPILER=${CXX}" ${ARGS}
                COMMAND_ERROR_IS_FATAL ANY)
execute_process(COMMAND "${CMAKE_COMMAND}" --build "${BUILD}" COMMAND_ERROR_IS_FATAL ANY)
execute_process(COMMAND "${BUILD}/consumer" COMMAND_ERROR_IS_FATAL ANY)
