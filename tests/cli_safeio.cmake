# "Never lose a record": outputs appear complete or not at all, and inputs are what they claim.
#   cmake -DMEMHEALTH=<tool> -DSOURCE_DIR=<repo> -DWORK=<scratch dir> -DHAVE_SQLITE=ON|OFF -P cli_safeio.cmake
# - a killed (SIGKILL) or interrupted (SIGTERM) import leaves no store at the target, the next run
#   reports and removes the stale temporaries and succeeds;
# - a file-size limit (RLIMIT_FSIZE, like a full disk) leaves neither a truncated target nor a
#   temporary behind, and an existing target untouched;
# - outputs are probed first (a directory, a missing directory);
# - importers refuse files of another format and name it; records with an empty id are not
#   written silently; a directory where a file is expected and an SQLite file without sqlite: are
#   errors; an empty store is reported as empty.
cmake_minimum_required(VERSION 3.25)
include("${CMAKE_CURRENT_LIST_DIR}/cli_common.cmake")


# Fails when `dir` holds a memhealth temporary file.
function(expect_no_temporaries dir what)
  file(GLOB left "${dir}/.memhealth-tmp-*")
  if(left)
    message(FATAL_ERROR "${what}: temporary files left behind: ${left}")
  endif()
endfunction()

# a fresh scratch directory: what an earlier (failed) run left must not decide this one
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")

set(S "${SOURCE_DIR}/data/sample_store.jsonl")
set(SCHEMA "${SOURCE_DIR}/data/sample_schema.json")
set(D "${SOURCE_DIR}/tests/data")
set(NOW 2024-07-15T00:00:00Z)
find_program(TIMEOUT timeout)
find_program(PRLIMIT prlimit)
# a pid above pid_max can never be alive: the owner of a "stale" temporary
set(dead_pid 99999999)
if(EXISTS /proc/sys/kernel/pid_max)
  file(READ /proc/sys/kernel/pid_max pid_max)
  string(STRIP "${pid_max}" pid_max)
  math(EXPR dead_pid "${pid_max} + 1")
endif()

# ---------------------------------------------------------------- B: importers check the format
run("2" "${MEMHEALTH}" import mem0 "${D}/locomo/26.json" --out "${WORK}/w1.jsonl")
expect_in("${last_err}" "looks like LoCoMo" "import mem0 of a LoCoMo file")
run("2" "${MEMHEALTH}" import mem0 "${S}" --out "${WORK}/w2.jsonl")
expect_in("${last_err}" "looks like a memhealth JSONL store" "import mem0 of a memhealth store")
run("2" "${MEMHEALTH}" import locomo "${D}/mem0/export_results.json" --out "${WORK}/w3.jsonl")
expect_in("${last_err}" "looks like a mem0 export" "import locomo of a mem0 export")
run("2" "${MEMHEALTH}" import locomo "${S}" --out "${WORK}/w4.jsonl")
expect_in("${last_err}" "looks like a memhealth JSONL store" "import locomo of a memhealth store")
run("2" "${MEMHEALTH}" import prefeval "${D}/mem0/export_array.json" --out "${WORK}/w5.jsonl")
expect_in("${last_err}" "looks like a mem0 export" "import prefeval of a mem0 array")
run("2" "${MEMHEALTH}" import prefeval "${D}/locomo/26.json" --out "${WORK}/w6.jsonl")
expect_in("${last_err}" "looks like LoCoMo" "import prefeval of a LoCoMo file")
foreach(i 1 2 3 4 5 6)
  if(EXISTS "${WORK}/w${i}.jsonl")
    message(FATAL_ERROR "a refused import wrote w${i}.jsonl")
  endif()
endforeach()
expect_no_temporaries("${WORK}" "refused imports")
# a directory is only a source for prefeval
file(MAKE_DIRECTORY "${WORK}/dir")
run("2" "${MEMHEALTH}" import locomo "${WORK}/dir" --out "${WORK}/w7.jsonl")
expect_in("${last_err}" "is a directory" "import locomo of a directory")
# a mem0 entry without an id (export_results.json, results[1]) is written, but never silently: exit 1
run("1" "${MEMHEALTH}" import mem0 "${D}/mem0/export_results.json" --out "${WORK}/noid.jsonl")
expect_in("${last_err}" "written with 1 empty id(s) and 0 empty content(s), first record 2 (no id)" "import of a record without an id")
# the well-formed exports still import cleanly
run("0" "${MEMHEALTH}" import locomo "${D}/locomo/30.json" --out "${WORK}/l30.jsonl")
run("0" "${MEMHEALTH}" stats "${WORK}/l30.jsonl" --format json)
string(JSON n30 GET "${last_out}" records)
if(NOT n30 EQUAL 169)
  message(FATAL_ERROR "import locomo 30.json: ${n30} records, expected 169")
endif()

# ---------------------------------------------------------------- B: a directory where a file is expected
set(EV "${SOURCE_DIR}/data/sample_events.jsonl")
run("2" "${MEMHEALTH}" check "${WORK}/dir")
expect_in("${last_err}" "is a directory" "check DIR")
run("2" "${MEMHEALTH}" stats "${WORK}/dir")
expect_in("${last_err}" "is a directory" "stats DIR")
run("2" "${MEMHEALTH}" monitor "${WORK}/dir" --store "${S}")
expect_in("${last_err}" "is a directory, not a retrieval events file" "monitor DIR")
run("2" "${MEMHEALTH}" monitor "${EV}" --store "${WORK}/dir")
expect_in("${last_err}" "is a directory" "monitor --store DIR")
run("2" "${MEMHEALTH}" tune "${WORK}/dir")
expect_in("${last_err}" "is a directory, not a labelled pairs file" "tune DIR")
run("2" "${MEMHEALTH}" plan "${WORK}/dir" --out "${WORK}/p.json")
expect_in("${last_err}" "is a directory" "plan DIR")
run("2" "${MEMHEALTH}" apply "${S}" --plan "${WORK}/dir" --wal "${WORK}/a.wal" --out "${WORK}/a.jsonl")
expect_in("${last_err}" "is a directory, not a plan file" "apply --plan DIR")
run("2" "${MEMHEALTH}" rollback "${S}" --wal "${WORK}/dir" --out "${WORK}/r.jsonl")
expect_in("${last_err}" "is a directory, not a write-ahead log file" "rollback --wal DIR")
run("2" "${MEMHEALTH}" drift --reference "${WORK}/dir" --current "${S}")
expect_in("${last_err}" "is a directory" "drift DIR")
# ... and where an output is expected: probed before any work
run("2" "${MEMHEALTH}" check "${S}" --out "${WORK}/dir")
expect_in("${last_err}" "--out ${WORK}/dir: is a directory; nothing was written" "check --out DIR")
run("2" "${MEMHEALTH}" plan "${S}" --out "${WORK}/no-such-dir/plan.json")
expect_in("${last_err}" "does not exist; nothing was written" "plan --out in a missing directory")
run("2" "${MEMHEALTH}" rollback "${S}" --wal "${WORK}/none.wal" --out "${WORK}/dir")
expect_in("${last_err}" "is a directory; nothing was written" "rollback --out DIR")

# ---------------------------------------------------------------- B: an empty store is reported as empty
file(WRITE "${WORK}/empty.jsonl" "")
run("1" "${MEMHEALTH}" check "${WORK}/empty.jsonl" --format json --now ${NOW})
expect_in("${last_err}" "is empty (0 records)" "check of an empty store")
string(JSON n_empty GET "${last_out}" summary by_kind store_empty)
string(JSON n_find GET "${last_out}" summary findings)
if(NOT n_empty EQUAL 1 OR NOT n_find EQUAL 1)
  message(FATAL_ERROR "check of an empty store: store_empty ${n_empty}, findings ${n_find} (expected 1, 1)")
endif()
run("0" "${MEMHEALTH}" check "${WORK}/empty.jsonl" --now ${NOW} --exit-zero)
expect_in("${last_out}" "EMPTY STORE" "check text of an empty store")
run("0" "${MEMHEALTH}" stats "${WORK}/empty.jsonl")
expect_in("${last_err}" "is empty (0 records)" "stats of an empty store")

# ---------------------------------------------------------------- A: stale temporaries of a killed run
file(MAKE_DIRECTORY "${WORK}/stale")
file(WRITE "${WORK}/stale/.memhealth-tmp-${dead_pid}-0-report.json" "{\"half\":")
file(WRITE "${WORK}/stale/.memhealth-tmp-1-0-other.json" "")  # pid 1 is alive: left alone
file(WRITE "${WORK}/stale/keep.memhealth-tmp-${dead_pid}-0-x" "")  # not the prefix: not ours
run("1" "${MEMHEALTH}" check "${S}" --now ${NOW} --schema "${SCHEMA}" --format json --out "${WORK}/stale/report.json")
expect_in("${last_err}" "removed ${WORK}/stale/.memhealth-tmp-${dead_pid}-0-report.json, a temporary file left by process ${dead_pid} (no longer running)" "stale temporary")
expect_in("${last_err}" "temporary file of running process 1; left alone" "live temporary")
if(EXISTS "${WORK}/stale/.memhealth-tmp-${dead_pid}-0-report.json" OR NOT EXISTS "${WORK}/stale/.memhealth-tmp-1-0-other.json"
   OR NOT EXISTS "${WORK}/stale/keep.memhealth-tmp-${dead_pid}-0-x" OR NOT EXISTS "${WORK}/stale/report.json")
  message(FATAL_ERROR "stale temporaries: the wrong files were removed or kept")
endif()
file(REMOVE "${WORK}/stale/.memhealth-tmp-1-0-other.json")

# ---------------------------------------------------------------- A: a file-size limit (as a full disk)
if(PRLIMIT)
  file(MAKE_DIRECTORY "${WORK}/full")
  file(WRITE "${WORK}/full/check.json" "previous report\n")
  # the limits hold none of these outputs (stats JSON 670 bytes, plan ~20 KB, report ~30 KB, store ~100 KB)
  run("2" "${PRLIMIT}" --fsize=1024 "${MEMHEALTH}" check "${S}" --now ${NOW} --schema "${SCHEMA}" --format json --out "${WORK}/full/check.json")
  expect_in("${last_err}" "File too large" "check --out over the file-size limit")
  file(READ "${WORK}/full/check.json" kept)
  if(NOT kept STREQUAL "previous report\n")
    message(FATAL_ERROR "check --out over the file-size limit changed the existing report")
  endif()
  run("2" "${PRLIMIT}" --fsize=256 "${MEMHEALTH}" stats "${S}" --format json --out "${WORK}/full/stats.json")
  run("2" "${PRLIMIT}" --fsize=1024 "${MEMHEALTH}" plan "${S}" --now ${NOW} --out "${WORK}/full/plan.json")
  run("2" "${PRLIMIT}" --fsize=1024 "${MEMHEALTH}" import jsonl "${S}" --out "${WORK}/full/s.jsonl")
  if(HAVE_SQLITE)
    run("2" "${PRLIMIT}" --fsize=1024 "${MEMHEALTH}" import jsonl "${S}" --out "sqlite:${WORK}/full/s.db")
  endif()
  foreach(f stats.json plan.json s.jsonl s.db s.db-wal s.db-shm)
    if(EXISTS "${WORK}/full/${f}")
      message(FATAL_ERROR "a write over the file-size limit left ${f}")
    endif()
  endforeach()
  expect_no_temporaries("${WORK}/full" "writes over the file-size limit")
  # with room, the same commands write complete files
  run("0" "${MEMHEALTH}" stats "${S}" --format json --out "${WORK}/full/stats.json")
  run("0" "${MEMHEALTH}" plan "${S}" --now ${NOW} --out "${WORK}/full/plan.json")
  expect_no_temporaries("${WORK}/full" "writes with room")
endif()

# ---------------------------------------------------------------- A: killed and interrupted SQLite imports
if(HAVE_SQLITE AND TIMEOUT)
  # the three LoCoMo conversations with embeddings, 30 times over: 20,310 records, ~45 MB
  run("0" "${MEMHEALTH}" import locomo "${D}/locomo/26.json" "${D}/locomo/30.json" "${D}/locomo/41.json"
      --out "${WORK}/loc.jsonl" --embed lexical --dim 384)
  file(READ "${WORK}/loc.jsonl" loc)
  file(WRITE "${WORK}/big.jsonl" "")
  foreach(i RANGE 1 30)
    file(APPEND "${WORK}/big.jsonl" "${loc}")
  endforeach()
  file(MAKE_DIRECTORY "${WORK}/kill")
  # SIGKILL at several moments: whatever the moment, no database at the target unless complete
  set(killed 0)
  foreach(delay 0.3 0.6 1.0 1.5 2.5)
    execute_process(COMMAND "${TIMEOUT}" --foreground -s KILL ${delay} "${MEMHEALTH}" import jsonl "${WORK}/big.jsonl"
                            --out "sqlite:${WORK}/kill/big.db" RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
    # 137: killed by SIGKILL; 124: timeout's own "timed out" status, which it returns instead
    # when the deadline passes as the command is already exiting (seen under heavy load)
    if(rc EQUAL 137 OR rc EQUAL 124)
      math(EXPR killed "${killed} + 1")
      if(EXISTS "${WORK}/kill/big.db")
        # the kill may land after the database was linked into place, as the process exits: then
        # it must be the whole store, never a part of it
        run("0" "${MEMHEALTH}" stats "sqlite:${WORK}/kill/big.db" --format json)
        string(JSON nkilled GET "${last_out}" records)
        if(NOT nkilled EQUAL 20310)
          message(FATAL_ERROR "import killed after ${delay}s left a partial database at the target: ${nkilled} records")
        endif()
        file(REMOVE "${WORK}/kill/big.db")
      endif()
    elseif(rc EQUAL 0)
      file(REMOVE "${WORK}/kill/big.db")  # finished in time: complete, start again
    else()
      message(FATAL_ERROR "import under timeout -s KILL ${delay}: exit ${rc}")
    endif()
  endforeach()
  if(killed EQUAL 0)  # a machine fast enough to finish every import within its delay: nothing to check here
    message(WARNING "no import was killed before it finished (a fast machine): the kill case was not exercised")
  endif()
  # a simulated litter of a run killed while building its database (a dead pid): reported, removed
  foreach(sfx "" "-wal" "-shm")
    file(WRITE "${WORK}/kill/.memhealth-tmp-${dead_pid}-0-big.db${sfx}" "")
  endforeach()
  run("0" "${MEMHEALTH}" import jsonl "${WORK}/big.jsonl" --out "sqlite:${WORK}/kill/big.db")
  expect_in("${last_err}" "removed ${WORK}/kill/.memhealth-tmp-${dead_pid}-0-big.db-wal" "stale SQLite temporaries")
  expect_no_temporaries("${WORK}/kill" "import after killed runs")
  run("0" "${MEMHEALTH}" stats "sqlite:${WORK}/kill/big.db" --format json)
  string(JSON nbig GET "${last_out}" records)
  if(NOT nbig EQUAL 20310)
    message(FATAL_ERROR "import after killed runs: ${nbig} records, expected 20310")
  endif()
  message(STATUS "killed imports: ${killed} of 5 runs killed before they finished")
  # SIGTERM and SIGINT: the handler removes the live temporaries before the process dies
  file(REMOVE "${WORK}/kill/big.db")
  foreach(sig TERM INT)
    foreach(delay 0.6 1.2)
      execute_process(COMMAND "${TIMEOUT}" --foreground -s ${sig} ${delay} "${MEMHEALTH}" import jsonl "${WORK}/big.jsonl"
                              --out "sqlite:${WORK}/kill/big.db" RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
      if(rc EQUAL 124)
        expect_no_temporaries("${WORK}/kill" "import interrupted by SIG${sig} after ${delay}s")
        if(EXISTS "${WORK}/kill/big.db")
          # timeout says 124 whenever it sent the signal, also when the signal landed after the
          # database was linked into place: then it must be the whole store, never a part of it
          run("0" "${MEMHEALTH}" stats "sqlite:${WORK}/kill/big.db" --format json)
          string(JSON nsig GET "${last_out}" records)
          if(NOT nsig EQUAL 20310)
            message(FATAL_ERROR "import interrupted by SIG${sig} after ${delay}s left a partial database at the target: ${nsig} records")
          endif()
          file(REMOVE "${WORK}/kill/big.db")
        endif()
      elseif(rc EQUAL 0)
        file(REMOVE "${WORK}/kill/big.db")
      else()
        message(FATAL_ERROR "import under timeout -s ${sig} ${delay}: exit ${rc}")
      endif()
    endforeach()
  endforeach()
endif()

# ---------------------------------------------------------------- B: an SQLite file without sqlite:
if(HAVE_SQLITE)
  run("0" "${MEMHEALTH}" import jsonl "${S}" --out "sqlite:${WORK}/s.db")
  expect_no_temporaries("${WORK}" "import to sqlite:")
  foreach(cmd check stats plan)
    if(cmd STREQUAL "plan")
      run("2" "${MEMHEALTH}" plan "${WORK}/s.db" --out "${WORK}/p.json")
    else()
      run("2" "${MEMHEALTH}" ${cmd} "${WORK}/s.db")
    endif()
    expect_in("${last_err}" "is an SQLite database, not a JSONL store; pass it as sqlite:${WORK}/s.db" "${cmd} of an SQLite file")
  endforeach()
  run("2" "${MEMHEALTH}" import jsonl "${WORK}/s.db" --out "${WORK}/s2.jsonl")
  expect_in("${last_err}" "memhealth import sqlite" "import jsonl of an SQLite file")
  run("2" "${MEMHEALTH}" import mem0 "${WORK}/s.db" --out "${WORK}/s3.jsonl")
  expect_in("${last_err}" "looks like an SQLite database" "import mem0 of an SQLite file")
  # an empty SQLite store is empty too
  run("0" "${MEMHEALTH}" import jsonl "${WORK}/empty.jsonl" --out "sqlite:${WORK}/empty.db")
  expect_in("${last_err}" "is empty (0 records)" "import of an empty store")
  run("1" "${MEMHEALTH}" check "sqlite:${WORK}/empty.db" --now ${NOW})
  expect_in("${last_out}" "store_empty: 1" "check of an empty SQLite store")
endif()
