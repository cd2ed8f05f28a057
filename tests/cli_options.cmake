# Every numeric and duration option of every subcommand takes one strict form, and a refused value
# gets one message shape (tools/memhealth/option_values.hpp):
#   <option>: '<value>' is not <what> <range> (<form>)          exit 2, nothing run
# - integers: decimal digits only ("0x10", "-5", "+5", " 5", "1.5", "5x" refused; "010" is 10);
# - floating point: plain decimal notation (hex floats, inf, nan, spaces, "+0.5", "0,9" refused);
# - durations: digits and one unit s, m, h, d, w ("junk", "-5s", "5", "1.5h" refused);
# and good values (--rate 0.5, --threshold 0.92, --batch 16, --max-wait 30s) still run.
#   cmake -DMEMHEALTH=<tool> -DSOURCE_DIR=<repo> -DWORK=<scratch dir> -DHAVE_SQLITE=ON|OFF
#         -DHAVE_WATCH=ON|OFF -P cli_options.cmake
cmake_minimum_required(VERSION 3.25)
include("${CMAKE_CURRENT_LIST_DIR}/cli_common.cmake")

set(S "${SOURCE_DIR}/data/sample_store.jsonl")
set(EV "${SOURCE_DIR}/data/sample_events.jsonl")
set(PAIRS "${SOURCE_DIR}/tests/data/judge_pairs/pairs.tsv")
file(WRITE "${WORK}/sts.tsv"  # labelled pairs in the STS Benchmark's layout
     "main-captions\timages\t2014\t0000\t4.2\tA cat sits on the mat.\tA cat is sitting on the mat.\n"
     "main-captions\timages\t2014\t0001\t0.4\tA man plays the guitar.\tA woman slices an onion.\n")
set(NOW 2024-07-15T00:00:00Z)

# The base command line of each subcommand: everything it needs, so that only the option tested
# can be the reason for a refusal.
set(base_check check "${S}" --now ${NOW})
set(base_plan plan "${S}" --out "${WORK}/never.json" --now ${NOW})
set(base_apply apply "${S}" --plan "${WORK}/plan.json" --wal "${WORK}/never.wal"
    --out "${WORK}/never.jsonl" --now ${NOW})
set(base_import import jsonl "${S}" --out "${WORK}/never.jsonl")
set(base_monitor monitor "${EV}" --store "${S}")
set(base_drift drift --reference "${S}" --current "${S}")
set(base_gate gate --old "${S}" --new "${S}")
set(base_tune tune "${WORK}/sts.tsv")
set(base_tunej tune --judge "${PAIRS}")
set(base_drill drill "${S}" --now ${NOW})
set(base_wal wal compact "${WORK}/never.wal")
set(base_history history "${S}" --state "${WORK}/never.db")
set(base_rlist review list "${S}" --state "${WORK}/never.db")
set(base_rdefer review defer "${S}" abcdef --reviewer r --reason x --state "${WORK}/never.db")
set(base_watch watch "${S}" --once --state "${WORK}/never.db")
set(base_mstart migrate start "${S}" --embedder lexical:8 --state "${WORK}/never.db")
set(base_mrun migrate run "${S}" --embedder lexical:8 --state "${WORK}/never.db")
set(base_mgate migrate gate "${S}" --state "${WORK}/never.db")
set(base_mrollback migrate rollback "${S}" --state "${WORK}/never.db")

# Every numeric and duration option: "base option kind", kind W (whole number), R (real number),
# D (duration). Shared options (detection, model access, worker jobs) are listed on one
# subcommand each, plus the ones a tester named.
set(options
    "check --threshold R" "check --window D" "check --dim W" "check --threads W"
    "check --block-above W" "check --max-content-bytes W" "check --workers W"
    "check --job-records W" "check --lease R"
    "plan --max-records W" "plan --blast-radius W" "plan --workers W" "plan --monitor-window D"
    "plan --threshold R"
    "apply --batch W" "apply --max-records W" "apply --max-runs-per-day W" "apply --rate R"
    "apply --burst R" "apply --max-wait D" "apply --max-in-flight W" "apply --recur-for D"
    "apply --recur-runs W" "apply --uptime-window D"
    "import --dim W" "import --model-rate R" "import --model-timeout R" "import --model-retries W"
    "monitor --window D" "monitor --top-k W" "monitor --threshold R" "monitor --min-retrievals W"
    "drift --alpha R" "drift --noise-cosine R"
    "gate --k W" "gate --min-overlap R" "gate --min-rank-correlation R"
    "tune --target-fpr R" "tune --positive-at R" "tune --dim W"
    "tunej --is-a-depths W" "tunej --frequency-ratios R" "tunej --target-precision R"
    "drill --seed W" "drill --rate R" "drill --min-coverage R" "drill --max-fpr R"
    "wal --retention D" "wal --old-vector-retention D")
if(HAVE_SQLITE)
  list(APPEND options
       "history --recur-for D" "history --recur-runs W" "history --uptime-window D"
       "rlist --older-than D" "rdefer --for D"
       "mstart --retention-days W"
       "mrun --batch W" "mrun --max-batches W" "mrun --rate R" "mrun --burst R" "mrun --max-wait D"
       "mgate --sample W" "mgate --k W" "mgate --min-overlap R" "mgate --min-rank-correlation R"
       "mrollback --batch W")
endif()
if(HAVE_WATCH)
  list(APPEND options "watch --metrics-port W" "watch --poll D")
endif()

# Values of no option of the kind (the tester's and the usual suspects).
set(bad_W "0x10" "-5" "+5" " 5" "5 " "1.5" "1e3" "5x" "abc" "99999999999999999999999")
set(bad_R "0x10" "0x1p3" "inf" "nan" "NaN" " 0.9" "0.9 " "+0.5" "0.5x" "abc" "1e999" "0.5.1")
set(bad_D "junk" "-5s" "5" "+5s" " 5s" "5S" "5sec" "0x5s" "1.5h" "999999999999d")
set(what_W "a whole number")
set(what_R "a number")
set(what_D "a duration")
set(form_W "(decimal digits only)")
set(form_R "(plain decimal notation, e.g. 0.5)")
set(form_D "(a whole number and a unit: 90s, 10m, 12h, 7d, 2w)")

# Runs `base option value`: exit 2, "<option>: '<value>' is not <what>" and the form on stderr.
function(expect_refused base opt value what form)
  execute_process(COMMAND "${MEMHEALTH}" ${base_${base}} ${opt} "${value}"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 2)
    message(FATAL_ERROR "${base} ${opt} '${value}': exit ${rc}, expected 2\n${err}")
  endif()
  string(FIND "${err}" "${opt}: '${value}' is not ${what}" at)
  string(FIND "${err}" "${form}" at_form)
  if(at EQUAL -1 OR at_form EQUAL -1)
    message(FATAL_ERROR "${base} ${opt} '${value}': expected \"${opt}: '${value}' is not ${what} "
                        "... ${form}\" in:\n${err}")
  endif()
endfunction()

# The first option of each kind gets every value of its list; every other option the first
# (hexadecimal) and two more, taken in turn, so that each value meets several options without a
# process start for every pair.
set(cases 0)
set(seen_W 0)
set(seen_R 0)
set(seen_D 0)
foreach(entry IN LISTS options)
  separate_arguments(e UNIX_COMMAND "${entry}")
  list(GET e 0 base)
  list(GET e 1 opt)
  list(GET e 2 kind)
  list(LENGTH bad_${kind} n)
  if(seen_${kind} EQUAL 0)
    set(values ${bad_${kind}})
  else()
    math(EXPR i1 "1 + (2 * ${seen_${kind}}) % (${n} - 1)")
    math(EXPR i2 "1 + (2 * ${seen_${kind}} + 1) % (${n} - 1)")
    list(GET bad_${kind} 0 ${i1} ${i2} values)
  endif()
  math(EXPR seen_${kind} "${seen_${kind}} + 1")
  foreach(v IN LISTS values)
    expect_refused(${base} ${opt} "${v}" "${what_${kind}}" "${form_${kind}}")
    math(EXPR cases "${cases} + 1")
  endforeach()
endforeach()

# Bounds: the message names the real range, the same for every value outside it (a negative
# count is no longer "whole number >= 0" where 0 is refused too).
set(bounds
    "apply|--max-runs-per-day|-1|a whole number from 1 to 1000000"
    "apply|--max-runs-per-day|0|a whole number from 1 to 1000000"
    "apply|--max-runs-per-day|1000001|a whole number from 1 to 1000000"
    "apply|--batch|0|a whole number from 1 to 100000"
    "apply|--rate|-1|a number from 0 to 1000000000"
    "apply|--burst|0.5|a number from 1 to 1000000000"
    "plan|--blast-radius|-5|a whole number >= 0"
    "check|--threshold|1.5|a number from -1 to 1"
    "check|--threshold|nan|a number from -1 to 1"
    "check|--threshold|abc|a number from -1 to 1"
    "check|--threshold|0,9|a number from -1 to 1"
    "check|--threads|0|a whole number from 1 to 256"
    "check|--lease|0.5|a number from 1 to 86400"
    "check|--job-records|0|a whole number >= 1"
    "import|--dim|0|a whole number from 1 to 65536"
    "import|--model-timeout|0|a number from 0.1 to 3600"
    "import|--model-rate|-1|a number >= 0"
    "monitor|--window|0s|a duration > 0"
    "drift|--alpha|1|a number > 0 and < 1"
    "drift|--noise-cosine|-1|a number > -1 and <= 1"
    "gate|--k|0|a whole number >= 1"
    "drill|--rate|0|a number > 0 and <= 1"
    "drill|--seed|18446744073709551616|a whole number >= 0"
    "tunej|--is-a-depths|65|a whole number from 0 to 64"
    "tunej|--frequency-ratios|0.5|a number from 1 to 1000000000")
if(HAVE_SQLITE)
  list(APPEND bounds
       "mrun|--max-batches|0|a whole number >= 1"
       "mrun|--rate|-1|a number from 0 to 1000000000"
       "mrun|--burst|-1|a number from 0 to 1000000000"
       "mrun|--batch|100001|a whole number from 1 to 100000"
       "mstart|--retention-days|6|a whole number from 7 to 15"
       "mgate|--sample|2|a whole number from 3 to 100000"
       "mgate|--min-rank-correlation|-1.5|a number from -1 to 1"
       "rdefer|--for|0s|a duration > 0"
       "history|--uptime-window|0d|a duration > 0")
endif()
if(HAVE_WATCH)
  list(APPEND bounds "watch|--poll|0s|a duration > 0" "watch|--metrics-port|65536|a whole number from 0 to 65535")
endif()
foreach(entry IN LISTS bounds)
  string(REPLACE "|" ";" e "${entry}")
  list(GET e 0 base)
  list(GET e 1 opt)
  list(GET e 2 v)
  list(GET e 3 what)
  if(what MATCHES "^a whole")
    set(form "${form_W}")
  elseif(what MATCHES "^a duration")
    set(form "${form_D}")
  else()
    set(form "${form_R}")
  endif()
  expect_refused(${base} ${opt} "${v}" "${what} " "${form}")
  math(EXPR cases "${cases} + 1")
endforeach()
# the whole message, once per kind
run("2" "${MEMHEALTH}" ${base_apply} --batch 0x10)
expect_in("${last_err}" "--batch: '0x10' is not a whole number from 1 to 100000 (decimal digits only)" "apply --batch 0x10")
run("2" "${MEMHEALTH}" ${base_apply} --rate -1)
expect_in("${last_err}" "--rate: '-1' is not a number from 0 to 1000000000 (plain decimal notation, e.g. 0.5)" "apply --rate -1")
run("2" "${MEMHEALTH}" ${base_apply} --max-wait -5s)
expect_in("${last_err}" "--max-wait: '-5s' is not a duration (a whole number and a unit: 90s, 10m, 12h, 7d, 2w)" "apply --max-wait -5s")
# --sweep: three plain decimals
foreach(v "0x1:1:0.1" "0.8:0.9" "0.8:0.9:0" "0.9:0.8:0.01" " 0.8:0.9:0.01" "0.8:0.9:0.01:1" "nan:1:0.1" "0:1:1e-9")
  expect_refused(tune --sweep "${v}" "START:END:STEP" "(plain decimal notation, e.g. 0.80:0.99:0.01)")
  math(EXPR cases "${cases} + 1")
endforeach()
if(EXISTS "${WORK}/never.json" OR EXISTS "${WORK}/never.jsonl" OR EXISTS "${WORK}/never.wal" OR
   EXISTS "${WORK}/never.db")
  message(FATAL_ERROR "a refused option value still ran its command (it wrote an output)")
endif()

# ---------------------------------------------------------------- good values still run
run("0;1" "${MEMHEALTH}" plan "${S}" --out "${WORK}/plan.json" --threshold 0.92 --window 7d
    --max-records 1000 --now ${NOW})
run("0;1" "${MEMHEALTH}" plan "${S}" --out "${WORK}/radius.json" --blast-radius 010 --now ${NOW})
file(READ "${WORK}/radius.json" plan)
string(FIND "${plan}" "\"blast_radius_threshold\":10," at)
if(at EQUAL -1)
  message(FATAL_ERROR "plan --blast-radius 010 is not 10 (CLI11 alone reads it as octal 8)")
endif()
run("0;1" "${MEMHEALTH}" apply "${S}" --plan "${WORK}/plan.json" --wal "${WORK}/good.wal"
    --out "${WORK}/good.jsonl" --batch 16 --rate 0.5 --burst 1000 --max-wait 30s
    --max-runs-per-day 1000 --threshold .92 --ledger "${WORK}/ledger.json" --now ${NOW})
run("0;1" "${MEMHEALTH}" monitor "${EV}" --store "${S}" --window 1h --threshold 0.92 --top-k 0)
run("0;1" "${MEMHEALTH}" drift --reference "${S}" --current "${S}" --alpha 1e-2 --noise-cosine 0.999)
run("0" "${MEMHEALTH}" tune "${WORK}/sts.tsv" --sweep 0.80:0.90:0.05 --positive-at -1 --target-fpr 0.1 --dim 64)
if(HAVE_SQLITE)
  file(COPY_FILE "${S}" "${WORK}/m.jsonl")
  run("0" "${MEMHEALTH}" migrate start "${WORK}/m.jsonl" --embedder lexical:8 --retention-days 07)
  run("0;3" "${MEMHEALTH}" migrate run "${WORK}/m.jsonl" --embedder lexical:8 --batch 16
      --max-batches 1 --rate 0.5 --burst 1000 --max-wait 30s)
  expect_in("${last_err}" " 16 records re-embedded" "migrate run --max-batches 1 --batch 16")
endif()
message(STATUS "cli_options: ${cases} refused values checked")
