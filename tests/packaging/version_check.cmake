# cairn_suits_32_bit(<cairnConfigVersion.cmake> <out>): runs the version file the way find_package(cairn 0.1) from a
# 32-bit project would, and sets <out> to whether it accepts. This machine is 64-bit: an ARCH_INDEPENDENT version
# file (right for the header-only core) accepts, one guarding installed static libraries refuses.
function(cairn_suits_32_bit version_file out)
  set(PACKAGE_FIND_NAME cairn)
  set(PACKAGE_FIND_VERSION 0.1)
  set(PACKAGE_FIND_VERSION_MAJOR 0)
  set(PACKAGE_FIND_VERSION_MINOR 1)
  set(PACKAGE_FIND_VERSION_PATCH 0)
  set(PACKAGE_FIND_VERSION_COUNT 2)
  set(CMAKE_SIZEOF_VOID_P 4)
  set(PACKAGE_VERSION_UNSUITABLE FALSE)
  include("${version_file}")
  if(PACKAGE_VERSION_UNSUITABLE)
    set(${out} FALSE PARENT_SCOPE)
  else()
    set(${out} TRUE PARENT_SCOPE)
  endif()
endfunction()
