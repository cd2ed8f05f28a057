#!/usr/bin/env bash
# The memhealth tool on postgresql:// stores (ctest pg.cli, fixture pg_cluster): a mem0-shaped
# table checked, planned, previewed (--dry-run prints SQL, writes nothing), repaired in place,
# rolled back to the exact rows (unmapped columns never change), recovered clean; a URI with a
# password is refused without printing it; a mapping naming a missing column is a clear error;
# check --workers 1|2, and --workers 0 with a `memhealth worker` process, give the same report;
# plan --workers gives the same plan; a scope split into k-means blocks gives the same report and
# plan.
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

# apply in place, then rollback to the exact rows
"$mh" apply "$uri" --mapping mem0 --plan plan.json --wal run.wal --out "$uri" --approve tier2 2>apply.err
sql "$dump" >after.txt
cmp -s after.txt before.txt && fail "apply changed nothing: $(cat apply.err)"
[ "$(sql "SELECT payload->'memhealth'->>'status' FROM mem0 WHERE id = '00000000-0000-0000-0000-000000000002'")" = "archived" ] ||
  fail "the duplicate is not archived"
[ "$(sql "SELECT string_agg(note || '/' || (payload->>'hash'), ',' ORDER BY id) FROM mem0")" = "note 1/h1,note 2/h2,note 3/h3,note 4/h4" ] ||
  fail "an unmapped column or key changed"
grep -q "search_path" apply.err run.wal && fail "the connection string was logged"
"$mh" recover "$uri" --mapping mem0 --wal run.wal --out "$uri" 2>recover.err || fail "recover: $(cat recover.err)"
sql "$dump" | cmp -s - after.txt || fail "recover changed a clean store"
"$mh" rollback "$uri" --mapping mem0 --wal run.wal --out "$uri" 2>rollback.err || fail "rollback: $(cat rollback.err)"
sql "$dump" | cmp -s - before.txt || fail "rollback did not restore the rows exactly"

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
grep -q "PASS on 5 of 5 records re-embedded from old-v1" mig-gate.out || fail "migrate gate: $(cat mig-gate.out)"
"$mh" migrate switch "$migdb" "${m[@]}" 2>mig-switch.err || fail "migrate switch: $(cat mig-switch.err)"
"$mh" migrate rollback "$migdb" "${m[@]}" --batch 2 2>mig-rb.err || fail "migrate rollback: $(cat mig-rb.err)"
grep -q "5 records given their previous vector and version back through mig-state.db.migrate.wal (3 actions)" mig-rb.err ||
  fail "migrate rollback: $(cat mig-rb.err)"
msql "$mdump" | cmp -s - mig-before.txt || fail "migrate rollback did not restore the rows exactly"
psql -X -q -v ON_ERROR_STOP=1 "$base" -c "DROP SCHEMA climig CASCADE" 2>/dev/null
echo "cli_pg: ok"
