# Shared by the command-line tests (cli_*.cmake), included after cmake_minimum_required: a fresh
# scratch directory ${WORK}; run(), which runs a command and fails the test unless its exit code
# is one of `expect_codes` (its output goes to last_out / last_err); expect_in(); and
# drill_per_kind().
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

# Fails the test unless `needle` occurs in `text`; `what` names the check.
function(expect_in text needle what)
  string(FIND "${text}" "${needle}" pos)
  if(pos EQUAL -1)
    message(FATAL_ERROR "${what}: '${needle}' not found in:\n${text}")
  endif()
endfunction()

# Reads the per-kind results of a drill's JSON (`memhealth drill --format json`): sets
# `summary_var` to " kind=detected/injected ..." and `low_var` to the kinds that were not injected
# or, apart from the two real-text kinds (reported, not gated), were found below 0.95.
function(drill_per_kind drill summary_var low_var)
  string(JSON n LENGTH "${drill}" per_kind)
  math(EXPR last "${n} - 1")
  set(summary "")
  set(low "")
  foreach(i RANGE ${last})
    string(JSON k MEMBER "${drill}" per_kind ${i})
    string(JSON kc GET "${drill}" per_kind "${k}" coverage)
    string(JSON ki GET "${drill}" per_kind "${k}" injected)
    string(JSON kd GET "${drill}" per_kind "${k}" detected)
    string(APPEND summary " ${k}=${kd}/${ki}")
    if(ki EQUAL 0 OR (kc LESS 0.95 AND NOT k MATCHES "^(paraphrased_duplicate|free_text_conflict)$"))
      string(APPEND low " ${k}")
    endif()
  endforeach()
  set(${summary_var} "${summary}" PARENT_SCOPE)
  set(${low_var} "${low}" PARENT_SCOPE)
endfunction()
