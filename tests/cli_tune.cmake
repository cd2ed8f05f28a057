# `memhealth tune --judge`, run by ctest:
#   cmake -DMEMHEALTH=<tool> -DSOURCE_DIR=<repo> -DWORK=<scratch dir> -P cli_tune.cmake
# The claim judge's sweep on a small hand-made judge-pair file (the same ten pairs as
# tests/audit_test.cpp, "tune judge: sweep on ten hand-worked pairs") and on
# tests/data/judge_pairs/pairs.tsv; bad input exits 2 with a message naming the problem. Then the
# duplicate guards' flag --no-duplicate-guards through check, plan and apply.
cmake_minimum_required(VERSION 3.25)
include("${CMAKE_CURRENT_LIST_DIR}/cli_common.cmake")

set(PAIRS "${SOURCE_DIR}/tests/data/judge_pairs/pairs.tsv")

string(CONCAT hand
  "id\tlang\tcategory\tlabel\ta\tb\tnote\n"
  "p1\ten\tsingle_value\tconflict\tUser lives in Porto\tUser lives in Madrid\t\n"
  "p2\ten\tnegation\tconflict\tUser does not eat pork\tUser eats pork\t\n"
  "p3\ten\tantonym\tconflict\tMaria is a morning person\tMaria hates getting up early\thard\n"
  "p4\ten\tdifferent_holder\tno_conflict\tThe user's sister lives in Porto\tUser lives in Madrid\t\n"
  "p5\ten\tdifferent_object\tno_conflict\tUser does not enjoy opera\tUser enjoys musicals\t\n"
  "p6\ten\tstate_vs_event\treview\tUser is vegan\tUser ate a cheeseburger yesterday\t\n"
  "p7\ten\tdegree\tconflict\tUser runs every day\tUser runs twice a week\t\n"
  "p8\ten\tdegree\tno_conflict\tUser drinks coffee every day\tUser drinks coffee six days a week\t\n"
  "p9\ten\tis_a\tconflict\tNo person is swimming\tA man is swimming\t\n"
  "p10\ten\tis_a\tconflict\tThere is no animal in the garden\tA dog is in the garden\n")
file(WRITE "${WORK}/hand.tsv" "${hand}")

# JSON: 2 x 2 settings, worked out by hand (see audit_test.cpp)
run("0" "${MEMHEALTH}" tune --judge "${WORK}/hand.tsv" --is-a-depths 0,2 --frequency-ratios 1.1,4
    --format json)
string(JSON format GET "${last_out}" results 0 format)
string(JSON pairs GET "${last_out}" results 0 pairs)
string(JSON conflicts GET "${last_out}" results 0 conflicts)
string(JSON reviews GET "${last_out}" results 0 reviews)
string(JSON rows LENGTH "${last_out}" results 0 rows)
if(NOT format STREQUAL "judge_pairs" OR NOT pairs EQUAL 10 OR NOT conflicts EQUAL 6 OR NOT reviews EQUAL 1
   OR NOT rows EQUAL 4)
  message(FATAL_ERROR "tune --judge hand.tsv: format ${format}, pairs ${pairs}, conflicts ${conflicts}, "
                      "reviews ${reviews}, rows ${rows}")
endif()
# depth 0, ratio 1.1: tp 3 fp 1 fn 3 tn 2
foreach(k tp fp fn tn)
  string(JSON v_${k} GET "${last_out}" results 0 rows 0 ${k})
endforeach()
if(NOT "${v_tp} ${v_fp} ${v_fn} ${v_tn}" STREQUAL "3 1 3 2")
  message(FATAL_ERROR "tune --judge hand.tsv row 0: tp fp fn tn = ${v_tp} ${v_fp} ${v_fn} ${v_tn}")
endif()
string(JSON best_depth GET "${last_out}" results 0 best_f1 max_is_a_depth)
string(JSON best_ratio GET "${last_out}" results 0 best_f1 min_frequency_ratio)
string(JSON target_ratio GET "${last_out}" results 0 at_target_precision min_frequency_ratio)
string(JSON degree_fp GET "${last_out}" results 0 best_f1 per_category degree fp)
if(NOT best_depth EQUAL 2 OR NOT best_ratio EQUAL 1.1 OR NOT target_ratio EQUAL 4 OR NOT degree_fp EQUAL 1)
  message(FATAL_ERROR "tune --judge hand.tsv: best ${best_depth}/${best_ratio}, at target ratio "
                      "${target_ratio}, degree fp ${degree_fp}")
endif()

# text: the project's labelled set, default sweep (5 depths x 6 ratios), per category at the best
run("0" "${MEMHEALTH}" tune --judge "${PAIRS}")
expect_in("${last_out}" "(judge_pairs): 275 pairs, 131 conflict, 128 no_conflict, 16 review" "tune --judge text")
expect_in("${last_out}" "(default)" "tune --judge text")
expect_in("${last_out}" "per category at the best F1 setting" "tune --judge text")
expect_in("${last_out}" "different_holder" "tune --judge text")
run("0" "${MEMHEALTH}" tune --judge "${PAIRS}" --format json --out "${WORK}/judge.json")
file(READ "${WORK}/judge.json" judge_json)
string(JSON rows LENGTH "${judge_json}" results 0 rows)
if(NOT rows EQUAL 30)
  message(FATAL_ERROR "tune --judge pairs.tsv: ${rows} rows, expected 30")
endif()

# bad input: exit 2 with a clear message
run("2" "${MEMHEALTH}" tune --judge "${WORK}/does-not-exist.tsv")
expect_in("${last_err}" "does-not-exist.tsv" "tune --judge missing file")
file(WRITE "${WORK}/sts.tsv" "main-captions\timages\t2014\t0000\t4.2\tA cat.\tA cat sits.\n")
run("2" "${MEMHEALTH}" tune --judge "${WORK}/sts.tsv")
expect_in("${last_err}" "sts.tsv: not a judge-pairs file" "tune --judge wrong format")
file(WRITE "${WORK}/empty.tsv" "")
run("2" "${MEMHEALTH}" tune --judge "${WORK}/empty.tsv")
expect_in("${last_err}" "not a judge-pairs file" "tune --judge empty file")
run("2" "${MEMHEALTH}" tune --judge "${WORK}")
expect_in("${last_err}" "is a directory" "tune --judge DIR")
# options of the other sweep, and judge options without --judge, are usage errors
run("2" "${MEMHEALTH}" tune --judge "${PAIRS}" --sweep 0.8:0.9:0.01)
expect_in("${last_err}" "excludes" "tune --judge --sweep")
run("2" "${MEMHEALTH}" tune "${PAIRS}" --is-a-depths 1)
expect_in("${last_err}" "requires" "tune --is-a-depths without --judge")
run("2" "${MEMHEALTH}" tune --judge "${PAIRS}" --frequency-ratios 0.5)
run("2" "${MEMHEALTH}" tune --judge "${PAIRS}" --is-a-depths -1)
run("2" "${MEMHEALTH}" tune --judge "${PAIRS}" --lexicon "${WORK}/no-lexicon.tsv")

# The duplicate guards (on by default): two records on one vector whose texts differ by a date
# are no near duplicate; --no-duplicate-guards makes them one; a plan made with the flag records
# "duplicate_guards": "off" and apply takes it (its before-detection sees the near duplicate).
file(WRITE "${WORK}/dates.jsonl"
  "{\"id\":\"d1\",\"content\":\"Dentist appointment on 3 May\",\"scope\":\"u1\",\"status\":\"active\",\"source\":\"user_declared\",\"embedding\":[0.6,0.8]}\n"
  "{\"id\":\"d2\",\"content\":\"Dentist appointment on 5 May\",\"scope\":\"u1\",\"status\":\"active\",\"source\":\"user_declared\",\"embedding\":[0.6,0.8]}\n")
run("0;1" "${MEMHEALTH}" check "${WORK}/dates.jsonl" --format json)
string(JSON near ERROR_VARIABLE no_near GET "${last_out}" summary by_kind near_duplicate)
if(no_near STREQUAL "NOTFOUND")
  message(FATAL_ERROR "check with the guards on: a near duplicate across two dates:\n${last_out}")
endif()
run("1" "${MEMHEALTH}" check "${WORK}/dates.jsonl" --format json --no-duplicate-guards)
string(JSON near GET "${last_out}" summary by_kind near_duplicate)
if(NOT near EQUAL 1)
  message(FATAL_ERROR "check --no-duplicate-guards: ${near} near duplicates, expected 1")
endif()
run("0" "${MEMHEALTH}" plan "${WORK}/dates.jsonl" --out "${WORK}/dates-plan.json" --no-duplicate-guards)
file(STRINGS "${WORK}/dates-plan.json" plan_header LIMIT_COUNT 1)
expect_in("${plan_header}" "\"duplicate_guards\":\"off\"" "plan --no-duplicate-guards")
run("0" "${MEMHEALTH}" apply "${WORK}/dates.jsonl" --plan "${WORK}/dates-plan.json" --out "${WORK}/dates-out.jsonl"
    --wal "${WORK}/dates.wal" --approve tier2)
expect_in("${last_err}" "1 applied" "apply of the unguarded plan")
expect_in("${last_err}" "findings 3 -> 2" "apply takes the plan's duplicate_guards")

# skipped lines are named by number (the first ten, then a count): hand.tsv's 11 lines, then a
# line with an unknown label (12), a blank line (13) and a line of too few columns (14)
file(WRITE "${WORK}/skips.tsv" "${hand}p11\ten\tdegree\tmaybe\tx\ty\t\n\nshort\ten\n")
run("0" "${MEMHEALTH}" tune --judge "${WORK}/skips.tsv")
expect_in("${last_out}" "2 lines skipped as malformed (line 12: label 'maybe' is not conflict, no_conflict or review; line 14: 2 columns, 6 needed" "tune --judge skipped lines")
expect_in("${last_err}" "skips.tsv: 2 lines skipped as malformed (line 12: label 'maybe'" "tune --judge warns of skipped lines")
run("0" "${MEMHEALTH}" tune --judge "${WORK}/skips.tsv" --format json)
string(JSON n0 GET "${last_out}" results 0 skipped_line_numbers 0)
string(JSON n1 GET "${last_out}" results 0 skipped_line_numbers 1)
if(NOT n0 EQUAL 12 OR NOT n1 EQUAL 14)
  message(FATAL_ERROR "tune --judge JSON: skipped_line_numbers ${n0}, ${n1}; expected 12, 14")
endif()
# a UTF-8 byte-order mark before the header is skipped; a label in capitals is no label (named);
# a language the extractor does not read is named in a warning, its pair kept
string(ASCII 239 187 191 bom)
file(WRITE "${WORK}/bom.tsv" "${bom}${hand}p11\ten\tdegree\tCONFLICT\tx\ty\np12\tfr\tnegation\tconflict\tIl mange du porc\tIl ne mange pas de porc\n")
run("0" "${MEMHEALTH}" tune --judge "${WORK}/bom.tsv" --format json)
string(JSON bom_pairs GET "${last_out}" results 0 pairs)
string(JSON bom_reason GET "${last_out}" results 0 skipped_reasons 0)
string(JSON bom_lang GET "${last_out}" results 0 unknown_languages 0)
if(NOT bom_pairs EQUAL 11 OR NOT bom_reason STREQUAL "label 'CONFLICT' is not conflict, no_conflict or review"
   OR NOT bom_lang STREQUAL "fr")
  message(FATAL_ERROR "tune --judge with a byte-order mark: ${bom_pairs} pairs, reason '${bom_reason}', language '${bom_lang}'")
endif()
expect_in("${last_err}" "languages other than en and zh (read as far as the extractor can): 'fr'" "tune --judge unknown language")

# is_a lines of a lexicon file reach the judge: a labradoodle is a dog, so a dislike of dogs and
# a liking of labradoodles conflict only with the lexicon (issue 18, the README's example)
file(WRITE "${WORK}/isa.tsv"
  "id\tlang\tcategory\tlabel\ta\tb\tnote\n"
  "q1\ten\tis_a\tconflict\tUser doesn't like dogs\tUser likes labradoodles\t\n")
file(WRITE "${WORK}/isa-lexicon.tsv" "is_a\tlabradoodle\tdog\n")
run("0" "${MEMHEALTH}" tune --judge "${WORK}/isa.tsv" --is-a-depths 2 --frequency-ratios 3 --format json)
string(JSON isa_tp_without GET "${last_out}" results 0 rows 0 tp)
run("0" "${MEMHEALTH}" tune --judge "${WORK}/isa.tsv" --is-a-depths 2 --frequency-ratios 3 --format json
    --lexicon "${WORK}/isa-lexicon.tsv")
string(JSON isa_tp_with GET "${last_out}" results 0 rows 0 tp)
if(NOT isa_tp_without EQUAL 0 OR NOT isa_tp_with EQUAL 1)
  message(FATAL_ERROR "tune --judge with an is_a lexicon: tp ${isa_tp_without} without, ${isa_tp_with} with")
endif()
