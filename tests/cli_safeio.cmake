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

# ---------------------------------------------------------------- A2: an output never replaces an input
# (found by a tester: `index build S --index flat:S`, `plan S --out S` and `apply --report S`
# replaced the store; a missing --events-after was found only after the repair was written)
file(COPY_FILE "${S}" "${WORK}/keep.jsonl")
file(SHA256 "${WORK}/keep.jsonl" keep_sum)
run("2" "${MEMHEALTH}" index build "${WORK}/keep.jsonl" --index "flat:${WORK}/keep.jsonl")
expect_in("${last_err}" "is the store read" "index build over its store")
run("2" "${MEMHEALTH}" plan "${WORK}/keep.jsonl" --out "${WORK}/keep.jsonl" --now ${NOW})
expect_in("${last_err}" "is the store read" "plan --out over its store")
file(WRITE "${WORK}/notes.txt" "not an index\n")
run("2" "${MEMHEALTH}" index build "${WORK}/keep.jsonl" --index "flat:${WORK}/notes.txt")
expect_in("${last_err}" "exists and is not a flat index; nothing was written" "index build over another file")
file(READ "${WORK}/notes.txt" notes)
if(NOT notes STREQUAL "not an index\n")
  message(FATAL_ERROR "index build replaced a file that is not a flat index")
endif()
run("0" "${MEMHEALTH}" plan "${WORK}/keep.jsonl" --out "${WORK}/keep-plan.json" --now ${NOW})
run("2" "${MEMHEALTH}" apply "${WORK}/keep.jsonl" --plan "${WORK}/keep-plan.json" --wal "${WORK}/keep.wal"
    --out "${WORK}/keep-out.jsonl" --report "${WORK}/keep.jsonl" --now ${NOW})
expect_in("${last_err}" "is the store read" "apply --report over its store")
run("2" "${MEMHEALTH}" apply "${WORK}/keep.jsonl" --plan "${WORK}/keep-plan.json" --wal "${WORK}/keep.wal"
    --out "${WORK}/keep-out.jsonl" --events-after "${WORK}/no-such-events.jsonl" --now ${NOW})
expect_in("${last_err}" "--events-after ${WORK}/no-such-events.jsonl: cannot open" "apply with a missing --events-after")
foreach(f keep-out.jsonl keep.wal)
  if(EXISTS "${WORK}/${f}")
    message(FATAL_ERROR "a refused apply wrote ${f}")
  endif()
endforeach()
file(SHA256 "${WORK}/keep.jsonl" keep_after)
if(NOT keep_after STREQUAL keep_sum)
  message(FATAL_ERROR "a refused command changed the store")
endif()
# durations and counts that do not fit are refused, not wrapped
if(HAVE_SQLITE)
  run("2" "${MEMHEALTH}" history "${WORK}/keep.jsonl" --state "${WORK}/none.db" --recur-for 999999999999d)
  expect_in("${last_err}" "--recur-for" "history with a --recur-for that does not fit")
  run("2" "${MEMHEALTH}" history "${WORK}/keep.jsonl" --state "${WORK}/none.db" --recur-runs -1)
  expect_in("${last_err}" "--recur-runs" "history with a negative --recur-runs")
endif()

# ---------------------------------------------------------------- A3: no output over any input
# (found by a tester: read-only commands given --out naming their own input replaced it with the
# report: check, stats, drill, claims, monitor, an SQLite store; apply --out over the plan or the
# events, plan --out over the events). Each refusal exits 2 before any work, names both files,
# and leaves the input byte for byte as it was.
set(O "${WORK}/own.jsonl")
set(OE "${WORK}/own-events.jsonl")
file(COPY_FILE "${S}" "${O}")
file(COPY_FILE "${SOURCE_DIR}/data/sample_events.jsonl" "${OE}")
file(SHA256 "${O}" own_sum)
file(SHA256 "${OE}" own_events_sum)
# Fails unless `path` still hashes to `sum` (byte for byte what it was).
function(expect_unchanged path sum what)
  file(SHA256 "${path}" now)
  if(NOT now STREQUAL sum)
    message(FATAL_ERROR "${what} changed ${path}")
  endif()
endfunction()
# Runs a command that must be refused (exit 2) for writing `out` over the input named by `read`
# (a phrase of the message); `path`/`sum` is the input that must be unchanged.
function(expect_refused what out read path sum)
  run("2" ${ARGN})
  expect_in("${last_err}" "${out}: is ${read}" "${what}")
  expect_in("${last_err}" "nothing was written" "${what}")
  expect_unchanged("${path}" "${sum}" "${what}")
endfunction()
set(store_read "the store read (")
expect_refused("check --out over its store" "--out ${O}" "${store_read}${O})" "${O}" "${own_sum}"
               "${MEMHEALTH}" check "${O}" --out "${O}")
expect_refused("stats --out over its store" "--out ${O}" "${store_read}${O})" "${O}" "${own_sum}"
               "${MEMHEALTH}" stats "${O}" --out "${O}")
expect_refused("drill --out over its store" "--out ${O}" "${store_read}${O})" "${O}" "${own_sum}"
               "${MEMHEALTH}" drill "${O}" --now ${NOW} --out "${O}")
expect_refused("claims --out over its store" "--out ${O}" "${store_read}${O})" "${O}" "${own_sum}"
               "${MEMHEALTH}" claims "${O}" --out "${O}")
expect_refused("monitor --out over its --store" "--out ${O}" "the --store file (${O})" "${O}" "${own_sum}"
               "${MEMHEALTH}" monitor "${OE}" --store "${O}" --out "${O}")
expect_refused("monitor --out over its events" "--out ${OE}" "the events file (${OE})" "${OE}"
               "${own_events_sum}" "${MEMHEALTH}" monitor "${OE}" --store "${O}" --out "${OE}")
expect_refused("drift --out over --current" "--out ${O}" "the --current file (${O})" "${O}" "${own_sum}"
               "${MEMHEALTH}" drift --reference "${S}" --current "${O}" --out "${O}")
expect_refused("gate --out over --new" "--out ${O}" "the --new file (${O})" "${O}" "${own_sum}"
               "${MEMHEALTH}" gate --old "${S}" --new "${O}" --out "${O}")
expect_refused("tune --out over its pairs" "--out ${O}" "the pairs file (${O})" "${O}" "${own_sum}"
               "${MEMHEALTH}" tune "${O}" --out "${O}")
expect_refused("import --out over its source" "--out ${O}" "the source file (${O})" "${O}" "${own_sum}"
               "${MEMHEALTH}" import jsonl "${O}" --out "${O}")
# a hard link and a symbolic link to the store are the store
file(CREATE_LINK "${O}" "${WORK}/own-hard.jsonl")
file(CREATE_LINK "${O}" "${WORK}/own-sym.jsonl" SYMBOLIC)
expect_refused("stats --out over a hard link to its store" "--out ${WORK}/own-hard.jsonl"
               "${store_read}${O})" "${O}" "${own_sum}"
               "${MEMHEALTH}" stats "${O}" --out "${WORK}/own-hard.jsonl")
expect_refused("check --out over a symbolic link to its store" "--out ${WORK}/own-sym.jsonl"
               "${store_read}${O})" "${O}" "${own_sum}"
               "${MEMHEALTH}" check "${O}" --out "${WORK}/own-sym.jsonl")
# plan and apply: the plan, the events, the WAL are inputs too
run("0" "${MEMHEALTH}" plan "${O}" --out "${WORK}/own-plan.json" --now ${NOW})
file(SHA256 "${WORK}/own-plan.json" own_plan_sum)
expect_refused("plan --out over its --events" "--out ${OE}" "the --events file (${OE})" "${OE}"
               "${own_events_sum}" "${MEMHEALTH}" plan "${O}" --out "${OE}" --events "${OE}" --now ${NOW})
expect_refused("apply --out over its --plan" "--out ${WORK}/own-plan.json"
               "the --plan file (${WORK}/own-plan.json)" "${WORK}/own-plan.json" "${own_plan_sum}"
               "${MEMHEALTH}" apply "${O}" --plan "${WORK}/own-plan.json" --wal "${WORK}/own.wal"
               --out "${WORK}/own-plan.json" --now ${NOW})
expect_refused("apply --out over its --events" "--out ${OE}" "the --events file (${OE})" "${OE}"
               "${own_events_sum}" "${MEMHEALTH}" apply "${O}" --plan "${WORK}/own-plan.json"
               --wal "${WORK}/own.wal" --out "${OE}" --events "${OE}" --now ${NOW})
expect_refused("apply --report over its --plan" "--report ${WORK}/own-plan.json"
               "the --plan file (${WORK}/own-plan.json)" "${WORK}/own-plan.json" "${own_plan_sum}"
               "${MEMHEALTH}" apply "${O}" --plan "${WORK}/own-plan.json" --wal "${WORK}/own.wal"
               --out "${WORK}/own-out.jsonl" --report "${WORK}/own-plan.json" --now ${NOW})
foreach(f own.wal own-out.jsonl)
  if(EXISTS "${WORK}/${f}")
    message(FATAL_ERROR "a refused apply wrote ${f}")
  endif()
endforeach()
file(WRITE "${WORK}/own-log.wal" "not a log\n")
file(SHA256 "${WORK}/own-log.wal" own_log_sum)
expect_refused("rollback --out over its --wal" "--out ${WORK}/own-log.wal"
               "the --wal file (${WORK}/own-log.wal)" "${WORK}/own-log.wal" "${own_log_sum}"
               "${MEMHEALTH}" rollback "${O}" --wal "${WORK}/own-log.wal" --out "${WORK}/own-log.wal")
expect_refused("recover --out over its --wal" "--out ${WORK}/own-log.wal"
               "the --wal file (${WORK}/own-log.wal)" "${WORK}/own-log.wal" "${own_log_sum}"
               "${MEMHEALTH}" recover "${O}" --wal "${WORK}/own-log.wal" --out "${WORK}/own-log.wal")
if(HAVE_SQLITE)
  run("0" "${MEMHEALTH}" import jsonl "${S}" --out "sqlite:${WORK}/own.db")
  file(SHA256 "${WORK}/own.db" own_db_sum)
  expect_refused("check --out over its SQLite store" "--out ${WORK}/own.db"
                 "${store_read}sqlite:${WORK}/own.db)" "${WORK}/own.db" "${own_db_sum}"
                 "${MEMHEALTH}" check "sqlite:${WORK}/own.db" --out "${WORK}/own.db")
  expect_refused("stats --out over its SQLite store" "--out ${WORK}/own.db"
                 "${store_read}sqlite:${WORK}/own.db)" "${WORK}/own.db" "${own_db_sum}"
                 "${MEMHEALTH}" stats "sqlite:${WORK}/own.db" --out "${WORK}/own.db")
  execute_process(COMMAND "${MEMHEALTH}" watch --help RESULT_VARIABLE watch_rc OUTPUT_QUIET ERROR_QUIET)
  if(TIMEOUT AND watch_rc EQUAL 0)  # watch is built only with its dependencies
    expect_refused("watch --findings-log over its store" "findings log ${WORK}/own.db"
                   "${store_read}sqlite:${WORK}/own.db)" "${WORK}/own.db" "${own_db_sum}"
                   "${TIMEOUT}" 60 "${MEMHEALTH}" watch "sqlite:${WORK}/own.db"
                   --findings-log "${WORK}/own.db")
  endif()
endif()
# the same commands with an output of their own still work
run("0" "${MEMHEALTH}" stats "${O}" --out "${WORK}/own-stats.txt")
expect_unchanged("${O}" "${own_sum}" "stats to another file")

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

# ---------------------------------------------------------------- A3: a plan applies to the store it was made for
# (found by a tester: a plan with index actions applied to another store, or to an emptied one,
# emptied the flat index: nothing checked the store, and index actions had blast radius 0)
# Store: k1 (0.6,0,0.8), k2 (0,1,0), k3 (0.8,0,-0.6), k5 (0,0.6,0.8) active; k4 (0.6,0.8,0)
# archived; model m1. Events of user:1: i 0-2 serve [k1, gone] (gone: no record), i 3-4 [k1, k4]
# (archived), then [k1, k2]; from 10:00 ten retrievals of 2000 ms (a latency regression). The
# plan: clean_index of gone and k4 (2 index entries), check_rebuild_index.
set(fp_tail "\"embedding_version\":\"m1\",\"created_at\":\"2024-07-14T00:00:00Z\",\"updated_at\":\"2024-07-14T00:00:00Z\",\"source\":\"user_declared\",\"kind\":\"fact\",\"scope\":\"user:1\"")
string(CONCAT fp_store
  "{\"id\":\"k1\",\"content\":\"Alice drinks green tea every morning.\",\"embedding\":[0.6,0,0.8],\"status\":\"active\",${fp_tail}}\n"
  "{\"id\":\"k2\",\"content\":\"Bob rides his bike to the office.\",\"embedding\":[0,1,0],\"status\":\"active\",${fp_tail}}\n"
  "{\"id\":\"k3\",\"content\":\"Carol reads crime novels on weekends.\",\"embedding\":[0.8,0,-0.6],\"status\":\"active\",${fp_tail}}\n"
  "{\"id\":\"k4\",\"content\":\"Dave sold his sailing boat.\",\"embedding\":[0.6,0.8,0],\"status\":\"archived\",${fp_tail}}\n"
  "{\"id\":\"k5\",\"content\":\"Erin plays chess at the club.\",\"embedding\":[0,0.6,0.8],\"status\":\"active\",${fp_tail}}\n")
set(FS "${WORK}/fp-store.jsonl")
file(WRITE "${FS}" "${fp_store}")
set(FE "${WORK}/fp-events.jsonl")
set(fe_text "")
foreach(i RANGE 0 21)
  math(EXPR mm "${i} + 10")
  if(i LESS 12)
    set(t "2024-07-14T09:${mm}:00Z")
    set(lat 10)
  else()
    set(t "2024-07-14T10:${mm}:00Z")
    set(lat 2000)
  endif()
  set(second k2)
  if(i LESS 3)
    set(second gone)
  elseif(i LESS 5)
    set(second k4)
  endif()
  string(APPEND fe_text "{\"type\":\"retrieval\",\"time\":\"${t}\",\"partition\":\"user:1\",\"requested_scopes\":[\"user:1\"],\"query_embedding_version\":\"m1\",\"latency_ms\":${lat},\"results\":[{\"id\":\"k1\",\"similarity\":0.9,\"rank\":1},{\"id\":\"${second}\",\"similarity\":0.5,\"rank\":2}]}\n")
endforeach()
file(WRITE "${FE}" "${fe_text}")
# the index: k1 k2 k3 and the two ghosts (k5 is missing from it)
set(FIX "${WORK}/fp-index.jsonl")
file(WRITE "${FIX}"
  "{\"memhealth_flat_index\":1,\"dimension\":3,\"embedding_version\":\"m1\"}\n"
  "{\"id\":\"gone\",\"vector\":[0,1,0]}\n"
  "{\"id\":\"k1\",\"vector\":[0.6,0,0.8]}\n"
  "{\"id\":\"k2\",\"vector\":[0,1,0]}\n"
  "{\"id\":\"k3\",\"vector\":[0.8,0,-0.6]}\n"
  "{\"id\":\"k4\",\"vector\":[0.6,0.8,0]}\n")
file(SHA256 "${FIX}" fix_sum)
# Fails unless the index file is byte for byte what it was.
function(expect_index_untouched what)
  file(SHA256 "${FIX}" now_sum)
  if(NOT now_sum STREQUAL fix_sum)
    file(READ "${FIX}" now_text)
    message(FATAL_ERROR "${what} changed the index:\n${now_text}")
  endif()
endfunction()
run("0" "${MEMHEALTH}" plan "${FS}" --out "${WORK}/fp-plan.json" --now ${NOW} --events "${FE}")
expect_in("${last_err}" "blast radius 0 records and 2 index entries" "plan: the clean-up's blast radius")
file(READ "${WORK}/fp-plan.json" fp_plan)
expect_in("${fp_plan}" "\"blast_radius_threshold\":500,\"store\":{\"id_sample\":[" "plan: the store fingerprint")
expect_in("${fp_plan}" "\"ids\":5,\"ids_crc64\":\"" "plan: 5 distinct ids")
expect_in("${fp_plan}" "\"live\":4,\"records\":5}" "plan: 4 live of 5 records")
# another store (other ids, same shape): refused before anything is written
string(REPLACE "\"id\":\"k" "\"id\":\"b" fp_other "${fp_store}")
file(WRITE "${WORK}/fp-other.jsonl" "${fp_other}")
run("2" "${MEMHEALTH}" apply "${WORK}/fp-other.jsonl" --plan "${WORK}/fp-plan.json" --wal "${WORK}/fp-other.wal"
    --out "${WORK}/fp-other-out.jsonl" --index "flat:${FIX}" --max-runs-per-day 100)
expect_in("${last_err}" "was made for another store: most record ids differ: 0% of the plan's sampled record ids are in it and 100% of its ids" "apply to another store")
expect_in("${last_err}" "nothing was written" "apply to another store")
foreach(f fp-other.wal fp-other-out.jsonl)
  if(EXISTS "${WORK}/${f}")
    message(FATAL_ERROR "apply of a plan made for another store wrote ${f}")
  endif()
endforeach()
expect_index_untouched("apply to another store")
# the store emptied since the plan: the index actions are refused (manual queue, exit 3)
file(WRITE "${WORK}/fp-empty.jsonl" "")
run("3" "${MEMHEALTH}" apply "${WORK}/fp-empty.jsonl" --plan "${WORK}/fp-plan.json" --wal "${WORK}/fp-empty.wal"
    --out "${WORK}/fp-empty-out.jsonl" --index "flat:${FIX}" --max-runs-per-day 100)
expect_in("${last_err}" "the store has no live record" "apply to an emptied store")
expect_in("${last_err}" "the plan's 2 index actions are refused" "apply to an emptied store")
expect_index_untouched("apply to an emptied store")
# cut to k1 alone: 1 of the plan's 5 ids kept, nothing new: refused the same way
file(STRINGS "${FS}" fp_lines)
list(GET fp_lines 0 fp_k1)
file(WRITE "${WORK}/fp-cut.jsonl" "${fp_k1}\n")
run("3" "${MEMHEALTH}" apply "${WORK}/fp-cut.jsonl" --plan "${WORK}/fp-plan.json" --wal "${WORK}/fp-cut.wal"
    --out "${WORK}/fp-cut-out.jsonl" --index "flat:${FIX}" --max-runs-per-day 100 --report "${WORK}/fp-cut.json")
expect_in("${last_err}" "the store lost most of its records since the plan (20% of the plan's sampled record ids are in it" "apply to a cut store")
file(READ "${WORK}/fp-cut.json" fp_cut)
expect_in("${fp_cut}" "index actions refused: the store lost most of its records" "the refused actions' reason")
expect_index_untouched("apply to a cut store")
# a clean-up over the blast-radius threshold: the plan is suspended, nothing runs (exit 4)
run("0" "${MEMHEALTH}" plan "${FS}" --out "${WORK}/fp-susp.json" --now ${NOW} --events "${FE}" --blast-radius 1)
expect_in("${last_err}" "SUSPENDED: blast radius 0 records in 0 scopes and 2 index entries exceeds the threshold of 1" "plan: index entries suspend")
run("4" "${MEMHEALTH}" apply "${FS}" --plan "${WORK}/fp-susp.json" --wal "${WORK}/fp-susp.wal"
    --out "${WORK}/fp-susp-out.jsonl" --index "flat:${FIX}" --max-runs-per-day 100)
expect_in("${last_err}" "the plan is suspended" "apply of a suspended clean-up")
expect_index_untouched("apply of a suspended clean-up")
# under the threshold at plan time (2 entries, threshold 3), but at apply time the index holds 4
# more ids without a record: the rebuild would remove them, more than 3, so it is held (the
# clean-up of the plan's 2 runs); --approve suspended runs it
file(COPY_FILE "${FIX}" "${WORK}/fp-index-held.jsonl")
file(APPEND "${WORK}/fp-index-held.jsonl" "{\"id\":\"x1\",\"vector\":[0,1,0]}\n{\"id\":\"x2\",\"vector\":[0,1,0]}\n"
     "{\"id\":\"x3\",\"vector\":[0,1,0]}\n{\"id\":\"x4\",\"vector\":[0,1,0]}\n")
run("0" "${MEMHEALTH}" plan "${FS}" --out "${WORK}/fp-held.json" --now ${NOW} --events "${FE}" --blast-radius 3)
run("0" "${MEMHEALTH}" apply "${FS}" --plan "${WORK}/fp-held.json" --wal "${WORK}/fp-held.wal"
    --out "${WORK}/fp-held-out.jsonl" --index "flat:${WORK}/fp-index-held.jsonl" --max-runs-per-day 100)
expect_in("${last_err}" "held for review: it would rebuild the index, removing or rewriting 4 of its 7 entries (4 index entries, more than the blast-radius threshold of 3)" "a rebuild over the threshold")
file(STRINGS "${WORK}/fp-index-held.jsonl" held_lines)
list(LENGTH held_lines held_n)
if(NOT held_n EQUAL 8)  # the header, k1 k2 k3 and x1..x4: the clean-up ran, the rebuild did not
  message(FATAL_ERROR "held rebuild: the index has ${held_n} lines (expected 8)")
endif()
run("0" "${MEMHEALTH}" apply "${FS}" --plan "${WORK}/fp-held.json" --wal "${WORK}/fp-held2.wal"
    --out "${WORK}/fp-held-out.jsonl" --index "flat:${WORK}/fp-index-held.jsonl" --max-runs-per-day 100
    --approve suspended)
run("0" "${MEMHEALTH}" index check "${FS}" --index "flat:${WORK}/fp-index-held.jsonl")
# an older plan (no fingerprint) still applies, with a warning; here to the store it came from
string(REGEX REPLACE ",\"blast_radius_threshold\":500,\"store\":{[^}]*}" "" fp_old "${fp_plan}")
file(WRITE "${WORK}/fp-old-plan.json" "${fp_old}")
file(COPY_FILE "${FIX}" "${WORK}/fp-index-old.jsonl")
run("0" "${MEMHEALTH}" apply "${FS}" --plan "${WORK}/fp-old-plan.json" --wal "${WORK}/fp-old.wal"
    --out "${WORK}/fp-old-out.jsonl" --index "flat:${WORK}/fp-index-old.jsonl" --max-runs-per-day 100)
expect_in("${last_err}" "records no store fingerprint (made by an older memhealth)" "apply of an older plan")
# a small edit since the plan (a record added): it applies; the ghosts go, the rebuild adds k5, k6
file(WRITE "${WORK}/fp-edited.jsonl" "${fp_store}"
  "{\"id\":\"k6\",\"content\":\"Frank walks his dog at noon.\",\"embedding\":[0,-1,0],\"status\":\"active\",${fp_tail}}\n")
# (and the HTML audit report shows the retrieval figures before and after, as Markdown and JSON do)
string(REPLACE "\"id\":\"gone\"" "\"id\":\"k2\"" fe_after "${fe_text}")
string(REPLACE "\"id\":\"k4\"" "\"id\":\"k3\"" fe_after "${fe_after}")
file(WRITE "${WORK}/fp-events-after.jsonl" "${fe_after}")
run("0" "${MEMHEALTH}" apply "${WORK}/fp-edited.jsonl" --plan "${WORK}/fp-plan.json" --wal "${WORK}/fp-edit.wal"
    --out "${WORK}/fp-edit-out.jsonl" --index "flat:${FIX}" --max-runs-per-day 100
    --events-after "${WORK}/fp-events-after.jsonl" --report "${WORK}/fp-edit.html")
expect_in("${last_err}" "the store changed since the plan (100% of the plan's sampled record ids are in it" "apply after a small edit")
file(READ "${WORK}/fp-edit.html" fp_html)
expect_in("${fp_html}" "<h2>Retrieval</h2>" "HTML report: retrieval section")
expect_in("${fp_html}" "<tr data-when=\"before\" data-ghost-results=\"5\" data-p95-latency-ms=\"" "HTML report: retrieval before")
expect_in("${fp_html}" "<tr data-when=\"after\" data-ghost-results=\"0\" data-p95-latency-ms=\"" "HTML report: retrieval after")
file(STRINGS "${FIX}" fix_lines)
list(LENGTH fix_lines fix_n)
file(READ "${FIX}" fix_text)
if(NOT fix_n EQUAL 6 OR fix_text MATCHES "\"(gone|k4)\"")
  message(FATAL_ERROR "after the edit's apply the index should hold k1 k2 k3 k5 k6:\n${fix_text}")
endif()
run("0" "${MEMHEALTH}" index check "${WORK}/fp-edit-out.jsonl" --index "flat:${FIX}")

# ---------------------------------------------------------------- B2: partial and foreign inputs say so
# (found by a tester) plan, apply and index build of an empty store exit 1, as check does
run("1" "${MEMHEALTH}" plan "${WORK}/empty.jsonl" --out "${WORK}/empty-plan.json" --now ${NOW})
expect_in("${last_err}" "is empty (0 records)" "plan of an empty store")
run("1" "${MEMHEALTH}" apply "${WORK}/empty.jsonl" --plan "${WORK}/empty-plan.json" --wal "${WORK}/empty.wal"
    --out "${WORK}/empty-out.jsonl" --now ${NOW} --max-runs-per-day 100)
expect_in("${last_err}" "is empty (0 records)" "apply to an empty store")
run("1" "${MEMHEALTH}" index build "${WORK}/empty.jsonl" --index "flat:${WORK}/empty-index.jsonl")
expect_in("${last_err}" "is empty (0 records)" "index build of an empty store")
# ... and an index build from it never empties an index that has entries
file(SHA256 "${FIX}" fix_sum)
run("2" "${MEMHEALTH}" index build "${WORK}/empty.jsonl" --index "flat:${FIX}")
expect_in("${last_err}" "holds 5 entries and ${WORK}/empty.jsonl has no live record with a usable vector: the build would empty the index; nothing was written" "index build of an empty store over an index")
expect_index_untouched("index build of an empty store")
# index build / check write no store: a damaged line is refused for their own reason
file(WRITE "${WORK}/fp-damaged.jsonl" "${fp_store}" "{not json\n")
run("2" "${MEMHEALTH}" index build "${WORK}/fp-damaged.jsonl" --index "flat:${WORK}/fp-damaged-index.jsonl")
expect_in("${last_err}" "line 6 could not be parsed: an index built without its record would not serve it" "index build of a damaged store")
if(last_err MATCHES "written back")
  message(FATAL_ERROR "index build speaks of writing the store back:\n${last_err}")
endif()
if(last_err MATCHES "line skipped \\(line skipped\\)")
  message(FATAL_ERROR "a skipped line is told twice:\n${last_err}")
endif()
run("2" "${MEMHEALTH}" index check "${WORK}/fp-damaged.jsonl" --index "flat:${FIX}")
expect_in("${last_err}" "line 6 could not be parsed: the index cannot be checked against a record that cannot be read" "index check of a damaged store")
# plan --events: a file of another kind (a store) is an error; skipped event lines exit 1
run("2" "${MEMHEALTH}" plan "${FS}" --out "${WORK}/fp-ev-store.json" --now ${NOW} --events "${FS}")
expect_in("${last_err}" "none of its 5 lines is a retrieval or feedback event" "plan --events STORE")
if(EXISTS "${WORK}/fp-ev-store.json")
  message(FATAL_ERROR "plan --events of a store wrote a plan")
endif()
file(WRITE "${WORK}/fp-ev-bad.jsonl" "${fe_text}" "{\"type\":\"retrieval\"}\n")
run("1" "${MEMHEALTH}" plan "${FS}" --out "${WORK}/fp-ev-bad.json" --now ${NOW} --events "${WORK}/fp-ev-bad.jsonl")
expect_in("${last_err}" "1 of 23 lines are not events and were skipped" "plan --events with a bad line")
expect_in("${last_err}" "1 lines of the events were skipped (see above); exit 1" "plan --events with a bad line")
# a subcommand that does not exist is named
run("2" "${MEMHEALTH}" index frob)
expect_in("${last_err}" "memhealth index: unknown subcommand 'frob'; expected one of: build, check" "index frob")
if(HAVE_SQLITE)
  run("2" "${MEMHEALTH}" history "${FS}" --state "${WORK}")
  expect_in("${last_err}" "is a directory, not a state database file" "history --state DIR")
endif()

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

# ---------------------------------------------------------------- A4: records changed since the plan
# The tester's case: two records' texts changed between plan and apply. The actions that decided
# on them (the cilantro conflict, the berlin duplicates) are skipped as stale, not run on the new
# texts; the other actions run; exit 3 (partial work).
run("0" "${MEMHEALTH}" plan "${S}" --now ${NOW} --out "${WORK}/st-plan.json")
file(READ "${WORK}/st-plan.json" st_plan)
expect_in("${st_plan}" "\"seen\":{\"mem-1000\":\"" "plan: the records an action decided on")
file(READ "${S}" st_text)
string(REPLACE "\"content\":\"Alice never eats cilantro.\"" "\"content\":\"Alice adopted a dog named Rex.\"" st_text "${st_text}")
string(REPLACE "\"content\":\"alice lives in berlin\"" "\"content\":\"alice works at ACME corp\"" st_text "${st_text}")
file(WRITE "${WORK}/st-z.jsonl" "${st_text}")
run("3" "${MEMHEALTH}" apply "${WORK}/st-z.jsonl" --plan "${WORK}/st-plan.json" --wal "${WORK}/st-z.wal"
    --out "${WORK}/st-new.jsonl" --approve tier2 --now ${NOW} --max-runs-per-day 100
    --report "${WORK}/st-report.json")
expect_in("${last_err}" "stale: 2 actions skipped because their records changed since the plan (make a new plan)" "apply of a stale plan")
expect_in("${last_err}" "memhealth apply: 9 applied, 3 awaiting approval, 2 deferred, 0 failed" "apply of a stale plan")
file(READ "${WORK}/st-report.json" st_report)
expect_in("${st_report}" "\"stale\": 2" "apply report: the stale count")
expect_in("${st_report}" "stale: its records changed since the plan (mem-1000" "apply report: the cilantro conflict's reason")
# the two edited records are in the output exactly as the writer left them
file(STRINGS "${WORK}/st-z.jsonl" st_in REGEX "\"id\":\"mem-100[03]\"")
file(STRINGS "${WORK}/st-new.jsonl" st_out REGEX "\"id\":\"mem-100[03]\"")
list(LENGTH st_out st_n)
if(NOT st_n EQUAL 2 OR NOT st_in STREQUAL st_out)
  message(FATAL_ERROR "stale apply changed an edited record:\n${st_in}\n->\n${st_out}")
endif()
# the same plan on the store it was made from: every action runs, exit 0
run("0" "${MEMHEALTH}" apply "${S}" --plan "${WORK}/st-plan.json" --wal "${WORK}/st-s.wal"
    --out "${WORK}/st-s.jsonl" --approve tier2 --now ${NOW} --max-runs-per-day 100)
expect_in("${last_err}" "memhealth apply: 11 applied, 3 awaiting approval, 0 deferred, 0 failed" "apply of a fresh plan")
# a plan from an older memhealth (no "seen"): applies as before, with a warning
string(REGEX REPLACE ",\"seen\":{[^}]*}" "" st_old "${st_plan}")
file(WRITE "${WORK}/st-old-plan.json" "${st_old}")
run("0" "${MEMHEALTH}" apply "${WORK}/st-z.jsonl" --plan "${WORK}/st-old-plan.json" --wal "${WORK}/st-old.wal"
    --out "${WORK}/st-old.jsonl" --approve tier2 --now ${NOW} --max-runs-per-day 100)
expect_in("${last_err}" "carry no record checksums (a plan made by an older memhealth)" "apply of an older plan")

# ---------------------------------------------------------------- B: an SQLite file without sqlite:
# records with an empty id are written as they are, never silently: exit 1 (README's exit-code
# table), also when a store is moved (import jsonl) and not only for datasets; a moved store's
# empty content is carried as it is (check reports content_empty)
file(WRITE "${WORK}/blank_fields.jsonl" "{\"id\":\"\",\"content\":\"x\"}\n{\"id\":\"a\",\"content\":\"\"}\n")
run("1" "${MEMHEALTH}" import jsonl "${WORK}/blank_fields.jsonl" --out "${WORK}/blank_fields_out.jsonl")
expect_in("${last_err}" "written with 1 empty id(s) and 0 empty content(s), first record 1 (no id)" "import jsonl of records with an empty id and an empty content")
file(STRINGS "${WORK}/blank_fields_out.jsonl" _blank_lines)
list(LENGTH _blank_lines _blank_count)
if(NOT _blank_count EQUAL 2)
  message(FATAL_ERROR "import jsonl of records with empty fields wrote ${_blank_count} lines, expected 2")
endif()

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

# ---------------------------------------------------------------- plan/apply inputs (issue 21 tester)
# every count of plan/apply takes decimal digits only (CLI11 alone wraps "-5" to 2^64-5 and
# reads "0x10" as 16): a negative, a non-number, trailing junk or hex is exit 2 naming the option
foreach(bad "-5" "abc" "5x" "0x10" "+5")
  run("2" "${MEMHEALTH}" plan "${S}" --out "${WORK}/bad-num.json" --blast-radius "${bad}" --now ${NOW})
  expect_in("${last_err}" "--blast-radius" "plan --blast-radius '${bad}'")
  expect_in("${last_err}" "--blast-radius: '${bad}' is not a whole number >= 0 (decimal digits only)" "plan --blast-radius '${bad}'")
endforeach()
if(EXISTS "${WORK}/bad-num.json")
  message(FATAL_ERROR "plan with a bad --blast-radius wrote a plan")
endif()
foreach(opt --max-records --dim --max-content-bytes --block-above)
  run("2" "${MEMHEALTH}" plan "${S}" --out "${WORK}/bad-num.json" ${opt} -3 --now ${NOW})
  expect_in("${last_err}" "${opt}: '-3' is not a whole number >= 0" "plan ${opt} -3")
endforeach()
run("0" "${MEMHEALTH}" plan "${S}" --out "${WORK}/num-plan.json" --blast-radius 7 --max-records 1000 --now ${NOW})
file(READ "${WORK}/num-plan.json" num_plan)
string(FIND "${num_plan}" "\"blast_radius_threshold\":7," at)
if(at EQUAL -1)
  message(FATAL_ERROR "plan --blast-radius 7 did not record the threshold 7")
endif()
foreach(opt --batch --max-records --max-in-flight --max-runs-per-day)
  run("2" "${MEMHEALTH}" apply "${S}" --plan "${WORK}/num-plan.json" --wal "${WORK}/num.wal"
      --out "${WORK}/num-out.jsonl" ${opt} -1 --now ${NOW})
  expect_in("${last_err}" "${opt}: '-1' is not a whole number" "apply ${opt} -1")
endforeach()
foreach(opt --rate --burst)
  run("2" "${MEMHEALTH}" apply "${S}" --plan "${WORK}/num-plan.json" --wal "${WORK}/num.wal"
      --out "${WORK}/num-out.jsonl" ${opt} -1 --now ${NOW})
  expect_in("${last_err}" "${opt}: '-1' is not a number" "apply ${opt} -1")
endforeach()
if(EXISTS "${WORK}/num.wal" OR EXISTS "${WORK}/num-out.jsonl")
  message(FATAL_ERROR "apply with a bad count wrote its log or its output")
endif()

# an events file without any event: a warning and exit 1 (no retrieval alarm could be
# evaluated), the plan of the store's findings still written
file(WRITE "${WORK}/no-events.jsonl" "")
run("1" "${MEMHEALTH}" plan "${S}" --out "${WORK}/no-events-plan.json" --events "${WORK}/no-events.jsonl" --now ${NOW})
expect_in("${last_err}" "holds no retrieval or feedback event (0 lines): no retrieval alarm could be evaluated" "plan --events of an empty file")
if(NOT EXISTS "${WORK}/no-events-plan.json")
  message(FATAL_ERROR "plan --events of an empty file wrote no plan")
endif()

# a store given as the plan: "is not a plan file", exit 2, nothing written
run("2" "${MEMHEALTH}" apply "${S}" --plan "${S}" --wal "${WORK}/store-as-plan.wal"
    --out "${WORK}/store-as-plan.jsonl" --now ${NOW})
expect_in("${last_err}" "sample_store.jsonl' is not a plan file (its first line is a memory record" "a store as --plan")
string(FIND "${last_err}" "json.exception" at)
if(NOT at EQUAL -1)
  message(FATAL_ERROR "a store as --plan printed a raw JSON exception:\n${last_err}")
endif()
if(EXISTS "${WORK}/store-as-plan.wal" OR EXISTS "${WORK}/store-as-plan.jsonl")
  message(FATAL_ERROR "apply with a store as --plan wrote something")
endif()

# the report's format comes from its extension; another one needs --report-format
run("2" "${MEMHEALTH}" apply "${S}" --plan "${WORK}/num-plan.json" --wal "${WORK}/rep.wal"
    --out "${WORK}/rep-out.jsonl" --report "${WORK}/rep.txt" --now ${NOW})
expect_in("${last_err}" "cannot tell the report format from the extension '.txt'" "apply --report x.txt")
if(EXISTS "${WORK}/rep.wal" OR EXISTS "${WORK}/rep.txt" OR EXISTS "${WORK}/rep-out.jsonl")
  message(FATAL_ERROR "apply --report x.txt wrote something")
endif()
run("0;3;4" "${MEMHEALTH}" apply "${S}" --plan "${WORK}/num-plan.json" --wal "${WORK}/rep.wal"
    --out "${WORK}/rep-out.jsonl" --report "${WORK}/rep.txt" --report-format json --now ${NOW}
    --max-runs-per-day 100)
file(READ "${WORK}/rep.txt" rep_txt)
string(FIND "${rep_txt}" "\"audit\"" at)
if(at EQUAL -1)
  message(FATAL_ERROR "apply --report rep.txt --report-format json did not write JSON")
endif()
# monitor treats an events file without any event the same way (exit 1, --exit-zero: 0)
run("1" "${MEMHEALTH}" monitor "${WORK}/no-events.jsonl" --store "${S}")
expect_in("${last_err}" "holds no retrieval or feedback event (0 lines): no window could be evaluated" "monitor of an empty events file")
run("0" "${MEMHEALTH}" monitor "${WORK}/no-events.jsonl" --store "${S}" --exit-zero)
