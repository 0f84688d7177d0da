# cmake -P run_consumer.cmake: configures, builds and runs one consumer project.
#   CONSUMER  folder of the consumer's CMakeLists.txt      BUILD  its build folder
#   ARGS      extra configure arguments (a ;-list)          INSTALL_FROM / PREFIX  install cairn first
#   COMPONENTS  the compiled parts the install must hold and the consumer asks for (comma-separated)
#   WITH_SCHEMA, WITH_HNSWLIB  (0 or 1) what the installed cairn/build_config.hpp must say
cmake_minimum_required(VERSION 3.21)
string(REPLACE "," ";" _components "${COMPONENTS}")
if(INSTALL_FROM)
  file(REMOVE_RECURSE "${PREFIX}")
  execute_process(COMMAND "${CMAKE_COMMAND}" --install "${INSTALL_FROM}" --prefix "${PREFIX}"
                  OUTPUT_QUIET COMMAND_ERROR_IS_FATAL ANY)
  file(GLOB_RECURSE _cfg "${PREFIX}/*cairnConfig.cmake")
  if(NOT _cfg)
    message(FATAL_ERROR "cmake --install did not produce cairnConfig.cmake under ${PREFIX}")
  endif()
  # A build that made the MCP server installs it too (CAIRN_INSTALL_TOOLS is ON by default).
  if(EXISTS "${INSTALL_FROM}/examples/cairn-mcp" AND NOT EXISTS "${PREFIX}/bin/cairn-mcp")
    message(FATAL_ERROR "cmake --install did not install cairn-mcp into ${PREFIX}/bin")
  endif()
  # The optional parts it was built with are in an installed header, not in the usage requirements: a consumer's
  # files get no CAIRN_WITH_* definition (in compiled mode none of them parses RE2 or hnswlib).
  file(GLOB_RECURSE _targets "${PREFIX}/*cairnTargets.cmake")
  foreach(_file IN LISTS _targets)
    file(READ "${_file}" _text)
    if(_text MATCHES "CAIRN_WITH_")
      message(FATAL_ERROR "${_file} hands a CAIRN_WITH_* switch to cairn's users")
    endif()
  endforeach()
  if(NOT EXISTS "${PREFIX}/include/cairn/build_config.hpp")
    message(FATAL_ERROR "cmake --install did not install include/cairn/build_config.hpp")
  endif()
  file(READ "${PREFIX}/include/cairn/build_config.hpp" _config)
  foreach(_option SCHEMA HNSWLIB)
    if(DEFINED WITH_${_option} AND NOT _config MATCHES "#define CAIRN_WITH_${_option} ${WITH_${_option}}\n")
      message(FATAL_ERROR "the installed cairn/build_config.hpp does not say CAIRN_WITH_${_option} "
                          "${WITH_${_option}}:\n${_config}")
    endif()
  endforeach()
  # Each compiled part comes with its header, and a static library makes the version check architecture-bound.
  set(_header_of_sqlite store/sqlite_store.hpp)
  set(_header_of_postgres store/postgres_store.hpp)
  set(_header_of_yaml workflow/yaml.hpp)
  foreach(_part IN LISTS _components)
    if(NOT EXISTS "${PREFIX}/include/cairn/${_header_of_${_part}}")
      message(FATAL_ERROR "cairn::${_part} is installed without include/cairn/${_header_of_${_part}}")
    endif()
  endforeach()
  if(_components)
    get_filename_component(_cfg_dir "${_cfg}" DIRECTORY)
    include("${CMAKE_CURRENT_LIST_DIR}/version_check.cmake")
    cairn_suits_32_bit("${_cfg_dir}/cairnConfigVersion.cmake" _suits)
    if(_suits)
      message(FATAL_ERROR "cairnConfigVersion.cmake accepts a 32-bit consumer although 64-bit static libraries "
                          "are installed")
    endif()
  endif()
endif()
file(REMOVE_RECURSE "${BUILD}")
execute_process(COMMAND "${CMAKE_COMMAND}" -S "${CONSUMER}" -B "${BUILD}" -G "${GENERATOR}"
                        "-DCMAKE_CXX_COMPILER=${CXX}" "-DCAIRN_COMPONENTS=${COMPONENTS}" ${ARGS}
                COMMAND_ERROR_IS_FATAL ANY)
execute_process(COMMAND "${CMAKE_COMMAND}" --build "${BUILD}" COMMAND_ERROR_IS_FATAL ANY)
execute_process(COMMAND "${BUILD}/consumer" COMMAND_ERROR_IS_FATAL ANY)
