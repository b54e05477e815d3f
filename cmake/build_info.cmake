# Writes OUT (ww_build_info.h) with the git commit of SRC, run at every build (the target
# ww_build_info), rewriting the file only when the text changes so an unchanged commit rebuilds
# nothing. Outside a git checkout (a release tarball) the commit is "unknown"; "-dirty" marks
# uncommitted changes to tracked files.
# usage: cmake -DSRC=<source dir> -DOUT=<header> -P build_info.cmake
execute_process(COMMAND git -C "${SRC}" rev-parse --short=12 HEAD
                OUTPUT_VARIABLE commit RESULT_VARIABLE rc ERROR_QUIET
                OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT rc EQUAL 0 OR commit STREQUAL "")
  set(commit "unknown")
else()
  execute_process(COMMAND git -C "${SRC}" diff --quiet HEAD -- RESULT_VARIABLE dirty ERROR_QUIET)
  if(dirty EQUAL 1)
    string(APPEND commit "-dirty")
  endif()
endif()
set(text "// Written by cmake/build_info.cmake at build time; not in the source tree.\n#pragma once\n#define WATTWATCH_COMMIT \"${commit}\"\n")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT "${old}" STREQUAL "${text}")
  file(WRITE "${OUT}" "${text}")
endif()
