# The memhealth tool on real preference data (PrefEval explicit preferences), run by ctest:
#   cmake -DMEMHEALTH=<tool> -DDATA_DIR=<tests/data> -DWORK=<scratch dir> -P cli_realdata.cmake
# import (a directory of topic files) -> stats -> check -> drill with the SPEC gates (coverage
# >= 0.95 for every fault kind the drill makes itself, false-positive rate net of the baseline
# <= 0.02, no harm; the two kinds of real text are measured, not gated) -> plan ->
# apply (tier 2 approved, through the WAL) -> rollback: byte-identical to the imported store.
# Exits 77 (skipped) when the data directory is absent. (LoCoMo runs in cli_roundtrip.cmake.)
cmake_minimum_required(VERSION 3.25)
include("${CMAKE_CURRENT_LIST_DIR}/cli_common.cmake")

set(P "${DATA_DIR}/prefeval-explicit")
if(NOT IS_DIRECTORY "${P}")
  message(STATUS "${P} not found: skipped")
  cmake_language(EXIT 77)
endif()
# Detection clock: a month after the fixed creation times (2025-01-22T00:01Z + k minutes), so
# nothing is stale at the preference half-life of 180 days.
set(NOW 2025-02-22T00:00:00Z)
set(STORE "${WORK}/prefeval.jsonl")

string(TIMESTAMP t0 "%s")
run("0" "${MEMHEALTH}" import prefeval "${P}" --out "${STORE}" --embed lexical --dim 384)
string(TIMESTAMP t1 "%s")
if(NOT last_err MATCHES "memhealth import: 517 records from 1 directory -> ")
  message(FATAL_ERROR "import prefeval: a directory source is not counted as a file:\n${last_err}")
endif()
# 517 preferences in the 10 topic files present (counted independently with python3), one
# scope per topic, no load issues
run("0" "${MEMHEALTH}" stats "${STORE}" --format json)
string(JSON records GET "${last_out}" records)
string(JSON nscopes LENGTH "${last_out}" by_scope)
string(JSON nissues LENGTH "${last_out}" load_issues)
string(JSON n_dietary GET "${last_out}" by_scope "user:prefeval/topic:lifestyle_dietary")
string(JSON n_pref GET "${last_out}" by_kind preference)
if(NOT records EQUAL 517 OR NOT nscopes EQUAL 10 OR NOT nissues EQUAL 0 OR NOT n_dietary EQUAL 57
   OR NOT n_pref EQUAL 517)
  message(FATAL_ERROR "stats prefeval: ${records} records, ${nscopes} scopes, ${nissues} issues, "
                      "${n_dietary} dietary, ${n_pref} preferences (expected 517, 10, 0, 57, 517)")
endif()

# check: the release's byte-identical preferences are found (python3 over the files): 4 clusters
# within a topic (pixel art x3 in entertain_games; superhero movies, cruelty-free beauty, spicy
# food x2) and 3 texts filed under both education topics (cross-scope). Exit 1: the
# cross-scope duplicates are errors.
run("1" "${MEMHEALTH}" check "${STORE}" --now ${NOW} --format json --out "${WORK}/check.json")
string(TIMESTAMP t2 "%s")
file(READ "${WORK}/check.json" check)
string(JSON schema_version GET "${check}" schema_version)
string(JSON nfind GET "${check}" summary findings)
string(JSON n_exact GET "${check}" summary by_kind exact_duplicate)
string(JSON n_cross GET "${check}" summary by_kind cross_scope_duplicate)
string(JSON nkinds LENGTH "${check}" summary by_kind)
set(by_kind "")
math(EXPR last "${nkinds} - 1")
foreach(i RANGE ${last})
  string(JSON k MEMBER "${check}" summary by_kind ${i})
  string(JSON n GET "${check}" summary by_kind "${k}")
  string(APPEND by_kind " ${k}=${n}")
endforeach()
message(STATUS "check prefeval: ${nfind} findings:${by_kind}")
if(NOT schema_version EQUAL 1 OR NOT n_exact EQUAL 4 OR NOT n_cross EQUAL 3)
  message(FATAL_ERROR "check prefeval: schema_version ${schema_version}, exact_duplicate ${n_exact}, "
                      "cross_scope_duplicate ${n_cross} (expected 1, 4, 3)")
endif()
# Four contradictions, each read by hand. In topic education_learning_styles (one synthetic
# user) record 24 "I dislike interactive and gamified learning experiences" contradicts three
# records that prefer them: 3 "... prefer interactive learning experiences", 6 "... prefer
# interactive and gamified learning modes", 14 "... prefer interactive and gamified learning
# experiences" (an aversion to "X and Y" is one to each). In education_resources record 1 has "a
# strong aversion to online educational resources that require a paid subscription or purchase"
# and record 36 "prefer[s] one-time purchases". Same-direction restrictions are none: the cue
# judge once flagged six such pairs ("do not eat any animal products" vs "avoid all animal
# products"; "refuse to use products tested on animals" vs "only use cruelty-free products not
# tested on animals"), and the claim judge's first version fifteen (multi-clause preferences,
# "strongly dislike", "prefer to avoid", negated relative clauses), each read one by one.
string(JSON n_conflict ERROR_VARIABLE conflict_key_missing GET "${check}" summary by_kind conflict)
if(NOT conflict_key_missing STREQUAL "NOTFOUND" OR NOT n_conflict EQUAL 4)
  message(FATAL_ERROR "check prefeval: ${n_conflict} conflicts (expected 4)")
endif()
string(JSON nf LENGTH "${check}" findings)
math(EXPR nf_last "${nf} - 1")
set(conflict_ids "")
foreach(i RANGE ${nf_last})
  string(JSON kind GET "${check}" findings ${i} kind)
  if(kind STREQUAL "conflict")
    string(JSON a GET "${check}" findings ${i} record_ids 0)
    string(JSON b GET "${check}" findings ${i} record_ids 1)
    list(APPEND conflict_ids "${a} ${b}")
  endif()
endforeach()
list(SORT conflict_ids)
set(expected_conflicts
    "prefeval-education_learning_styles-14 prefeval-education_learning_styles-24"
    "prefeval-education_learning_styles-3 prefeval-education_learning_styles-24"
    "prefeval-education_learning_styles-6 prefeval-education_learning_styles-24"
    "prefeval-education_resources-1 prefeval-education_resources-36")
list(SORT expected_conflicts)
if(NOT conflict_ids STREQUAL expected_conflicts)
  message(FATAL_ERROR "check prefeval: the conflicts are between ${conflict_ids}")
endif()

# fault drill: the gates of SPEC section 4 for each of the eleven kinds the drill makes itself;
# paraphrased_duplicate and free_text_conflict (real text pairs, lexical vectors) are reported;
# the store itself is not written
file(SHA256 "${STORE}" before)
run("0" "${MEMHEALTH}" drill "${STORE}" --seed 1 --now ${NOW} --format json --max-fpr 0.02
    --out "${WORK}/drill.json")
string(TIMESTAMP t3 "%s")
file(READ "${WORK}/drill.json" drill)
string(JSON coverage GET "${drill}" coverage)
string(JSON fpr GET "${drill}" false_positive_rate_net)
string(JSON fp GET "${drill}" false_positive_records_net)
string(JSON untouched GET "${drill}" untouched_records)
string(JSON harm GET "${drill}" healthy_records_changed)
string(JSON injected GET "${drill}" injected)
string(JSON detected GET "${drill}" detected)
string(JSON attempted GET "${drill}" repair_attempted)
string(JSON repaired GET "${drill}" repaired)
string(JSON success GET "${drill}" repair_success)
string(JSON kinds LENGTH "${drill}" per_kind)
if(NOT kinds EQUAL 13)
  message(FATAL_ERROR "drill prefeval: ${kinds} fault kinds (expected 13)")
endif()
drill_per_kind("${drill}" per_kind low)
message(STATUS "drill prefeval: coverage ${detected}/${injected} = ${coverage}; per kind:${per_kind}; "
               "false positives net of the baseline ${fp}/${untouched} = ${fpr}; repaired ${repaired}/${attempted} = ${success}; "
               "healthy records changed ${harm}")
if(fpr GREATER 0.02 OR NOT harm EQUAL 0 OR NOT low STREQUAL "")
  message(FATAL_ERROR "drill prefeval: coverage ${coverage}, fpr ${fpr}, harm ${harm}, kinds below 0.95:${low}")
endif()
file(SHA256 "${STORE}" after)
if(NOT before STREQUAL after)
  message(FATAL_ERROR "drill changed its input store")
endif()

# plan, apply with tier-2 approval, roll back: the imported store comes back byte for byte
run("0" "${MEMHEALTH}" plan "${STORE}" --out "${WORK}/plan.json" --now ${NOW})
run("0" "${MEMHEALTH}" apply "${STORE}" --plan "${WORK}/plan.json" --wal "${WORK}/run.wal" --out "${WORK}/new.jsonl"
    --approve tier2 --now ${NOW} --report "${WORK}/report.json")
file(READ "${WORK}/report.json" report)
string(JSON failed GET "${report}" failed)
string(JSON applied GET "${report}" applied)
if(NOT failed EQUAL 0 OR applied LESS 4)
  message(FATAL_ERROR "apply prefeval: ${applied} applied, ${failed} failed")
endif()
execute_process(COMMAND "${CMAKE_COMMAND}" -E compare_files "${STORE}" "${WORK}/new.jsonl" RESULT_VARIABLE unchanged)
if(unchanged EQUAL 0)
  message(FATAL_ERROR "apply prefeval did not change the store")
endif()
run("0" "${MEMHEALTH}" diff "${STORE}" "${WORK}/new.jsonl" --wal "${WORK}/run.wal")
run("0" "${MEMHEALTH}" rollback "${WORK}/new.jsonl" --wal "${WORK}/run.wal" --out "${WORK}/restored.jsonl")
string(TIMESTAMP t4 "%s")
execute_process(COMMAND "${CMAKE_COMMAND}" -E compare_files "${STORE}" "${WORK}/restored.jsonl" RESULT_VARIABLE same)
if(NOT same EQUAL 0)
  message(FATAL_ERROR "rollback did not reproduce the imported PrefEval store byte for byte")
endif()
# A drill that can inject nothing is a failure with the reason, not a clean pass: under a clock
# far after the data (2030) every record is stale, so none is an eligible target.
run("1" "${MEMHEALTH}" drill "${STORE}" --now 2030-01-01T00:00:00Z --format json --out "${WORK}/drill-late.json")
if(NOT last_err MATCHES "no fault injected: 0 of 517 records" OR NOT last_err MATCHES "stale 517")
  message(FATAL_ERROR "drill with nothing to inject: unexpected message: ${last_err}")
endif()
# A file of another format is an error and writes nothing: a mem0 export ({"results": [...]}, a
# JSON object as LoCoMo files are) read as LoCoMo is refused, naming the format it looks like.
run("2" "${MEMHEALTH}" import locomo "${SOURCE_DIR}/tests/data/mem0/export_results.json" --out "${WORK}/wrong.jsonl")
if(EXISTS "${WORK}/wrong.jsonl" OR NOT last_err MATCHES "looks like a mem0 export")
  message(FATAL_ERROR "import of a mem0 export as LoCoMo: wrote a store or no reason given: ${last_err}")
endif()

math(EXPR s_import "${t1} - ${t0}")
math(EXPR s_check "${t2} - ${t1}")
math(EXPR s_drill "${t3} - ${t2}")
math(EXPR s_repair "${t4} - ${t3}")
message(STATUS "cli real data (PrefEval): ok; ${applied} actions applied; wall seconds: import ${s_import}, "
               "check ${s_check}, drill ${s_drill}, plan+apply+diff+rollback ${s_repair}")
