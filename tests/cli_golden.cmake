# Pins the tool's outputs on the bundled sample store (issue 16 item 7: a refactor changes no
# output): check (json, md, text), plan, apply with each report format, the repaired store, the
# rollback and the drill are compared byte for byte with tests/data/golden/. The outputs there were
# made by the tool of 666557a (before the record-model rework) and are unchanged since, except the
# plan file, which became JSON Lines (issue 17): plan_v1.json is 666557a's plan, which must still
# apply to the same store.
# The scratch directory's absolute path (the plan records its schema file's) is written as @WORK@.
#
#   cmake -DMEMHEALTH=... -DSOURCE_DIR=... -DWORK=... -P cli_golden.cmake
#   add -DUPDATE=ON to rewrite the golden files after an intended change of output (review the
#   diff: every changed byte is a behaviour change users see).
cmake_minimum_required(VERSION 3.20)
include("${CMAKE_CURRENT_LIST_DIR}/cli_common.cmake")
set(GOLDEN "${SOURCE_DIR}/tests/data/golden")
set(NOW "--now=2024-07-15T00:00:00Z")
file(COPY_FILE "${SOURCE_DIR}/data/sample_store.jsonl" "${WORK}/store.jsonl")
file(COPY_FILE "${SOURCE_DIR}/data/sample_schema.json" "${WORK}/schema.json")

function(run_in expect_codes)
  execute_process(COMMAND ${ARGN} WORKING_DIRECTORY "${WORK}" RESULT_VARIABLE rc
                  OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc IN_LIST expect_codes)
    message(FATAL_ERROR "exit ${rc} (expected ${expect_codes}) from: ${ARGN}\nstdout:\n${out}\nstderr:\n${err}")
  endif()
  set(last_out "${out}" PARENT_SCOPE)
endfunction()

# check: 21 findings, warnings among them (exit 1)
run_in("1" "${MEMHEALTH}" check store.jsonl --format json --schema schema.json ${NOW} --out check.json)
run_in("1" "${MEMHEALTH}" check store.jsonl --format md --schema schema.json ${NOW} --out check.md)
run_in("1" "${MEMHEALTH}" check store.jsonl --schema schema.json ${NOW})
file(WRITE "${WORK}/check.txt" "${last_out}")
run_in("0" "${MEMHEALTH}" plan store.jsonl --out plan.json --schema schema.json ${NOW} --default topic=unknown)
foreach(fmt md json html)
  run_in("0" "${MEMHEALTH}" apply store.jsonl --plan plan.json --wal run-${fmt}.wal
         --out repaired-${fmt}.jsonl --approve tier2 --report report.${fmt} --schema schema.json ${NOW})
endforeach()
# A plan in the 0.1 format (one JSON document, made by the tool of 666557a) still applies, and to
# the same store.
file(READ "${GOLDEN}/plan_v1.json" v1)
string(REPLACE "@WORK@" "${WORK}" v1 "${v1}")
file(WRITE "${WORK}/plan_v1.json" "${v1}")
run_in("0" "${MEMHEALTH}" apply store.jsonl --plan plan_v1.json --wal run-v1.wal
       --out repaired-v1.jsonl --approve tier2 --schema schema.json ${NOW})
run_in("0" "${MEMHEALTH}" rollback repaired-md.jsonl --wal run-md.wal --out restored.jsonl)
# the drill at seed 7: 12 faults injected into a copy (no mixed-version fault: the store's two
# versions, 26 and 25 records, would tie), 11 detected (the paraphrase of real text is not: its
# lexical cosine is under the threshold), false-positive rate net of the baseline 0, no healthy
# record changed
run_in("0" "${MEMHEALTH}" drill store.jsonl --seed 7 ${NOW} --format json)
file(WRITE "${WORK}/drill.json" "${last_out}")

# The three applies ran the same plan on the same store: one repaired store.
foreach(fmt json html v1)
  execute_process(COMMAND "${CMAKE_COMMAND}" -E compare_files "${WORK}/repaired-md.jsonl"
                          "${WORK}/repaired-${fmt}.jsonl" RESULT_VARIABLE differ)
  if(differ)
    message(FATAL_ERROR "apply (${fmt}) wrote another store than the first apply")
  endif()
endforeach()
execute_process(COMMAND "${CMAKE_COMMAND}" -E compare_files "${WORK}/store.jsonl" "${WORK}/restored.jsonl"
                RESULT_VARIABLE differ)
if(differ)
  message(FATAL_ERROR "rollback did not restore the sample store byte for byte")
endif()

set(pinned check.json check.md check.txt plan.json report.md report.json report.html
    repaired.jsonl drill.json)
file(COPY_FILE "${WORK}/repaired-md.jsonl" "${WORK}/repaired.jsonl")
set(failures "")
foreach(name IN LISTS pinned)
  file(READ "${WORK}/${name}" got)
  string(REPLACE "${WORK}" "@WORK@" got "${got}")
  if(UPDATE)
    file(WRITE "${GOLDEN}/${name}" "${got}")
    continue()
  endif()
  if(NOT EXISTS "${GOLDEN}/${name}")
    list(APPEND failures "${name}: no golden file ${GOLDEN}/${name}")
    continue()
  endif()
  file(READ "${GOLDEN}/${name}" want)
  if(NOT got STREQUAL want)
    file(WRITE "${WORK}/${name}.got" "${got}")
    list(APPEND failures "${name}: differs from tests/data/golden/${name} (got: ${WORK}/${name}.got)")
  endif()
endforeach()
if(failures)
  list(JOIN failures "\n  " text)
  message(FATAL_ERROR "outputs on the sample store changed:\n  ${text}\n"
          "If the change is intended, rerun with -DUPDATE=ON and review the diff.")
endif()
list(LENGTH pinned n)
if(UPDATE)
  message(STATUS "wrote ${n} golden files to ${GOLDEN}")
else()
  message(STATUS "${n} outputs byte-identical to tests/data/golden/")
endif()
