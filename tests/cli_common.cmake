# Shared by the command-line tests (cli_roundtrip.cmake, cli_sqlite.cmake), included after
# cmake_minimum_required: a fresh scratch directory ${WORK} and run(), which runs a command and
# fails the test unless its exit code is one of `expect_codes` (its output goes to last_out /
# last_err).
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")

function(run expect_codes)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc IN_LIST expect_codes)
    message(FATAL_ERROR "exit ${rc} (expected ${expect_codes}) from: ${ARGN}\nstdout:\n${out}\nstderr:\n${err}")
  endif()
  set(last_out "${out}" PARENT_SCOPE)
  set(last_err "${err}" PARENT_SCOPE)
endfunction()
