# The HTML audit report of a repair run, rendered by headless Chromium, run by ctest:
#   cmake -DMEMHEALTH=<tool> -DSOURCE_DIR=<repo> -DCHROMIUM=<chromium or empty> -DWORK=<dir> -P cli_report_html.cmake
# apply --report run.html on the sample store; Chromium loads the file, runs its inline script
# and prints the DOM; the page must show both charts, one bar group per finding kind, 20
# histogram bins, and the bulk-import root cause. Exits 77 (skipped) without Chromium.
cmake_minimum_required(VERSION 3.25)
include("${CMAKE_CURRENT_LIST_DIR}/cli_common.cmake")
if(NOT CHROMIUM)
  message(STATUS "chromium not found: skipped (scripts/install-deps.sh installs it)")
  cmake_language(EXIT 77)
endif()

set(S "${SOURCE_DIR}/data/sample_store.jsonl")
set(SCHEMA "${SOURCE_DIR}/data/sample_schema.json")
set(NOW 2024-07-15T00:00:00Z)
run("0" "${MEMHEALTH}" plan "${S}" --out "${WORK}/plan.json" --now ${NOW} --schema "${SCHEMA}" --default topic=unknown)
run("0" "${MEMHEALTH}" apply "${S}" --plan "${WORK}/plan.json" --wal "${WORK}/run.wal" --out "${WORK}/new.jsonl"
    --approve tier2 --report "${WORK}/run.html")
run("0" "${MEMHEALTH}" apply "${S}" --plan "${WORK}/plan.json" --wal "${WORK}/run2.wal" --out "${WORK}/new2.jsonl"
    --approve tier2 --report "${WORK}/run.json")
file(READ "${WORK}/run.json" report_json)
string(JSON n_before LENGTH "${report_json}" audit before findings_by_kind)
string(JSON n_after LENGTH "${report_json}" audit after findings_by_kind)

execute_process(COMMAND "${CHROMIUM}" --headless --no-sandbox --disable-gpu --dump-dom "file://${WORK}/run.html"
                RESULT_VARIABLE rc OUTPUT_VARIABLE dom ERROR_VARIABLE err TIMEOUT 120)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "chromium exit ${rc}:\n${err}")
endif()
# the number of kinds in the union of before and after (after's kinds are a subset here: repairs
# add no new kind of problem)
string(REGEX MATCH "rendered charts=([0-9]+) kinds=([0-9]+) bins=([0-9]+)" m "${dom}")
if(NOT m)
  message(FATAL_ERROR "the page's script did not run (no 'rendered ...' line in the DOM)")
endif()
if(NOT CMAKE_MATCH_1 EQUAL 2 OR NOT CMAKE_MATCH_3 EQUAL 20 OR CMAKE_MATCH_2 LESS n_before OR CMAKE_MATCH_2 LESS n_after)
  message(FATAL_ERROR "rendered page: ${m} (expected 2 charts, 20 bins, at least ${n_before} kinds)")
endif()
string(FIND "${dom}" "metadata.ingest_batch = bulk-2024-05" pos)
if(pos EQUAL -1)
  message(FATAL_ERROR "the bulk-import root cause is not on the page")
endif()
message(STATUS "html report: ${m}")
