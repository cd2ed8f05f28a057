# End-to-end test of `memhealth migrate` (the embedding-model switch, issue 21 item 4), run by
# ctest:
#   cmake -DMEMHEALTH=<tool> -DSOURCE_DIR=<repo> -DWORK=<scratch dir> -P cli_migrate.cmake
# On the sample store (51 records with 384-d lexical vectors: 26 of lexical-v1-d384-s2, 25 of
# lexical-v1-d384-s1), a migration to the 128-d lexical embedder runs start, run in two resumed
# parts (40 + 11), status, gate (per previous version), switch, compaction; a second one to the 64-d embedder runs start,
# run, rollback, and the store is byte-identical to before (exported as canonical JSONL). Also
# `apply --embedder` giving the embedder to the plan's reembed actions (all 25 minority records,
# more than the 20 the finding lists).
cmake_minimum_required(VERSION 3.25)
include("${CMAKE_CURRENT_LIST_DIR}/cli_common.cmake")


function(expect_eq got want what)
  if(NOT "${got}" STREQUAL "${want}")
    message(FATAL_ERROR "${what}: got '${got}', expected '${want}'")
  endif()
endfunction()

# The severity of the mixed_embedding_version finding in a `check --format json` output ("" = none).
function(mixed_severity json out_var)
  set(sev "")
  string(JSON n LENGTH "${json}" findings)
  if(n GREATER 0)
    math(EXPR last "${n} - 1")
    foreach(i RANGE ${last})
      string(JSON kind GET "${json}" findings ${i} kind)
      if(kind STREQUAL "mixed_embedding_version")
        string(JSON sev GET "${json}" findings ${i} severity)
      endif()
    endforeach()
  endif()
  set(${out_var} "${sev}" PARENT_SCOPE)
endfunction()

set(S "${SOURCE_DIR}/data/sample_store.jsonl")
set(NEW "lexical-v1-d128-s0")

# ---- start, run in two parts, status, gate, switch, compaction
run("0" "${MEMHEALTH}" import jsonl "${S}" --out "sqlite:${WORK}/a.db")
set(A "sqlite:${WORK}/a.db")
run("1" "${MEMHEALTH}" check "${A}" --format json)
mixed_severity("${last_out}" sev)
expect_eq("${sev}" "error" "mixed versions without a migration")
run("2" "${MEMHEALTH}" migrate run "${A}" --embedder lexical:128)  # nothing declared yet
run("2" "${MEMHEALTH}" migrate start "${A}" --embedder lexical:128 --to other-version)
run("2" "${MEMHEALTH}" migrate start "${A}" --embedder lexical:128 --retention-days 30)
run("0" "${MEMHEALTH}" migrate start "${A}" --embedder lexical:128 --to ${NEW} --retention-days 7)
expect_in("${last_err}" "51 records from lexical-v1-d384-s1, lexical-v1-d384-s2 to ${NEW}" "start")
run("2" "${MEMHEALTH}" migrate start "${A}" --embedder lexical:128)  # one at a time
# the run's embedder must write the target version
run("2" "${MEMHEALTH}" migrate run "${A}" --embedder lexical:64)
# part 1: two batches of 20 under the rate limiter, stopped early: exit 3, 11 left
run("3" "${MEMHEALTH}" migrate run "${A}" --embedder lexical:128 --batch 20 --max-batches 2
    --rate 1000)
expect_in("${last_err}" "2 batches, 40 records re-embedded" "run part 1")
expect_in("${last_err}" "11 records left" "run part 1")
run("0" "${MEMHEALTH}" migrate status "${A}" --format json)
string(JSON st GET "${last_out}" migration status)
string(JSON batches GET "${last_out}" migration batches)
string(JSON left GET "${last_out}" migration left)
string(JSON kept GET "${last_out}" migration previous_vectors_kept)
string(JSON on_new GET "${last_out}" versions ${NEW})
expect_eq("${st}/${batches}/${left}/${kept}/${on_new}" "running/2/11/40/40" "status after part 1")
# during the migration mixed versions are progress (info), and plan leaves them to it
run("0" "${MEMHEALTH}" check "${A}" --format json --exit-zero)
mixed_severity("${last_out}" sev)
expect_eq("${sev}" "info" "mixed versions during the migration")
run("2" "${MEMHEALTH}" migrate switch "${A}")  # 11 left
expect_in("${last_err}" "11 records are not on ${NEW}" "switch with records left")
# part 2 resumes: the 11 left, one batch
run("0" "${MEMHEALTH}" migrate run "${A}" --embedder lexical:128 --batch 20)
expect_in("${last_err}" "1 batches, 11 records re-embedded" "run part 2")
expect_in("${last_err}" "0 records left" "run part 2")
run("2" "${MEMHEALTH}" migrate switch "${A}")  # the gate has not run
expect_in("${last_err}" "gate has not run" "switch before the gate")
# The lexical stand-ins are not semantic: from the 384-d to the 128-d one, neighbours of unrelated
# texts are ordered by hash noise, and the default gate (overlap@10 >= 0.8, rank correlation >=
# 0.5) fails (measured: 0.6 and 0.22): exit 1, and the switch is refused.
# Each previous version is gated apart (two old spaces, never compared with each other): the 25
# records from lexical-v1-d384-s1 and the 26 from -s2 (measured: overlap 0.688 and 0.6, rank
# correlation 0.33 and 0.22).
run("1" "${MEMHEALTH}" migrate gate "${A}")
expect_in("${last_out}" "migration 1 gate: FAIL (2 previous versions, each gated apart; 2 failed)" "gate")
expect_in("${last_out}" "from lexical-v1-d384-s1: FAIL on 25 of 25 records re-embedded: k 10, mean overlap@k 0.688" "gate, first version")
expect_in("${last_out}" "from lexical-v1-d384-s2: FAIL on 26 of 26 records re-embedded: k 10, mean overlap@k 0.6 " "gate, second version")
run("2" "${MEMHEALTH}" migrate switch "${A}")
expect_in("${last_err}" "the migration gate did not pass (from lexical-v1-d384-s1: FAIL n=25 k=10" "switch after a failed gate")
# a bar one version meets and the other does not: the gate fails, the switch is refused, naming
# the version that failed
run("1" "${MEMHEALTH}" migrate gate "${A}" --min-overlap 0.65 --min-rank-correlation 0.2)
expect_in("${last_out}" "FAIL (2 previous versions, each gated apart; 1 failed)" "gate, one version failing")
expect_in("${last_out}" "from lexical-v1-d384-s1: PASS on 25 of 25" "gate, one version failing")
expect_in("${last_out}" "from lexical-v1-d384-s2: FAIL on 26 of 26" "gate, one version failing")
run("2" "${MEMHEALTH}" migrate switch "${A}")
expect_in("${last_err}" "; from lexical-v1-d384-s2: FAIL n=26 k=10" "switch after one version failed")
# a lower bar, as a person may set it for a known-noisy pair of models, passes for both
run("0" "${MEMHEALTH}" migrate gate "${A}" --min-overlap 0.55 --min-rank-correlation 0.2
    --format json)
string(JSON passed GET "${last_out}" passed)
string(JSON ngroups LENGTH "${last_out}" groups)
string(JSON g0 GET "${last_out}" groups 0 from)
string(JSON n0 GET "${last_out}" groups 0 n)
string(JSON g1 GET "${last_out}" groups 1 from)
string(JSON n1 GET "${last_out}" groups 1 n)
expect_eq("${passed}/${ngroups}/${g0}/${n0}/${g1}/${n1}"
          "ON/2/lexical-v1-d384-s1/25/lexical-v1-d384-s2/26" "gate JSON with a lower bar")
run("0" "${MEMHEALTH}" migrate status "${A}" --format json)
string(JSON ngroups LENGTH "${last_out}" migration gate groups)
string(JSON p1 GET "${last_out}" migration gate groups 1 passed)
expect_eq("${ngroups}/${p1}" "2/ON" "status JSON: the gate per previous version")
run("0" "${MEMHEALTH}" migrate switch "${A}")
expect_in("${last_err}" "${NEW} is the current version" "switch")
run("0" "${MEMHEALTH}" migrate status "${A}" --format json)
string(JSON st GET "${last_out}" migration status)
string(JSON on_new GET "${last_out}" versions ${NEW})
string(JSON nver LENGTH "${last_out}" versions)
expect_eq("${st}/${on_new}/${nver}" "switched/51/1" "status after the switch")
run("0" "${MEMHEALTH}" check "${A}" --format json --exit-zero)
mixed_severity("${last_out}" sev)
expect_eq("${sev}" "" "one version after the switch")
# the previous vectors stay within the window; compaction after it drops and reports them
run("0" "${MEMHEALTH}" migrate compact "${A}")
expect_in("${last_err}" "kept 51 previous vectors until" "compact within the window")
run("2" "${MEMHEALTH}" migrate rollback "${A}" --now 2099-01-01T00:00:00Z)  # window over
run("0" "${MEMHEALTH}" migrate compact "${A}" --now 2099-01-01T00:00:00Z)
expect_in("${last_err}" "dropped 51 previous vectors" "compact after the window")
run("0" "${MEMHEALTH}" migrate status "${A}" --format json)
string(JSON kept GET "${last_out}" migration previous_vectors_kept)
expect_eq("${kept}" "0" "kept after compaction")

# ---- start, run, rollback: the store byte-identical to before
run("0" "${MEMHEALTH}" import jsonl "${S}" --out "sqlite:${WORK}/b.db")
set(B "sqlite:${WORK}/b.db")
run("0" "${MEMHEALTH}" import sqlite "${B}" --out "${WORK}/b-before.jsonl")
run("0" "${MEMHEALTH}" migrate start "${B}" --embedder lexical:64)
run("0" "${MEMHEALTH}" migrate run "${B}" --embedder lexical:64 --batch 16)
expect_in("${last_err}" "4 batches, 51 records re-embedded" "run of the second migration")
run("0" "${MEMHEALTH}" import sqlite "${B}" --out "${WORK}/b-migrated.jsonl")
execute_process(COMMAND "${CMAKE_COMMAND}" -E compare_files "${WORK}/b-before.jsonl"
                        "${WORK}/b-migrated.jsonl" RESULT_VARIABLE differ)
if(differ EQUAL 0)
  message(FATAL_ERROR "the migration changed nothing")
endif()
run("0" "${MEMHEALTH}" migrate rollback "${B}" --batch 20)
expect_in("${last_err}" "51 records given their previous vector and version back" "rollback")
expect_in("${last_err}" "(3 actions)" "rollback batches")
run("0" "${MEMHEALTH}" import sqlite "${B}" --out "${WORK}/b-after.jsonl")
execute_process(COMMAND "${CMAKE_COMMAND}" -E compare_files "${WORK}/b-before.jsonl"
                        "${WORK}/b-after.jsonl" RESULT_VARIABLE differ)
if(NOT differ EQUAL 0)
  message(FATAL_ERROR "after the rollback the store differs from before the migration")
endif()
run("0" "${MEMHEALTH}" migrate status "${B}" --format json)
string(JSON st GET "${last_out}" migration status)
expect_eq("${st}" "rolled_back" "status after the rollback")
run("2" "${MEMHEALTH}" migrate rollback "${B}")  # nothing to roll back now
run("0" "${MEMHEALTH}" migrate compact "${B}")
expect_in("${last_err}" "dropped 51 previous vectors" "compact after a rollback")

# ---- plan and apply --embedder: the reembed actions of a mixed-version finding cover all 25
# minority records (the finding lists 20) and are embedded through --embedder
run("0" "${MEMHEALTH}" import jsonl "${S}" --out "sqlite:${WORK}/c.db")
run("0" "${MEMHEALTH}" plan "sqlite:${WORK}/c.db" --out "${WORK}/plan.json")
# the plan file: a header line, then one action per line
file(STRINGS "${WORK}/plan.json" plan_lines)
list(POP_FRONT plan_lines header)
set(reembedded 0)
foreach(line IN LISTS plan_lines)
  string(JSON type GET "${line}" type)
  if(type STREQUAL "reembed")
    string(JSON nt LENGTH "${line}" targets)
    math(EXPR reembedded "${reembedded} + ${nt}")
  endif()
endforeach()
expect_eq("${reembedded}" "25" "records the plan re-embeds")
run("0;3" "${MEMHEALTH}" apply "sqlite:${WORK}/c.db" --plan "${WORK}/plan.json"
    --wal "${WORK}/c.wal" --out "sqlite:${WORK}/c2.db" --approve tier3 --embedder lexical:384:2)
run("0" "${MEMHEALTH}" migrate status "sqlite:${WORK}/c2.db" --format json)
string(JSON nver LENGTH "${last_out}" versions)
string(JSON on_s2 GET "${last_out}" versions lexical-v1-d384-s2)
expect_eq("${nver}/${on_s2}" "1/51" "versions after apply --embedder")

# ---- a JSONL store (issue 21: migrate from the tool on JSONL): the file is read whole and
# written back atomically after each step; the previous vectors live in its state database
# (J.memhealth-state.db). To the 128-d embedder: start, run in two resumed parts (40 + 11),
# check (progress), gate, switch, then rollback within the window: the file is byte-identical to
# the one before the migration (every old 384-d vector and version back, nothing else changed).
set(J "${WORK}/j.jsonl")
run("0" "${MEMHEALTH}" import jsonl "${S}" --out "${J}")  # canonical JSONL, as the tool writes it
file(COPY_FILE "${J}" "${WORK}/j-before.jsonl")
run("2" "${MEMHEALTH}" migrate start "${WORK}/a.db" --embedder lexical:128)  # a database, no sqlite:
expect_in("${last_err}" "pass it as sqlite:" "migrate start on a database named without sqlite:")
run("0" "${MEMHEALTH}" migrate start "${J}" --embedder lexical:128)
expect_in("${last_err}" "51 records from lexical-v1-d384-s1, lexical-v1-d384-s2 to ${NEW}" "JSONL start")
execute_process(COMMAND "${CMAKE_COMMAND}" -E compare_files "${J}" "${WORK}/j-before.jsonl"
                RESULT_VARIABLE differ)
expect_eq("${differ}" "0" "JSONL start left the file as it was")
run("3" "${MEMHEALTH}" migrate run "${J}" --embedder lexical:128 --batch 20 --max-batches 2)
expect_in("${last_err}" "2 batches, 40 records re-embedded through ${J}.memhealth-migrate.wal"
          "JSONL run part 1")
expect_in("${last_err}" "11 records left" "JSONL run part 1")
# the file holds what the two batches wrote: 40 records of 128 dimensions on the new version
run("0" "${MEMHEALTH}" stats "${J}" --format json)
string(JSON d128 GET "${last_out}" by_dimension 128)
string(JSON d384 GET "${last_out}" by_dimension 384)
string(JSON on_new GET "${last_out}" by_embedding_version ${NEW})
expect_eq("${d128}/${d384}/${on_new}" "40/11/40" "JSONL file after part 1")
run("0" "${MEMHEALTH}" migrate status "${J}" --format json)
string(JSON st GET "${last_out}" migration status)
string(JSON batches GET "${last_out}" migration batches)
string(JSON left GET "${last_out}" migration left)
string(JSON kept GET "${last_out}" migration previous_vectors_kept)
expect_eq("${st}/${batches}/${left}/${kept}" "running/2/11/40" "JSONL status after part 1")
run("0" "${MEMHEALTH}" check "${J}" --format json --exit-zero)
mixed_severity("${last_out}" sev)
expect_eq("${sev}" "info" "mixed versions during the JSONL store's migration")
run("0" "${MEMHEALTH}" migrate run "${J}" --embedder lexical:128 --batch 20)
expect_in("${last_err}" "1 batches, 11 records re-embedded" "JSONL run part 2")
run("2" "${MEMHEALTH}" migrate switch "${J}")  # the gate has not run
# the same vectors as the sqlite: store's migration above: the same gate figures
run("1" "${MEMHEALTH}" migrate gate "${J}")
expect_in("${last_out}" "from lexical-v1-d384-s1: FAIL on 25 of 25 records re-embedded: k 10, mean overlap@k 0.688" "JSONL gate")
expect_in("${last_out}" "from lexical-v1-d384-s2: FAIL on 26 of 26 records re-embedded: k 10, mean overlap@k 0.6 " "JSONL gate")
run("0" "${MEMHEALTH}" migrate gate "${J}" --min-overlap 0.55 --min-rank-correlation 0.2)
expect_in("${last_out}" "migration 1 gate: PASS (2 previous versions, each gated apart)" "JSONL gate with a lower bar")
run("0" "${MEMHEALTH}" migrate switch "${J}")
run("0" "${MEMHEALTH}" stats "${J}" --format json)
string(JSON on_new GET "${last_out}" by_embedding_version ${NEW})
string(JSON nver LENGTH "${last_out}" by_embedding_version)
string(JSON d128 GET "${last_out}" by_dimension 128)
expect_eq("${on_new}/${nver}/${d128}" "51/1/51" "JSONL file after the switch")
# within the window the old space comes back, byte for byte (batches of 20: 3 actions)
run("0" "${MEMHEALTH}" migrate rollback "${J}" --batch 20)
expect_in("${last_err}" "51 records given their previous vector and version back" "JSONL rollback")
expect_in("${last_err}" "(3 actions)" "JSONL rollback batches")
execute_process(COMMAND "${CMAKE_COMMAND}" -E compare_files "${J}" "${WORK}/j-before.jsonl"
                RESULT_VARIABLE differ)
if(NOT differ EQUAL 0)
  message(FATAL_ERROR "after the rollback the JSONL store differs from before the migration")
endif()
run("0" "${MEMHEALTH}" migrate status "${J}" --format json)
string(JSON st GET "${last_out}" migration status)
expect_eq("${st}" "rolled_back" "JSONL status after the rollback")

# a JSONL line that cannot be parsed is carried through every rewrite in its place
file(READ "${WORK}/j-before.jsonl" jtext)
file(WRITE "${WORK}/k.jsonl" "{\"id\": \"broken\", \"content\": \n${jtext}")
run("0" "${MEMHEALTH}" migrate start "${WORK}/k.jsonl" --embedder lexical:64)
run("0" "${MEMHEALTH}" migrate run "${WORK}/k.jsonl" --embedder lexical:64 --batch 100)
expect_in("${last_err}" "1 batches, 51 records re-embedded" "run on a JSONL store with a damaged line")
file(READ "${WORK}/k.jsonl" ktext)
string(FIND "${ktext}" "{\"id\": \"broken\", \"content\": \n" at)
expect_eq("${at}" "0" "the damaged line kept in its place")
run("0" "${MEMHEALTH}" stats "${WORK}/k.jsonl" --format json)
string(JSON on64 GET "${last_out}" by_embedding_version lexical-v1-d64-s0)
expect_eq("${on64}" "51" "records of the store with a damaged line on the new version")

# ---- issue 21, the tester's items on migrate (each exit code and count worked out by hand)
set(L64 "lexical-v1-d64-s0")
# 1. start on a store with nothing to re-embed: declared (exit 0: declaring is all start says it
# does), and it says there is nothing to re-embed; the gate has nothing to compare (exit 2) and
# the switch needs no gate
file(WRITE "${WORK}/empty.jsonl" "")
run("0" "${MEMHEALTH}" migrate start "${WORK}/empty.jsonl" --embedder lexical:64)
expect_in("${last_err}" "declared: 0 records from (none) to ${L64}" "start on an empty store")
expect_in("${last_err}" "nothing to re-embed: the store has no records" "start on an empty store")
run("0" "${MEMHEALTH}" migrate run "${WORK}/empty.jsonl" --embedder lexical:64)
expect_in("${last_err}" "0 records left; next: memhealth migrate switch" "run on an empty store")
run("2" "${MEMHEALTH}" migrate gate "${WORK}/empty.jsonl")
expect_in("${last_err}" "nothing to compare: the migration re-embedded no record" "empty gate")
run("0" "${MEMHEALTH}" migrate switch "${WORK}/empty.jsonl")
file(SIZE "${WORK}/empty.jsonl" esize)
expect_eq("${esize}" "0" "the empty store stays empty")

# 2. the gate before anything was re-embedded: a clear refusal, exit 2, nothing recorded
file(COPY_FILE "${WORK}/j-before.jsonl" "${WORK}/g.jsonl")
run("0" "${MEMHEALTH}" migrate start "${WORK}/g.jsonl" --embedder lexical:64)
run("2" "${MEMHEALTH}" migrate gate "${WORK}/g.jsonl")
expect_in("${last_err}" "nothing re-embedded yet: 51 records are left off ${L64}; run the migration first (memhealth migrate run)" "gate before run")
run("0" "${MEMHEALTH}" migrate status "${WORK}/g.jsonl" --format json)
string(JSON gate_type TYPE "${last_out}" migration gate)
expect_eq("${gate_type}" "NULL" "no gate recorded by the refused gate")

# 3. status after the rollback of the JSONL store J above: rolled back, what is restored, no
# "left" (it was 51 of 51 "left" before)
run("0" "${MEMHEALTH}" migrate status "${J}")
expect_in("${last_out}" "migration 1: rolled_back" "status after rollback")
expect_in("${last_out}" "51 of the 51 records it re-embedded hold their previous vector and version" "status after rollback")
string(FIND "${last_out}" "left" at)
expect_eq("${at}" "-1" "no records 'left' after a rollback")
run("0" "${MEMHEALTH}" migrate status "${J}" --format json)
string(JSON restored GET "${last_out}" migration restored)
string(JSON left_type TYPE "${last_out}" migration left)
expect_eq("${restored}/${left_type}" "51/NULL" "status JSON after rollback")

# 4 and 8. another writer appends a record while `migrate run` runs (10 embeddings per second,
# batches of 10: about 5 s; the append at 1 s): nothing written back, exit 2, no "0 records left";
# the file is the original plus the appended line, byte for byte. The next run re-embeds the 51
# records the file still has on the old versions (the log and the state database held them as
# done) and keeps the appended record's line (no vector, untouched) byte for byte.
file(COPY_FILE "${WORK}/j-before.jsonl" "${WORK}/w.jsonl")
set(AGENT_LINE "{\"content\": \"agent note\", \"id\": \"agent-1\", \"created_at\": \"2024-05-01T10:00:00Z\"}")
run("0" "${MEMHEALTH}" migrate start "${WORK}/w.jsonl" --embedder lexical:64)
execute_process(
  COMMAND "${MEMHEALTH}" migrate run "${WORK}/w.jsonl" --embedder lexical:64 --batch 10 --rate 10
  COMMAND sh -c "sleep 1; printf '%s\\n' '${AGENT_LINE}' >> '${WORK}/w.jsonl'; cat >/dev/null"
  RESULTS_VARIABLE rcs ERROR_VARIABLE err OUTPUT_QUIET)
expect_eq("${rcs}" "2;0" "run while another writer appends: exit codes")
expect_in("${err}" "changed by another writer while this step ran: nothing was written back" "run while another writer appends")
expect_in("${err}" "this step re-embedded 51 records in 6 batches in memory only" "run while another writer appends")
string(FIND "${err}" "records left" at)
expect_eq("${at}" "-1" "no progress claimed for a run not written back")
file(READ "${WORK}/j-before.jsonl" before_text)
file(READ "${WORK}/w.jsonl" w_text)
expect_eq("${w_text}" "${before_text}${AGENT_LINE}\n" "the file after a refused write-back")
run("0" "${MEMHEALTH}" migrate status "${WORK}/w.jsonl" --format json)
string(JSON batches GET "${last_out}" migration batches)
string(JSON left GET "${last_out}" migration left)
string(JSON missing GET "${last_out}" migration not_in_store)
expect_eq("${batches}/${left}/${missing}" "0/51/51" "status after a refused write-back")
# 5. the default log was made before the agent's record was added: continued (matched by id)
run("0" "${MEMHEALTH}" migrate run "${WORK}/w.jsonl" --embedder lexical:64 --batch 100)
expect_in("${last_err}" "51 records of batches logged earlier were not in the store" "run after a refused write-back")
expect_in("${last_err}" "1 batches, 51 records re-embedded" "run after a refused write-back")
file(READ "${WORK}/w.jsonl" w_text)
string(REGEX MATCHALL "\n" newlines "${w_text}")
list(LENGTH newlines nw)
expect_eq("${nw}" "52" "lines in the file after the run")
string(LENGTH "${w_text}" wlen)
string(LENGTH "${AGENT_LINE}\n" alen)
math(EXPR at "${wlen} - ${alen}")
string(SUBSTRING "${w_text}" ${at} -1 tail)
expect_eq("${tail}" "${AGENT_LINE}\n" "the untouched record's line kept byte for byte")
run("0" "${MEMHEALTH}" stats "${WORK}/w.jsonl" --format json)
string(JSON on64 GET "${last_out}" by_embedding_version ${L64})
expect_eq("${on64}" "51" "records on the new version after the second run")
run("0" "${MEMHEALTH}" wal verify "${WORK}/w.jsonl.memhealth-migrate.wal")
# 5. a log of another store is refused with the way out (--wal)
file(WRITE "${WORK}/t.jsonl" "{\"id\":\"t-1\",\"content\":\"one\"}\n{\"id\":\"t-2\",\"content\":\"two\"}\n")
run("0" "${MEMHEALTH}" migrate start "${WORK}/t.jsonl" --embedder lexical:64)
run("2" "${MEMHEALTH}" migrate run "${WORK}/t.jsonl" --embedder lexical:64
    --wal "${WORK}/w.jsonl.memhealth-migrate.wal")
expect_in("${last_err}" "the log was made for another store" "a log of another store")
expect_in("${last_err}" "name a new log for this store with --wal NEW.wal" "a log of another store")

# 6. the path holds another store now: refused, exit 2, nothing written (file, log, state)
file(COPY_FILE "${WORK}/j-before.jsonl" "${WORK}/x.jsonl")
run("0" "${MEMHEALTH}" migrate start "${WORK}/x.jsonl" --embedder lexical:64)
file(COPY_FILE "${WORK}/t.jsonl" "${WORK}/x.jsonl")
run("2" "${MEMHEALTH}" migrate run "${WORK}/x.jsonl" --embedder lexical:64)
expect_in("${last_err}" "migration 1 to ${L64} was declared on another store: 0% of the record ids sampled then are in this store and 100% of this store's ids (of 2 in the sample's range) were not in it; it had 51 records, this store has 2" "run on another store")
execute_process(COMMAND "${CMAKE_COMMAND}" -E compare_files "${WORK}/x.jsonl" "${WORK}/t.jsonl"
                RESULT_VARIABLE differ)
expect_eq("${differ}" "0" "the other store is left as it was")
if(EXISTS "${WORK}/x.jsonl.memhealth-migrate.wal")
  message(FATAL_ERROR "a log was made for a refused run")
endif()
run("2" "${MEMHEALTH}" migrate gate "${WORK}/x.jsonl")
expect_in("${last_err}" "was declared on another store" "gate on another store")
# status too: exit 2, the migration's figures labelled as the state database's, not this store's
run("2" "${MEMHEALTH}" migrate status "${WORK}/x.jsonl")
expect_in("${last_out}" "NOT THIS STORE: migration 1 to ${L64} was declared on another store" "status on another store")
expect_in("${last_out}" "as the state database records it (not compared with this store)" "status on another store")
expect_in("${last_err}" "was declared on another store" "status on another store")
run("2" "${MEMHEALTH}" migrate status "${WORK}/x.jsonl" --format json)
string(JSON other GET "${last_out}" migration another_store)
expect_in("${other}" "was declared on another store" "status JSON on another store")
string(JSON left_type TYPE "${last_out}" migration left)
expect_eq("${left_type}" "NULL" "no 'left' for another store")
# an sqlite: database replaced by another one (another database id) at the same path
run("0" "${MEMHEALTH}" import jsonl "${S}" --out "sqlite:${WORK}/y.db")
run("0" "${MEMHEALTH}" migrate start "sqlite:${WORK}/y.db" --embedder lexical:64)
file(REMOVE "${WORK}/y.db")
run("0" "${MEMHEALTH}" import jsonl "${S}" --out "sqlite:${WORK}/y.db")
run("2" "${MEMHEALTH}" migrate run "sqlite:${WORK}/y.db" --embedder lexical:64)
expect_in("${last_err}" "was declared on another store: database id" "run on another database")

# 7. SIGINT during `migrate run` stops it after the batch in hand: the batches done reach the
# store (the JSONL file is written back), the log's run is closed (`wal verify` passes), and it
# says what was done and how to go on; exit 130 (128 + SIGINT). Deterministic: the test hook
# MEMHEALTH_TEST_MIGRATE_SIGNAL_AFTER raises SIGINT once 2 batches of 10 are committed.
file(COPY_FILE "${WORK}/j-before.jsonl" "${WORK}/s.jsonl")
run("0" "${MEMHEALTH}" migrate start "${WORK}/s.jsonl" --embedder lexical:64)
run("130" "${CMAKE_COMMAND}" -E env MEMHEALTH_TEST_MIGRATE_SIGNAL_AFTER=2
    "${MEMHEALTH}" migrate run "${WORK}/s.jsonl" --embedder lexical:64 --batch 10)
expect_in("${last_err}" "2 batches, 20 records re-embedded" "run interrupted by SIGINT")
expect_in("${last_err}" "interrupted (SIGINT): migration 1 stopped after 2 batches of this run, each committed and in the store; 31 records left. Run `memhealth migrate run ${WORK}/s.jsonl --embedder lexical:64` again to continue, or `memhealth migrate rollback ${WORK}/s.jsonl`" "the hint after SIGINT")
run("0" "${MEMHEALTH}" stats "${WORK}/s.jsonl" --format json)
string(JSON on64 GET "${last_out}" by_embedding_version ${L64})
expect_eq("${on64}" "20" "records on the new version in the file after SIGINT")
run("0" "${MEMHEALTH}" wal verify "${WORK}/s.jsonl.memhealth-migrate.wal")
run("0" "${MEMHEALTH}" migrate status "${WORK}/s.jsonl" --format json)
string(JSON batches GET "${last_out}" migration batches)
string(JSON left GET "${last_out}" migration left)
string(JSON missing GET "${last_out}" migration not_in_store)
string(JSON kept GET "${last_out}" migration previous_vectors_kept)
expect_eq("${batches}/${left}/${missing}/${kept}" "2/31/0/20" "status after SIGINT")
run("0" "${MEMHEALTH}" migrate run "${WORK}/s.jsonl" --embedder lexical:64 --batch 10)
expect_in("${last_err}" "4 batches, 31 records re-embedded" "run after SIGINT")
run("0" "${MEMHEALTH}" wal verify "${WORK}/s.jsonl.memhealth-migrate.wal")
run("0" "${MEMHEALTH}" migrate status "${WORK}/s.jsonl" --format json)
string(JSON batches GET "${last_out}" migration batches)
string(JSON left GET "${last_out}" migration left)
string(JSON kept GET "${last_out}" migration previous_vectors_kept)
string(JSON missing GET "${last_out}" migration not_in_store)
expect_eq("${batches}/${left}/${kept}/${missing}" "6/0/51/0" "status after the run that went on")

# A real signal from outside (not the hook; SIGTERM, as a background job of a shell without job
# control ignores SIGINT): the run waits 5 s for the rate limiter after its first batch (2
# embeddings per second, 10 per batch); the signal comes once the log exists. It stops within one
# token's wait (0.5 s) with exit 143 (128 + SIGTERM) and the hint, wherever it landed.
file(COPY_FILE "${WORK}/j-before.jsonl" "${WORK}/s2.jsonl")
run("0" "${MEMHEALTH}" migrate start "${WORK}/s2.jsonl" --embedder lexical:64)
execute_process(
  COMMAND sh -c "'${MEMHEALTH}' migrate run '${WORK}/s2.jsonl' --embedder lexical:64 --batch 10 --rate 2 & pid=$!; i=0; while [ ! -s '${WORK}/s2.jsonl.memhealth-migrate.wal' ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done; sleep 0.3; kill -TERM $pid; wait $pid; echo \"rc=$?\""
  OUTPUT_VARIABLE out ERROR_VARIABLE err)
expect_in("${out}" "rc=143" "exit after a real SIGTERM")
expect_in("${err}" "interrupted (SIGTERM): migration 1 stopped after" "the hint after a real SIGTERM")
run("0" "${MEMHEALTH}" wal verify "${WORK}/s2.jsonl.memhealth-migrate.wal")

# 8. a hard kill (SIGKILL, through the hook) after 2 committed batches of 10: the JSONL file never
# got them. The rollback closes the log's run and restores nothing (it says the 20 records never
# reached the store, and no "re-embedded"); status then counts nothing restored that never left.
file(COPY_FILE "${WORK}/j-before.jsonl" "${WORK}/h.jsonl")
run("0" "${MEMHEALTH}" migrate start "${WORK}/h.jsonl" --embedder lexical:64)
execute_process(COMMAND "${CMAKE_COMMAND}" -E env MEMHEALTH_TEST_MIGRATE_SIGNAL_AFTER=2:KILL
                        "${MEMHEALTH}" migrate run "${WORK}/h.jsonl" --embedder lexical:64 --batch 10
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
if(rc EQUAL 0)
  message(FATAL_ERROR "the killed run exited 0")
endif()
execute_process(COMMAND "${CMAKE_COMMAND}" -E compare_files "${WORK}/h.jsonl"
                        "${WORK}/j-before.jsonl" RESULT_VARIABLE differ)
expect_eq("${differ}" "0" "the file after SIGKILL")
run("0" "${MEMHEALTH}" migrate status "${WORK}/h.jsonl" --format json)
string(JSON missing GET "${last_out}" migration not_in_store)
expect_eq("${missing}" "20" "status after SIGKILL: batches in the log, not in the file")
run("0" "${MEMHEALTH}" migrate rollback "${WORK}/h.jsonl")
expect_in("${last_err}" "rolled back: 0 records given their previous vector and version back" "rollback after SIGKILL")
expect_in("${last_err}" "20 records of batches the log holds never reached the store" "rollback after SIGKILL")
string(FIND "${last_err}" "re-embedded" at)
expect_eq("${at}" "-1" "a rollback re-embeds nothing")
run("0" "${MEMHEALTH}" wal verify "${WORK}/h.jsonl.memhealth-migrate.wal")
run("0" "${MEMHEALTH}" migrate status "${WORK}/h.jsonl" --format json)
string(JSON restored GET "${last_out}" migration restored)
string(JSON kept GET "${last_out}" migration previous_vectors_kept)
string(JSON complete GET "${last_out}" migration rollback_complete)
expect_eq("${restored}/${kept}/${complete}" "0/0/ON" "status after the rollback of a killed run")

# 9. a rollback that leaves a record as another writer changed it: exit 3, and status says so
# (50 restored, 1 not, and why), exit 3 as well
file(COPY_FILE "${WORK}/j-before.jsonl" "${WORK}/p.jsonl")
run("0" "${MEMHEALTH}" migrate start "${WORK}/p.jsonl" --embedder lexical:64)
run("0" "${MEMHEALTH}" migrate run "${WORK}/p.jsonl" --embedder lexical:64)
file(READ "${WORK}/p.jsonl" ptext)
string(REPLACE "Alice never eats cilantro." "Alice never eats coriander." ptext2 "${ptext}")
if(ptext2 STREQUAL ptext)
  message(FATAL_ERROR "the record to change was not found")
endif()
file(WRITE "${WORK}/p.jsonl" "${ptext2}")
run("3" "${MEMHEALTH}" migrate rollback "${WORK}/p.jsonl")
expect_in("${last_err}" "rolled back: 50 records given their previous vector and version back" "partial rollback")
expect_in("${last_err}" "1 changed since by another writer (left as they are)" "partial rollback")
run("3" "${MEMHEALTH}" migrate status "${WORK}/p.jsonl")
expect_in("${last_out}" "rolled back at" "status after a partial rollback")
expect_in("${last_out}" ", PARTLY: 50 of the 51 records it re-embedded hold their previous vector and version again; not restored: 1 changed by another writer after the migration wrote them" "status after a partial rollback")
string(FIND "${last_out}" "the store is on its previous versions" at)
expect_eq("${at}" "-1" "no claim that the store is back after a partial rollback")
run("3" "${MEMHEALTH}" migrate status "${WORK}/p.jsonl" --format json)
string(JSON restored GET "${last_out}" migration restored)
string(JSON not_restored GET "${last_out}" migration not_restored)
string(JSON complete GET "${last_out}" migration rollback_complete)
expect_eq("${restored}/${not_restored}/${complete}" "50/1/OFF" "status JSON after a partial rollback")

# 10. Issue 21's migration on a LoCoMo import (tests/data/locomo/26.json: 184 observation records,
# counted in cli_roundtrip.cmake), from the 384-d to the 128-d lexical embedder: start, run in
# batches (2 of 50, stopped: 84 left; then the rest), gate, switch, rollback. Nothing is lost at
# any step (184 records throughout), the switch leaves one version, and after the rollback the
# store, exported as canonical JSONL, is byte-identical to the import (the old vectors are back).
set(LOCOMO "${SOURCE_DIR}/tests/data/locomo/26.json")
set(LM "sqlite:${WORK}/locomo.db")
set(L128 "lexical-v1-d128-s0")
run("0" "${MEMHEALTH}" import locomo "${LOCOMO}" --out "${LM}" --embed lexical --dim 384)
run("0" "${MEMHEALTH}" import sqlite "${LM}" --out "${WORK}/locomo-before.jsonl")
run("0" "${MEMHEALTH}" migrate start "${LM}" --embedder lexical:128)
expect_in("${last_err}" "184 records from lexical-v1-d384-s0 to ${L128}" "locomo start")
run("3" "${MEMHEALTH}" migrate run "${LM}" --embedder lexical:128 --batch 50 --max-batches 2)
expect_in("${last_err}" "2 batches, 100 records re-embedded" "locomo run part 1")
expect_in("${last_err}" "84 records left" "locomo run part 1")
run("0" "${MEMHEALTH}" migrate status "${LM}" --format json)
string(JSON on_new GET "${last_out}" versions ${L128})
string(JSON on_old GET "${last_out}" versions lexical-v1-d384-s0)
string(JSON nrec GET "${last_out}" records)
expect_eq("${nrec}/${on_new}/${on_old}" "184/100/84" "locomo status after part 1")
run("0" "${MEMHEALTH}" migrate run "${LM}" --embedder lexical:128 --batch 50)
expect_in("${last_err}" "2 batches, 84 records re-embedded" "locomo run part 2")
# the lexical stand-ins are not semantic (see the gate above): the default bar fails, a lower one
# passes
run("1" "${MEMHEALTH}" migrate gate "${LM}")
run("2" "${MEMHEALTH}" migrate switch "${LM}")
run("0" "${MEMHEALTH}" migrate gate "${LM}" --min-overlap 0.55 --min-rank-correlation 0.2)
expect_in("${last_out}" "PASS" "locomo gate with a lower bar")
run("0" "${MEMHEALTH}" migrate switch "${LM}")
run("0" "${MEMHEALTH}" migrate status "${LM}" --format json)
string(JSON st GET "${last_out}" migration status)
string(JSON on_new GET "${last_out}" versions ${L128})
string(JSON nver LENGTH "${last_out}" versions)
string(JSON nrec GET "${last_out}" records)
expect_eq("${st}/${nrec}/${on_new}/${nver}" "switched/184/184/1" "locomo status after the switch")
run("0" "${MEMHEALTH}" import sqlite "${LM}" --out "${WORK}/locomo-switched.jsonl")
execute_process(COMMAND "${CMAKE_COMMAND}" -E compare_files "${WORK}/locomo-before.jsonl"
                        "${WORK}/locomo-switched.jsonl" RESULT_VARIABLE differ)
if(differ EQUAL 0)
  message(FATAL_ERROR "locomo: the switched store equals the import")
endif()
run("0" "${MEMHEALTH}" migrate rollback "${LM}" --batch 50)
expect_in("${last_err}" "184 records given their previous vector and version back" "locomo rollback")
run("0" "${MEMHEALTH}" import sqlite "${LM}" --out "${WORK}/locomo-after.jsonl")
execute_process(COMMAND "${CMAKE_COMMAND}" -E compare_files "${WORK}/locomo-before.jsonl"
                        "${WORK}/locomo-after.jsonl" RESULT_VARIABLE differ)
expect_eq("${differ}" "0" "locomo: the store after the rollback equals the import")
run("0" "${MEMHEALTH}" migrate status "${LM}" --format json)
string(JSON st GET "${last_out}" migration status)
string(JSON on_old GET "${last_out}" versions lexical-v1-d384-s0)
expect_eq("${st}/${on_old}" "rolled_back/184" "locomo status after the rollback")
