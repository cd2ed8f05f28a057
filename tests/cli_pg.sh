#!/usr/bin/env bash
# The memhealth tool on postgresql:// stores (ctest pg.cli, fixture pg_cluster): a mem0-shaped
# table checked, planned, previewed (--dry-run prints SQL, writes nothing), repaired in place,
# rolled back to the exact rows (unmapped columns never change), recovered clean; a URI with a
# password is refused without printing it; a mapping naming a missing column is a clear error;
# check --workers 1|2, and --workers 0 with a `memhealth worker` process, give the same report;
# plan --workers gives the same plan; a scope split into k-means blocks gives the same report and
# plan; apply --report and the repair history across runs (history, review release); review
# list|show|approve|reject; check --since; import into memhealth's own schema; watch --once
# (findings, a row inserted between polls, --repair in place and its rollback, a server that is
# down); index build|check of a mapped table's vectors; rows not read whole as load issues;
# SIGTERM of a --workers run drops its tables.
# usage: tests/cli_pg.sh MEMHEALTH CLUSTER_DIR WORK_DIR
set -euo pipefail
mh="$1"
cluster="$2"
work="$3"
if [ ! -s "$cluster/conninfo" ]; then
  why="$(cat "$cluster/unavailable" 2>/dev/null || echo "the fixture did not start a server")"
  if [ "${MEMHEALTH_REQUIRE_PG:-0}" = "1" ]; then
    echo "cli_pg: MEMHEALTH_REQUIRE_PG=1 but no PostgreSQL test server: $why" >&2
    exit 1
  fi
  echo "memhealth-skip: no PostgreSQL test server: $why"
  exit 0
fi
base="$(cat "$cluster/conninfo")"
uri="$base&options=-csearch_path%3Dcli"
rm -rf "$work"
mkdir -p "$work"
cd "$work"
fail() {
  echo "cli_pg: FAILED: $*" >&2
  exit 1
}
sql() { psql -X -q -v ON_ERROR_STOP=1 -At "$uri" -c "$1"; }
psql -X -q -v ON_ERROR_STOP=1 "$base" -c "DROP SCHEMA IF EXISTS cli CASCADE" -c "CREATE SCHEMA cli" 2>/dev/null
sql "CREATE TABLE mem0 (id uuid PRIMARY KEY, vector real[], payload jsonb, note text)"
row() {  # row N TEXT USER VECTOR
  sql "INSERT INTO mem0 VALUES ('00000000-0000-0000-0000-00000000000$1', '$4', jsonb_build_object('data', '$2', 'user_id', '$3', 'created_at', '2024-03-01T09:30:00.000Z', 'updated_at', '2024-03-02T09:00:00.000Z', 'hash', 'h$1', 'metadata', jsonb_build_object('topic', 't$1')), 'note $1')"
}
row 1 "The user lives in Berlin." alice "{0.5,0.5,0.5,0.5}"
row 2 "The user lives in Berlin." alice "{0.5,0.5,0.5,0.5}"
row 3 "The user likes green tea." alice "{0.5,-0.5,0.5,-0.5}"
row 4 "The user plays the cello." bob "{0.6,0.8,0,0}"
dump="SELECT id, vector::text, payload::text, note FROM mem0 ORDER BY id"
sql "$dump" >before.txt

# check: the report names the server without the connection string's options
"$mh" check "$uri" --mapping mem0 --format json --now 2024-03-10T00:00:00Z --out check.json --exit-zero
grep -q '"exact_duplicate"' check.json || fail "check found no exact_duplicate"
grep -q 'search_path' check.json && fail "check.json shows the connection string"
grep -q '"store": "postgresql://memhealth@' check.json || fail "check.json does not name the server"
grep -q '"store": "postgresql://memhealth@[^"]* table mem0"' check.json || fail "check.json does not name the table"
"$mh" check "$uri" --mapping mem0 --now 2024-03-10T00:00:00Z --exit-zero >check.txt 2>/dev/null
head -1 check.txt | grep -q '^memhealth check postgresql://memhealth@.* table mem0$' || fail "the check's header does not name the table: $(head -1 check.txt)"

# import postgresql: the table's rows (as check reads them) into a JSONL file, whose check is the
# table's check (the store's name aside); stats of the table under its mapping
"$mh" import postgresql "$uri" --mapping mem0 --out export.jsonl 2>exp.err || fail "import postgresql: $(cat exp.err)"
[ "$(grep -c . export.jsonl)" = "4" ] || fail "import postgresql: not 4 records"
"$mh" check export.jsonl --format json --now 2024-03-10T00:00:00Z --out check-exp.json --exit-zero 2>/dev/null
python3 -c "
import json
a, b = json.load(open('check.json')), json.load(open('check-exp.json'))
a.pop('store'); b.pop('store')
assert a == b, 'differ'" || fail "the check of the exported rows differs from the table's"
"$mh" stats "$uri" --mapping mem0 >stats.txt 2>&1 || fail "stats: $(cat stats.txt)"
grep -q "^store: postgresql://memhealth@.*/postgres$" stats.txt || fail "stats names the store with its options: $(head -1 stats.txt)"
grep -q "  user:alice: 3" stats.txt || fail "stats: not alice's 3 records (scope user:alice, as import mem0)"
for fmt in jsonl postgresql; do
  set +e
  "$mh" import "$fmt" "postgresql://memhealth:hunter2-pw@localhost/postgres" --out pwimp.jsonl >pwi.out 2>pwi.err
  rc=$?
  set -e
  [ "$rc" -eq 2 ] || fail "import $fmt of a URI with a password: exit $rc, expected 2"
  grep -q "hunter2" pwi.out pwi.err && fail "import $fmt printed the password"
done

# --mapping with no postgresql:// store is refused (it would be ignored): exit 2, nothing done
set +e
"$mh" check export.jsonl --mapping mem0 --out nomap.txt 2>nomap.err
rc=$?
set -e
[ "$rc" -eq 2 ] || fail "--mapping with a JSONL store: exit $rc, expected 2"
grep -q "no store here is one" nomap.err || fail "--mapping with a JSONL store: $(cat nomap.err)"
[ -e nomap.txt ] && fail "--mapping with a JSONL store wrote a report"

# the single-process check reads scope by scope without a job table: a role that may only
# SELECT the table gets the same report (its user name aside) and nothing is created
sql "DROP OWNED BY mh_reader; DROP ROLE mh_reader" 2>/dev/null || true
sql "CREATE ROLE mh_reader LOGIN; GRANT USAGE ON SCHEMA cli TO mh_reader; GRANT SELECT ON mem0 TO mh_reader"
ro_uri="${uri/user=memhealth/user=mh_reader}"
"$mh" check "$ro_uri" --mapping mem0 --format json --now 2024-03-10T00:00:00Z --out check-ro.json \
  --exit-zero 2>ro.err || fail "check as a read-only role: $(cat ro.err)"
sed 's/mh_reader@/memhealth@/' check-ro.json | cmp -s check.json - ||
  fail "check as a read-only role: another report"
# each job reads its scope: without an index on mem0's payload #>> '{user_id}' the check says so
grep -qF "CREATE INDEX ON mem0 ((NULLIF(substr(COALESCE('user:' || (CASE WHEN jsonb_typeof((payload #> '{user_id}'))" ro.err ||
  fail "no index hint: $(cat ro.err)"
# the hint, run as given, is the index the jobs' reads use
idx="$(sed -n 's/.*CREATE INDEX ON mem0 \(.*\) makes the check faster$/\1/p' ro.err)"
sql "CREATE INDEX mem0_user ON mem0 $idx"
"$mh" check "$ro_uri" --mapping mem0 --format json --now 2024-03-10T00:00:00Z --out check-ro2.json \
  --exit-zero 2>ro2.err || fail "check with the index: $(cat ro2.err)"
grep -q "no index" ro2.err && fail "an index hint with the index: $(cat ro2.err)"
cmp -s check-ro.json check-ro2.json || fail "check with the index: another report"
sql "DROP INDEX mem0_user"
[ "$(sql "SELECT count(*) FROM pg_tables WHERE schemaname = 'cli' AND tablename ~ '^memhealth_'")" = "0" ] ||
  fail "the single-process check created tables"
set +e
"$mh" check "$ro_uri" --mapping mem0 --workers 1 --out /dev/null 2>row.err
rc=$?
set -e
[ "$rc" -ne 0 ] || fail "--workers as a role without CREATE: exit 0"
grep -q "cannot create the run's tables" row.err || fail "--workers without CREATE: $(cat row.err)"
sql "REVOKE ALL ON mem0 FROM mh_reader; REVOKE USAGE ON SCHEMA cli FROM mh_reader; DROP ROLE mh_reader"

# --workers: the report of 1 and 2 worker threads is the single-process report, byte for byte
# (--job-records 1: one job per scope, alice and bob: 2 jobs)
for n in 1 2; do
  "$mh" check "$uri" --mapping mem0 --format json --now 2024-03-10T00:00:00Z --out "check-w$n.json" \
    --exit-zero --workers "$n" --job-records 1 2>"w$n.err" || fail "--workers $n: $(cat "w$n.err")"
  cmp -s check.json "check-w$n.json" || fail "--workers $n: another report than the single-process check"
  grep -q "2 jobs, 2 claims" "w$n.err" || fail "--workers $n: $(cat "w$n.err")"
done
# --workers 0 and a `memhealth worker` process (as on another machine) started with the run id
"$mh" check "$uri" --mapping mem0 --format json --now 2024-03-10T00:00:00Z --out check-w0.json \
  --exit-zero --workers 0 --job-records 1 2>w0.err &
coordinator=$!
run=""
for _ in $(seq 1 300); do
  run="$(sed -n 's/^memhealth check: run \([a-z0-9]*\) .*/\1/p' w0.err)"
  [ -n "$run" ] && break
  sleep 0.1
done
[ -n "$run" ] || fail "--workers 0 printed no run id: $(cat w0.err)"
"$mh" worker "$uri" --run "$run" 2>worker.err || fail "worker: $(cat worker.err)"
grep -q "2 job(s) done" worker.err || fail "worker: $(cat worker.err)"
wait "$coordinator" || fail "--workers 0: $(cat w0.err)"
cmp -s check.json check-w0.json || fail "--workers 0 + worker: another report"
# a worker given other detection settings than the check is refused (exit 2)
set +e
"$mh" worker "$uri" --run "$run" --threshold 0.5 >ws.out 2>ws.err
rc=$?
set -e
[ "$rc" -eq 2 ] || fail "worker after the run: exit $rc, expected 2"
grep -q "there is no run" ws.err || fail "worker after the run: $(cat ws.err)"

# a password on the command line is refused and never printed
set +e
"$mh" check "postgresql://memhealth:hunter2-pw@localhost/postgres" --mapping mem0 >pw.out 2>pw.err
rc=$?
set -e
[ "$rc" -eq 2 ] || fail "a URI with a password: exit $rc, expected 2"
grep -q "contains a password" pw.err || fail "a URI with a password: no clear error"
grep -q "hunter2" pw.out pw.err && fail "the password was printed"

# a mapping naming a missing column: a clear error before anything runs
echo '{"table": "mem0", "key": ["id"], "id": "id", "fields": {"content": "payload->data", "kind": "kind"}, "vector": "vector"}' >bad.json
set +e
"$mh" check "$uri" --mapping bad.json >bad.out 2>bad.err
rc=$?
set -e
[ "$rc" -eq 2 ] || fail "a missing column: exit $rc, expected 2"
grep -q "table 'mem0' has no column 'kind'" bad.err || fail "a missing column: $(cat bad.err)"
set +e
"$mh" check "$uri" --mapping bad.json --workers 2 >badw.out 2>badw.err
rc=$?
set -e
[ "$rc" -eq 2 ] || fail "a missing column, --workers: exit $rc, expected 2"
grep -q "table 'mem0' has no column 'kind'" badw.err || fail "a missing column, --workers: $(cat badw.err)"
[ "$(sql "SELECT count(*) FROM pg_tables WHERE schemaname = 'cli' AND tablename ~ '^memhealth_(run|jobs|results)_'")" = "0" ] ||
  fail "a failed --workers check left tables behind"

"$mh" plan "$uri" --mapping mem0 --now 2024-03-10T00:00:00Z --out plan.json 2>plan.err
# plan --workers: the plan made from the workers' merged findings (on the rows of the run's
# snapshot) is the single-process plan, byte for byte
for n in 1 2; do
  "$mh" plan "$uri" --mapping mem0 --now 2024-03-10T00:00:00Z --out "plan-w$n.json" \
    --workers "$n" --job-records 1 2>"pw$n.err" || fail "plan --workers $n: $(cat "pw$n.err")"
  cmp -s plan.json "plan-w$n.json" || fail "plan --workers $n: another plan than the single-process plan"
  grep -q "2 jobs, 2 claims" "pw$n.err" || fail "plan --workers $n: $(cat "pw$n.err")"
done
# the table's plan (checked job by job, its rows held without their vectors) has the actions of
# the plan of the exported rows, made from the whole file in memory (the header names the store)
"$mh" plan export.jsonl --now 2024-03-10T00:00:00Z --out plan-exp.json 2>plan-exp.err || fail "plan of the export: $(cat plan-exp.err)"
[ "$(grep -c . plan.json)" -ge 2 ] || fail "the table's plan has no action"
tail -n +2 plan.json | cmp -s - <(tail -n +2 plan-exp.json) || fail "the table's plan differs from the plan of its exported rows"
# --approve (its dry run needs the rows with their vectors) writes the same plan
"$mh" plan "$uri" --mapping mem0 --now 2024-03-10T00:00:00Z --out plan-ap.json --approve tier2 2>plan-ap.err || fail "plan --approve: $(cat plan-ap.err)"
cmp -s plan.json plan-ap.json || fail "plan --approve wrote another plan"
grep -q "^with approval tier2: [1-9][0-9]* would run" plan-ap.err || fail "plan --approve: $(cat plan-ap.err)"
# a mapping that gives the scope no place: the whole table is read and planned as a file is
echo '{"table": "mem0", "key": ["id"], "id": "id", "fields": {"content": "payload->data"}, "vector": "vector"}' >noscope.json
"$mh" plan "$uri" --mapping noscope.json --now 2024-03-10T00:00:00Z --out plan-ns.json 2>plan-ns.err || fail "plan, no scope: $(cat plan-ns.err)"
"$mh" import postgresql "$uri" --mapping noscope.json --out export-ns.jsonl 2>/dev/null || fail "import postgresql, no scope"
"$mh" plan export-ns.jsonl --now 2024-03-10T00:00:00Z --out plan-ns-exp.json 2>/dev/null || fail "plan of the export, no scope"
[ "$(grep -c . plan-ns.json)" -ge 2 ] || fail "plan, no scope: no action"
tail -n +2 plan-ns.json | cmp -s - <(tail -n +2 plan-ns-exp.json) || fail "plan, no scope: another plan than its export's"
set +e
"$mh" plan before.txt --out plan-x.json --workers 1 >px.out 2>px.err
rc=$?
set -e
[ "$rc" -eq 2 ] || fail "plan --workers on a file: exit $rc, expected 2"
grep -q "needs a postgresql:// store" px.err || fail "plan --workers on a file: $(cat px.err)"
# dry run: the SQL on stdout, nothing written
"$mh" apply "$uri" --mapping mem0 --plan plan.json --wal run.wal --out "$uri" --approve tier2 --dry-run >dry.sql 2>dry.err
grep -q '^UPDATE "mem0" AS t SET "payload" = jsonb_set(' dry.sql || fail "dry run printed no UPDATE: $(cat dry.sql dry.err)"
[ ! -e run.wal ] || fail "the dry run wrote the log"
sql "$dump" | cmp -s - before.txt || fail "the dry run changed the table"
# without --approve every (tier-2) action waits: the dry run and the run say how to approve them
# and exit 4, nothing written (own log and state database: the history below starts clean)
mkdir -p noapp
set +e
"$mh" apply "$uri" --mapping mem0 --plan plan.json --wal noapp/n.wal --out "$uri" --dry-run >/dev/null 2>noapp/dry.err
rc=$?
set -e
[ "$rc" -eq 4 ] || fail "dry run without --approve: exit $rc, expected 4: $(cat noapp/dry.err)"
grep -q "dry run: nothing would run (every action awaits approval); exit 4" noapp/dry.err || fail "dry run without --approve: $(cat noapp/dry.err)"
set +e
"$mh" apply "$uri" --mapping mem0 --plan plan.json --wal noapp/n.wal --state noapp/state.db --out "$uri" 2>noapp/run.err
rc=$?
set -e
[ "$rc" -eq 4 ] || fail "apply without --approve: exit $rc, expected 4: $(cat noapp/run.err)"
grep -q "the actions awaiting approval run with --approve tier2" noapp/run.err || fail "apply without --approve: $(cat noapp/run.err)"
grep -q "^memhealth apply: nothing ran (every action awaits approval); exit 4$" noapp/run.err || fail "apply without --approve: $(cat noapp/run.err)"
sql "$dump" | cmp -s - before.txt || fail "apply without --approve changed the table"

# the plan applied to another table (schema cli2: the same shape, other ids) is refused before
# anything is written: exit 2, no log, no row changed (the plan's store fingerprint)
psql -X -q -v ON_ERROR_STOP=1 "$base" -c "DROP SCHEMA IF EXISTS cli2 CASCADE" -c "CREATE SCHEMA cli2" 2>/dev/null
uri2="$base&options=-csearch_path%3Dcli2"
psql -X -q -v ON_ERROR_STOP=1 -At "$uri2" -c "CREATE TABLE mem0 (id uuid PRIMARY KEY, vector real[], payload jsonb, note text)"
for n in 5 6 7 8; do
  psql -X -q -v ON_ERROR_STOP=1 -At "$uri2" -c "INSERT INTO mem0 VALUES ('00000000-0000-0000-0000-00000000009$n', '{0.5,0.5,0.5,0.5}', jsonb_build_object('data', 'The user lives in Berlin.', 'user_id', 'alice', 'created_at', '2024-03-01T09:30:00.000Z', 'updated_at', '2024-03-02T09:00:00.000Z', 'hash', 'h$n'), 'note $n')"
done
psql -X -q -v ON_ERROR_STOP=1 -At "$uri2" -c "$dump" >other-before.txt
set +e
"$mh" apply "$uri2" --mapping mem0 --plan plan.json --wal other.wal --out "$uri2" --approve tier2 >other.out 2>other.err
rc=$?
set -e
[ "$rc" -eq 2 ] || fail "a plan of another table: exit $rc, expected 2: $(cat other.err)"
grep -q "was made for another store" other.err || fail "a plan of another table: $(cat other.err)"
grep -q "nothing was written" other.err || fail "a plan of another table: $(cat other.err)"
[ ! -e other.wal ] || fail "a plan of another table: the log was written"
psql -X -q -v ON_ERROR_STOP=1 -At "$uri2" -c "$dump" | cmp -s - other-before.txt || fail "a plan of another table changed its rows"
psql -X -q -v ON_ERROR_STOP=1 "$base" -c "DROP SCHEMA cli2 CASCADE" 2>/dev/null

# apply in place, then rollback to the exact rows
"$mh" apply "$uri" --mapping mem0 --plan plan.json --wal run.wal --out "$uri" --approve tier2 2>apply.err
sql "$dump" >after.txt
cmp -s after.txt before.txt && fail "apply changed nothing: $(cat apply.err)"
[ "$(sql "SELECT payload->'memhealth'->>'status' FROM mem0 WHERE id = '00000000-0000-0000-0000-000000000002'")" = "archived" ] ||
  fail "the duplicate is not archived"
[ "$(sql "SELECT string_agg(note || '/' || (payload->>'hash'), ',' ORDER BY id) FROM mem0")" = "note 1/h1,note 2/h2,note 3/h3,note 4/h4" ] ||
  fail "an unmapped column or key changed"
grep -q "search_path" apply.err run.wal && fail "the connection string was logged"
# apply reads only the plan's rows and checks the table job by job before and after: the same
# findings counts as the apply of the exported rows' plan to the export, in memory
"$mh" apply export.jsonl --plan plan-exp.json --wal exp.wal --out exp-after.jsonl --approve tier2 2>exp-apply.err ||
  fail "apply of the export: $(cat exp-apply.err)"
counts() { grep -o "findings [0-9]* -> [0-9]*" "$1"; }
[ -n "$(counts apply.err)" ] && [ "$(counts apply.err)" = "$(counts exp-apply.err)" ] ||
  fail "apply of the table and of its export differ: $(cat apply.err exp-apply.err)"
# the log names the mapping it was written under: rollback and recover under another mapping of
# the same table are refused before anything is written (exit 2)
echo '{"table": "mem0", "key": ["id"], "id": "id", "fields": {"content": "payload->data", "scope": "payload->user_id"}, "vector": "vector"}' >other-map.json
for cmd in rollback recover; do
  set +e
  "$mh" "$cmd" "$uri" --mapping other-map.json --wal run.wal --out "$uri" >om.out 2>om.err
  rc=$?
  set -e
  [ "$rc" -eq 2 ] || fail "$cmd under another mapping: exit $rc, expected 2: $(cat om.err)"
  grep -q "written under another mapping of the table: mapping mem0, [0-9a-f]\{16\}, this run reads it under mapping other-map.json" om.err ||
    fail "$cmd under another mapping: $(cat om.err)"
  sql "$dump" | cmp -s - after.txt || fail "$cmd under another mapping changed rows"
done
"$mh" recover "$uri" --mapping mem0 --wal run.wal --out "$uri" 2>recover.err || fail "recover: $(cat recover.err)"
sql "$dump" | cmp -s - after.txt || fail "recover changed a clean store"
"$mh" rollback "$uri" --mapping mem0 --wal run.wal --out "$uri" 2>rollback.err || fail "rollback: $(cat rollback.err)"
sql "$dump" | cmp -s - before.txt || fail "rollback did not restore the rows exactly"
# an action over two records (a conflict: the later statement supersedes, the earlier one is
# archived) whose winner the agent edits after the apply: rollback restores the loser, leaves the
# winner (a conflict, exit 3) and names the action as only partly undone; --force then writes
# the winner's before-image too, and the rows are the first ones again
partdb="$base&options=-csearch_path%3Dclipart"
psql -X -q -v ON_ERROR_STOP=1 "$base" -c "DROP SCHEMA IF EXISTS clipart CASCADE" -c "CREATE SCHEMA clipart" 2>/dev/null
psql -X -q -v ON_ERROR_STOP=1 "$partdb" \
  -c "CREATE TABLE mem0 (id uuid PRIMARY KEY, vector real[], payload jsonb)" \
  -c "INSERT INTO mem0 VALUES ('00000000-0000-0000-0000-000000000001', '{0.6,0.8,0,0}', '{\"data\": \"The user lives in Berlin.\", \"user_id\": \"alice\", \"created_at\": \"2024-01-01T09:00:00.000Z\", \"updated_at\": \"2024-01-01T09:00:00.000Z\"}'), ('00000000-0000-0000-0000-000000000002', '{0.8,0.6,0,0}', '{\"data\": \"The user lives in Madrid.\", \"user_id\": \"alice\", \"created_at\": \"2024-03-01T09:00:00.000Z\", \"updated_at\": \"2024-03-01T09:00:00.000Z\"}')"
pdump="SELECT id, vector::text, payload::text FROM mem0 ORDER BY id"
psql -X -q -At "$partdb" -c "$pdump" >part-before.txt
mkdir -p part
"$mh" plan "$partdb" --mapping mem0 --now 2024-03-10T00:00:00Z --out part/plan.json 2>part/plan.err || fail "plan (part): $(cat part/plan.err)"
"$mh" apply "$partdb" --mapping mem0 --plan part/plan.json --wal part/p.wal --out "$partdb" --approve tier2 2>part/apply.err || fail "apply (part): $(cat part/apply.err)"
[ "$(psql -X -q -At "$partdb" -c "SELECT payload->'memhealth'->>'status' FROM mem0 WHERE id = '00000000-0000-0000-0000-000000000001'")" = "archived" ] ||
  fail "apply (part): the earlier statement is not archived: $(cat part/apply.err)"
psql -X -q -v ON_ERROR_STOP=1 "$partdb" -c "UPDATE mem0 SET payload = jsonb_set(payload, '{data}', '\"The user lives in Madrid, Spain.\"') WHERE id = '00000000-0000-0000-0000-000000000002'"
set +e
"$mh" rollback "$partdb" --mapping mem0 --wal part/p.wal --out "$partdb" 2>part/rb.err
rc=$?
set -e
[ "$rc" -eq 3 ] || fail "rollback after an agent edit: exit $rc, expected 3: $(cat part/rb.err)"
grep -q "INCOMPLETE:.*; 1 actions only partly undone (their other records were restored" part/rb.err || fail "rollback after an agent edit: $(cat part/rb.err)"
[ "$(psql -X -q -At "$partdb" -c "SELECT payload->'memhealth'->>'status' FROM mem0 WHERE id = '00000000-0000-0000-0000-000000000001'")" = "" ] ||
  fail "rollback after an agent edit: the earlier statement is still archived"
[ "$(psql -X -q -At "$partdb" -c "SELECT payload->>'data' FROM mem0 WHERE id = '00000000-0000-0000-0000-000000000002'")" = "The user lives in Madrid, Spain." ] ||
  fail "rollback after an agent edit overwrote the agent's edit"
"$mh" rollback "$partdb" --mapping mem0 --wal part/p.wal --out "$partdb" --force 2>part/rbf.err || fail "rollback --force: $(cat part/rbf.err)"
psql -X -q -At "$partdb" -c "$pdump" | cmp -s - part-before.txt || fail "rollback --force did not restore the rows exactly"
psql -X -q -v ON_ERROR_STOP=1 "$base" -c "DROP SCHEMA clipart CASCADE" 2>/dev/null

# apply --report and the repair history across runs (state database hist/memhealth-state.db, next
# to the logs): run 1 repairs and reports; rollback; run 2 a day later sees the faults back
# (recurred) and does not fight the rollback (the action was done before: manual queue, exit 3,
# nothing written); `memhealth history` gives 0 % success; `review release` lets run 3 apply it.
pyjson() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); $2" "$1"; }
mkdir -p hist
"$mh" check "$uri" --mapping mem0 --format json --now 2024-03-10T00:00:00Z --out check-before.json --exit-zero
"$mh" apply "$uri" --mapping mem0 --plan plan.json --wal hist/r1.wal --out "$uri" --approve tier2 \
  --now 2024-03-10T00:00:00Z --report hist/r1.json 2>hist/r1.err || fail "apply --report: $(cat hist/r1.err)"
sql "$dump" >hist/after1.txt
"$mh" check "$uri" --mapping mem0 --format json --now 2024-03-10T00:00:00Z --out check-after.json --exit-zero
grep -q "search_path" hist/r1.json hist/r1.err && fail "the report shows the connection string"
# rows written by run 1 = lines of the dump that differ; counts before/after = the check's
changed="$(diff before.txt hist/after1.txt | grep -c '^>' || true)"
[ "$changed" -ge 1 ] || fail "apply --report changed no row"
pyjson hist/r1.json "
b = json.load(open('check-before.json')); a = json.load(open('check-after.json'))
def kinds(r):
    k = {}
    for f in r['findings']: k[f['kind']] = k.get(f['kind'], 0) + 1
    return k
def errs(r): return sum(f['severity'] in ('error', 'critical') for f in r['findings'])
assert d['store'].startswith('postgresql://memhealth@'), d['store']
assert d['store'] == d['out'], (d['store'], d['out'])
assert d['failed'] == 0 and d['applied'] >= 1, d
assert d['records_changed'] == $changed, (d['records_changed'], $changed)
assert d['findings_before'] == kinds(b), (d['findings_before'], kinds(b))
assert d['findings_after'] == kinds(a), (d['findings_after'], kinds(a))
assert 'exact_duplicate' in d['findings_before'] and 'exact_duplicate' not in d['findings_after']
h = d['audit']['across_runs']
assert ' table cli.mem0' in h['store'] and 'memhealth@' not in h['store'], h['store']
assert h['repaired'] >= 1 and h['too_early'] == h['repaired'], h
assert h['held'] == 0 and h['recurred'] == 0 and h['success_rate'] is None, h
assert h['uptime']['runs'] == 2, h['uptime']
assert h['uptime']['clean_runs'] == (errs(b) == 0) + (errs(a) == 0), h['uptime']
assert {f['kind'] for f in h['faults']} >= {'exact_duplicate'}, h['faults']
" || fail "apply --report: $(cat hist/r1.json)"
"$mh" rollback "$uri" --mapping mem0 --wal hist/r1.wal --out "$uri" 2>hist/rb1.err || fail "rollback 1: $(cat hist/rb1.err)"
sql "$dump" | cmp -s - before.txt || fail "rollback 1 did not restore the rows"
set +e
"$mh" apply "$uri" --mapping mem0 --plan plan.json --wal hist/r2.wal --out "$uri" --approve tier2 \
  --now 2024-03-11T00:00:00Z --report hist/r2.md 2>hist/r2.err
rc=$?
set -e
[ "$rc" -eq 3 ] || fail "run 2 after the rollback: exit $rc, expected 3: $(cat hist/r2.err)"
grep -q "done in an earlier run" hist/r2.err || fail "run 2: no word of the earlier run: $(cat hist/r2.err)"
# the file apply's closing lines: the failed actions named, the manual queue's release command
grep -q "actions failed in this run and wait in the manual queue: .*memhealth review release URI --mapping mem0 ID --state hist/memhealth-state.db" hist/r2.err ||
  fail "run 2: no manual-queue line: $(cat hist/r2.err)"
grep -q "^memhealth apply: [1-9][0-9]* actions failed; exit 3$" hist/r2.err || fail "run 2: no exit line: $(cat hist/r2.err)"
sql "$dump" | cmp -s - before.txt || fail "run 2 wrote rows an earlier run repaired and a rollback undid"
grep -q "^## Across runs" hist/r2.md || fail "run 2's Markdown report has no Across runs"
# a dry run consults the same history (read only): it says what run 2 said and writes nothing
state_sum="$(sha256sum hist/memhealth-state.db)"
set +e
"$mh" apply "$uri" --mapping mem0 --plan plan.json --wal hist/dry2.wal --out "$uri" --approve tier2 \
  --now 2024-03-11T00:00:00Z --dry-run >hist/dry2.sql 2>hist/dry2.err
rc=$?
set -e
[ "$rc" -eq 3 ] || fail "a dry run after run 2: exit $rc, expected 3: $(cat hist/dry2.err)"
grep -q "done in an earlier run" hist/dry2.err || fail "the dry run did not consult the history: $(cat hist/dry2.err)"
grep -q "^memhealth apply: dry run: [1-9][0-9]* would fail, 0 stale; exit 3 (as the run would)$" hist/dry2.err ||
  fail "the dry run's exit line: $(cat hist/dry2.err)"
grep -q "repair history of .*memhealth-state.db consulted, not written" hist/dry2.err || fail "dry run: $(cat hist/dry2.err)"
[ "$(sha256sum hist/memhealth-state.db)" = "$state_sum" ] || fail "the dry run wrote the state database"
[ ! -e hist/dry2.wal ] || fail "the dry run wrote a log"
# a spent run budget refuses the dry run as it refuses the real run (exit 2), taking nothing
set +e
"$mh" apply "$uri" --mapping mem0 --plan plan.json --wal hist/dry3.wal --out "$uri" --approve tier2 \
  --now 2024-03-11T00:00:00Z --dry-run --max-runs-per-day 1 >/dev/null 2>hist/dry3.err
rc=$?
set -e
[ "$rc" -eq 2 ] || fail "a dry run over a spent budget: exit $rc, expected 2: $(cat hist/dry3.err)"
grep -q "run budget: [1-9][0-9]* repair runs already today" hist/dry3.err || fail "dry run, budget: $(cat hist/dry3.err)"
[ "$(sha256sum hist/memhealth-state.db)" = "$state_sum" ] || fail "the dry run over a spent budget wrote the state database"
"$mh" history "$uri" --mapping mem0 --state hist/memhealth-state.db --now 2024-03-11T00:00:00.001Z \
  --format json >hist/h.json 2>hist/h.err || fail "history: $(cat hist/h.err)"
pyjson hist/h.json "
r1 = json.load(open('hist/r1.json'))['audit']['across_runs']
assert d['store'] == r1['store'], (d['store'], r1['store'])
assert d['repaired'] == r1['repaired'] and d['recurred'] == d['repaired'], d
assert d['held'] == 0 and d['too_early'] == 0 and d['success_rate'] == 0.0, d
assert all(f['recurred_at'] == '2024-03-11T00:00:00.000Z' for f in d['faults']), d['faults']
assert d['uptime']['runs'] == 4, d['uptime']
" || fail "history after the rollback: $(cat hist/h.json)"
# release the action (its id from the plan), then run 3 applies it again
key="$(python3 -c "
import json
acts = [json.loads(l) for l in open('plan.json') if l.strip()][1:]
print([a['idempotency_key'] for a in acts if a['type'] == 'merge_duplicates'][0])")"
set +e
"$mh" review release "$uri" --mapping mem0 "${key:0:12}" --reviewer ana --reason "rolled back on purpose" >rel.out 2>rel.err
rc=$?
set -e
[ "$rc" -eq 2 ] || fail "review release without --state: exit $rc, expected 2"
grep -q "name it with --state FILE" rel.err || fail "review release without --state: $(cat rel.err)"
"$mh" review release "$uri" --mapping mem0 --state hist/memhealth-state.db "${key:0:12}" \
  --reviewer ana --reason "rolled back on purpose" 2>hist/rel.err || fail "review release: $(cat hist/rel.err)"
grep -q "released ${key:0:16}" hist/rel.err || fail "review release: $(cat hist/rel.err)"
"$mh" apply "$uri" --mapping mem0 --plan plan.json --wal hist/r3.wal --out "$uri" --approve tier2 \
  --now 2024-03-12T00:00:00Z 2>hist/r3.err || fail "run 3 after the release: $(cat hist/r3.err)"
sql "$dump" | cmp -s - hist/after1.txt || fail "run 3 did not make run 1's rows"
"$mh" rollback "$uri" --mapping mem0 --wal hist/r3.wal --out "$uri" 2>hist/rb3.err || fail "rollback 3: $(cat hist/rb3.err)"
sql "$dump" | cmp -s - before.txt || fail "rollback 3 did not restore the rows"
set +e
"$mh" apply "$uri" --mapping mem0 --plan plan.json --wal hist/dry.wal --out "$uri" --dry-run --report hist/dry.md >/dev/null 2>hist/dry.err
rc=$?
set -e
[ "$rc" -eq 2 ] || fail "--dry-run --report: exit $rc, expected 2"
grep -q "not with --dry-run" hist/dry.err || fail "--dry-run --report: $(cat hist/dry.err)"

# review on a postgresql:// store: the queue in the state database (--state), an approved item
# applied through the store's per-action transactions and the log (--wal). Nothing in the tool
# queues items for a postgresql:// store yet (the watch does for sqlite: stores), so the test
# queues two as the watch would (review_items rows).
python3 - "$key" <<'PY' || fail "cannot queue review items"
import json, sqlite3, sys, time
scope = json.load(open('hist/r1.json'))['audit']['across_runs']['store']
acts = [json.loads(l) for l in open('plan.json') if l.strip()][1:]
act = [a for a in acts if a['idempotency_key'] == sys.argv[1]][0]
db = sqlite3.connect('hist/memhealth-state.db')
for key in (sys.argv[1], 'feedfacefeedface'):
    db.execute("INSERT INTO review_items(action_key, type, tier, targets, action, reason, queued_ms, status, "
               "fingerprint, decided_by, decided_ms, decision_note, defer_until_ms, apply_after_ms) "
               "VALUES(?, ?, ?, ?, ?, 'queued by the test', ?, 'pending', '', '', 0, '', 0, 0)",
               (scope + '\x1f' + key, act['type'], act['tier'], json.dumps(act['targets']), json.dumps(act),
                int(time.time() * 1000)))
db.commit()
PY
"$mh" review list "$uri" --mapping mem0 --state hist/memhealth-state.db --format json >rv-list.json 2>rv-list.err ||
  fail "review list: $(cat rv-list.err)"
python3 -c "
import json; d = json.load(open('rv-list.json'))
assert d['store'].startswith('postgresql://memhealth@') and 'search_path' not in d['store'], d['store']
assert sorted(i['id'] for i in d['items']) == sorted(['$key', 'feedfacefeedface']), d['items']
assert all(i['status'] == 'pending' and i['type'] == 'merge_duplicates' for i in d['items'])" ||
  fail "review list: $(cat rv-list.json)"
"$mh" review show "$uri" --mapping mem0 --state hist/memhealth-state.db "${key:0:10}" >rv-show.json 2>rv-show.err ||
  fail "review show: $(cat rv-show.err)"
python3 -c "
import json; d = json.load(open('rv-show.json'))
now = d['records_now']
assert now['00000000-0000-0000-0000-000000000001']['content'] == 'The user lives in Berlin.', now
assert now['00000000-0000-0000-0000-000000000002']['status'] == 'active', now" || fail "review show: $(cat rv-show.json)"
set +e
"$mh" review approve "$uri" --mapping mem0 --state hist/memhealth-state.db "${key:0:10}" --reviewer ana --reason ok >rv-a.out 2>rv-a.err
rc=$?
set -e
[ "$rc" -eq 2 ] || fail "review approve without --wal: exit $rc, expected 2"
grep -q "name the write-ahead log with --wal FILE" rv-a.err || fail "review approve without --wal: $(cat rv-a.err)"
sql "$dump" | cmp -s - before.txt || fail "a refused approval wrote rows"
"$mh" review approve "$uri" --mapping mem0 --state hist/memhealth-state.db "${key:0:10}" --reviewer ana \
  --reason "checked the rows" --wal hist/review.wal 2>rv-a2.err || fail "review approve: $(cat rv-a2.err)"
grep -q "1 approved and applied through hist/review.wal, 0 not applied" rv-a2.err || fail "review approve: $(cat rv-a2.err)"
sql "$dump" | cmp -s - hist/after1.txt || fail "review approve did not make run 1's rows"
"$mh" review reject "$uri" --mapping mem0 --state hist/memhealth-state.db feedface --reviewer ana --reason "not this one" 2>rv-r.err ||
  fail "review reject: $(cat rv-r.err)"
"$mh" review list "$uri" --mapping mem0 --state hist/memhealth-state.db --status all --format json >rv-all.json
python3 -c "
import json; d = {i['id']: i for i in json.load(open('rv-all.json'))['items']}
assert d['$key']['status'] == 'approved' and d['$key']['decided_by'] == 'ana', d
assert d['feedfacefeedface']['status'] == 'rejected' and d['feedfacefeedface']['decision_note'] == 'not this one', d" ||
  fail "review list --status all: $(cat rv-all.json)"
# the earlier decision stays in the note (who rejected it, and why)
"$mh" review defer "$uri" --mapping mem0 --state hist/memhealth-state.db feedface --for 2d --reviewer ana --reason "later" 2>rv-d.err ||
  fail "review defer: $(cat rv-d.err)"
"$mh" review list "$uri" --mapping mem0 --state hist/memhealth-state.db --status deferred --format json >rv-def.json
python3 -c "
import json; d = json.load(open('rv-def.json'))['items']
assert [i['id'] for i in d] == ['feedfacefeedface'] and d[0]['decision_note'] == 'later; earlier: rejected by ana (not this one)', d" ||
  fail "review defer: $(cat rv-def.json)"
set +e
"$mh" review defer "$uri" --mapping mem0 --state hist/memhealth-state.db "${key:0:10}" --reviewer ana --reason x >rv-d2.out 2>rv-d2.err
rc=$?
set -e
[ "$rc" -eq 2 ] || fail "deferring an approved item: exit $rc, expected 2"
grep -q "was approved and applied" rv-d2.err || fail "deferring an approved item: $(cat rv-d2.err)"
"$mh" rollback "$uri" --mapping mem0 --wal hist/review.wal --out "$uri" 2>rv-rb.err || fail "rollback of the approval: $(cat rv-rb.err)"
sql "$dump" | cmp -s - before.txt || fail "rollback of the approval did not restore the rows"

# check --since on a postgresql:// store (state in --state FILE, bound to the table): the first
# run is a full run; an unchanged table reports nothing; a row whose text now duplicates others
# (its mapped updated_at moved) is the only one checked, and its findings are reported (every one
# names it: rows 1 and 2 were exact duplicates before, and only now with row 3).
sincedb="$base&options=-csearch_path%3Dclisince"
psql -X -q -v ON_ERROR_STOP=1 "$base" -c "DROP SCHEMA IF EXISTS clisince CASCADE" -c "CREATE SCHEMA clisince" \
  -c "CREATE TABLE clisince.mem0 AS SELECT id, vector, payload FROM cli.mem0" \
  -c "ALTER TABLE clisince.mem0 ADD PRIMARY KEY (id)" 2>/dev/null
set +e
"$mh" check "$sincedb" --mapping mem0 --since last >since0.out 2>since0.err
rc=$?
set -e
[ "$rc" -eq 2 ] || fail "check --since without --state: exit $rc, expected 2"
grep -q "name it with --state FILE" since0.err || fail "check --since without --state: $(cat since0.err)"
"$mh" check "$sincedb" --mapping mem0 --since last --state since.db --now 2024-03-10T00:00:00Z \
  --format json --out since1.json --exit-zero 2>since1.err || fail "check --since (first): $(cat since1.err)"
grep -q "no cursor yet, a full run; 4 of 4 records" since1.err || fail "check --since (first): $(cat since1.err)"
"$mh" check "$sincedb" --mapping mem0 --format json --now 2024-03-10T00:00:00Z --out since-full.json --exit-zero
python3 -c "
import json; a = json.load(open('since1.json')); b = json.load(open('since-full.json'))
assert a['findings'] == b['findings'], 'the first --since run is not the full run'
assert len(a['findings']) > 0" || fail "check --since (first): another report than the full check"
"$mh" check "$sincedb" --mapping mem0 --since last --state since.db --now 2024-03-10T01:00:00Z \
  --format json --out since2.json 2>since2.err || fail "check --since (unchanged): $(cat since2.err)"
grep -q "; 0 of 4 records to check" since2.err || fail "check --since (unchanged): $(cat since2.err)"
python3 -c "
import json; a = json.load(open('since2.json'))
assert a['findings'] == [], a['findings']" || fail "check --since (unchanged) reported findings"
psql -X -q -v ON_ERROR_STOP=1 "$sincedb" -c "UPDATE mem0 SET payload = payload || jsonb_build_object('data', 'The user lives in Berlin.', 'updated_at', '2024-03-10T00:30:00.000Z') WHERE id = '00000000-0000-0000-0000-000000000003'"
"$mh" check "$sincedb" --mapping mem0 --since last --state since.db --now 2024-03-10T02:00:00Z \
  --format json --out since3.json --exit-zero 2>since3.err || fail "check --since (one changed): $(cat since3.err)"
grep -q "; 1 of 4 records to check" since3.err || fail "check --since (one changed): $(cat since3.err)"
python3 -c "
import json; a = json.load(open('since3.json'))
ids = '00000000-0000-0000-0000-00000000000'
assert a['findings'], 'no finding for the changed row'
assert all(ids + '3' in f['record_ids'] for f in a['findings']), a['findings']
dups = [f for f in a['findings'] if f['kind'] == 'exact_duplicate']
assert any({ids + '1', ids + '2', ids + '3'} <= set(f['record_ids']) for f in dups), dups
" || fail "check --since (one changed): $(cat since3.json)"
# the state belongs to this table: another table is refused (the scope names server and table)
set +e
"$mh" check "$uri" --mapping mem0 --since last --state since.db >since4.out 2>since4.err
rc=$?
set -e
[ "$rc" -eq 2 ] || fail "check --since on another table: exit $rc, expected 2"
grep -q "table clisince.mem0', not of 'postgresql://.* table cli.mem0'" since4.err ||
  fail "check --since on another table: $(cat since4.err)"
psql -X -q -v ON_ERROR_STOP=1 "$base" -c "DROP SCHEMA clisince CASCADE" 2>/dev/null

# import into memhealth's own schema (a new store in that database; an existing one is refused)
importdb="$base&options=-csearch_path%3Dcliimport"
psql -X -q -v ON_ERROR_STOP=1 "$base" -c "DROP SCHEMA IF EXISTS cliimport CASCADE" -c "CREATE SCHEMA cliimport" 2>/dev/null
srcjsonl="$work/import-src.jsonl"
cat >"$srcjsonl" <<'JSONL'
{"id":"m1","content":"The user lives in Berlin.","embedding":[0.5,0.5,0.5,0.5],"scope":"user:alice","status":"active","updated_at":"2024-03-02T09:00:00.000Z","metadata":{"topic":"home"}}
{"id":"m2","content":"The user lives in Berlin.","embedding":[0.5,0.5,0.5,0.5],"scope":"user:alice","status":"active","updated_at":"2024-03-02T09:00:00.000Z"}
{"id":"m3","content":"The user likes green tea.","embedding":[0.5,-0.5,0.5,-0.5],"scope":"user:alice","status":"active","updated_at":"2024-03-02T09:00:00.000Z"}
{"id":"m4","content":"The user plays the cello.","embedding":[0.6,0.8,0,0],"scope":"user:bob","status":"active","updated_at":"2024-03-02T09:00:00.000Z","related_ids":["m9"]}
JSONL
"$mh" import jsonl "$srcjsonl" --out "$importdb" 2>imp.err || fail "import into PostgreSQL: $(cat imp.err)"
grep -q "search_path" imp.err && fail "import printed the connection string"
[ "$(psql -X -q -At "$importdb" -c "SELECT count(*) FROM memhealth_records")" = "$(grep -c . "$srcjsonl")" ] ||
  fail "import: not every record is in memhealth_records"
"$mh" check "$importdb" --format json --now 2024-03-10T00:00:00Z --out imp-check.json --exit-zero 2>/dev/null ||
  fail "check of the imported store"
"$mh" check "$srcjsonl" --format json --now 2024-03-10T00:00:00Z --out imp-file.json --exit-zero 2>/dev/null
python3 -c "
import json; a = json.load(open('imp-check.json')); b = json.load(open('imp-file.json'))
assert a['findings'] == b['findings'], 'the imported store is checked otherwise than its source file'
assert a['summary']['records_total'] == b['summary']['records_total']" || fail "import: another check than the source's"
set +e
"$mh" import jsonl "$srcjsonl" --out "$importdb" >imp2.out 2>imp2.err
rc=$?
set -e
[ "$rc" -eq 2 ] || fail "import into an existing memhealth store: exit $rc, expected 2"
grep -q "memhealth_records already exists" imp2.err || fail "import again: $(cat imp2.err)"
[ "$(psql -X -q -At "$importdb" -c "SELECT count(*) FROM memhealth_records")" = "$(grep -c . "$srcjsonl")" ] ||
  fail "import again changed the store"
# plan, apply and rollback on memhealth's own schema (no --mapping; a tester found apply refused
# there: its log label digested the mapping file form the own schema does not have). The merge
# of m1/m2 is applied (one of them archived as a duplicate), then rolled back to identical rows.
owndump="SELECT seq, id, scope, status, updated_at, metadata::text, claim::text, embedding::text, embedding_version, record FROM memhealth_records ORDER BY seq"
psql -X -q -At "$importdb" -c "$owndump" >own-before.txt
"$mh" plan "$importdb" --now 2024-03-10T00:00:00Z --out own-plan.json 2>own-plan.err || fail "plan on the own schema: $(cat own-plan.err)"
"$mh" apply "$importdb" --plan own-plan.json --wal own.wal --state own-state.db --out "$importdb" --approve tier2 2>own-apply.err ||
  fail "apply on the own schema: $(cat own-apply.err)"
[ "$(psql -X -q -At "$importdb" -c "SELECT count(*) FROM memhealth_records WHERE status = 'archived'")" = 1 ] ||
  fail "apply on the own schema archived no duplicate: $(cat own-apply.err)"
"$mh" rollback "$importdb" --wal own.wal --out "$importdb" 2>own-rb.err || fail "rollback on the own schema: $(cat own-rb.err)"
psql -X -q -At "$importdb" -c "$owndump" | cmp -s - own-before.txt || fail "rollback on the own schema did not restore the rows"
psql -X -q -v ON_ERROR_STOP=1 "$base" -c "DROP SCHEMA cliimport CASCADE" 2>/dev/null

# a scope above --job-records that the check partitions (--block-above 1000: 1100 rows, 3
# k-means partitions) is split into 3 block jobs beside its own: check and plan with workers are
# the single-process ones, byte for byte. Rows 1-10 repeat rows 11-20 (10 exact duplicates).
bigdb="$base&options=-csearch_path%3Dcliblocks"
psql -X -q -v ON_ERROR_STOP=1 "$base" -c "DROP SCHEMA IF EXISTS cliblocks CASCADE" -c "CREATE SCHEMA cliblocks" 2>/dev/null
psql -X -q -v ON_ERROR_STOP=1 "$bigdb" \
  -c "CREATE TABLE mem0 (id uuid PRIMARY KEY, vector real[], payload jsonb)" \
  -c "INSERT INTO mem0 SELECT md5(i::text)::uuid, ARRAY(SELECT (('x' || substr(md5(CASE WHEN i <= 10 THEN i + 10 ELSE i END || ':' || k), 1, 8))::bit(32)::int)::real / 2147483648 FROM generate_series(1, 32) k), jsonb_build_object('data', 'The user noted the topic ' || translate(md5(CASE WHEN i <= 10 THEN i + 10 ELSE i END::text), '0123456789', 'ghijklmnop') || '.', 'user_id', 'big', 'created_at', '2024-03-01T09:30:00.000Z', 'updated_at', '2024-03-02T09:00:00.000Z') FROM generate_series(1, 1100) i"
opts=(--mapping mem0 --now 2024-03-10T00:00:00Z --block-above 1000)
"$mh" check "$bigdb" "${opts[@]}" --format json --out big.json --exit-zero 2>big.err || fail "big check: $(cat big.err)"
[ "$(grep -c '"kind": "exact_duplicate"' big.json)" = "10" ] || fail "big check: not the 10 planted exact duplicates"
"$mh" plan "$bigdb" "${opts[@]}" --out bigplan.json 2>bigplan.err || fail "big plan: $(cat bigplan.err)"
# the same actions as the plan of the exported rows, checked and planned in memory
"$mh" import postgresql "$bigdb" --mapping mem0 --out big.jsonl 2>bigexp.err || fail "big export: $(cat bigexp.err)"
"$mh" plan big.jsonl --now 2024-03-10T00:00:00Z --block-above 1000 --out bigplan-exp.json 2>bigplan-exp.err ||
  fail "plan of the big export: $(cat bigplan-exp.err)"
[ "$(grep -c . bigplan.json)" -ge 11 ] || fail "big plan: fewer than 10 actions"
tail -n +2 bigplan.json | cmp -s - <(tail -n +2 bigplan-exp.json) || fail "the big table's plan differs from the plan of its exported rows"
for n in 1 2; do
  "$mh" check "$bigdb" "${opts[@]}" --format json --out "big-w$n.json" --exit-zero --workers "$n" \
    --job-records 500 2>"bw$n.err" || fail "big --workers $n: $(cat "bw$n.err")"
  grep -q "4 jobs, 4 claims" "bw$n.err" || fail "big --workers $n: not 3 blocks and the scope's job: $(cat "bw$n.err")"
  cmp -s big.json "big-w$n.json" || fail "big --workers $n: another report than the single-process check"
  "$mh" plan "$bigdb" "${opts[@]}" --out "bigplan-w$n.json" --workers "$n" --job-records 500 \
    2>"bpw$n.err" || fail "big plan --workers $n: $(cat "bpw$n.err")"
  cmp -s bigplan.json "bigplan-w$n.json" || fail "big plan --workers $n: another plan than the single-process plan"
done
psql -X -q -v ON_ERROR_STOP=1 "$base" -c "DROP SCHEMA cliblocks CASCADE" 2>/dev/null

# migrate without --state: refused (exit 2); the URI is not printed
set +e
"$mh" migrate status "$uri" >mg.out 2>mg.err
rc=$?
set -e
[ "$rc" -eq 2 ] || fail "migrate status on postgresql:// without --state: exit $rc, expected 2"
grep -q -- "--state: a postgresql:// store" mg.err || fail "migrate status without --state: $(cat mg.err)"
grep -q "search_path" mg.err && fail "migrate printed the connection string"

# --out elsewhere is refused (repairs are in place)
set +e
"$mh" rollback "$uri" --mapping mem0 --wal run.wal --out other.jsonl >/dev/null 2>out.err
rc=$?
set -e
[ "$rc" -eq 2 ] || fail "--out elsewhere: exit $rc, expected 2"
grep -q "repaired in place" out.err || fail "--out elsewhere: $(cat out.err)"

# migrate on a postgresql:// store (in place, --state required): five mem0 rows with 4-d vectors
# of version old-v1 (payload->memhealth holds the version) are re-embedded by the 8-d lexical
# stand-in in two resumed runs (batches of 2: 2 + 1 batches), gated, switched, and rolled back
# within the window to the exact rows; the previous vectors live in the state database
migdb="$base&options=-csearch_path%3Dclimig"
psql -X -q -v ON_ERROR_STOP=1 "$base" -c "DROP SCHEMA IF EXISTS climig CASCADE" -c "CREATE SCHEMA climig" 2>/dev/null
msql() { psql -X -q -v ON_ERROR_STOP=1 -At "$migdb" -c "$1"; }
msql "CREATE TABLE mem0 (id uuid PRIMARY KEY, vector real[], payload jsonb)"
texts=("The user lives in Berlin." "The user likes green tea." "The user plays the cello." "The user has a cat named Tom." "The user works as a nurse.")
vecs=("{0.5,0.5,0.5,0.5}" "{0.5,-0.5,0.5,-0.5}" "{0.6,0.8,0,0}" "{0,0.6,0.8,0}" "{0,0,0.6,0.8}")
for i in 0 1 2 3 4; do
  msql "INSERT INTO mem0 VALUES ('00000000-0000-0000-0000-00000000010$i', '${vecs[$i]}', jsonb_build_object('data', '${texts[$i]}', 'user_id', 'alice', 'created_at', '2024-03-01T09:30:00.000Z', 'memhealth', jsonb_build_object('embedding_version', 'old-v1')))"
done
mdump="SELECT id, vector::text, payload::text FROM mem0 ORDER BY id"
msql "$mdump" >mig-before.txt
m=(--mapping mem0 --state mig-state.db)
set +e
"$mh" migrate start "$migdb" --mapping mem0 --embedder lexical:8 >/dev/null 2>mig-nostate.err
rc=$?
set -e
[ "$rc" -eq 2 ] || fail "migrate start without --state: exit $rc, expected 2"
grep -q -- "--state: a postgresql:// store" mig-nostate.err || fail "migrate without --state: $(cat mig-nostate.err)"
"$mh" migrate start "$migdb" "${m[@]}" --embedder lexical:8 2>mig-start.err || fail "migrate start: $(cat mig-start.err)"
grep -q "5 records from old-v1 to lexical-v1-d8-s0" mig-start.err || fail "migrate start: $(cat mig-start.err)"
grep -q "search_path" mig-start.err && fail "migrate start printed the connection string"
set +e
"$mh" migrate run "$migdb" "${m[@]}" --embedder lexical:8 --batch 2 --max-batches 2 2>mig-run1.err
rc=$?
set -e
[ "$rc" -eq 3 ] || fail "migrate run part 1: exit $rc, expected 3: $(cat mig-run1.err)"
grep -q "2 batches, 4 records re-embedded" mig-run1.err || fail "migrate run part 1: $(cat mig-run1.err)"
grep -q "1 records left" mig-run1.err || fail "migrate run part 1: $(cat mig-run1.err)"
[ "$(msql "SELECT count(*) FROM mem0 WHERE payload->'memhealth'->>'embedding_version' = 'lexical-v1-d8-s0' AND array_length(vector, 1) = 8")" = "4" ] ||
  fail "after part 1 the table does not hold 4 rows of 8-d vectors of the new version"
"$mh" migrate run "$migdb" "${m[@]}" --embedder lexical:8 --batch 2 2>mig-run2.err || fail "migrate run part 2: $(cat mig-run2.err)"
grep -q "1 batches, 1 records re-embedded" mig-run2.err || fail "migrate run part 2: $(cat mig-run2.err)"
grep -q "search_path" mig-run1.err mig-run2.err mig-state.db.migrate.wal && fail "migrate run printed or logged the connection string"
"$mh" migrate status "$migdb" "${m[@]}" --format json >mig-status.json
python3 -c "import json,sys; j=json.load(open('mig-status.json')); m=j['migration']; sys.exit(0 if (m['status'], m['batches'], m['left'], m['previous_vectors_kept'], j['versions']) == ('running', 3, 0, 5, {'lexical-v1-d8-s0': 5}) else 1)" ||
  fail "migrate status: $(cat mig-status.json)"
"$mh" migrate gate "$migdb" "${m[@]}" --sample 5 --k 2 --min-overlap 0 --min-rank-correlation -1 >mig-gate.out 2>&1 || fail "migrate gate: $(cat mig-gate.out)"
grep -q "from old-v1: PASS on 5 of 5 records re-embedded" mig-gate.out || fail "migrate gate: $(cat mig-gate.out)"
"$mh" migrate switch "$migdb" "${m[@]}" 2>mig-switch.err || fail "migrate switch: $(cat mig-switch.err)"
"$mh" migrate rollback "$migdb" "${m[@]}" --batch 2 2>mig-rb.err || fail "migrate rollback: $(cat mig-rb.err)"
grep -q "5 records given their previous vector and version back through mig-state.db.migrate.wal (3 actions)" mig-rb.err ||
  fail "migrate rollback: $(cat mig-rb.err)"
msql "$mdump" | cmp -s - mig-before.txt || fail "migrate rollback did not restore the rows exactly"
psql -X -q -v ON_ERROR_STOP=1 "$base" -c "DROP SCHEMA climig CASCADE" 2>/dev/null
# watch on a postgresql:// store (mem0 mapping, state in --state FILE, findings log beside it):
# without --state, exit 2; a poll reports the planted exact duplicate (rows 1, 2), conflict (rows
# 3, 4: cos 0.8, Acme / Globex) and illegal status (row 5); a row the agent inserts before the next
# --once run (row 6, a third copy of row 1's text) is the only new fault: the duplicate cluster
# {1,2} resolved, {1,2,6} reported; --repair --wal applies the tier-1 repair (row 5's status to
# pending_review, in the table), queues the tier-2 merge and conflict (what `review list` shows
# for that URI), and `rollback` gives back the exact rows; `review approve` of the queued merge
# applies it in the table (rolled back exactly too); a server that is down is a failed poll
# (exit 2 with --once); the URI's options are never printed.
if "$mh" --help | grep -q "^  watch"; then
  wdb="$base&options=-csearch_path%3Dcliwatch"
  psql -X -q -v ON_ERROR_STOP=1 "$base" -c "DROP SCHEMA IF EXISTS cliwatch CASCADE" -c "CREATE SCHEMA cliwatch" 2>/dev/null
  wsql() { psql -X -q -v ON_ERROR_STOP=1 -At "$wdb" -c "$1"; }
  psql -X -q -v ON_ERROR_STOP=1 "$wdb" <<'SQL'
CREATE TABLE mem0 (id uuid PRIMARY KEY, vector real[], payload jsonb, note text);
CREATE FUNCTION mins_ago(m int) RETURNS text LANGUAGE sql AS $f$
  SELECT to_char((now() - make_interval(mins => m)) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') $f$;
CREATE FUNCTION p(txt text, usr text, age int) RETURNS jsonb LANGUAGE sql AS $f$
  SELECT jsonb_build_object('data', txt, 'user_id', usr, 'created_at', mins_ago(age), 'updated_at', mins_ago(age),
                            'memhealth', jsonb_build_object('source', 'user_declared')) $f$;
INSERT INTO mem0 VALUES
  ('00000000-0000-0000-0000-000000000001', '{0.5,0.5,0.5,0.5}', p('The user lives in Berlin.', 'alice', 120), 'note 1'),
  ('00000000-0000-0000-0000-000000000002', '{0.5,0.5,0.5,0.5}', p('The user lives in Berlin.', 'alice', 110), 'note 2'),
  ('00000000-0000-0000-0000-000000000003', '{0.6,0,0,0.8}', p('User works at Acme.', 'bob', 100), 'note 3'),
  ('00000000-0000-0000-0000-000000000004', '{0,0,0,1}', p('User works at Globex.', 'bob', 10), 'note 4'),
  ('00000000-0000-0000-0000-000000000005', '{0,0.8,0,0.6}',
   p('The user plays the cello.', 'carol', 90) || '{"memhealth": {"source": "user_declared", "status": "bogus"}}', 'note 5');
SQL
  wid="00000000-0000-0000-0000-00000000000"
  set +e
  "$mh" watch "$wdb" --mapping mem0 --once >wt0.out 2>wt0.err
  rc=$?
  set -e
  [ "$rc" -eq 2 ] || fail "watch on postgresql:// without --state: exit $rc, expected 2"
  grep -q "name the state database with --state FILE" wt0.err || fail "watch without --state: $(cat wt0.err)"
  grep -q "search_path" wt0.err && fail "watch printed the connection string"
  # a configuration error the server answers at the first poll (no table mem0 in that schema):
  # exit 2, and the state database and findings log this run created are not left behind
  set +e
  "$mh" watch "$base&options=-csearch_path%3Dno_such_schema" --mapping mem0 --state litter.db --once \
    >wl.out 2>wl.err
  rc=$?
  set -e
  [ "$rc" -eq 2 ] || fail "watch of a missing table: exit $rc, expected 2: $(cat wl.err)"
  grep -q "there is no table" wl.err || fail "watch of a missing table: $(cat wl.err)"
  for f in litter.db litter.db-wal litter.db-shm litter.db.findings.jsonl; do
    [ ! -e "$f" ] || fail "a refused watch left $f behind"
  done
  # the first poll: every row new; the three planted faults reported, exit 0 (as for a file)
  "$mh" watch "$wdb" --mapping mem0 --state w.db --once 2>wt1.err || fail "watch --once: $(cat wt1.err)"
  grep -q "5 records, 5 new or changed, 0 removed" wt1.err || fail "watch --once (first): $(cat wt1.err)"
  grep -q "search_path" wt1.err && fail "watch printed the connection string"
  [ -s w.db.findings.jsonl ] || fail "no findings log beside the state database (w.db.findings.jsonl)"
  # the findings (event, kind, sorted ids) of a log's lines [from, to)
  wlog() { python3 -c "
import json, sys
lines = open('w.db.findings.jsonl').read().splitlines()[int(sys.argv[1]):]
for l in lines:
    e = json.loads(l)
    print(e['event'], e['finding']['kind'], ','.join(i[-1] for i in sorted(e['finding']['record_ids'])))
" "$1"; }
  wlog 0 >wt1.events
  # exactly the three planted faults (every row has a source, and no vector a zero tail)
  [ "$(sort wt1.events | tr '\n' ';')" = "finding conflict 3,4;finding exact_duplicate 1,2;finding illegal_status 5;" ] ||
    fail "the first poll's findings: $(cat wt1.events)"
  n1="$(wc -l <w.db.findings.jsonl)"
  # the agent inserts row 6 (a third copy of row 1's text); the next --once run with the same
  # state checks it and reports only what it changed: {1,2} resolved (the cluster grew), {1,2,6}
  wsql "INSERT INTO mem0 VALUES ('${wid}6', '{0.5,0.5,0.5,0.5}', p('The user lives in Berlin.', 'alice', 5), 'note 6')"
  "$mh" watch "$wdb" --mapping mem0 --state w.db --once 2>wt2.err || fail "watch --once (second): $(cat wt2.err)"
  grep -q "6 records, 1 new or changed, 0 removed" wt2.err || fail "watch --once (second): $(cat wt2.err)"
  wlog "$n1" >wt2.events
  [ "$(sort wt2.events | tr '\n' ';')" = "finding exact_duplicate 1,2,6;resolved exact_duplicate 1,2;" ] ||
    fail "the second poll reported more or less than the new fault: $(cat wt2.events)"
  # --repair needs a repair log
  set +e
  "$mh" watch "$wdb" --mapping mem0 --state w.db --once --repair >wt3.out 2>wt3.err
  rc=$?
  set -e
  [ "$rc" -eq 2 ] || fail "watch --repair without --wal: exit $rc, expected 2"
  grep -q "name the write-ahead log with --wal FILE" wt3.err || fail "watch --repair without --wal: $(cat wt3.err)"
  wdump="SELECT id, vector::text, payload::text, note FROM mem0 ORDER BY id"
  wsql "$wdump" >w-before.txt
  # --repair: the repairs planned from a full run; tier 1 applied in the table, tier 2 queued
  "$mh" watch "$wdb" --mapping mem0 --state w.db --once --repair --wal w.wal 2>wt4.err ||
    fail "watch --repair: $(cat wt4.err)"
  grep -q "repairs: 3 planned, 1 applied (1 records), 0 already applied, 2 queued for review" wt4.err ||
    fail "watch --repair: $(cat wt4.err)"
  [ "$(wsql "SELECT payload->'memhealth'->>'status' FROM mem0 WHERE id = '${wid}5'")" = "pending_review" ] ||
    fail "the tier-1 repair did not set row 5's status: $(cat wt4.err)"
  wsql "$wdump" | diff - w-before.txt | grep '^[<>]' >w-changed.txt || true
  [ "$(wc -l <w-changed.txt)" -eq 2 ] && [ "$(grep -c "^[<>] ${wid}5|" w-changed.txt)" -eq 2 ] ||
    fail "the watch's repairs wrote another row than row 5: $(cat w-changed.txt)"
  [ "$(wsql "SELECT string_agg(note, ',' ORDER BY id) FROM mem0")" = "note 1,note 2,note 3,note 4,note 5,note 6" ] ||
    fail "an unmapped column changed"
  grep -q "search_path" wt4.err w.wal && fail "the connection string was logged"
  "$mh" review list "$wdb" --mapping mem0 --state w.db --format json >w-rv.json 2>w-rv.err ||
    fail "review list: $(cat w-rv.err)"
  python3 -c "
import json; d = json.load(open('w-rv.json'))
got = sorted((i['type'], ','.join(t[-1] for t in sorted(i['targets']))) for i in d['items'])
assert got == [('merge_duplicates', '1,2,6'), ('resolve_conflict', '3,4')], got" ||
    fail "review list after watch --repair: $(cat w-rv.json)"
  "$mh" rollback "$wdb" --mapping mem0 --wal w.wal --out "$wdb" 2>w-rb.err || fail "rollback: $(cat w-rb.err)"
  wsql "$wdump" | cmp -s - w-before.txt || fail "rollback did not restore the watch's repair exactly"
  # the queue of one table is not shown for another (a tester's `review list` of another table
  # with this state showed 0 items, exit 0): refused as check --since and watch refuse it
  psql -X -q -v ON_ERROR_STOP=1 "$base" -c "DROP SCHEMA IF EXISTS cliwatch2 CASCADE" -c "CREATE SCHEMA cliwatch2" \
    -c "CREATE TABLE cliwatch2.mem0 AS SELECT * FROM cliwatch.mem0" 2>/dev/null
  set +e
  "$mh" review list "$base&options=-csearch_path%3Dcliwatch2" --mapping mem0 --state w.db >w-rv2.out 2>w-rv2.err
  rc=$?
  set -e
  [ "$rc" -eq 2 ] || fail "review list of another table with this state: exit $rc, expected 2: $(cat w-rv2.out w-rv2.err)"
  grep -q "the state database of store" w-rv2.err || fail "review list of another table: $(cat w-rv2.err)"
  # the watch's queued merge approved through review (its own log): two of rows 1, 2, 6 archived
  # into the third; rolled back to the exact rows
  mid="$(python3 -c "import json; print([i['id'] for i in json.load(open('w-rv.json'))['items'] if i['type'] == 'merge_duplicates'][0])")"
  "$mh" review approve "$wdb" --mapping mem0 --state w.db "$mid" --reviewer ana --reason "one fact" \
    --wal w-review.wal 2>w-ap.err || fail "review approve of the watch's item: $(cat w-ap.err)"
  grep -q "1 approved and applied through w-review.wal, 0 not applied" w-ap.err || fail "review approve: $(cat w-ap.err)"
  [ "$(wsql "SELECT count(*) FROM mem0 WHERE payload->'memhealth'->>'status' = 'archived' AND right(id::text, 1) IN ('1', '2', '6')")" = "2" ] &&
    [ "$(wsql "SELECT count(*) FROM mem0 WHERE payload->'memhealth'->>'status' = 'archived'")" = "2" ] ||
    fail "the approved merge did not archive two of rows 1, 2, 6: $(wsql "$wdump")"
  "$mh" rollback "$wdb" --mapping mem0 --wal w-review.wal --out "$wdb" 2>w-rb2.err || fail "rollback: $(cat w-rb2.err)"
  wsql "$wdump" | cmp -s - w-before.txt || fail "rollback did not restore the approved merge exactly"
  # one repair log across polls while the agent inserts and deletes rows: a mapped table is known
  # by its identity (cluster, database and table OIDs), not by its row ids, so the log the first
  # poll wrote is still this store's after an insert and after a delete (a tester's watch failed
  # every poll after one INSERT: "w.wal was made for another store")
  "$mh" watch "$wdb" --mapping mem0 --state w2.db --once --repair --wal w2.wal 2>wt6.err ||
    fail "watch --repair (fresh state): $(cat wt6.err)"
  grep -q "1 applied (1 records)" wt6.err || fail "watch --repair (fresh state): $(cat wt6.err)"
  wsql "INSERT INTO mem0 VALUES ('${wid}7', '{0,1,0,0}', p('The user keeps bees.', 'dave', 3), 'note 7')"
  "$mh" watch "$wdb" --mapping mem0 --state w2.db --once --repair --wal w2.wal 2>wt7.err ||
    fail "watch --repair after an insert: $(cat wt7.err)"
  # changed: row 7 (inserted) and row 5 (the first run's repair wrote its status)
  grep -q "7 records, 2 new or changed, 0 removed" wt7.err || fail "watch --repair after an insert: $(cat wt7.err)"
  wsql "DELETE FROM mem0 WHERE id = '${wid}7'"
  "$mh" watch "$wdb" --mapping mem0 --state w2.db --once --repair --wal w2.wal 2>wt8.err ||
    fail "watch --repair after a delete: $(cat wt8.err)"
  grep -q "6 records, 0 new or changed, 1 removed" wt8.err || fail "watch --repair after a delete: $(cat wt8.err)"
  "$mh" rollback "$wdb" --mapping mem0 --wal w2.wal --out "$wdb" 2>w-rb3.err || fail "rollback: $(cat w-rb3.err)"
  wsql "$wdump" | cmp -s - w-before.txt || fail "rollback after the agent's insert and delete was not exact"
  # a server that is down: the poll fails (a clear line), --once exits 2
  down="postgresql:///postgres?host=$work/no-server&port=1&user=memhealth"
  set +e
  "$mh" watch "$down" --mapping mem0 --state down.db --once >wt5.out 2>wt5.err
  rc=$?
  set -e
  [ "$rc" -eq 2 ] || fail "watch on a server that is down: exit $rc, expected 2"
  grep -q "poll failed (1 in a row), not retried (--once)" wt5.err || fail "watch on a server that is down: $(cat wt5.err)"
  grep -q "cannot connect\|could not connect\|connection" wt5.err || fail "watch on a server that is down: $(cat wt5.err)"

  # index build|check of the mapped table's vectors: consistent after the build (exit 0); row 3's
  # vector changed in SQL: exit 1, naming row 3
  "$mh" index build "$wdb" --mapping mem0 --index flat:w.idx 2>ix1.err || fail "index build: $(cat ix1.err)"
  grep -q "6 entries, dimension 4" ix1.err || fail "index build: $(cat ix1.err)"
  "$mh" index check "$wdb" --mapping mem0 --index flat:w.idx >ix2.out 2>ix2.err || fail "index check: $(cat ix2.out ix2.err)"
  grep -q "6 entries, the store expects 6: consistent" ix2.out || fail "index check: $(cat ix2.out)"
  wsql "UPDATE mem0 SET vector = '{0,1,0,0}' WHERE id = '${wid}3'"
  set +e
  "$mh" index check "$wdb" --mapping mem0 --index flat:w.idx --format json >ix3.json 2>ix3.err
  rc=$?
  set -e
  [ "$rc" -eq 1 ] || fail "index check after a vector changed: exit $rc, expected 1: $(cat ix3.json ix3.err)"
  set +e
  "$mh" index check "$wdb" --mapping mem0 --index flat:w.idx >ix4.out 2>ix4.err
  set -e
  grep -qx "  vector differs: ${wid}3" ix4.out || fail "index check (text) does not name row 3: $(cat ix4.out)"
  python3 -c "
import json; d = json.load(open('ix3.json'))
assert d['consistent'] is False and d['stale'] == 1 and d['missing'] == 0 and d['extra'] == 0, d
assert d['stale_ids'] == ['${wid}3'] and d['missing_ids'] == [] and d['extra_ids'] == [], d
assert 'search_path' not in d['store'], d['store']" || fail "index check after a vector changed: $(cat ix3.json)"
  psql -X -q -v ON_ERROR_STOP=1 "$base" -c "DROP SCHEMA cliwatch CASCADE" 2>/dev/null
fi

# rows not read whole are load issues (a vector of two dimensions, a payload that is no object):
# the check goes on, reports them (stderr, JSON load_issues) and, with --workers, gives the same
# report; SIGTERM of a --workers run drops the run's tables (exit 143)
bdb="$base&options=-csearch_path%3Dclibad"
psql -X -q -v ON_ERROR_STOP=1 "$base" -c "DROP SCHEMA IF EXISTS clibad CASCADE" -c "CREATE SCHEMA clibad" 2>/dev/null
psql -X -q -v ON_ERROR_STOP=1 "$bdb" -c "CREATE TABLE mem0 (id uuid PRIMARY KEY, vector real[], payload jsonb)" \
  -c "INSERT INTO mem0 VALUES ('00000000-0000-0000-0000-000000000001', '{0.6,0.8}', '{\"data\": \"User likes tea\", \"user_id\": \"u\"}'), ('00000000-0000-0000-0000-000000000002', '{{0.6,0.8},{1,0}}', '{\"data\": \"User likes jazz\", \"user_id\": \"u\"}'), ('00000000-0000-0000-0000-000000000003', '{0.8,0.6}', '\"just text\"')"
for w in "" "--workers 2"; do
  # shellcheck disable=SC2086
  "$mh" check "$bdb" --mapping mem0 $w --format json --now 2024-03-10T00:00:00Z --out bad.json --exit-zero 2>bad.err ||
    fail "check of a table with bad rows ($w): $(cat bad.err)"
  python3 -c "
import json; d = json.load(open('bad.json'))
issues = d['load_issues']
assert [(i['field'], i['reason'][:42]) for i in issues] == [
    ('embedding', 'row 00000000-0000-0000-0000-000000000002: '),
    ('payload', 'row 00000000-0000-0000-0000-000000000003: ')], issues
assert 'not a one-dimensional array' in issues[0]['reason'] and 'holds a JSON string' in issues[1]['reason'], issues
assert d['summary']['records_total'] == 3 and d['summary']['load_issues'] == 2, d['summary']
assert d['summary']['by_kind'].get('embedding_missing') == 1, d['summary']" || fail "check of bad rows ($w): $(cat bad.json)"
  grep -q "embedding: row 00000000-0000-0000-0000-000000000002: the vector is not" bad.err || fail "bad rows not on stderr ($w): $(cat bad.err)"
done
# --workers 0: no worker takes the jobs, so the run waits until SIGTERM
"$mh" check "$bdb" --mapping mem0 --workers 0 --out /dev/null 2>term.err &
pid=$!
for _ in $(seq 1 100); do grep -q "^memhealth check: run " term.err && break; sleep 0.1; done
[ "$(psql -X -At "$bdb" -c "SELECT count(*) FROM pg_tables WHERE schemaname = 'clibad' AND tablename ~ '^memhealth_'")" = "3" ] ||
  fail "--workers 0: the run's 3 tables are not there: $(cat term.err)"
kill -TERM "$pid"
set +e
wait "$pid"
rc=$?
set -e
[ "$rc" -eq 143 ] || fail "SIGTERM of check --workers: exit $rc, expected 143: $(cat term.err)"
grep -q "interrupted (SIGTERM): run [0-9a-f]* stopped, its tables dropped" term.err || fail "SIGTERM: $(cat term.err)"
[ "$(psql -X -At "$bdb" -c "SELECT count(*) FROM pg_tables WHERE schemaname = 'clibad' AND tablename ~ '^memhealth_'")" = "0" ] ||
  fail "SIGTERM of check --workers left the run's tables"
psql -X -q -v ON_ERROR_STOP=1 "$base" -c "DROP SCHEMA clibad CASCADE" 2>/dev/null

echo "cli_pg: ok"
