# cairn_set_warnings(<target>): the project's warning flags, PRIVATE to cairn's own targets so that a consumer never
# inherits them.
function(cairn_set_warnings target)
  if(MSVC)
    target_compile_options(${target} PRIVATE /W4 $<$<BOOL:${CAIRN_WARNINGS_AS_ERRORS}>:/WX>)
  else()
    target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic
                           $<$<BOOL:${CAIRN_WARNINGS_AS_ERRORS}>:-Werror>)
  endif()
endfunction()
