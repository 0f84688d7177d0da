# A copy of include/ alone (cairn vendored without CMake): no cairn/build_config.hpp, so every optional part is off,
# and a host's own definition of a switch wins. Each case compiles a file of static_asserts against the copy.
#   cmake -DCXX=<compiler> -DSOURCE=<cairn checkout> -DWORK=<scratch dir> -P vendored.cmake
file(REMOVE_RECURSE "${WORK}")
file(COPY "${SOURCE}/include" DESTINATION "${WORK}")
if(EXISTS "${WORK}/include/cairn/build_config.hpp")
  message(FATAL_ERROR "include/ holds cairn/build_config.hpp: it is generated into the build tree, not the source")
endif()

function(expect_compiles name source)
  file(WRITE "${WORK}/${name}.cpp" "${source}")
  execute_process(
    COMMAND "${CXX}" -std=c++17 -fsyntax-only ${ARGN} "-I${WORK}/include" "${WORK}/${name}.cpp"
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "vendored include/, ${name}: does not compile\n${out}${err}")
  endif()
  message(STATUS "vendored include/, ${name}: ok")
endfunction()

expect_compiles(switches_off [=[
#include <cairn/context/schema.hpp>
#include <cairn/artifact/search/vector_index.hpp>
static_assert(CAIRN_WITH_SCHEMA == 0, "a copy of include/ has schema validation off");
static_assert(CAIRN_WITH_HNSWLIB == 0, "a copy of include/ has hnswlib off");
static_assert(!cairn::full_schema_validation, "full_schema_validation follows CAIRN_WITH_SCHEMA");
int main() {}
]=])
expect_compiles(host_definition_wins [=[
#include <cairn/detail/build_config.hpp>
static_assert(CAIRN_WITH_SCHEMA == 1, "the host's -DCAIRN_WITH_SCHEMA=1 wins");
static_assert(CAIRN_WITH_HNSWLIB == 0, "the other switch stays off");
int main() {}
]=] -DCAIRN_WITH_SCHEMA=1)
