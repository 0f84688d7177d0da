# cmake -P install_core.cmake: cairn configured as a top-level project with its defaults (examples on, no compiled
# part) and installed WITHOUT building anything, then used the three ways an adopter would.
#   SOURCE  cairn's checkout    WORK  a scratch folder    GENERATOR, CXX  as for run_consumer.cmake
#   CONSUMERS  tests/packaging (consumer/main.cpp, find_package/)
cmake_minimum_required(VERSION 3.21)
set(_tree "${WORK}/cairn-build")
set(_prefix "${WORK}/prefix")
file(REMOVE_RECURSE "${WORK}")
execute_process(COMMAND "${CMAKE_COMMAND}" -S "${SOURCE}" -B "${_tree}" -G "${GENERATOR}" "-DCMAKE_CXX_COMPILER=${CXX}"
                        -DCAIRN_BUILD_TESTS=OFF -DCAIRN_BUILD_BENCH=OFF
                OUTPUT_QUIET COMMAND_ERROR_IS_FATAL ANY)
# 1. The header-only core installs from a tree where nothing was built (the examples, cairn-mcp among them, were
#    configured but not built: they are left out, not an error).
execute_process(COMMAND "${CMAKE_COMMAND}" --install "${_tree}" --prefix "${_prefix}"
                OUTPUT_QUIET COMMAND_ERROR_IS_FATAL ANY)
foreach(_file include/cairn/cairn.hpp include/cairn/store/open_store.hpp include/cairn/testing/store_conformance.hpp
              share/pkgconfig/cairn.pc)
  if(NOT EXISTS "${_prefix}/${_file}")
    message(FATAL_ERROR "the header-only install lacks ${_file}")
  endif()
endforeach()
# Headers of parts that were not built are not installed; nor is a server that was not built.
foreach(_file include/cairn/store/sqlite_store.hpp include/cairn/store/postgres_store.hpp
              include/cairn/workflow/yaml.hpp bin/cairn-mcp)
  if(EXISTS "${_prefix}/${_file}")
    message(FATAL_ERROR "the header-only install has ${_file}, which belongs to a part that was not built")
  endif()
endforeach()
file(GLOB_RECURSE _version_file "${_prefix}/*cairnConfigVersion.cmake")
include("${CMAKE_CURRENT_LIST_DIR}/version_check.cmake")
cairn_suits_32_bit("${_version_file}" _suits)
if(NOT _suits)
  message(FATAL_ERROR "the header-only core's cairnConfigVersion.cmake refuses a 32-bit consumer "
                      "(not ARCH_INDEPENDENT)")
endif()

# 2. find_package(cairn) works; asking for a part that was not built fails and says which option builds it.
execute_process(COMMAND "${CMAKE_COMMAND}" -S "${CONSUMERS}/find_package" -B "${WORK}/core" -G "${GENERATOR}"
                        "-DCMAKE_CXX_COMPILER=${CXX}" "-DCMAKE_PREFIX_PATH=${_prefix}"
                OUTPUT_QUIET COMMAND_ERROR_IS_FATAL ANY)
execute_process(COMMAND "${CMAKE_COMMAND}" --build "${WORK}/core" OUTPUT_QUIET COMMAND_ERROR_IS_FATAL ANY)
execute_process(COMMAND "${WORK}/core/consumer" COMMAND_ERROR_IS_FATAL ANY)
foreach(_part compiled sqlite postgres yaml)
  string(TOUPPER "${_part}" _PART)
  execute_process(COMMAND "${CMAKE_COMMAND}" -S "${CONSUMERS}/find_package" -B "${WORK}/with-${_part}"
                          -G "${GENERATOR}" "-DCMAKE_CXX_COMPILER=${CXX}" "-DCMAKE_PREFIX_PATH=${_prefix}"
                          "-DCAIRN_COMPONENTS=${_part}"
                  RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
  string(REGEX REPLACE "[ \t\r\n]+" " " _said "${_out} ${_err}")
  if(_rc EQUAL 0)
    message(FATAL_ERROR "find_package(cairn COMPONENTS ${_part}) succeeded against an install without it")
  endif()
  string(CONCAT _expected "cairn::${_part} was not built with this cairn .* "
                          "rebuild and reinstall cairn with -DCAIRN_WITH_${_PART}=ON")
  if(NOT _said MATCHES "${_expected}")
    message(FATAL_ERROR "find_package(cairn COMPONENTS ${_part}) failed without naming the part and its option:\n"
                        "${_out}\n${_err}")
  endif()
endforeach()

# 3. pkg-config: the flags of cairn.pc (and of the nlohmann_json and fmt it requires) compile and link a program.
find_program(_pkg_config NAMES pkg-config pkgconf REQUIRED)
execute_process(COMMAND "${CMAKE_COMMAND}" -E env "PKG_CONFIG_PATH=${_prefix}/share/pkgconfig"
                        "${_pkg_config}" --cflags --libs cairn
                OUTPUT_VARIABLE _flags OUTPUT_STRIP_TRAILING_WHITESPACE COMMAND_ERROR_IS_FATAL ANY)
if(NOT _flags MATCHES "-I[^ ]*/include" OR NOT _flags MATCHES "-lfmt")
  message(FATAL_ERROR "pkg-config --cflags --libs cairn gave '${_flags}': no include folder or no -lfmt")
endif()
separate_arguments(_flags UNIX_COMMAND "${_flags}")
execute_process(COMMAND "${CXX}" -std=c++17 "${CONSUMERS}/consumer/main.cpp" ${_flags} -o "${WORK}/consumer-pc"
                COMMAND_ERROR_IS_FATAL ANY)
execute_process(COMMAND "${WORK}/consumer-pc" COMMAND_ERROR_IS_FATAL ANY)
