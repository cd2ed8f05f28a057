# Runs one compile check (cmake -P): compiles SOURCE with COMPILER in syntax-only mode and checks
# the outcome. Used by tests/compile_fail/CMakeLists.txt.
#   -DCOMPILER=<c++ compiler>  -DSOURCE=<file.cpp>
#   -DFLAGS=<flags separated by |>
#   -DEXPECT=<text>  the compile must FAIL and its diagnostics must contain <text> (literally);
#                    empty or unset: the compile must SUCCEED (positive control).
foreach(_var COMPILER SOURCE)
  if(NOT DEFINED ${_var})
    message(FATAL_ERROR "memhealth_compile_check: -D${_var}=... is required")
  endif()
endforeach()
string(REPLACE "|" ";" _flags "${FLAGS}")
execute_process(
  COMMAND "${COMPILER}" ${_flags} -fsyntax-only "${SOURCE}"
  RESULT_VARIABLE _rc
  OUTPUT_VARIABLE _out
  ERROR_VARIABLE _out)

if("${EXPECT}" STREQUAL "")
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "positive control ${SOURCE} failed to compile (exit ${_rc}):\n${_out}")
  endif()
  message(STATUS "compiles, as expected: ${SOURCE}")
  return()
endif()

if(_rc EQUAL 0)
  message(FATAL_ERROR "${SOURCE} compiled, but must fail with:\n  ${EXPECT}\n${_out}")
endif()
string(FIND "${_out}" "${EXPECT}" _at)
if(_at EQUAL -1)
  message(FATAL_ERROR
    "${SOURCE} failed to compile, but without the expected message:\n  ${EXPECT}\n"
    "compiler output:\n${_out}")
endif()
message(STATUS "fails to compile with the expected message: ${EXPECT}")
