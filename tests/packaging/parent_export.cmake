# cmake -P parent_export.cmake: builds and installs parent_export/ (a parent exporting a library that links
# cairn::cairn), then checks that a project can find_package the parent and gets cairn with it.
#   SOURCE  cairn's checkout    WORK  a scratch folder    GENERATOR, CXX  as for run_consumer.cmake
#   CONSUMERS  tests/packaging
cmake_minimum_required(VERSION 3.21)
file(REMOVE_RECURSE "${WORK}")
execute_process(COMMAND "${CMAKE_COMMAND}" -S "${CONSUMERS}/parent_export" -B "${WORK}/build" -G "${GENERATOR}"
                        "-DCMAKE_CXX_COMPILER=${CXX}" "-DCAIRN_SOURCE_DIR=${SOURCE}"
                COMMAND_ERROR_IS_FATAL ANY)
execute_process(COMMAND "${CMAKE_COMMAND}" --build "${WORK}/build" COMMAND_ERROR_IS_FATAL ANY)
execute_process(COMMAND "${CMAKE_COMMAND}" --install "${WORK}/build" --prefix "${WORK}/prefix"
                OUTPUT_QUIET COMMAND_ERROR_IS_FATAL ANY)
# The installed parent brings cairn::cairn along: a project using agentkit::agentkit sees cairn's include folder.
file(WRITE "${WORK}/user/CMakeLists.txt" "cmake_minimum_required(VERSION 3.21)
project(user LANGUAGES CXX)
find_package(agentkit REQUIRED)
get_target_property(_inc cairn::cairn INTERFACE_INCLUDE_DIRECTORIES)
if(NOT EXISTS \"\${_inc}/cairn/cairn.hpp\")
  message(FATAL_ERROR \"cairn::cairn from the parent's install has no cairn/cairn.hpp under '\${_inc}'\")
endif()
")
execute_process(COMMAND "${CMAKE_COMMAND}" -S "${WORK}/user" -B "${WORK}/user-build" -G "${GENERATOR}"
                        "-DCMAKE_CXX_COMPILER=${CXX}" "-DCMAKE_PREFIX_PATH=${WORK}/prefix"
                COMMAND_ERROR_IS_FATAL ANY)
