// Tests of store/pg_*.hpp against a throwaway PostgreSQL cluster (the ctest fixture pg_cluster,
// scripts/pg_test_cluster.sh; MEMHEALTH_PG_TEST_DIR names its directory). Each test case works in
// a schema of its own. Without a server the cases print "memhealth-skip:" and pass (ctest shows
// them skipped), unless MEMHEALTH_REQUIRE_PG=1, which makes a missing server a failure.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <memhealth/detect/default_pipeline.hpp>
#include <memhealth/detect/pg_workers.hpp>
#include <memhealth/detect/report_json.hpp>
#include <memhealth/io/jsonl.hpp>
#include <memhealth/repair/executor.hpp>
#include <memhealth/repair/plan_json.hpp>
#include <memhealth/repair/planner.hpp>
#include <memhealth/repair/rollback.hpp>
#include <memhealth/similarity/kmeans_blocking.hpp>
#include <memhealth/store/memory_store.hpp>
#include <memhealth/store/pg_store.hpp>

#include "test_records.hpp"
#include <libpq-fe.h>
#include <unistd.h>

namespace pg_store_test {
namespace fs = std::filesystem;
using namespace memhealth;

static_assert(record_store<pg_store<>>);
static_assert(mutable_record_store<pg_store<>>);
static_assert(transactional_record_store<pg_store<>>);
static_assert(keyed_record_store<pg_store<>>);

namespace {

// The test server's connection string, or nullopt (skip) when there is none.
std::optional<std::string> server() {
  const char* dir = std::getenv("MEMHEALTH_PG_TEST_DIR");
  const char* req = std::getenv("MEMHEALTH_REQUIRE_PG");
  const bool required = req && std::string(req) == "1";
  std::string why = "MEMHEALTH_PG_TEST_DIR is not set (run through ctest: the pg_cluster fixture)";
  if (dir) {
    std::ifstream in(fs::path(dir) / "conninfo");
    std::string uri;
    if (in && std::getline(in, uri) && !uri.empty()) return uri;
    std::ifstream un(fs::path(dir) / "unavailable");
    std::string reason;
    std::getline(un, reason);
    why =
        "no PostgreSQL test server: " + (reason.empty() ? "the fixture did not start one" : reason);
  }
  if (required) FAIL("MEMHEALTH_REQUIRE_PG=1 but " << why);
  std::cout << "memhealth-skip: " << why << "\n";
  return std::nullopt;
}

struct conn {
  PGconn* c = nullptr;
  explicit conn(const std::string& uri) {
    c = PQconnectdb(uri.c_str());
    REQUIRE(PQstatus(c) == CONNECTION_OK);
  }
  ~conn() { PQfinish(c); }
  conn(const conn&) = delete;
  conn& operator=(const conn&) = delete;
  // Runs SQL (several statements allowed); REQUIREs success.
  void run(const std::string& sql) {
    PGresult* r = PQexec(c, sql.c_str());
    const auto st = PQresultStatus(r);
    INFO(sql << ": " << PQresultErrorMessage(r));
    PQclear(r);
    REQUIRE((st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK));
  }
  // Every row of a query, cells separated by '|', rows by '\n' (NULL as "<null>").
  std::string dump(const std::string& sql) {
    PGresult* r = PQexec(c, sql.c_str());
    INFO(sql << ": " << PQresultErrorMessage(r));
    REQUIRE(PQresultStatus(r) == PGRES_TUPLES_OK);
    std::string out;
    for (int i = 0; i < PQntuples(r); ++i) {
      for (int k = 0; k < PQnfields(r); ++k)
        out += (k ? "|" : "") + std::string(PQgetisnull(r, i, k) ? "<null>" : PQgetvalue(r, i, k));
      out += '\n';
    }
    PQclear(r);
    return out;
  }
};

// A schema of its own for one test case: the returned URI has it as search_path.
std::string fresh_schema(const std::string& uri, const std::string& name) {
  conn c(uri);
  c.run("DROP SCHEMA IF EXISTS " + name + " CASCADE; CREATE SCHEMA " + name);
  return uri + "&options=-csearch_path%3D" + name;
}

std::string error_of(const std::function<void()>& f, error_code* code = nullptr) {
  try {
    f();
  } catch (const error& e) {
    if (code) *code = e.code();
    return e.what();
  }
  return "no error";
}

memory_record rec(std::string id, std::string content, std::vector<float> emb,
                  std::string scope = "user:1") {
  return memhealth::test::make_record(
      std::move(id), std::move(content), std::move(emb),
      {"m1", std::move(scope), "fact", "2024-03-01T09:30:00.000Z", "2024-03-02T09:00:00.000Z"});
}

// Known findings by construction (as tests/sqlite_store_test.cpp's suite): a1/a2 exact
// duplicates, c NaN, d 3 floats, e no embedding, f status "bogus".
std::vector<memory_record> suite_records() {
  std::vector<memory_record> v;
  v.push_back(rec("a1", "The user lives in Berlin.", {0.5f, 0.5f, 0.5f, 0.5f}));
  v.push_back(rec("a2", "The user lives in Berlin.", {0.5f, 0.5f, 0.5f, 0.5f}));
  v.push_back(rec("b", "The user likes green tea.", {0.5f, -0.5f, 0.5f, -0.5f}));
  v.push_back(rec("c", "The user owns a red bicycle.", {std::nanf(""), 0.5f, 0.5f, 0.5f}));
  v.push_back(rec("d", "The user plays the cello.", {0.6f, 0.8f, 0.0f}));
  v.push_back(rec("e", "The user speaks Portuguese.", {}));
  v.push_back(rec("f", "The user jogs every morning.", {-0.5f, 0.5f, -0.5f, 0.5f}));
  v.back().status = "bogus";
  return v;
}

detect_options check_options() {
  detect_options d;
  d.now = parse_timestamp("2024-03-10T00:00:00Z")->instant;
  return d;
}

// `memhealth check --format json` of a store, as the tool writes it.
template <class S>
std::string check_json(const S& s) {
  const auto d = check_options();
  return check_report_json(make_default_pipeline().run(s, d), "store", d, {}).dump(2);
}

// The check document of the same records exported to JSONL and read back by the JSONL store.
template <class S>
std::string check_json_via_jsonl(const S& s, const std::string& name) {
  const fs::path p = fs::temp_directory_path() /
                     ("memhealth-pg-test-" + std::to_string(::getpid()) + "-" + name + ".jsonl");
  write_jsonl(p, s);
  auto lr = read_jsonl(p);
  fs::remove(p);
  REQUIRE(lr.issues.empty());
  return check_json(memory_store<>::from_records(std::move(lr.records)));
}

const char* mem0_table =
    "CREATE TABLE mem0 (id uuid PRIMARY KEY, vector real[], payload jsonb, note text)";
std::string mem0_row(int n, const std::string& data, const std::string& user,
                     const std::string& vec,
                     const std::string& created = "2024-03-01T09:30:00.000Z") {
  char id[40];
  std::snprintf(id, sizeof id, "00000000-0000-0000-0000-%012d", n);
  return std::string("INSERT INTO mem0 VALUES ('") + id + "', " + vec + ", '{\"data\": \"" + data +
         "\", \"user_id\": \"" + user + "\", \"created_at\": \"" + created +
         "\", \"updated_at\": \"2024-03-02T09:00:00.000Z\", \"hash\": \"h" + std::to_string(n) +
         "\", \"agent_id\": \"bot\", \"metadata\": {\"topic\": \"t" + std::to_string(n) +
         "\"}}', 'note " + std::to_string(n) + "');";
}

const char* mem0_dump = "SELECT id, vector::text, payload::text, note FROM mem0 ORDER BY id";

}  // namespace

TEST_CASE("pg_store: memhealth's own schema keeps every field byte for byte") {
  const auto uri = server();
  if (!uri) return;
  const auto db = fresh_schema(*uri, "own_roundtrip");
  auto orig = read_jsonl(fs::path(MEMHEALTH_SOURCE_DIR) / "tests/data/io/canonical.jsonl").records;
  REQUIRE(orig.size() == 3);
  for (auto& r : suite_records()) orig.push_back(r);
  // a timestamp kept only as its unparsable original ("yesterday")
  orig.push_back(
      parse_jsonl(R"({"id":"m-4","content":"y","updated_at":"yesterday"})").records.at(0));
  // metadata that is not an object (a mem0 export's "oops", kept as an extra field): the
  // metadata jsonb column stays NULL (it was a server error: not JSON), `record` keeps it
  orig.push_back(parse_jsonl(R"({"id":"m-5","content":"z","metadata":"oops"})").records.at(0));
  REQUIRE(orig.back().extra.size() == 1);
  pg_store_options o;
  o.fetch_rows = 2;  // several FETCH batches
  {
    auto s = pg_store<>::create(db, orig, o);
    CHECK(s.size() == orig.size());
    CHECK(s.database_id().size() == 32);
  }
  auto s = pg_store<>::open(db, pg_own_mapping(), o);
  REQUIRE(s.size() == orig.size());
  for (std::size_t i = 0; i < orig.size(); ++i) CHECK(to_json(s.extract(i)) == to_json(orig[i]));
  CHECK(s.dimension() == 4);
  CHECK(*s.find("b") == 5);
  CHECK(s.store_key(0) == "1");
  // the derived columns hold the values of the canonical record
  conn c(db);
  CHECK(c.dump("SELECT id, scope, status, kind, updated_at AT TIME ZONE 'UTC', "
               "metadata->>'topic', claim->>'entity', array_length(embedding, 1) "
               "FROM memhealth_records WHERE id IN ('m-2', 'f', 'm-4') ORDER BY seq") ==
        "m-2|<null>|<null>|<null>|<null>|<null>|user|<null>\n"
        "f|user:1|bogus|fact|2024-03-02 09:00:00|<null>|<null>|4\n"
        "m-4|<null>|<null>|<null>|<null>|<null>|<null>|<null>\n");
  CHECK(c.dump("SELECT metadata IS NULL, record FROM memhealth_records WHERE id = 'm-5'") ==
        "t|{\"id\":\"m-5\",\"content\":\"z\",\"metadata\":\"oops\"}\n");
  {  // a status change writes `record` and `status` only, not every derived column
    const std::size_t fi = *s.find("f");
    auto img = s.extract(fi);
    img.status = "archived";
    const std::string sql = s.preview_restore(fi, img);
    CHECK(sql.find(" AS t SET \"record\" = CAST(") != std::string::npos);
    CHECK(sql.find("\"status\" = CAST('archived' AS ") != std::string::npos);
    // (the JSON in `record` holds "scope":..., so a column is looked for as it is assigned)
    for (const std::string col :
         {"scope", "kind", "metadata", "claim", "updated_at", "embedding_version"})
      CHECK_MESSAGE(sql.find("\"" + col + "\" = CAST(") == std::string::npos, col << " in " << sql);
    // and a change of scope writes that column too
    img.scope = "user:2";
    CHECK(s.preview_restore(fi, img).find("\"scope\" = CAST('user:2' AS ") != std::string::npos);
  }
  // create refuses an existing store
  error_code code{};
  CHECK(error_of([&] { (void)pg_store<>::create(db, orig); }, &code).find("already exists") !=
        std::string::npos);
  CHECK(code == error_code::precondition);
}

TEST_CASE("pg_store: a mem0-shaped table is read through the mem0 mapping") {
  const auto uri = server();
  if (!uri) return;
  const auto db = fresh_schema(*uri, "mem0_read");
  conn c(db);
  c.run(mem0_table);
  c.run(mem0_row(1, "Alice likes tea", "alice", "'{0.5,0.25,-1.5}'",
                 "2024-07-01T12:34:56.123456-07:00"));
  c.run(mem0_row(2, "Bob rides a bike", "bob", "NULL"));
  auto s = pg_store<>::open(db, pg_mem0_mapping());
  REQUIRE(s.size() == 2);
  const auto& a = s.record(0);
  CHECK(a.id == "00000000-0000-0000-0000-000000000001");
  CHECK(a.content == "Alice likes tea");
  CHECK(a.scope == "user:alice/agent:bot");  // as import mem0: user:U/agent:A/run:R
  REQUIRE(a.created_at);
  CHECK(format_timestamp(*a.created_at) == "2024-07-01T12:34:56.123-07:00");
  CHECK(a.embedding == std::vector<float>{0.5f, 0.25f, -1.5f});
  REQUIRE(a.metadata.count("topic"));
  CHECK(std::get<std::string>(a.metadata.at("topic")) == "t1");
  CHECK(a.status == "active");  // mem0 has no status: the mapping's default
  CHECK(s.embedding(1).empty());
  CHECK(s.record(1).scope == "user:bob/agent:bot");
  // a mapped table is known by cluster, database and table OIDs, not by its rows: the same id
  // after an insert and a delete (so a watch's log stays this store's), another for another table
  const std::string id = s.database_id();
  CHECK(id.rfind("pg-table:", 0) == 0);
  CHECK(std::count(id.begin(), id.end(), '.') == 2);
  c.run(mem0_row(3, "Carol keeps bees", "carol", "NULL"));
  c.run("DELETE FROM mem0 WHERE id = '00000000-0000-0000-0000-000000000001'");
  const auto again = pg_store<>::open(db, pg_mem0_mapping());
  CHECK(again.size() == 2);
  CHECK(again.database_id() == id);
  c.run("CREATE TABLE mem0_copy AS SELECT * FROM mem0");
  const auto copy = pg_store<>::open(db, pg_mem0_mapping("mem0_copy"));
  CHECK(copy.size() == 2);
  CHECK(copy.database_id().rfind("pg-table:", 0) == 0);
  CHECK(copy.database_id() != id);
  // the scope of the ids a memory holds (agent only, run and user, none), as import mem0 builds it
  c.run(
      "INSERT INTO mem0 VALUES ('00000000-0000-0000-0000-000000000011', NULL, '{\"data\": "
      "\"Speaks French\", \"agent_id\": \"bot\"}'), ('00000000-0000-0000-0000-000000000012', "
      "NULL, '{\"data\": \"Asked about trains\", \"run_id\": \"r7\", \"user_id\": \"ana\"}'), "
      "('00000000-0000-0000-0000-000000000013', NULL, '{\"data\": \"Unscoped\"}'), "
      "('00000000-0000-0000-0000-000000000014', NULL, '{\"data\": \"Odd ids\", \"user_id\": "
      "\"\", \"agent_id\": true, \"run_id\": 7}')");
  auto parts = pg_store<>::open(db, pg_mem0_mapping());
  REQUIRE(parts.size() == 6);
  CHECK(parts.record(2).scope == "agent:bot");
  CHECK(parts.record(3).scope == "user:ana/run:r7");
  CHECK(parts.record(4).scope.empty());
  CHECK(parts.record(5).scope == "run:7");  // "" and true are no id (as import mem0 reads them)
  const auto counted = pg_store<>::census(db, pg_mem0_mapping());
  REQUIRE(counted.scopes);
  CHECK(counted.scopes->at("agent:bot") == 1);
  CHECK(counted.scopes->at("") == 1);
  CHECK(counted.scopes->at("run:7") == 1);
  // such a scope is read, never written: a repair that changes it fails, nothing written
  memory_record img = parts.record(2);
  img.scope = "agent:other";
  const std::string rows = c.dump("SELECT id, payload::text FROM mem0 ORDER BY id");
  error_code code{};
  CHECK(error_of([&] { (void)parts.restore(2, img); }, &code)
            .find("builds the scope of several "
                  "places") != std::string::npos);
  CHECK(code == error_code::precondition);
  CHECK(c.dump("SELECT id, payload::text FROM mem0 ORDER BY id") == rows);
  // a mapping file says the same, and round-trips
  const auto m = pg_mem0_mapping();
  CHECK(parse_pg_mapping(pg_mapping_json(m).dump(), m.name) == m);
  CHECK_THROWS_AS(parse_pg_mapping(R"({"table": "t", "key": ["id"], "id": "id", "fields":
      {"scope": "a"}, "scope_parts": [["u:", "b"]]})",
                                   "twice"),
                  error);
  CHECK_THROWS_AS(parse_pg_mapping(R"({"table": "t", "key": ["id"], "id": "id",
      "scope_parts": [["u:"]]})",
                                   "short"),
                  error);
}

TEST_CASE("pg_store: a LangGraph-shaped store is read through the langgraph mapping") {
  const auto uri = server();
  if (!uri) return;
  const auto db = fresh_schema(*uri, "lg_read");
  conn c(db);
  c.run(
      "CREATE TABLE store (prefix text NOT NULL, key text NOT NULL, value jsonb NOT NULL, "
      "created_at timestamptz DEFAULT now(), updated_at timestamptz DEFAULT now(), "
      "expires_at timestamptz, ttl_minutes integer, PRIMARY KEY (prefix, key));"
      "CREATE TABLE store_vectors (prefix text NOT NULL, key text NOT NULL, field_name text NOT "
      "NULL, embedding real[], created_at timestamptz DEFAULT now(), updated_at timestamptz "
      "DEFAULT now(), PRIMARY KEY (prefix, key, field_name));"
      "INSERT INTO store VALUES ('users.alice', 'm1', '{\"text\": \"Alice likes tea\"}', "
      "'2024-05-01 10:00:00.5+00', '2024-05-02 12:00:00+02', NULL, NULL), "
      "('users.bob', 'm1', '{\"text\": \"Bob likes coffee\", \"kind\": \"note\"}', "
      "'2024-05-03 00:00:00+00', '2024-05-03 00:00:00+00', NULL, NULL);"
      "INSERT INTO store_vectors(prefix, key, field_name, embedding) VALUES "
      "('users.alice', 'm1', 'text', '{1,0}'), ('users.alice', 'm1', '$', '{9,9}'), "
      "('users.bob', 'm1', '$', '{7,7}')");
  auto s = pg_store<>::open(db, pg_langgraph_mapping());
  REQUIRE(s.size() == 2);
  CHECK(s.record(0).id == "users.alice:m1");
  CHECK(s.record(1).id == "users.bob:m1");
  CHECK(s.record(0).scope == "users.alice");
  CHECK(s.record(0).content == "Alice likes tea");
  CHECK(format_timestamp(*s.record(0).created_at) == "2024-05-01T10:00:00.500Z");
  CHECK(format_timestamp(*s.record(0).updated_at) == "2024-05-02T10:00:00.000Z");
  CHECK(s.record(0).embedding == std::vector<float>{1.0f, 0.0f});
  CHECK(s.embedding(1).empty());  // only a '$' vector: not the mapped field
  CHECK(s.store_key(1) == "[\"users.bob\",\"m1\"]");
  CHECK(*s.find("users.bob:m1") == 1);
  // read without the vectors (the joined table's): the lengths only, by scope too
  pg_store_options lean;
  lean.read_only = true;
  lean.vectors = false;
  const auto l = pg_store<>::open(db, pg_langgraph_mapping(), lean);
  REQUIRE(l.size() == 2);
  CHECK(l.record(0).content == "Alice likes tea");
  CHECK(l.embedding(0).empty());
  CHECK(l.vector_length(0) == 2);
  CHECK(l.vector_length(1) == 0);
  CHECK(l.dimension() == 2);
  lean.scopes = std::vector<std::string>{"users.bob"};
  const auto lb = pg_store<>::open(db, pg_langgraph_mapping(), lean);
  REQUIRE(lb.size() == 1);
  CHECK(lb.record(0).id == "users.bob:m1");
  CHECK(lb.vector_length(0) == 0);
  // by record id (the key's two columns joined by ':'): only the rows named, as a full read
  // gives them; an id no row has is no error; not with scopes at once
  pg_store_options by_id;
  by_id.ids = std::vector<std::string>{"users.alice:m1", "users.carol:m9", "m1"};
  const auto li = pg_store<>::open(db, pg_langgraph_mapping(), by_id);
  REQUIRE(li.size() == 1);
  CHECK(li.record(0) == s.record(0));
  CHECK(li.store_key(0) == s.store_key(0));
  by_id.ids = std::vector<std::string>{};
  CHECK(pg_store<>::open(db, pg_langgraph_mapping(), by_id).size() == 0);
  by_id.ids = std::vector<std::string>{"users.bob:m1"};
  by_id.scopes = std::vector<std::string>{"users.bob"};
  CHECK_THROWS_WITH_AS(pg_store<>::open(db, pg_langgraph_mapping(), by_id),
                       doctest::Contains("a read by scopes and by ids at once"), error);
  // a second 'text' vector row for alice (store_vectors without its primary key): one record,
  // no vector (which one would be a guess), a load issue, never written; the check of the table
  // is the check of those records, with or without jobs
  c.run(
      "ALTER TABLE store_vectors DROP CONSTRAINT store_vectors_pkey;"
      "INSERT INTO store_vectors(prefix, key, field_name, embedding) VALUES ('users.alice', "
      "'m1', 'text', '{0,1}')");
  for (const bool vectors : {true, false}) {
    pg_store_options o;
    o.read_only = true;
    o.vectors = vectors;
    const auto d = pg_store<>::open(db, pg_langgraph_mapping(), o);
    REQUIRE(d.size() == 2);
    CHECK(d.rows_read() == 2);
    CHECK(d.record(0).embedding.empty());
    CHECK(d.vector_length(0) == 0);
    CHECK(d.read_with_issue(0));
    CHECK_FALSE(d.read_with_issue(1));
    REQUIRE(d.load_issues().size() == 1);
    CHECK(d.load_issues()[0].field == "embedding");
    CHECK(d.load_issues()[0].reason ==
          "row [\"users.alice\",\"m1\"]: the vector table 'store_vectors' holds more than one "
          "vector row for this key; none was read, and the record is never written");
  }
  const auto d = pg_store<>::open(db, pg_langgraph_mapping());
  pg_run_options ro;
  ro.job_table = false;
  const auto res = pg_parallel_check(db, pg_langgraph_mapping(), {}, check_options(), ro);
  CHECK(res.load_issues.size() == 1);
  CHECK(check_report_json(res.findings, "store", check_options(), {}).dump(2) == check_json(d));
  CHECK(res.findings.count("duplicate_id") == 0);
}

TEST_CASE("pg_store: LangGraph rows written and restored: only mapped places change") {
  const auto uri = server();
  if (!uri) return;
  const auto db = fresh_schema(*uri, "lg_write");
  conn c(db);
  c.run(
      "CREATE TABLE store (prefix text NOT NULL, key text NOT NULL, value jsonb NOT NULL, "
      "created_at timestamptz DEFAULT now(), updated_at timestamptz DEFAULT now(), "
      "expires_at timestamptz, ttl_minutes integer, PRIMARY KEY (prefix, key));"
      "CREATE TABLE store_vectors (prefix text NOT NULL, key text NOT NULL, field_name text NOT "
      "NULL, embedding real[], created_at timestamptz DEFAULT now(), updated_at timestamptz "
      "DEFAULT now(), PRIMARY KEY (prefix, key, field_name));"
      "INSERT INTO store VALUES ('users.alice', 'm1', '{\"text\": \"Alice likes tea\", "
      "\"extra\": [1, 2]}', '2024-05-01 10:00:00.123456+00', '2024-05-02 12:00:00+00', "
      "'2030-01-01 00:00:00+00', 60);"
      "INSERT INTO store_vectors(prefix, key, field_name, embedding) VALUES "
      "('users.alice', 'm1', 'text', '{1,0}'), ('users.alice', 'm1', '$', '{9,9}')");
  const std::string dump =
      "SELECT s.prefix, s.key, s.value::text, s.created_at, s.updated_at, s.expires_at, "
      "s.ttl_minutes, v.field_name, v.embedding::text, v.created_at FROM store s JOIN "
      "store_vectors v USING (prefix, key) ORDER BY v.field_name";
  const std::string before = c.dump(dump);
  auto s = pg_store<>::open(db, pg_langgraph_mapping());
  REQUIRE(s.size() == 1);
  const auto orig = s.extract(0);
  auto img = orig;
  img.embedding = {0.6f, 0.8f};
  img.embedding_version = "v2";
  img.status = "archived";
  CHECK(to_json(s.restore(0, img)) == to_json(orig));
  CHECK(c.dump("SELECT value::text FROM store") ==
        "{\"text\": \"Alice likes tea\", \"extra\": [1, 2], \"memhealth\": {\"status\": "
        "\"archived\", \"embedding_version\": \"v2\"}}\n");
  CHECK(c.dump("SELECT field_name, embedding::text FROM store_vectors ORDER BY field_name") ==
        "$|{9,9}\ntext|{0.6,0.8}\n");
  {
    auto again = pg_store<>::open(db, pg_langgraph_mapping());
    CHECK(to_json(again.extract(0)) == to_json(img));
  }
  s.restore(0, orig);
  CHECK(c.dump(dump) == before);  // microseconds, TTL, the '$' vector: all as they were
  // the id cannot change; a failed write leaves the row alone
  auto renamed = orig;
  renamed.id = "users.alice:m2";
  error_code code{};
  CHECK(error_of([&] { (void)s.restore(0, renamed); }, &code).find("id cannot be changed") !=
        std::string::npos);
  CHECK(code == error_code::precondition);
  CHECK(c.dump(dump) == before);
}

TEST_CASE("pg_store: check findings equal those of the same rows exported to JSONL") {
  const auto uri = server();
  if (!uri) return;
  SUBCASE("own schema") {
    const auto db = fresh_schema(*uri, "check_own");
    { auto s = pg_store<>::create(db, suite_records()); }
    auto s = pg_store<>::open(db, pg_own_mapping());
    const std::string pg = check_json(s);
    CHECK(pg == check_json_via_jsonl(s, "own"));
    CHECK(pg.find("\"embedding_non_finite\"") != std::string::npos);
    CHECK(pg.find("\"exact_duplicate\"") != std::string::npos);
  }
  SUBCASE("mem0 table") {
    const auto db = fresh_schema(*uri, "check_mem0");
    conn c(db);
    c.run(mem0_table);
    c.run(mem0_row(1, "The user lives in Berlin.", "alice", "'{0.5,0.5,0.5,0.5}'"));
    c.run(mem0_row(2, "The user lives in Berlin.", "alice", "'{0.5,0.5,0.5,0.5}'"));
    c.run(mem0_row(3, "The user owns a red bicycle.", "alice", "'{NaN,0.5,0.5,0.5}'"));
    c.run(mem0_row(4, "The user plays the cello.", "bob", "'{0.6,0.8,0}'"));
    auto s = pg_store<>::open(db, pg_mem0_mapping());
    const std::string pg = check_json(s);
    CHECK(pg == check_json_via_jsonl(s, "mem0"));
    CHECK(pg.find("\"exact_duplicate\"") != std::string::npos);
  }
}

TEST_CASE("pg_store: apply then rollback on a mem0 table restores every row exactly") {
  const auto uri = server();
  if (!uri) return;
  const auto db = fresh_schema(*uri, "mem0_repair");
  conn c(db);
  c.run(mem0_table);
  c.run(mem0_row(1, "The user lives in Berlin.", "alice", "'{0.5,0.5,0.5,0.5}'"));
  c.run(mem0_row(2, "The user lives in Berlin.", "alice", "'{0.5,0.5,0.5,0.5}'"));
  c.run(mem0_row(3, "The user likes green tea.", "alice", "'{0.5,-0.5,0.5,-0.5}'",
                 "2024-03-01T11:30:00.000+02:00"));
  c.run(mem0_row(4, "The user plays the cello.", "bob", "'{0.6,0.8,0,0}'"));
  // a row whose payload->memhealth holds a default-valued status, an empty list and a key
  // memhealth does not know
  c.run(
      "INSERT INTO mem0 VALUES ('00000000-0000-0000-0000-000000000005', '{0.1,0.2,0.3,0.4}', "
      "'{\"data\": \"The user collects stamps.\", \"user_id\": \"carol\", \"created_at\": "
      "\"2024-03-01T09:30:00.000Z\", \"hash\": \"h5\", \"memhealth\": {\"related_ids\": [], "
      "\"origin\": \"seed\", \"status\": \"active\"}}', 'note 5')");
  const std::string before = c.dump(mem0_dump);
  const fs::path wal_path = fs::temp_directory_path() /
                            ("memhealth-pg-test-" + std::to_string(::getpid()) + "-repair.wal");
  fs::remove(wal_path);
  {
    auto s = pg_store<>::open(db, pg_mem0_mapping());
    const auto d = check_options();
    const auto plan = make_plan(s, make_default_pipeline().run(s, d), planner_options{});
    REQUIRE(!plan.actions.empty());
    // a dry run's SQL names only mapped places
    const std::size_t i2 = *s.find("00000000-0000-0000-0000-000000000002");
    auto img = s.extract(i2);
    img.status = "archived";
    const std::string sql = s.preview_restore(i2, img);
    // (the rest place made an object first, then only the changed key set)
    CHECK(sql ==
          "UPDATE \"mem0\" AS t SET \"payload\" = jsonb_set(jsonb_set(COALESCE(t.\"payload\", "
          "'{}'::jsonb), ARRAY['memhealth']::text[], CASE WHEN jsonb_typeof(t.\"payload\" #> "
          "ARRAY['memhealth']::text[]) = 'object' THEN t.\"payload\" #> "
          "ARRAY['memhealth']::text[] ELSE '{}'::jsonb END, true), ARRAY['memhealth', "
          "'status']::text[], CAST('\"archived\"' AS jsonb), true) WHERE t.\"id\" = "
          "CAST('00000000-0000-0000-0000-000000000002' AS uuid);\n");
    // a row whose payload->memhealth already holds keys: a downweight writes only its own key;
    // "status":"active" (the default), the empty list and the unknown key stay as they are
    const std::size_t i5 = *s.find("00000000-0000-0000-0000-000000000005");
    auto img5 = s.extract(i5);
    CHECK(img5.status == "active");
    img5.effective_weight = 0.5;
    CHECK(
        s.preview_restore(i5, img5).find(
            "ARRAY['memhealth', 'effective_weight']::text[], CAST('0.5' AS jsonb), true) WHERE") !=
        std::string::npos);
    CHECK(s.preview_restore(i5, img5).find("status") == std::string::npos);
    CHECK(c.dump(mem0_dump) == before);  // a preview writes nothing
    // applied through a store holding only the rows the plan names (what the tool's apply
    // reads): the uuid id column matched as text; every other row is neither read nor written
    std::set<std::string> named;
    for (const auto& a : plan.actions) {
      named.insert(a.targets.begin(), a.targets.end());
      for (const auto& e : a.edits) named.insert(e.record_id);
    }
    std::string types;
    for (const auto& a : plan.actions) types += a.type + " ";
    INFO("actions: " << types);
    CHECK(named.size() < s.size());
    pg_store_options by_id;
    by_id.ids = std::vector<std::string>(named.begin(), named.end());
    auto sub = pg_store<>::open(db, pg_mem0_mapping(), by_id);
    REQUIRE(sub.size() == named.size());
    for (std::size_t i = 0; i < sub.size(); ++i) {
      CHECK(named.count(sub.record(i).id) == 1);
      CHECK(sub.record(i) == s.record(*s.find(sub.record(i).id)));
    }
    wal_writer wal(wal_path, wal_sync::none);
    apply_options ao;
    ao.approve_tier2 = true;
    ao.skip_store_check = true;  // the plan's fingerprint is the whole table's
    const auto res = apply_plan(sub, plan, wal, ao);
    INFO("failed: " << res.failed.size());
    REQUIRE(!res.applied.empty());
    CHECK(res.failed.empty());
  }
  const std::string after = c.dump(mem0_dump);
  CHECK(after != before);
  // the duplicate is archived in payload->memhealth; the unmapped column and keys are untouched
  CHECK(c.dump("SELECT payload->'memhealth'->>'duplicate_of', payload->'memhealth'->>'status', "
               "payload->>'hash', payload->>'agent_id', note FROM mem0 WHERE id = "
               "'00000000-0000-0000-0000-000000000002'") ==
        "00000000-0000-0000-0000-000000000001|archived|h2|bot|note 2\n");
  CHECK(c.dump("SELECT note, payload->>'hash' FROM mem0 ORDER BY id") ==
        "note 1|h1\nnote 2|h2\nnote 3|h3\nnote 4|h4\nnote 5|h5\n");
  // row 5 keeps its memhealth keys (status "active" included)
  CHECK(c.dump("SELECT payload->'memhealth'->>'status', payload->'memhealth'->>'origin', "
               "payload->'memhealth'->'related_ids' FROM mem0 WHERE id = "
               "'00000000-0000-0000-0000-000000000005'") == "active|seed|[]\n");
  {
    // rolled back through a store holding only the rows the log names
    const auto log = read_wal_file(wal_path);
    std::set<std::string> logged;
    for (const auto& e : log.entries)
      for (const auto& img : e.records) logged.insert(img.id);
    pg_store_options by_id;
    by_id.ids = std::vector<std::string>(logged.begin(), logged.end());
    auto s = pg_store<>::open(db, pg_mem0_mapping(), by_id);
    CHECK(s.size() == logged.size());
    CHECK(s.size() < 5);
    const auto rb = rollback(s, log);
    CHECK(rb.complete());
    CHECK(rb.records_restored > 0);
  }
  CHECK(c.dump(mem0_dump) == before);
  {
    // a change and its before-image written back through the same writer: byte-identical
    auto s = pg_store<>::open(db, pg_mem0_mapping());
    const std::size_t i5 = *s.find("00000000-0000-0000-0000-000000000005");
    const auto orig = s.extract(i5);
    auto img = orig;
    img.effective_weight = 0.25;
    (void)s.restore(i5, img);
    CHECK(c.dump("SELECT payload->'memhealth'->>'status', payload->'memhealth'->>'origin', "
                 "payload->'memhealth'->>'effective_weight' FROM mem0 WHERE id = "
                 "'00000000-0000-0000-0000-000000000005'") == "active|seed|0.25\n");
    (void)s.restore(i5, orig);
  }
  CHECK(c.dump(mem0_dump) == before);
  fs::remove(wal_path);
}

// The rows a log names, read by id (as `memhealth rollback` reads a table): a row the agent
// inserted later with the key of a logged row is read too, so both are load issues as in a read of
// every row, and a record read with a load issue is an unwritable conflict (never written, even
// under force) while the log's other records are restored. (Found by a tester: the rollback
// stopped at that record with exit 2, leaving older records unrestored.)
TEST_CASE(
    "pg_store: rollback by id: rows that came to share a key, and load issues, are conflicts") {
  const auto uri = server();
  if (!uri) return;
  const auto db = fresh_schema(*uri, "rb_by_id");
  conn c(db);
  c.run("CREATE TABLE t (rid int, body text, owner text, status text, emb real[], meta jsonb)");
  c.run(
      "INSERT INTO t VALUES (1, 'alpha', 'u', 'bad', '{1,0}', '{\"k\": 1}'), (2, 'beta', 'u', "
      "'bad', '{0,1}', '{\"k\": 2}'), (3, 'gamma', 'u', 'bad', '{0.6,0.8}', '{\"k\": 3}'), (4, "
      "'delta', 'u', 'active', '{0.8,0.6}', '{\"k\": 4}')");
  const pg_mapping m = parse_pg_mapping(
      R"({"table": "t", "key": ["rid"], "id": "body", "fields": {"content": "body", "scope": "owner",
          "status": "status"}, "vector": "emb", "rest": "meta",
          "defaults": {"source": "user_stated"}})",
      "t");
  const std::string dump = "SELECT rid, body, status, emb, meta FROM t ORDER BY rid, body";
  const std::string before = c.dump(dump);
  const fs::path wal_path =
      fs::temp_directory_path() / ("memhealth-pg-test-" + std::to_string(::getpid()) + "-rbid.wal");
  auto run = [&] {  // repairs the three illegal statuses, one action each
    fs::remove(wal_path);
    auto s = pg_store<>::open(db, m);
    const auto plan =
        make_plan(s, make_default_pipeline().run(s, check_options()), planner_options{});
    wal_writer wal(wal_path, wal_sync::none);
    apply_options ao;
    ao.approve_tier2 = true;
    const auto res = apply_plan(s, plan, wal, ao);
    REQUIRE(res.failed.empty());
    CHECK(c.dump("SELECT count(*) FROM t WHERE status = 'bad'") == "0\n");
  };
  auto rollback_by_id = [&](bool force) {
    const auto log = read_wal_file(wal_path);
    std::set<std::string> logged;
    for (const auto& e : log.entries)
      for (const auto& img : e.records) logged.insert(img.id);
    CHECK(logged == std::set<std::string>{"alpha", "beta", "gamma"});
    pg_store_options by_id;
    by_id.ids = std::vector<std::string>(logged.begin(), logged.end());
    auto s = pg_store<>::open(db, m, by_id);
    rollback_options o;
    o.force = force;
    return rollback(s, log, o);
  };
  run();
  const std::string after = c.dump(dump);
  // the agent adds a row with beta's key (the table has no primary key)
  c.run("INSERT INTO t VALUES (2, 'epsilon', 'u', 'active', '{0.5,0.5}', '{\"k\": 5}')");
  {
    pg_store_options by_id;
    by_id.ids = std::vector<std::string>{"beta"};
    const auto s = pg_store<>::open(db, m, by_id);
    REQUIRE(s.size() == 2);  // beta and the row that shares its key, both load issues
    CHECK(s.read_with_issue(0));
    CHECK(s.read_with_issue(1));
  }
  rollback_result r;
  REQUIRE_NOTHROW(r = rollback_by_id(false));
  CHECK(r.records_restored == 2);
  REQUIRE(r.conflicts.size() == 1);
  CHECK(r.conflicts[0].id == "beta");
  CHECK(r.conflicts[0].kind == conflict_kind::unwritable);
  CHECK(!r.complete());
  CHECK(c.dump("SELECT body, status FROM t WHERE body IN ('alpha', 'gamma', 'delta', 'epsilon') "
               "ORDER BY rid") == "alpha|bad\nepsilon|active\ngamma|bad\ndelta|active\n");
  CHECK(c.dump("SELECT status FROM t WHERE body = 'beta'") != "bad\n");  // left as repaired
  // the agent removes its row: the rest comes back, alpha and gamma are already restored
  c.run("DELETE FROM t WHERE body = 'epsilon'");
  REQUIRE_NOTHROW(r = rollback_by_id(false));
  CHECK(r.records_restored == 1);
  CHECK(r.already_restored == 2);
  CHECK(r.complete());
  CHECK(c.dump(dump) == before);
  // again; then gamma's vector gets a NULL (a load issue) and alpha an edit: under force alpha
  // and beta are restored, gamma is left as the table holds it
  run();
  CHECK(c.dump(dump) == after);
  c.run(
      "UPDATE t SET emb = '{1,NULL}' WHERE rid = 3; UPDATE t SET status = 'archived' WHERE rid = "
      "1");
  const std::string gamma = c.dump("SELECT status, emb FROM t WHERE rid = 3");
  REQUIRE_NOTHROW(r = rollback_by_id(true));
  CHECK(r.records_restored == 2);
  REQUIRE(r.conflicts.size() == 2);
  CHECK(r.conflicts[0].id == "gamma");
  CHECK(r.conflicts[0].kind == conflict_kind::unwritable);
  CHECK(!r.conflicts[0].overwritten);
  CHECK(r.conflicts[1].id == "alpha");
  CHECK(r.conflicts[1].kind == conflict_kind::changed);
  CHECK(r.conflicts[1].overwritten);
  CHECK(c.dump("SELECT status FROM t WHERE rid IN (1, 2) ORDER BY rid") == "bad\nbad\n");
  CHECK(c.dump("SELECT status, emb FROM t WHERE rid = 3") == gamma);
  fs::remove(wal_path);
}

// Another writer changes rows between the read and the repair (the agent keeps writing while a
// plan waits for approval). Each write then finds its row changed (busy); the action's rollback
// reads the row again, so the retry works from the row as it is: an action whose decision rested
// on text that changed, or on a row that is gone, is stale (deferred, nothing written); one whose
// row changed only in what the decision does not rest on (the vector) is applied over the new row.
// Was: every retry compared with the first read, so all three failed ("attempts exhausted").
TEST_CASE("pg_store: rows another writer changed after the read: stale, or applied over them") {
  const auto uri = server();
  if (!uri) return;
  const auto db = fresh_schema(*uri, "mem0_busy");
  conn c(db);
  c.run(mem0_table);
  c.run(mem0_row(1, "The user lives in Berlin.", "alice", "'{0.5,0.5,0.5,0.5}'"));
  c.run(mem0_row(2, "The user lives in Berlin.", "alice", "'{0.5,0.5,0.5,0.5}'"));
  c.run(mem0_row(3, "The user plays the cello.", "alice", "'{0.6,0.8,0,0}'"));
  c.run(mem0_row(4, "The user plays the cello.", "alice", "'{0.6,0.8,0,0}'"));
  c.run(mem0_row(5, "The user likes green tea.", "alice", "'{0.5,-0.5,0.5,-0.5}'"));
  c.run(mem0_row(6, "The user likes green tea.", "alice", "'{0.5,-0.5,0.5,-0.5}'"));
  const auto id = [](int n) {
    char b[40];
    std::snprintf(b, sizeof b, "00000000-0000-0000-0000-%012d", n);
    return std::string(b);
  };
  const fs::path wal_path =
      fs::temp_directory_path() / ("memhealth-pg-test-" + std::to_string(::getpid()) + "-busy.wal");
  fs::remove(wal_path);
  auto s = pg_store<>::open(db, pg_mem0_mapping());
  const auto plan =
      make_plan(s, make_default_pipeline().run(s, check_options()), planner_options{});
  // the action over each planted pair (one each: the pairs share no record), and the record it
  // archives (the one it writes: the primary's notes gain nothing from an identical copy)
  const auto action_of = [&](int n) -> std::optional<std::size_t> {
    for (std::size_t a = 0; a < plan.actions.size(); ++a)
      for (const auto& t : plan.actions[a].targets)
        if (t == id(n)) return a;
    return std::nullopt;
  };
  const auto archived_by = [&](std::size_t a) {
    for (const auto& e : plan.actions[a].edits)
      if (std::holds_alternative<edit_set_duplicate_of>(e.op)) return e.record_id;
    return std::string();
  };
  const auto berlin = action_of(2), cello = action_of(4), tea = action_of(6);
  REQUIRE(berlin);
  REQUIRE(cello);
  REQUIRE(tea);
  CHECK(*berlin != *cello);
  CHECK(*cello != *tea);
  const std::string moved = archived_by(*berlin), gone = archived_by(*tea);
  REQUIRE((moved == id(1) || moved == id(2)));
  REQUIRE((gone == id(5) || gone == id(6)));
  // the other writer: new text in the Berlin row to be archived, new vectors in both cello rows,
  // the tea row to be archived deleted
  c.run(
      "UPDATE mem0 SET payload = jsonb_set(payload, '{data}', '\"The user lives in Munich.\"') "
      "WHERE id = '" +
      moved + "'");
  c.run("UPDATE mem0 SET vector = '{0.8,0.6,0,0}' WHERE id IN ('" + id(3) + "', '" + id(4) + "')");
  c.run("DELETE FROM mem0 WHERE id = '" + gone + "'");
  const std::string written_by_agent = c.dump(mem0_dump);
  {
    wal_writer wal(wal_path, wal_sync::none);
    apply_options ao;
    ao.approve_tier2 = true;
    ao.skip_store_check = true;  // the fingerprint changed with the other writer's rows
    const auto res = apply_plan(s, plan, wal, ao);
    CHECK(res.failed.empty());
    const auto& ob = res.outcomes.at(*berlin);
    const auto& oc = res.outcomes.at(*cello);
    const auto& ot = res.outcomes.at(*tea);
    INFO("berlin: " << to_string(ob.status) << " " << ob.reason);
    INFO("cello: " << to_string(oc.status) << " " << oc.reason);
    INFO("tea: " << to_string(ot.status) << " " << ot.reason);
    CHECK(ob.stale());
    CHECK(ob.reason.find(moved) != std::string::npos);
    CHECK(ot.stale());
    CHECK(ot.reason.find(gone) != std::string::npos);
    CHECK(oc.status == action_status::applied);
    // both cello rows changed: the primary's check refused the first attempt, the duplicate's
    // write the second (each read again in its rollback), the third ran over both as they are
    CHECK(oc.attempts == 3);
  }
  // the Berlin and tea rows as the agent left them; the cello pair merged, the new vectors kept
  CHECK(c.dump("SELECT count(*) FROM mem0 WHERE payload ? 'memhealth'") == "1\n");
  CHECK(c.dump("SELECT count(*) FROM mem0 WHERE payload->'memhealth'->>'status' = 'archived' AND "
               "id IN ('" +
               id(3) + "', '" + id(4) + "')") == "1\n");
  CHECK(c.dump("SELECT vector::text FROM mem0 WHERE id IN ('" + id(3) + "', '" + id(4) +
               "') ORDER BY id") == "{0.8,0.6,0,0}\n{0.8,0.6,0,0}\n");
  CHECK(c.dump("SELECT payload->>'data' FROM mem0 WHERE id = '" + moved + "'") ==
        "The user lives in Munich.\n");
  // the log's before-images are the rows as read again: a rollback gives back the agent's rows
  {
    auto r = pg_store<>::open(db, pg_mem0_mapping());
    const auto rb = rollback(r, read_wal_file(wal_path));
    CHECK(rb.complete());
  }
  CHECK(c.dump(mem0_dump) == written_by_agent);
  fs::remove(wal_path);
}

// The agent rewrites or deletes a merge's primary (a record the action names but does not write)
// while apply runs, after the store was read and the action's intent logged: the action checks
// such rows in its transaction (`verify_unchanged`, holding them until the commit), so it is
// stale and the duplicate stays active. Was (a tester): the duplicate was archived pointing at a
// rewritten or deleted primary, exit 0.
TEST_CASE("pg_store: a merge's primary changed or deleted during apply makes the merge stale") {
  const auto uri = server();
  if (!uri) return;
  const auto db = fresh_schema(*uri, "mem0_primary");
  conn c(db);
  c.run(mem0_table);
  c.run(mem0_row(1, "The user lives in Berlin.", "alice", "'{0.5,0.5,0.5,0.5}'"));
  c.run(mem0_row(2, "The user lives in Berlin.", "alice", "'{0.5,0.5,0.5,0.5}'"));
  c.run(mem0_row(3, "The user plays the cello.", "alice", "'{0.6,0.8,0,0}'"));
  c.run(mem0_row(4, "The user plays the cello.", "alice", "'{0.6,0.8,0,0}'"));
  auto s = pg_store<>::open(db, pg_mem0_mapping());
  const auto plan =
      make_plan(s, make_default_pipeline().run(s, check_options()), planner_options{});
  // each merge's primary: the record it names that gets no duplicate_of
  std::vector<std::string> primaries;
  for (const auto& a : plan.actions) {
    if (a.type != action_types::merge_duplicates) continue;
    std::set<std::string> archived;
    for (const auto& e : a.edits)
      if (std::holds_alternative<edit_set_duplicate_of>(e.op)) archived.insert(e.record_id);
    for (const auto& t : a.targets)
      if (!archived.count(t)) primaries.push_back(t);
  }
  REQUIRE(primaries.size() == 2);
  const fs::path wal_path = fs::temp_directory_path() /
                            ("memhealth-pg-test-" + std::to_string(::getpid()) + "-primary.wal");
  fs::remove(wal_path);
  wal_writer wal(wal_path, wal_sync::none);
  apply_options ao;
  ao.approve_tier2 = true;
  bool agent_wrote = false;
  ao.crash_hook = [&](std::string_view point) {  // the agent, once, after the intents are durable
    if (point != "after_intent" || agent_wrote) return;
    agent_wrote = true;
    c.run(
        "UPDATE mem0 SET payload = jsonb_set(payload, '{data}', '\"The user moved to Oslo.\"') "
        "WHERE id = '" +
        primaries[0] + "'");
    c.run("DELETE FROM mem0 WHERE id = '" + primaries[1] + "'");
  };
  const auto res = apply_plan(s, plan, wal, ao);
  CHECK(agent_wrote);
  CHECK(res.applied.empty());
  CHECK(res.failed.empty());
  std::size_t stale = 0;
  for (const auto& o : res.outcomes) {
    INFO(o.idempotency_key << ": " << to_string(o.status) << " " << o.reason);
    stale += o.stale() ? 1 : 0;
  }
  CHECK(stale == 2);
  CHECK(c.dump("SELECT count(*) FROM mem0 WHERE payload ? 'memhealth'") == "0\n");
  CHECK(c.dump("SELECT count(*) FROM mem0") == "3\n");
  fs::remove(wal_path);
}

TEST_CASE("pg_store: mapping faults are clear errors before anything runs") {
  const auto uri = server();
  if (!uri) return;
  const auto db = fresh_schema(*uri, "faults");
  conn c(db);
  c.run(mem0_table);
  c.run(mem0_row(1, "x", "alice", "'{1,0}'"));
  error_code code{};
  SUBCASE("a mapping naming a missing column") {
    auto m = pg_mem0_mapping();
    m.fields["kind"] = pg_source{"kind_col", {}};
    const auto msg = error_of([&] { (void)pg_store<>::open(db, m); }, &code);
    CHECK(code == error_code::schema);
    CHECK(msg.find("table 'mem0' has no column 'kind_col'") != std::string::npos);
  }
  SUBCASE("a missing table") {
    const auto msg = error_of([&] { (void)pg_store<>::open(db, pg_mem0_mapping("nope")); }, &code);
    CHECK(code == error_code::schema);
    CHECK(msg.find("there is no table 'nope'") != std::string::npos);
  }
  SUBCASE("a vector column of the wrong type") {
    c.run("CREATE TABLE mem0t (id uuid PRIMARY KEY, vector text, payload jsonb)");
    const auto msg = error_of([&] { (void)pg_store<>::open(db, pg_mem0_mapping("mem0t")); }, &code);
    CHECK(code == error_code::schema);
    CHECK(msg.find("vector column 'vector' of table 'mem0t' is of type text") != std::string::npos);
  }
  SUBCASE("a JSON path into a column that is not jsonb") {
    c.run("CREATE TABLE mem0j (id uuid PRIMARY KEY, vector real[], payload text)");
    const auto msg = error_of([&] { (void)pg_store<>::open(db, pg_mem0_mapping("mem0j")); }, &code);
    CHECK(code == error_code::schema);
    CHECK(msg.find("paths need jsonb") != std::string::npos);
  }
  SUBCASE("a table the role may not read, or not write") {
    c.run(
        "DROP ROLE IF EXISTS memhealth_reader; CREATE ROLE memhealth_reader LOGIN;"
        "GRANT USAGE ON SCHEMA faults TO memhealth_reader");
    const std::string as_reader = db + "&user=memhealth_reader";
    auto msg = error_of([&] { (void)pg_store<>::open(as_reader, pg_mem0_mapping()); }, &code);
    CHECK(code == error_code::precondition);
    CHECK(msg.find("this role may not SELECT column 'id' of table 'mem0'") != std::string::npos);
    c.run("GRANT SELECT ON mem0 TO memhealth_reader");
    msg = error_of([&] { (void)pg_store<>::open(as_reader, pg_mem0_mapping()); }, &code);
    CHECK(code == error_code::precondition);
    CHECK(msg.find("may not UPDATE column") != std::string::npos);
    pg_store_options ro;
    ro.read_only = true;
    auto s = pg_store<>::open(as_reader, pg_mem0_mapping(), ro);
    CHECK(s.size() == 1);
    CHECK(error_of([&] { (void)s.restore(0, s.extract(0)); }, &code).find("read-only") !=
          std::string::npos);
    c.run("DROP OWNED BY memhealth_reader; DROP ROLE memhealth_reader");
  }
  SUBCASE("a password in the connection string is refused and never printed") {
    const std::string with_pw = "postgresql://someone:s3cr3t-pw@localhost/db";
    const auto msg = error_of([&] { (void)pg_store<>::open(with_pw, pg_mem0_mapping()); }, &code);
    CHECK(code == error_code::invalid_argument);
    CHECK(msg.find("contains a password") != std::string::npos);
    CHECK(msg.find("s3cr3t") == std::string::npos);
    CHECK(describe_conninfo(with_pw).find("s3cr3t") == std::string::npos);
    CHECK(error_of([&] { check_conninfo("host=x password=s3cr3t"); }).find("s3cr3t") ==
          std::string::npos);
  }
  SUBCASE("a repair that changes a field the mapping has no place for writes nothing") {
    auto m = pg_mem0_mapping();
    m.rest = {};
    auto s = pg_store<>::open(db, m);
    auto img = s.extract(0);
    img.status = "archived";
    const std::string before = c.dump(mem0_dump);
    const auto msg = error_of([&] { (void)s.restore(0, img); }, &code);
    CHECK(code == error_code::precondition);
    CHECK(msg.find("has no place for the field(s) status") != std::string::npos);
    CHECK(c.dump(mem0_dump) == before);
    CHECK(s.record(0).status == "active");
  }
}

TEST_CASE(
    "pg_store: a connection dropped during a repair rolls the action back, recover is clean") {
  const auto uri = server();
  if (!uri) return;
  const auto db = fresh_schema(*uri, "drop");
  { auto s = pg_store<>::create(db, suite_records()); }
  conn c(db);
  const char* dump =
      "SELECT seq, id, status, record, embedding::text FROM memhealth_records ORDER BY seq";
  const std::string before = c.dump(dump);
  const fs::path wal_path =
      fs::temp_directory_path() / ("memhealth-pg-test-" + std::to_string(::getpid()) + "-drop.wal");
  repair_plan plan;
  repair_action a;
  a.type = "test";
  a.idempotency_key = "two-records";
  a.targets = {"b", "f"};
  a.edits = {{"b", edit_set_weight{0.5}}, {"f", edit_set_status{"archived"}}};
  plan.actions.push_back(a);
  for (const bool always : {true, false}) {
    CAPTURE(always);
    fs::remove(wal_path);
    int kills = 0;
    {
      auto s = pg_store<>::open(db, pg_own_mapping());
      wal_writer wal(wal_path, wal_sync::none);
      apply_options ao;
      ao.crash_hook = [&](std::string_view point) {
        // after the first record write of the action: the server ends the store's session
        if (point == "after_apply_record" && s.in_action() && (always || kills == 0)) {
          ++kills;
          c.run("SELECT pg_terminate_backend(" + std::to_string(PQbackendPID(s.native_handle())) +
                ")");
        }
      };
      const auto res = apply_plan(s, plan, wal, ao);
      if (always) {
        CHECK(res.failed == std::vector<std::string>{"two-records"});
        CHECK(kills == 4);              // 1 + retry_limit attempts
        CHECK(c.dump(dump) == before);  // nothing of the action stayed
      } else {
        CHECK(res.applied == std::vector<std::string>{"two-records"});
        CHECK(kills == 1);
        CHECK(c.dump("SELECT id, status, record::jsonb->>'effective_weight' FROM memhealth_records "
                     "WHERE id IN ('b', 'f') ORDER BY seq") == "b|active|0.5\nf|archived|<null>\n");
      }
    }
    const std::string state = c.dump(dump);
    auto s = pg_store<>::open(db, pg_own_mapping());
    const auto rr = recover(s, read_wal_file(wal_path));
    CHECK(rr.complete());
    CHECK(rr.records_restored == 0);
    CHECK(c.dump(dump) == state);  // recover found the store whole: nothing to do
  }
  fs::remove(wal_path);
}

TEST_CASE("pg_store: a COMMIT whose acknowledgement is lost is resolved by asking the server") {
  const auto uri = server();
  if (!uri) return;
  const auto db = fresh_schema(*uri, "lost_ack");
  { auto s = pg_store<>::create(db, suite_records()); }
  conn c(db);
  const fs::path wal_path =
      fs::temp_directory_path() / ("memhealth-pg-test-" + std::to_string(::getpid()) + "-ack.wal");
  fs::remove(wal_path);
  repair_plan plan;
  repair_action a;
  a.type = "test";
  a.idempotency_key = "weight-b";
  a.targets = {"b"};
  a.edits = {{"b", edit_set_weight{0.5}}};
  plan.actions.push_back(a);
  pg_store_options o;
  int lost = 0;
  PGconn* handle = nullptr;
  o.after_commit_hook = [&] {
    // the server committed; the connection dies before the client may use the answer
    if (lost++ == 0) {
      c.run("SELECT pg_terminate_backend(" + std::to_string(PQbackendPID(handle)) + ")");
      throw error(error_code::io, "simulated: the connection was lost during COMMIT");
    }
  };
  {
    auto s = pg_store<>::open(db, pg_own_mapping(), o);
    handle = s.native_handle();
    wal_writer wal(wal_path, wal_sync::none);
    const auto res = apply_plan(s, plan, wal, apply_options{});
    CHECK(res.applied == std::vector<std::string>{"weight-b"});
    CHECK(lost == 1);
    REQUIRE(s.record(*s.find("b")).effective_weight.has_value());
    CHECK(*s.record(*s.find("b")).effective_weight == 0.5);
  }
  CHECK(c.dump("SELECT record::jsonb->>'effective_weight' FROM memhealth_records WHERE id = 'b'") ==
        "0.5\n");
  auto s = pg_store<>::open(db, pg_own_mapping());
  const auto rr = recover(s, read_wal_file(wal_path));
  CHECK(rr.complete());
  CHECK(rr.records_restored == 0);
  fs::remove(wal_path);
}

namespace {

// Records in four scopes with known findings (worked out by hand):
// - user:a (4 records): a1/a2 exact duplicates; a4 no embedding
// - user:b (3): b1 holds a1's text (cross-scope duplicate of a1, a2, b1); b2 NaN vector; b3 model
//   boilerplate (hygiene)
// - user:c (6): c1/c2 exact duplicates; c4 holds a4's text without a vector (cross-scope
//   duplicate of a4, c4)
// - user:d (2): d1 has id "a1" (duplicate_id, indices 0 and 13); d2 repeats d1's text
// Jobs at job_records = 5, scopes in byte order: [user:a] (4), [user:b] (3: 4 + 3 > 5),
// [user:c] (6, alone), [user:d] (2: 6 + 2 > 5): 4 jobs.
std::vector<memory_record> worker_records() {
  std::vector<memory_record> v;
  const std::vector<float> e1{0.5f, 0.5f, 0.5f, 0.5f}, e2{0.5f, -0.5f, 0.5f, -0.5f},
      e3{-0.5f, 0.5f, -0.5f, 0.5f}, e4{0.5f, 0.5f, -0.5f, -0.5f}, e5{0.5f, 0.5f, 0.5f, -0.5f};
  v.push_back(rec("a1", "The user lives in Berlin.", e1, "user:a"));
  v.push_back(rec("a2", "The user lives in Berlin.", e1, "user:a"));
  v.push_back(rec("a3", "The user likes green tea.", e2, "user:a"));
  v.push_back(rec("a4", "The user speaks Portuguese.", {}, "user:a"));
  v.push_back(rec("b1", "The user lives in Berlin.", e1, "user:b"));
  v.push_back(
      rec("b2", "The user owns a red bicycle.", {std::nanf(""), 0.5f, 0.5f, 0.5f}, "user:b"));
  v.push_back(rec("b3", "As an AI language model, I cannot remember that.", e3, "user:b"));
  v.push_back(rec("c1", "The user plays the cello.", {0.6f, 0.8f, 0.0f, 0.0f}, "user:c"));
  v.push_back(rec("c2", "The user plays the cello.", {0.6f, 0.8f, 0.0f, 0.0f}, "user:c"));
  v.push_back(rec("c3", "The user jogs every morning.", e3, "user:c"));
  v.push_back(rec("c4", "The user speaks Portuguese.", {}, "user:c"));
  v.push_back(rec("c5", "The user is a vegetarian.", e4, "user:c"));
  v.push_back(rec("c6", "The user has a dog named Rex.", e2, "user:c"));
  v.push_back(rec("a1", "The user drives a blue car.", e5, "user:d"));
  v.push_back(rec("d2", "The user drives a blue car!", e5, "user:d"));
  return v;
}

// The findings of a report as "kind:id,id,..." lines.
std::string kinds_and_ids(const report& r) {
  std::string s;
  for (const auto& f : r.findings) {
    s += f.kind + ":";
    for (std::size_t k = 0; k < f.record_ids.size(); ++k) s += (k ? "," : "") + f.record_ids[k];
    s += "\n";
  }
  return s;
}

// The check document of a parallel run, as check_json writes the single-process one (the same
// detect_options: the run's resolved dimension is in res.dimension, not in the document).
std::string parallel_json(const pg_run_result& res) {
  return check_report_json(res.findings, "store", check_options(), {}).dump(2);
}

std::string run_tables(conn& c) {
  return c.dump(
      "SELECT count(*) FROM pg_tables WHERE tablename LIKE 'memhealth_run_%' OR tablename LIKE "
      "'memhealth_jobs_%' OR tablename LIKE 'memhealth_results_%'");
}

}  // namespace

TEST_CASE("pg_store: census counts rows per scope and vector length, in a snapshot") {
  const auto uri = server();
  if (!uri) return;
  SUBCASE("own schema: a tie of dimensions goes to the smaller, as the store's own count") {
    const auto db = fresh_schema(*uri, "census_own");
    std::vector<memory_record> v;
    v.push_back(rec("b1", "The user likes tea.", {1, 0, 0}, "s:b"));
    v.push_back(rec("b2", "The user likes coffee.", {0, 1, 0}, "s:b"));
    v.push_back(rec("a1", "The user owns a cat.", {1, 0, 0, 0}, "s:a"));
    v.push_back(rec("a2", "The user owns a dog.", {0, 1, 0, 0}, "s:a"));
    v.push_back(rec("n1", "The user reads novels.", {}, "s:a"));
    { auto s = pg_store<>::create(db, v); }
    const auto c = pg_store<>::census(db, pg_own_mapping());
    CHECK(c.rows == 5);
    CHECK(c.dimension == 3);  // two of 3, two of 4, one without: the smaller of the tie
    REQUIRE(c.scopes);
    CHECK(*c.scopes == std::map<std::string, std::size_t>{{"s:a", 3}, {"s:b", 2}});
    CHECK(pg_store<>::open(db, pg_own_mapping()).dimension() == 3);
    std::string place;
    CHECK(pg_store<>::scope_index(db, pg_own_mapping(), &place) == true);  // the schema's index
    CHECK(place == "scope");
  }
  SUBCASE("mem0 table: an exported snapshot hides later rows; a mapping without a scope") {
    const auto db = fresh_schema(*uri, "census_mem0");
    conn m(db);
    m.run(mem0_table);
    m.run(mem0_row(1, "The user lives in Berlin.", "alice", "'{0.5,0.5,0.5,0.5}'"));
    m.run(mem0_row(2, "The user plays the cello.", "alice", "'{0.6,0.8,0}'"));
    m.run(mem0_row(3, "The user lives in Berlin.", "bob", "'{0.5,0.5,0.5,0.5}'"));
    m.run(mem0_row(4, "The user plays the cello.", "carol o", "NULL"));
    conn snap(db);
    snap.run("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
    std::string id = snap.dump("SELECT pg_export_snapshot()");
    REQUIRE(!id.empty());
    id.pop_back();                // the row's '\n'
    for (int k = 5; k <= 7; ++k)  // three more rows of 3 floats, scope dave, after the snapshot
      m.run(mem0_row(k, "The user jogs.", "dave", "'{0,0.6,0.8}'"));
    pg_store_options o;
    o.snapshot = id;
    const auto before = pg_store<>::census(db, pg_mem0_mapping(), o);
    CHECK(before.rows == 4);
    CHECK(before.dimension == 4);  // two of 4, one of 3, one NULL
    REQUIRE(before.scopes);
    CHECK(*before.scopes == std::map<std::string, std::size_t>{{"user:alice/agent:bot", 2},
                                                               {"user:bob/agent:bot", 1},
                                                               {"user:carol o/agent:bot", 1}});
    const auto now = pg_store<>::census(db, pg_mem0_mapping());
    CHECK(now.rows == 7);
    CHECK(now.dimension == 3);  // four of 3 now
    REQUIRE(now.scopes);
    CHECK(now.scopes->at("user:dave/agent:bot") == 3);
    snap.run("COMMIT");
    // no place of its own for the scope: no per-scope counts, and the run is one job
    auto plain = pg_mem0_mapping();
    plain.scope_parts.clear();
    const auto whole = pg_store<>::census(db, plain);
    CHECK(whole.rows == 7);
    CHECK(whole.dimension == 3);
    CHECK(!whole.scopes);
    pg_run_options ro;
    ro.workers = 2;
    ro.poll = std::chrono::milliseconds(20);
    const auto res = pg_parallel_check(db, plain, {}, check_options(), ro);
    CHECK(res.jobs == 1);
    CHECK(res.dimension == 3);
    CHECK(parallel_json(res) ==
          check_json_via_jsonl(pg_store<>::open(db, plain), "census-noscope"));
    // an index on mem0's scope place: none, then one (the planner reads one scope through it)
    CHECK(!pg_store<>::scope_index(db, plain).has_value());
    std::string place;
    CHECK(pg_store<>::scope_index(db, pg_mem0_mapping(), &place) == false);
    auto part = [](const std::string& k) {
      return "(CASE WHEN jsonb_typeof((payload #> '{" + k +
             "}')) IN ('string', 'number') THEN NULLIF((payload #>> '{" + k + "}'), '') END)";
    };
    CHECK(place == "(NULLIF(substr(COALESCE('user:' || " + part("user_id") +
                       ", '') || COALESCE('/' || 'agent:' || " + part("agent_id") +
                       ", '') || COALESCE('/' || 'run:' || " + part("run_id") +
                       ", ''), CASE WHEN " + part("user_id") + " IS NULL THEN 2 ELSE 1 END), ''))");
    // the hint is an index expression the server accepts (immutable) and the jobs' reads use
    m.run("CREATE INDEX mem0_scope ON mem0 (" + place + ")");
    CHECK(pg_store<>::scope_index(db, pg_mem0_mapping()) == true);
  }
}

namespace {
// array_send's bytes of a real[]: ndim, has-nulls, element oid 700, per dimension (size, lower
// bound), per element (length, big-endian bits); `len` -1 writes a NULL element.
std::string real_array_bytes(std::vector<std::uint32_t> header, std::vector<std::int32_t> lens,
                             std::vector<std::uint32_t> bits) {
  std::string b;
  auto put = [&](std::uint32_t x) {
    for (int k = 3; k >= 0; --k) b += static_cast<char>((x >> (8 * k)) & 0xff);
  };
  for (auto h : header) put(h);
  for (std::size_t k = 0; k < lens.size(); ++k) {
    put(static_cast<std::uint32_t>(lens[k]));
    if (lens[k] >= 0) put(bits[k]);
  }
  return b;
}
std::uint32_t bits_of(float f) {
  return std::bit_cast<std::uint32_t>(f);
}
}  // namespace

TEST_CASE("pg_store: vectors read in binary format are the text format's, bit for bit") {
  using memhealth::detail::pg::parse_vector_binary;
  std::vector<float> v;
  // one dimension from 1: 1.5, -0 (0x80000000), a signalling-payload NaN (0x7fa00001) that
  // becomes quiet_NaN (0x7fc00000), as the text "NaN" reads
  auto ok = real_array_bytes({1, 0, 700, 3, 1}, {4, 4, 4}, {0x3fc00000u, 0x80000000u, 0x7fa00001u});
  REQUIRE(parse_vector_binary(ok.data(), ok.size(), v));
  REQUIRE(v.size() == 3);
  CHECK(bits_of(v[0]) == 0x3fc00000u);
  CHECK(bits_of(v[1]) == 0x80000000u);
  CHECK(bits_of(v[2]) == 0x7fc00000u);
  auto empty = real_array_bytes({0, 0, 700}, {}, {});
  CHECK(parse_vector_binary(empty.data(), empty.size(), v));
  CHECK(v.empty());
  // what the text reader refuses too: a lower bound other than 1 ("[0:1]={..}"), a NULL
  // element, two dimensions, bytes cut short
  auto lb0 = real_array_bytes({1, 0, 700, 2, 0}, {4, 4}, {0, 0});
  CHECK_FALSE(parse_vector_binary(lb0.data(), lb0.size(), v));
  auto null = real_array_bytes({1, 1, 700, 2, 1}, {4, -1}, {0, 0});
  CHECK_FALSE(parse_vector_binary(null.data(), null.size(), v));
  auto two = real_array_bytes({2, 0, 700, 1, 1, 2, 1}, {4, 4}, {0, 0});
  CHECK_FALSE(parse_vector_binary(two.data(), two.size(), v));
  CHECK_FALSE(parse_vector_binary(ok.data(), ok.size() - 1, v));

  const auto uri = server();
  if (!uri) return;
  const auto db = fresh_schema(*uri, "binary_vec");
  std::vector<memory_record> recs;
  recs.push_back(rec("v1", "The user likes tea.", {1, 0}, "s:a"));
  recs.push_back(rec("v2", "The user likes coffee.", {1, 0}, ""));
  recs.push_back(rec("v3", "The user owns a cat.", {1, 0}, ""));
  recs.push_back(rec("v4", "The user owns a dog.", {1, 0}, "s:b"));
  { auto s = pg_store<>::create(db, recs); }
  conn c(db);
  c.run(
      "UPDATE memhealth_records SET embedding = '{1.5,-0,NaN,Infinity,-Infinity}' WHERE id = "
      "'v1'; UPDATE memhealth_records SET embedding = '{1e-45,3.4028235e38}' WHERE id = 'v2'; "
      "UPDATE memhealth_records SET embedding = '{}' WHERE id = 'v3'; UPDATE "
      "memhealth_records SET embedding = NULL WHERE id = 'v4'; UPDATE memhealth_records SET "
      "scope = NULL WHERE id = 'v2'; UPDATE memhealth_records SET scope = '' WHERE id = 'v3'");
  {
    const auto s = pg_store<>::open(db, pg_own_mapping());
    REQUIRE(s.size() == 4);
    const auto e1 = s.embedding(0);
    REQUIRE(e1.size() == 5);
    CHECK(bits_of(e1[0]) == 0x3fc00000u);
    CHECK(bits_of(e1[1]) == 0x80000000u);  // -0 keeps its sign
    CHECK(bits_of(e1[2]) == 0x7fc00000u);
    CHECK(bits_of(e1[3]) == 0x7f800000u);
    CHECK(bits_of(e1[4]) == 0xff800000u);
    const auto e2 = s.embedding(1);
    REQUIRE(e2.size() == 2);
    CHECK(bits_of(e2[0]) == 0x00000001u);  // the smallest subnormal
    CHECK(bits_of(e2[1]) == 0x7f7fffffu);  // FLT_MAX
    CHECK(s.embedding(2).empty());
    CHECK(s.embedding(3).empty());
  }
  // a job's scopes: "" selects the rows whose scope column is NULL and those where it is ''
  pg_store_options o;
  o.scopes = std::vector<std::string>{""};
  {
    const auto s = pg_store<>::open(db, pg_own_mapping(), o);
    REQUIRE(s.size() == 2);
    CHECK(s.record(0).id == "v2");
    CHECK(s.record(1).id == "v3");
  }
  o.scopes = std::vector<std::string>{"s:b", "s:a"};
  {
    const auto s = pg_store<>::open(db, pg_own_mapping(), o);
    REQUIRE(s.size() == 2);
    CHECK(s.record(0).id == "v1");
    CHECK(s.record(1).id == "v4");
  }
  // a vector the text reader refuses is refused in binary too (a load issue, the record kept
  // without it), and the lean read's server-side length marks it alike
  c.run("UPDATE memhealth_records SET embedding = '[0:1]={1,2}' WHERE id = 'v4'");
  o.scopes.reset();
  for (const bool vectors : {true, false}) {
    o.vectors = vectors;
    o.read_only = true;
    const auto s = pg_store<>::open(db, pg_own_mapping(), o);
    REQUIRE(s.size() == 4);
    REQUIRE(s.load_issues().size() == 1);
    CHECK(s.load_issues()[0].field == "embedding");
    CHECK(s.load_issues()[0].reason.find(
              "the vector is not a one-dimensional array of numbers without NULLs") !=
          std::string::npos);
    CHECK(s.record(3).id == "v4");
    CHECK(s.vector_length(3) == 0);
    CHECK(s.read_with_issue(3));
  }
}

TEST_CASE("pg workers: the report is the single-process check's, byte for byte, for 1, 2, 4") {
  const auto uri = server();
  if (!uri) return;
  const auto db = fresh_schema(*uri, "workers_own");
  { auto s = pg_store<>::create(db, worker_records()); }
  auto s = pg_store<>::open(db, pg_own_mapping());
  const std::string single = check_json_via_jsonl(s, "workers");
  conn c(db);
  for (const unsigned n : {1u, 2u, 4u}) {
    CAPTURE(n);
    pg_run_options ro;
    ro.workers = n;
    ro.job_records = 5;
    ro.poll = std::chrono::milliseconds(20);
    const auto res = pg_parallel_check(db, pg_own_mapping(), {}, check_options(), ro);
    CHECK(res.jobs == 4);
    CHECK(res.job_claims == 4);
    CHECK(res.dimension == 4);
    std::size_t done = 0;
    for (const auto& [w, k] : res.jobs_by_worker) done += k;
    CHECK(done == 4);
    CHECK(res.jobs_by_worker.size() <= n);
    CHECK(parallel_json(res) == single);
    const std::string lines = kinds_and_ids(res.findings);
    // store-wide findings, by hand
    CHECK(lines.find("duplicate_id:a1\n") != std::string::npos);
    CHECK(lines.find("cross_scope_duplicate:a1,a2,b1\ncross_scope_duplicate:a4,c4\n") !=
          std::string::npos);
    // the "no usable embedding" finding of three jobs merged into one, ids in store order
    CHECK(lines.find("check_skipped:a4,b2,c4\n") != std::string::npos);
    // scope-local clusters from three jobs
    CHECK(lines.find("exact_duplicate:") != std::string::npos);
    CHECK(res.findings.count("exact_duplicate") == 3);  // a1/a2, c1/c2, a1(d)/d2
    CHECK(res.findings.count("cross_scope_duplicate") == 2);
    CHECK(run_tables(c) == "0\n");  // the run's tables are dropped
  }
}

TEST_CASE("pg workers: a mem0 table, scopes in a JSON path") {
  const auto uri = server();
  if (!uri) return;
  {
    const auto db2 = fresh_schema(*uri, "workers_mem0");
    conn m(db2);
    m.run(mem0_table);
    m.run(mem0_row(1, "The user lives in Berlin.", "alice", "'{0.5,0.5,0.5,0.5}'"));
    m.run(mem0_row(2, "The user lives in Berlin.", "alice", "'{0.5,0.5,0.5,0.5}'"));
    m.run(mem0_row(3, "The user lives in Berlin.", "bob", "'{0.5,0.5,0.5,0.5}'"));
    m.run(mem0_row(4, "The user plays the cello.", "bob", "'{0.6,0.8,0,0}'"));
    m.run(mem0_row(5, "The user plays the cello.", "carol o", "NULL"));
    auto s2 = pg_store<>::open(db2, pg_mem0_mapping());
    pg_run_options ro;
    ro.workers = 2;
    ro.job_records = 1;  // one scope per job: alice, bob, carol o
    ro.poll = std::chrono::milliseconds(20);
    const auto res = pg_parallel_check(db2, pg_mem0_mapping(), {}, check_options(), ro);
    CHECK(res.jobs == 3);
    CHECK(parallel_json(res) == check_json_via_jsonl(s2, "workers-mem0"));
    CHECK(res.findings.count("cross_scope_duplicate") == 2);
  }
}

TEST_CASE("pg_store: rows not read whole are load issues, the same in every read, never written") {
  const auto uri = server();
  if (!uri) return;
  const auto db = fresh_schema(*uri, "bad_rows");
  conn c(db);
  // no primary key: rows may share an id
  c.run("CREATE TABLE mem0 (id uuid, vector real[], payload jsonb, note text)");
  auto row = [&](int n, const std::string& vec, const std::string& payload) {
    char id[40];
    std::snprintf(id, sizeof id, "00000000-0000-0000-0000-%012d", n);
    c.run(std::string("INSERT INTO mem0 VALUES ('") + id + "', " + vec + ", '" + payload + "')");
  };
  auto fine = [](const std::string& text, const std::string& more = "") {
    return "{\"data\": \"" + text + "\", \"user_id\": \"u\", \"created_at\": " +
           "\"2024-03-01T09:30:00Z\", \"updated_at\": \"2024-03-02T09:00:00Z\"" + more + "}";
  };
  row(1, "'{0.6,0.8}'", fine("User likes tea"));
  row(2, "'{{0.6,0.8},{1,0}}'", fine("User likes coffee"));  // two-dimensional
  row(3, "'{0.6,NULL}'", fine("User plays chess"));          // a NULL element
  row(4, "'{0.8,0.6}'",
      "{\"data\": \"User runs\", \"user_id\": \"u\", \"created_at\": \"yesterday\"}");
  row(5, "'{0.6,0.8}'", fine("User swims"));
  row(5, "'{0.8,0.6}'", fine("User dives"));  // the key names two rows
  row(6, "'{0.6,0.8}'", "[1, 2]");            // a payload that is no object
  row(7, "'{0.6,0.8}'", fine("User rows", ", \"memhealth\": {\"status\": 5}"));
  row(8, "'{0.6,0.8}'", fine("User hikes", ", \"memhealth\": \"x\""));
  const std::string before = c.dump("SELECT id, vector, payload FROM mem0 ORDER BY id, payload");
  const std::string id0 = "00000000-0000-0000-0000-00000000000";
  // (field, start of the reason, record_kept), worked out from the rows above, in key order
  const std::vector<std::tuple<std::string, std::string, bool>> want = {
      {"embedding", "row " + id0 + "2: the vector is not a one-dimensional array", true},
      {"embedding", "row " + id0 + "3: the vector is not a one-dimensional array", true},
      {"created_at", "row " + id0 + "4: cannot parse \"yesterday\"", true},
      {"", "row " + id0 + "5: the mapping's key (id) names more than one row", true},
      {"payload", "row " + id0 + "6: column 'payload' holds a JSON array, not an object", true},
      {"status", "row " + id0 + "7: ", true},
      {"payload->memhealth", "row " + id0 + "8: 'payload->memhealth' is not a JSON object", true}};
  auto same_issues = [&](const std::vector<load_issue>& got) {
    REQUIRE(got.size() == want.size());
    for (std::size_t k = 0; k < want.size(); ++k) {
      INFO("issue " << k << ": " << got[k].field << ": " << got[k].reason);
      CHECK(got[k].field == std::get<0>(want[k]));
      CHECK(got[k].reason.rfind(std::get<1>(want[k]), 0) == 0);
      CHECK(got[k].record_kept == std::get<2>(want[k]));
      CHECK(got[k].line == 0);
    }
  };
  auto s = pg_store<>::open(db, pg_mem0_mapping());
  REQUIRE(s.size() == 9);
  CHECK(s.rows_read() == 9);
  same_issues(s.load_issues());
  // index: 0 row 1, 1 row 2, 2 row 3, 3 row 4, 4-5 row 5 (twice), 6 row 6, 7 row 7, 8 row 8
  const std::vector<bool> flagged = {false, true, true, true, true, true, true, true, true};
  for (std::size_t i = 0; i < s.size(); ++i) CHECK(s.read_with_issue(i) == flagged[i]);
  CHECK(s.embedding(1).empty());
  CHECK(s.embedding(2).empty());
  CHECK(s.record(3).embedding == std::vector<float>{0.8f, 0.6f});
  CHECK(s.dimension() == 2);
  CHECK(s.record(6).content.empty());  // nothing read from the array
  CHECK(s.record(6).scope.empty());
  CHECK(s.record(7).status.empty());               // 5 is no status (as a JSONL line's "status": 5)
  CHECK(s.record(8).content == "User hikes");      // the mapped fields are read, the rest is not
  CHECK(s.record(0).source == "model_extracted");  // the mem0 mapping's defaults
  CHECK(s.record(0).kind == "fact");
  // no write of a flagged record, not even a preview; the rows stay as they are
  for (std::size_t i = 1; i < s.size(); ++i) {
    memory_record img = s.record(i);
    img.content += " (edited)";
    error_code code{};
    CHECK(error_of([&] { (void)s.preview_restore(i, img); }, &code).find("load issue") !=
          std::string::npos);
    CHECK(code == error_code::precondition);
    CHECK(error_of([&] { (void)s.restore(i, img); }, &code).find("load issue") !=
          std::string::npos);
    CHECK(code == error_code::precondition);
  }
  CHECK(c.dump("SELECT id, vector, payload FROM mem0 ORDER BY id, payload") == before);
  // the lean read (lengths only: the server marks a malformed vector) and the census see the same
  pg_store_options lean;
  lean.read_only = true;
  lean.vectors = false;
  const auto l = pg_store<>::open(db, pg_mem0_mapping(), lean);
  same_issues(l.load_issues());
  CHECK(l.vector_length(1) == 0);
  CHECK(l.vector_length(2) == 0);
  CHECK(l.vector_length(0) == 2);
  CHECK(l.dimension() == 2);
  const auto census = pg_store<>::census(db, pg_mem0_mapping());
  CHECK(census.rows == 9);
  CHECK(census.dimension == 2);
  // the check by jobs reports them and finds what the single-process check of the same records
  // finds, with and without a job table
  for (const bool table : {false, true}) {
    pg_run_options ro;
    ro.job_table = table;
    ro.workers = 2;
    ro.poll = std::chrono::milliseconds(20);
    const auto res = pg_parallel_check(db, pg_mem0_mapping(), {}, check_options(), ro);
    same_issues(res.load_issues);
    CHECK(parallel_json(res) == check_json(s));
  }
  // the structural check sees what was kept: no vector for rows 2 and 3, the shared id
  const report r = make_default_pipeline().run(s, check_options());
  CHECK(r.count("embedding_missing") == 2);
  CHECK(r.count("duplicate_id") == 1);
  // a unique key again: row 5's second copy gone, row 5 writable, a repair runs
  c.run("DELETE FROM mem0 WHERE payload->>'data' = 'User dives'");
  auto t = pg_store<>::open(db, pg_mem0_mapping());
  REQUIRE(t.size() == 8);
  CHECK_FALSE(t.read_with_issue(4));
  memory_record img = t.record(4);
  img.content = "User swims daily";
  (void)t.restore(4, img);
  CHECK(c.dump("SELECT payload->>'data' FROM mem0 WHERE id = '" + id0 + "5'") ==
        "User swims daily\n");
  // another writer gives the key a second row after the read: nothing written
  c.run("INSERT INTO mem0 SELECT * FROM mem0 WHERE id = '" + id0 + "1'");
  img = t.record(0);
  img.content = "User likes green tea";
  error_code code{};
  CHECK(error_of([&] { (void)t.restore(0, img); }, &code).find("now names 2 rows") !=
        std::string::npos);
  CHECK(code == error_code::precondition);
  CHECK(c.dump("SELECT payload->>'data' FROM mem0 WHERE id = '" + id0 + "1'") ==
        "User likes tea\nUser likes tea\n");
}

TEST_CASE("pg_store: a time whose text a write could not give back is never rewritten") {
  const auto uri = server();
  if (!uri) return;
  const auto db = fresh_schema(*uri, "fine_times");
  conn c(db);
  c.run(mem0_table);
  // the texts of one instant and offset as mem0 (Python isoformat) and others write them; only
  // row 3's is memhealth's own form (format_timestamp): a write there can be rolled back to it
  const char* texts[] = {"2024-07-01T12:34:56.123456-07:00", "2024-07-01T12:34:56.123000-07:00",
                         "2024-07-01T12:34:56.123-07:00",    "2024-07-01T12:34:56-07:00",
                         "2024-07-01 12:34:56.123-07:00",    "2024-07-01T19:34:56.123+00:00"};
  for (int n = 1; n <= 6; ++n)
    c.run(mem0_row(n, "User likes tea " + std::to_string(n), "u", "'{0.6,0.8}'", texts[n - 1]));
  // row 7: epoch milliseconds as a JSON number
  c.run(mem0_row(7, "User likes tea 7", "u", "'{0.6,0.8}'"));
  c.run(
      "UPDATE mem0 SET payload = jsonb_set(payload, '{created_at}', '1719862496123') WHERE id "
      "= '00000000-0000-0000-0000-000000000007'");
  const std::string before = c.dump("SELECT id, payload::text FROM mem0 ORDER BY id");
  auto s = pg_store<>::open(db, pg_mem0_mapping());
  REQUIRE(s.size() == 7);
  // to another offset (what normalize_timestamps does to a local time): every row but row 3
  // is refused, nothing written, the reason in the message; a dry run's preview refuses the same
  const char* why[] = {
      "holds a time finer than milliseconds (\"2024-07-01T12:34:56.123456-07:00\")",
      "holds its time as \"2024-07-01T12:34:56.123000-07:00\", which memhealth "
      "would write as \"2024-07-01T12:34:56.123-07:00\"",
      "",
      "holds its time as \"2024-07-01T12:34:56-07:00\", which memhealth would "
      "write as \"2024-07-01T12:34:56.000-07:00\"",
      "holds its time as \"2024-07-01 12:34:56.123-07:00\"",
      "holds its time as \"2024-07-01T19:34:56.123+00:00\", which memhealth "
      "would write as \"2024-07-01T19:34:56.123Z\"",
      "holds its time as the number 1719862496123"};
  for (std::size_t i = 0; i < 7; ++i) {
    if (i == 2) continue;
    CAPTURE(i);
    memory_record img = s.record(i);
    img.created_at->utc_offset_minutes = img.created_at->utc_offset_minutes == 0 ? 60 : 0;
    error_code code{};
    const std::string msg = error_of([&] { (void)s.restore(i, img); }, &code);
    CHECK(msg.find("field created_at " + std::string(why[i])) != std::string::npos);
    CHECK(msg.find("could not be rolled back to the row's text; nothing written") !=
          std::string::npos);
    CHECK(code == error_code::precondition);
    CHECK(error_of([&] { (void)s.preview_restore(i, img); }).find(why[i]) != std::string::npos);
  }
  CHECK(c.dump("SELECT id, payload::text FROM mem0 ORDER BY id") == before);
  // a change of another field leaves the time's text as it is
  memory_record img = s.record(0);
  img.content = "User likes green tea";
  (void)s.restore(0, img);
  CHECK(c.dump("SELECT payload->>'created_at', payload->>'data' FROM mem0 WHERE id = "
               "'00000000-0000-0000-0000-000000000001'") ==
        "2024-07-01T12:34:56.123456-07:00|User likes green tea\n");
  // memhealth's own form: written, and its before-image written back gives the text again
  img = s.record(2);
  img.created_at->utc_offset_minutes = 0;
  const memory_record was = s.restore(2, img);
  const std::string row3 =
      "SELECT payload->>'created_at' FROM mem0 WHERE id = "
      "'00000000-0000-0000-0000-000000000003'";
  CHECK(c.dump(row3) == "2024-07-01T19:34:56.123Z\n");
  (void)s.restore(2, was);
  CHECK(c.dump(row3) == "2024-07-01T12:34:56.123-07:00\n");
}

TEST_CASE("pg_store: a NULL json place is never written into (its rollback could not be exact)") {
  const auto uri = server();
  if (!uri) return;
  const auto db = fresh_schema(*uri, "null_places");
  conn c(db);
  c.run(
      "CREATE TABLE notes (nid text PRIMARY KEY, body text, emb real[], meta jsonb);"
      "INSERT INTO notes VALUES ('q1', 'Pia likes art', '{0.6,0.8}', NULL), ('r1', 'Quin likes "
      "sun', '{0.6,0.8}', '{\"mh\": null, \"keep\": 1}'), ('s1', 'Sam likes tea', '{0.6,0.8}', "
      "'{}'), ('t1', 'Tom likes jazz', '{0.6,0.8}', 'null'), ('u1', 'Uma likes rain', "
      "'{0.6,0.8}', '{\"mh\": {}}')");
  const pg_mapping m = parse_pg_mapping(
      R"({"table": "notes", "key": ["nid"], "id": "nid", "fields": {"content": "body",
          "source": "meta->src"}, "vector": "emb", "rest": "meta->mh",
          "defaults": {"status": "active", "scope": "s"}})",
      "notes");
  const std::string dump = "SELECT nid, meta::text FROM notes ORDER BY nid";
  const std::string before = c.dump(dump);
  auto s = pg_store<>::open(db, m);
  REQUIRE(s.size() == 5);
  CHECK(s.load_issues().empty());  // NULL and null read as "holds nothing", no issue
  // a field of the rest place (kind) and a mapped path (source) into each row
  for (std::size_t i = 0; i < 5; ++i) {
    CAPTURE(i);
    memory_record a = s.record(i);
    a.kind = "preference";
    memory_record b = s.record(i);
    b.source = "user_stated";
    for (const auto* img : {&a, &b}) {
      error_code code{};
      const std::string msg = error_of([&] { (void)s.restore(i, *img); }, &code);
      if (i == 2) {  // s1: '{}' is an object: written, then restored to '{}' exactly
        CHECK(msg == "no error");
        memory_record back = s.record(i);
        back.kind.clear();
        back.source.clear();
        (void)s.restore(i, back);
      } else if ((i == 1 || i == 4) && img == &b) {  // r1, u1: meta is an object; the rest
        CHECK(msg == "no error");                    // place (null, {}) is not written
        memory_record back = s.record(i);
        back.source.clear();
        (void)s.restore(i, back);
      } else {
        // q1, t1: meta NULL / null; r1, u1: the rest place null / {} (a rollback after keys
        // were added would remove the place)
        CHECK(msg.find(i == 1 || i == 4
                           ? "holds null or an empty object"
                           : "holds NULL (SQL NULL or JSON null)") != std::string::npos);
        CHECK(code == error_code::precondition);
      }
    }
  }
  CHECK(c.dump(dump) == before);
  // the rest a column of its own: NULL and null refused; an object, even {}, written and
  // restored to exactly what it was (a tester saw {} come back as NULL)
  const pg_mapping whole = parse_pg_mapping(
      R"({"table": "notes", "key": ["nid"], "id": "nid", "fields": {"content": "body"},
          "vector": "emb", "rest": "meta", "defaults": {"status": "active", "scope": "s"}})",
      "notes-whole");
  auto w = pg_store<>::open(db, whole);
  REQUIRE(w.size() == 5);
  for (std::size_t i = 0; i < 5; ++i) {
    CAPTURE(i);
    memory_record img = w.record(i);
    const memory_record was = img;
    img.kind = "preference";
    error_code code{};
    const std::string msg = error_of([&] { (void)w.restore(i, img); }, &code);
    if (i == 0 || i == 3) {  // q1 NULL, t1 null
      CHECK(msg.find("column 'meta' holds NULL") != std::string::npos);
      CHECK(code == error_code::precondition);
    } else {
      CHECK(msg == "no error");
      (void)w.restore(i, was);
    }
  }
  CHECK(c.dump(dump) == before);
}

TEST_CASE("pg_store: the rest place: its time keys, keys read elsewhere, untouched keys") {
  const auto uri = server();
  if (!uri) return;
  const auto db = fresh_schema(*uri, "rest_place");
  conn c(db);
  c.run(
      "CREATE TABLE kv (k text PRIMARY KEY, body text, ts text, emb real[], extra jsonb, t "
      "text);"
      "INSERT INTO kv VALUES "
      "('k1', 'The user keeps bees.', '2023-01-01T00:00:00.000Z', '{0.6,0.8}', '{\"status\": "
      "\"actve\", \"related_ids\": [], \"effective_weight\": 1.0, \"z\": {\"a\": 1}}', "
      "'x'),"
      "('k2', 'The user rides.', '2023-01-01T00:00:00.000Z', '{0.8,0.6}', "
      "'{\"last_accessed_at\": \"2023-02-01T10:00:00+02:00\"}', 'x'),"
      "('k3', 'The user rows.', '2023-01-01T00:00:00.000Z', '{0.8,0.6}', "
      "'{\"last_accessed_at\": \"2023-02-01T10:00:00.000+02:00\"}', 'x'),"
      "('k4', 'The user swims.', '2023-01-01T00:00:00.000Z', '{0.8,0.6}', "
      "'{\"created_at\": \"2022-01-01T00:00:00.000Z\"}', 'x')");
  const std::string dump = "SELECT k, extra::text, ts FROM kv ORDER BY k";
  const std::string before = c.dump(dump);
  const pg_mapping m = parse_pg_mapping(
      R"({"table": "kv", "key": ["k"], "id": "k", "fields": {"content": "body", "created_at": "ts"},
          "vector": "emb", "rest": "extra", "defaults": {"status": "active", "scope": "s"}})",
      "kv");
  auto s = pg_store<>::open(db, m);
  REQUIRE(s.size() == 4);
  // k4's rest holds created_at, which the mapping reads from ts: a load issue, the key not read
  // (the record has ts's time), the row never written
  REQUIRE(s.load_issues().size() == 1);
  CHECK(s.load_issues()[0].reason ==
        "row k4: 'extra' holds the key 'created_at', which the mapping reads from 'ts'; the "
        "key was not read (rename or remove it)");
  CHECK(s.load_issues()[0].record_kept);
  CHECK(format_timestamp(*s.record(3).created_at) == "2023-01-01T00:00:00.000Z");
  CHECK(s.read_with_issue(3));
  // k1: a status change writes the status key alone; the keys at their default ([] and 1.0)
  // keep their text, and the before-image gives the column back exactly
  memory_record img = s.record(0);
  CHECK(img.status == "actve");
  img.status = "pending_review";
  const memory_record was = s.restore(0, img);
  CHECK(c.dump("SELECT extra::text FROM kv WHERE k = 'k1'") ==
        "{\"z\": {\"a\": 1}, \"status\": \"pending_review\", \"related_ids\": [], "
        "\"effective_weight\": 1.0}\n");
  (void)s.restore(0, was);
  // k2: a time of the rest place in another text than memhealth's: refused, nothing written;
  // k3's is memhealth's own: written and given back
  img = s.record(1);
  REQUIRE(img.last_accessed_at);
  img.last_accessed_at->utc_offset_minutes = 0;
  error_code code{};
  CHECK(error_of([&] { (void)s.restore(1, img); }, &code)
            .find("field last_accessed_at holds its time as \"2023-02-01T10:00:00+02:00\"") !=
        std::string::npos);
  CHECK(code == error_code::precondition);
  img = s.record(2);
  REQUIRE(img.last_accessed_at);
  img.last_accessed_at->utc_offset_minutes = 0;
  const memory_record was3 = s.restore(2, img);
  CHECK(c.dump("SELECT extra->>'last_accessed_at' FROM kv WHERE k = 'k3'") ==
        "2023-02-01T08:00:00.000Z\n");
  (void)s.restore(2, was3);
  CHECK(c.dump(dump) == before);
  // k4 is never written
  img = s.record(3);
  img.status = "archived";
  (void)error_of([&] { (void)s.restore(3, img); }, &code);
  CHECK(code == error_code::precondition);
  CHECK(c.dump(dump) == before);
  // a rest that is a text column is refused before anything is read
  const std::string msg = error_of(
      [&] {
        (void)pg_store<>::open(db, parse_pg_mapping(R"({"table": "kv", "key": ["k"], "id": "k",
                                 "fields": {"content": "body"}, "rest": "t"})",
                                                    "kv-text-rest"));
      },
      &code);
  CHECK(msg.find("rest 't' is a column of type text; the rest place must be jsonb") !=
        std::string::npos);
  CHECK(code == error_code::schema);
}

TEST_CASE("pg_store: memhealth's schema: a row whose record is not one skips, counted") {
  const auto uri = server();
  if (!uri) return;
  const auto db = fresh_schema(*uri, "bad_record");
  {
    std::vector<memory_record> v;
    v.push_back(rec("a", "The user lives in Berlin.", {0.6f, 0.8f}, "s1"));
    v.push_back(rec("b", "The user plays the cello.", {0.8f, 0.6f}, "s1"));
    v.push_back(rec("c", "The user keeps bees.", {0.8f, 0.6f}, "s2"));
    (void)pg_store<>::create(db, v);
  }
  conn c(db);
  c.run("UPDATE memhealth_records SET record = '[1, 2]' WHERE id = 'b'");
  // a record edited by hand to another scope than its derived column (the census and the jobs
  // select by the column): not read either
  c.run(
      "UPDATE memhealth_records SET record = replace(record, '\"scope\":\"s2\"', "
      "'\"scope\":\"s9\"') WHERE id = 'c'");
  const auto s = pg_store<>::open(db, pg_own_mapping());
  REQUIRE(s.size() == 1);
  CHECK(s.rows_read() == 3);
  CHECK(s.record(0).id == "a");
  REQUIRE(s.load_issues().size() == 2);
  CHECK_FALSE(s.load_issues()[0].record_kept);
  CHECK(s.load_issues()[0].reason.rfind("row 2: ", 0) == 0);  // the row's seq
  CHECK_FALSE(s.load_issues()[1].record_kept);
  CHECK(s.load_issues()[1].reason ==
        "row 3: column 'scope' ('s2') differs from the record's scope ('s9'); the row is not "
        "read (write the record again to fix it)");
  for (const bool table : {false, true}) {
    pg_run_options ro;
    ro.job_table = table;
    ro.job_records = 1;
    ro.poll = std::chrono::milliseconds(20);
    const auto res = pg_parallel_check(db, pg_own_mapping(), {}, check_options(), ro);
    REQUIRE(res.load_issues.size() == 2);
    CHECK(res.load_issues[1].reason == s.load_issues()[1].reason);
    CHECK(parallel_json(res) == check_json(s));
  }
}

// Records whose structural and staleness findings mix per-record checks, links and store-wide
// facts, across scopes (the findings, worked out by hand, are listed in the test below).
std::vector<memory_record> mixed_records() {
  std::vector<memory_record> v;
  const std::vector<float> e1{0.5f, 0.5f, 0.5f, 0.5f}, e2{0.5f, -0.5f, 0.5f, -0.5f},
      e3{-0.5f, 0.5f, -0.5f, 0.5f};
  auto add = [&](std::string id, std::string text, std::vector<float> e, std::string scope,
                 std::string version = "m1") {
    v.push_back(memhealth::test::make_record(
        std::move(id), std::move(text), std::move(e),
        {std::move(version), std::move(scope), "fact", "2024-03-01T09:30:00.000Z", ""}));
    return &v.back();
  };
  // x1: an illegal status and a dangling duplicate_of: the record's own check comes first
  add("x1", "The user collects stamps.", e1, "user:a")->status = "bogus";
  v.back().links.duplicate_of = "nowhere";
  // x2: an episodic record last touched in 2020: stale
  add("x2", "The user went to a concert.", e2, "user:a")->kind = "episodic";
  v.back().updated_at = parse_timestamp("2020-01-01T00:00:00Z");
  v.back().created_at = v.back().updated_at;
  // x3: supersedes y1, in another scope, which is still active
  add("x3", "The user now lives in Porto.", e3, "user:a")->links.supersedes = {"y1"};
  // x4: a vector of 3 floats from another model
  add("x4", "The user reads science fiction.", {0.6f, 0.8f, 0.0f}, "user:a", "m2");
  add("y1", "The user lives in Lisbon.", {0.6f, 0.0f, 0.8f, 0.0f}, "user:b");
  // y2: blank text and a dangling duplicate_of
  add("y2", "   ", {0.0f, 0.6f, 0.0f, 0.8f}, "user:b")->links.duplicate_of = "x9";
  // y3: no vector, a dangling supersedes, stale
  add("y3", "The user had a cold.", {}, "user:b")->links.supersedes = {"gone"};
  v.back().kind = "episodic";
  v.back().updated_at = parse_timestamp("2019-06-01T00:00:00Z");
  add("z1", "The user plays chess.", {0.0f, 0.0f, 0.6f, 0.8f}, "user:c", "m2");
  return v;
}

TEST_CASE("pg workers: structural and staleness split between jobs and the store-wide pass") {
  const auto uri = server();
  if (!uri) return;
  const auto db = fresh_schema(*uri, "workers_mixed");
  { auto s = pg_store<>::create(db, mixed_records()); }
  auto s = pg_store<>::open(db, pg_own_mapping());
  const std::string single = check_json_via_jsonl(s, "mixed");
  // the store-wide pass reads the rows without their vectors: lengths only
  {
    pg_store_options lean;
    lean.read_only = true;
    lean.vectors = false;
    const auto l = pg_store<>::open(db, pg_own_mapping(), lean);
    REQUIRE(l.size() == 8);
    CHECK(l.dimension() == 4);
    CHECK(l.embedding(0).empty());
    CHECK(l.record(0).embedding.empty());
    CHECK(l.vector_length(0) == 4);
    CHECK(l.vector_length(3) == 3);
    CHECK(l.vector_length(6) == 0);
    CHECK(s.vector_length(3) == 3);
    pg_store_options writable = lean;
    writable.read_only = false;
    error_code code{};
    (void)error_of([&] { (void)pg_store<>::open(db, pg_own_mapping(), writable); }, &code);
    CHECK(code == error_code::precondition);
  }
  conn c(db);
  for (const bool table : {true, false})
    for (const unsigned n : {1u, 2u}) {
      CAPTURE(table);
      CAPTURE(n);
      pg_run_options ro;
      ro.workers = n;
      ro.job_records = 4;  // user:a (4 records) alone; user:b (3) and user:c (1) together
      ro.job_table = table;
      ro.poll = std::chrono::milliseconds(20);
      const auto res = pg_parallel_check(db, pg_own_mapping(), {}, check_options(), ro);
      CHECK(res.jobs == 2);
      CHECK(parallel_json(res) == single);
      const std::string lines = kinds_and_ids(res.findings);
      // by hand, in the single-process order: structural record by record (own checks, then
      // dangling links; y3 was updated before it was created), then its store-wide findings
      // (y1 superseded by x3 and y2 merged, both still active; m2 the minority model);
      // duplicates' records without a usable vector; staleness; scope (x3's link to user:b)
      CHECK(lines ==
            "illegal_status:x1\ndangling_reference:x1\nembedding_dim_mismatch:x4\n"
            "content_empty:y2\ndangling_reference:y2\nembedding_missing:y3\n"
            "timestamp_inconsistent:y3\ndangling_reference:y3\nmerged_but_active:y1\n"
            "merged_but_active:y2\nmixed_embedding_version:x4,z1\ncheck_skipped:x4,y3\n"
            "stale:x2\nstale:y3\ncross_scope_link:x3,y1\n");
      CHECK(res.findings.count("stale") == 2);
      CHECK(run_tables(c) == "0\n");
    }
  // a caller that wants the rows (memhealth plan) gets them without vectors, each vector's
  // presence known (7 of the 8 rows have one), and may move the store out; with
  // rows_with_vectors, the vectors themselves
  for (const bool vectors : {false, true}) {
    CAPTURE(vectors);
    pg_run_options ro;
    ro.job_table = false;
    ro.rows_with_vectors = vectors;
    std::optional<pg_store<>> kept;
    ro.on_rows = [&](pg_store<>& st) { kept.emplace(std::move(st)); };
    const auto res = pg_parallel_check(db, pg_own_mapping(), {}, check_options(), ro);
    REQUIRE(kept);
    // the plan made from these rows is the plan made from the rows with their vectors: the
    // planner asks only whether a record has one (has_vector): the minority model m2's records
    // with a vector (x4, z1) are re-embedded to m1 (z1 found only by that question), as are
    // x4 (3 floats) and y3 (no vector) for their own findings
    const repair_plan from_rows = make_plan(*kept, res.findings, planner_options{});
    CHECK(plan_to_json(from_rows).dump() ==
          plan_to_json(make_plan(s, res.findings, planner_options{})).dump());
    std::vector<std::string> reembedded;
    for (const auto& a : from_rows.actions)
      if (a.type == "reembed")
        reembedded.insert(reembedded.end(), a.targets.begin(), a.targets.end());
    std::sort(reembedded.begin(), reembedded.end());
    CHECK(reembedded == std::vector<std::string>{"x4", "y3", "z1"});
    CHECK(kept->size() == 8);
    CHECK(kept->has_vectors() == vectors);
    std::size_t present = 0, held = 0;
    for (std::size_t i = 0; i < kept->size(); ++i) {
      present += has_vector(*kept, i);
      held += !kept->record(i).embedding.empty();
    }
    CHECK(present == 7);
    CHECK(held == (vectors ? 7u : 0u));
  }
}

TEST_CASE(
    "pg workers: a scope held as a number (JSON or bigint column), a table named in capitals") {
  const auto uri = server();
  if (!uri) return;
  const auto db = fresh_schema(*uri, "workers_numscope");
  conn m(db);
  // mem0 rows whose user_id is a JSON number for one user and a string for another
  m.run(mem0_table);
  m.run(mem0_row(1, "The user lives in Berlin.", "alice", "'{0.5,0.5,0.5,0.5}'"));
  m.run(mem0_row(2, "The user lives in Berlin.", "alice", "'{0.5,0.5,0.5,0.5}'"));
  m.run(mem0_row(3, "The user plays the cello.", "bob", "'{0.6,0.8,0,0}'"));
  m.run(mem0_row(4, "The user plays the cello.", "bob", "'{0.6,0.8,0,0}'"));
  m.run(
      "UPDATE mem0 SET payload = jsonb_set(payload, '{user_id}', '42') WHERE payload->>'user_id' "
      "= 'bob'");
  // a table named in capitals whose scope is a bigint column
  m.run(
      "CREATE TABLE \"Mem\" (id bigint PRIMARY KEY, body text, \"userId\" bigint, emb real[]);"
      "INSERT INTO \"Mem\" VALUES (1, 'The user owns a cat.', 7, '{1,0}'), (2, 'The user owns a "
      "cat.', 7, '{1,0}'), (3, 'The user owns a cat.', 8, '{1,0}'), (4, 'The user rides.', NULL, "
      "'{0,1}')");
  const pg_mapping own_map = parse_pg_mapping(
      R"({"table": "Mem", "key": ["id"], "id": "id", "fields": {"content": "body", "scope": "userId"},
          "vector": "emb", "defaults": {"status": "active"}})",
      "capitals");
  for (const auto& [mapping, name] : {std::pair{pg_mem0_mapping(), std::string("mem0")},
                                      std::pair{own_map, std::string("Mem")}}) {
    CAPTURE(name);
    const auto s = pg_store<>::open(db, mapping);
    REQUIRE(s.size() == 4);
    if (name == "mem0") {
      CHECK(s.record(0).scope == "user:alice/agent:bot");
      CHECK(s.record(2).scope == "user:42/agent:bot");  // the number's digits, as SQL text
    } else {
      CHECK(s.record(0).scope == "7");
      CHECK(s.record(3).scope.empty());  // NULL: no scope
    }
    const auto c = pg_store<>::census(db, mapping);
    REQUIRE(c.scopes);
    CHECK(c.scopes->size() == 3 - (name == "mem0" ? 1 : 0));
    for (const bool table : {true, false}) {
      CAPTURE(table);
      pg_run_options ro;
      ro.job_table = table;
      ro.job_records = 1;
      ro.poll = std::chrono::milliseconds(20);
      const auto res = pg_parallel_check(db, mapping, {}, check_options(), ro);
      CHECK(parallel_json(res) == check_json_via_jsonl(s, "numscope-" + name));
      CHECK(res.findings.count("exact_duplicate") == (name == "mem0" ? 2u : 1u));
    }
    std::string place;
    CHECK(pg_store<>::scope_index(db, mapping, &place) == false);
    if (name == "mem0")
      CHECK(place.rfind("(NULLIF(substr(COALESCE('user:' || (CASE WHEN jsonb_typeof((payload #> "
                        "'{user_id}'))",
                        0) == 0);
    else
      CHECK(place == "(\"userId\"::text)");
  }
  // the index the hint names is the one the jobs' reads use
  m.run("CREATE INDEX ON \"Mem\" ((\"userId\"::text))");
  CHECK(pg_store<>::scope_index(db, own_map) == true);
}

TEST_CASE("pg workers: a worker killed mid-job loses its lease, another finishes it") {
  const auto uri = server();
  if (!uri) return;
  const auto db = fresh_schema(*uri, "workers_kill");
  { auto s = pg_store<>::create(db, worker_records()); }
  auto s = pg_store<>::open(db, pg_own_mapping());
  const std::string single = check_json_via_jsonl(s, "workers-kill");
  conn c(db);
  pg_run_options ro;
  ro.workers = 0;  // external workers only (here: this thread)
  ro.job_records = 5;
  ro.lease = std::chrono::milliseconds(1500);
  ro.poll = std::chrono::milliseconds(20);
  ro.keep_tables = true;
  ro.run_id = "killtest";
  std::promise<void> ready;
  ro.on_ready = [&](const std::string&) { ready.set_value(); };
  auto coordinator = std::async(std::launch::async, [&] {
    return pg_parallel_check(db, pg_own_mapping(), {}, check_options(), ro);
  });
  REQUIRE(ready.get_future().wait_for(std::chrono::seconds(60)) == std::future_status::ready);
  // a worker that claims job 0 and dies: it never renews its lease nor hands in a result
  conn dead(db);
  const auto claim = pg_claim_job(dead.c, "killtest", "dead", std::chrono::milliseconds(1500));
  REQUIRE(claim);
  CHECK(claim->job == 0);
  CHECK(claim->records == 4);
  REQUIRE(claim->scopes);
  CHECK(*claim->scopes == std::vector<std::string>{"user:a"});
  // a second worker dies right after its claim (the test hook): job 1 is left claimed too
  pg_worker_options killed;
  killed.name = "killed";
  killed.after_claim = [](int) { throw std::runtime_error("simulated kill"); };
  std::string kill_msg;
  try {
    (void)pg_run_worker(db, "killtest", {}, killed);
  } catch (const std::exception& e) {
    kill_msg = e.what();
  }
  CHECK(kill_msg == "simulated kill");
  // a live worker does jobs 2 and 3, waits for the two leases to expire, then does 0 and 1
  pg_worker_options live;
  live.name = "live";
  live.poll = std::chrono::milliseconds(20);
  const auto t0 = std::chrono::steady_clock::now();
  const auto wr = pg_run_worker(db, "killtest", {}, live);
  CHECK(wr.jobs_done == 4);
  CHECK(wr.results_refused == 0);
  CHECK(std::chrono::steady_clock::now() - t0 >= std::chrono::milliseconds(1000));
  const auto res = coordinator.get();
  CHECK(res.jobs == 4);
  CHECK(res.job_claims == 6);  // 4 jobs + the two dead claims
  CHECK(res.jobs_by_worker == std::map<std::string, std::size_t>{{"live", 4}});
  CHECK(parallel_json(res) == single);  // nothing twice, nothing lost
  // the dead worker's late result is refused: its token no longer holds the job
  CHECK(!pg_finish_job(dead.c, "killtest", *claim, "dead", "[]"));
  CHECK(c.dump("SELECT job, worker, attempts, state FROM memhealth_jobs_killtest ORDER BY job") ==
        "0|live|2|done\n1|live|2|done\n2|live|1|done\n3|live|1|done\n");
  CHECK(c.dump("SELECT count(*), count(DISTINCT job) FROM memhealth_results_killtest") == "4|4\n");
  c.run("DROP TABLE memhealth_results_killtest, memhealth_jobs_killtest, memhealth_run_killtest");
  // a worker that finished the last job and looks for the next after the coordinator saw every
  // job done and dropped the run's tables: the run ended, not an error (was "relation ... does
  // not exist")
  ro.keep_tables = false;
  ro.run_id = "racetest";
  std::promise<void> ready2;
  ro.on_ready = [&](const std::string&) { ready2.set_value(); };
  auto coordinator2 = std::async(std::launch::async, [&] {
    return pg_parallel_check(db, pg_own_mapping(), {}, check_options(), ro);
  });
  REQUIRE(ready2.get_future().wait_for(std::chrono::seconds(60)) == std::future_status::ready);
  pg_worker_options late;
  late.name = "late";
  std::size_t asked = 0;  // before each claim: the fifth comes after the fourth (last) job
  late.stop_requested = [&] {
    if (++asked == 5)
      REQUIRE(coordinator2.wait_for(std::chrono::seconds(60)) == std::future_status::ready);
    return false;
  };
  const auto lr = pg_run_worker(db, "racetest", {}, late);
  CHECK(lr.jobs_done == 4);
  CHECK(lr.run_ended);
  CHECK(!lr.stopped);
  CHECK(asked == 5);
  CHECK(parallel_json(coordinator2.get()) == single);
  CHECK(c.dump("SELECT count(*) FROM pg_tables WHERE tablename LIKE 'memhealth_%racetest'") ==
        "0\n");
}

TEST_CASE("pg workers: mapping faults and wrong settings are clear errors before anything runs") {
  const auto uri = server();
  if (!uri) return;
  const auto db = fresh_schema(*uri, "workers_faults");
  conn c(db);
  c.run(mem0_table);
  c.run(mem0_row(1, "x", "alice", "'{1,0}'"));
  c.run("CREATE TABLE mem0t (id uuid PRIMARY KEY, vector text, payload jsonb)");
  pg_run_options ro;
  ro.workers = 2;
  error_code code{};
  SUBCASE("a missing column") {
    auto m = pg_mem0_mapping();
    m.fields["kind"] = pg_source{"kind_col", {}};
    const auto msg =
        error_of([&] { (void)pg_parallel_check(db, m, {}, check_options(), ro); }, &code);
    CHECK(code == error_code::schema);
    CHECK(msg.find("table 'mem0' has no column 'kind_col'") != std::string::npos);
  }
  SUBCASE("a vector column of the wrong type") {
    const auto msg = error_of(
        [&] { (void)pg_parallel_check(db, pg_mem0_mapping("mem0t"), {}, check_options(), ro); },
        &code);
    CHECK(code == error_code::schema);
    CHECK(msg.find("vector column 'vector' of table 'mem0t' is of type text") != std::string::npos);
  }
  SUBCASE("an incremental run") {
    auto d = check_options();
    d.since = d.now;
    const auto msg =
        error_of([&] { (void)pg_parallel_check(db, pg_mem0_mapping(), {}, d, ro); }, &code);
    CHECK(code == error_code::precondition);
    CHECK(msg.find("incremental runs") != std::string::npos);
  }
  SUBCASE("a worker with other settings, a run that does not exist, a bad run id") {
    ro.workers = 0;
    ro.run_id = "settings1";
    ro.wait_limit = std::chrono::milliseconds(3000);
    std::promise<void> ready;
    ro.on_ready = [&](const std::string&) { ready.set_value(); };
    auto coordinator = std::async(std::launch::async, [&] {
      return error_of(
          [&] { (void)pg_parallel_check(db, pg_mem0_mapping(), {}, check_options(), ro); });
    });
    REQUIRE(ready.get_future().wait_for(std::chrono::seconds(60)) == std::future_status::ready);
    default_check_settings other;
    other.near_duplicate_threshold = 0.8f;
    auto msg = error_of([&] { (void)pg_run_worker(db, "settings1", other); }, &code);
    CHECK(code == error_code::precondition);
    CHECK(msg.find("detection settings differ from the run's") != std::string::npos);
    // nobody works: the coordinator gives up at its wait limit
    CHECK(coordinator.get().find("not every job was done within the wait limit") !=
          std::string::npos);
    msg = error_of([&] { (void)pg_run_worker(db, "settings1", {}); }, &code);
    CHECK(code == error_code::precondition);
    CHECK(msg.find("there is no run 'settings1'") != std::string::npos);
    msg = error_of([&] { (void)pg_run_worker(db, "Bad-Id", {}); }, &code);
    CHECK(code == error_code::precondition);
  }
  CHECK(run_tables(c) == "0\n");  // nothing was left behind (or created)
}

TEST_CASE("pg_store: repairs of one scope wait for its advisory lock") {
  const auto uri = server();
  if (!uri) return;
  const auto db = fresh_schema(*uri, "scope_lock");
  { auto s = pg_store<>::create(db, suite_records()); }
  conn holder(db), watcher(db);
  auto s = pg_store<>::open(db, pg_own_mapping());
  const std::size_t b = *s.find("b");
  auto img = s.extract(b);
  img.effective_weight = 0.5;
  // another session repairing scope user:1 holds its lock
  holder.run("BEGIN; SELECT pg_advisory_xact_lock(28008, hashtext('user:1'))");
  std::atomic<bool> finished{false};
  std::thread repair([&] {
    s.restore(b, img);
    finished = true;
  });
  std::string waiting;
  for (int k = 0; k < 100 && waiting != "1\n"; ++k) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    waiting = watcher.dump(
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND classid = "
        "28008");
  }
  CHECK(waiting == "1\n");
  CHECK(!finished);
  holder.run("COMMIT");
  repair.join();
  CHECK(finished);
  CHECK(watcher.dump("SELECT record::jsonb->>'effective_weight' FROM memhealth_records WHERE id = "
                     "'b'") == "0.5\n");
}

namespace {

// 32-d unit vectors, seeded: random ones, and a near copy (cosine about 0.99) of one.
std::vector<float> unit32(std::mt19937& gen) {
  std::normal_distribution<float> g;
  std::vector<float> v(32);
  double n = 0;
  for (auto& x : v) {
    x = g(gen);
    n += static_cast<double>(x) * x;
  }
  for (auto& x : v) x = static_cast<float>(x / std::sqrt(n));
  return v;
}
std::vector<float> near_copy(const std::vector<float>& v, std::mt19937& gen) {
  std::vector<float> w = unit32(gen);
  double n = 0;
  for (std::size_t k = 0; k < v.size(); ++k) {
    w[k] = v[k] + 0.08f * w[k];
    n += static_cast<double>(w[k]) * w[k];
  }
  for (auto& x : w) x = static_cast<float>(x / std::sqrt(n));
  return w;
}
// Three letters for i (no digits: the duplicate guards keep texts with other numbers apart).
std::string letters(std::size_t i) {
  return {static_cast<char>('a' + i / 676 % 26), static_cast<char>('a' + i / 26 % 26),
          static_cast<char>('a' + i % 26)};
}

// Scopes user:a (3: a1/a2 exact duplicates), user:big (1400) and user:z (2), 32-d vectors. In
// user:big: big0000..big1339 random; big1340..1349 repeat the text and vector of big0000..0009
// (10 exact pairs); big1350..1399 are near copies of big0100..0149 (cosine about 0.99) whose
// text adds "really".
// With block_scopes_above = 1000 the check partitions user:big by k-means (ceil(1400 / 512) = 3
// partitions); with job_records = 500 the scopes are jobs [user:a], [user:big], [user:z] and
// user:big gets min(ceil(1400 / 500), 3) = 3 block jobs, numbered 0-2 (the scope jobs 3-5).
std::vector<memory_record> big_scope_records() {
  std::mt19937 gen(20241206);
  std::vector<memory_record> v;
  const auto a = unit32(gen), b = unit32(gen);
  v.push_back(rec("a1", "The user lives in Berlin.", a, "user:a"));
  v.push_back(rec("a2", "The user lives in Berlin.", a, "user:a"));
  v.push_back(rec("a3", "The user likes green tea.", b, "user:a"));
  std::vector<std::vector<float>> vecs;
  std::vector<std::string> texts;
  for (std::size_t i = 0; i < 1400; ++i) {
    char id[16];
    std::snprintf(id, sizeof id, "big%04zu", i);
    if (i < 1340) {
      vecs.push_back(unit32(gen));
      texts.push_back("The user noted the topic " + letters(i) + ".");
    } else if (i < 1350) {
      const std::vector<float> copy = vecs[i - 1340];
      vecs.push_back(copy);
      texts.push_back(texts[i - 1340]);
    } else {
      vecs.push_back(near_copy(vecs[i - 1250], gen));
      texts.push_back("The user really noted the topic " + letters(i - 1250) + ".");
    }
    v.push_back(rec(id, texts.back(), vecs.back(), "user:big"));
  }
  v.push_back(rec("z1", "The user plays the cello.", unit32(gen), "user:z"));
  v.push_back(rec("z2", "The user plays the violin.", unit32(gen), "user:z"));
  return v;
}

default_check_settings big_settings() {
  default_check_settings s;
  s.block_scopes_above = 1000;
  return s;
}

// The single-process check document (as check_json) of the same rows exported to JSONL.
template <class S>
std::string check_json_settings_via_jsonl(const S& s, const std::string& name,
                                          const default_check_settings& settings) {
  const fs::path p = fs::temp_directory_path() /
                     ("memhealth-pg-test-" + std::to_string(::getpid()) + "-" + name + ".jsonl");
  write_jsonl(p, s);
  auto lr = read_jsonl(p);
  fs::remove(p);
  REQUIRE(lr.issues.empty());
  const auto store = memory_store<>::from_records(std::move(lr.records));
  const auto d = check_options();
  return check_report_json(make_default_pipeline(settings).run(store, d), "store", d, {}).dump(2);
}

}  // namespace

TEST_CASE("pg workers: a k-means join in parts, merged, is the whole join, scores bit for bit") {
  // no server needed: kmeans_part, and the block jobs' pieces through block_collector and
  // block_supply as the workers hand them over. 1400 random 32-d rows, rows 1300..1399 near
  // copies (cosine about 0.997) of rows 0..99.
  std::mt19937 gen(7);
  const std::size_t n = 1400;
  std::vector<std::vector<float>> vecs;
  for (std::size_t i = 0; i < n; ++i)
    vecs.push_back(i < 1300 ? unit32(gen) : near_copy(vecs[i - 1300], gen));
  row_matrix m(static_cast<Eigen::Index>(n), 32);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t k = 0; k < 32; ++k)
      m(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(k)) = vecs[i][k];
  const rows_cref x(m);
  std::vector<std::uint32_t> rows(n);
  for (std::size_t i = 0; i < n; ++i) rows[i] = static_cast<std::uint32_t>(i);
  kmeans_blocking_options o;
  o.min_partitioned = 0;  // as scope_size_blocking partitions
  auto unique_sorted = [](std::vector<scored_pair> u) {
    std::sort(u.begin(), u.end(), detail::pair_less);
    u.erase(std::unique(u.begin(), u.end(),
                        [](const scored_pair& a, const scored_pair& b) {
                          return a.i == b.i && a.j == b.j;
                        }),
            u.end());
    return u;
  };
  for (const float t : {0.6f, 0.92f}) {
    CAPTURE(t);
    std::vector<scored_pair> whole;
    const auto st = detail::kmeans_pairs(x, rows, t, o, 0, cosine_kernel{}, whole);
    CHECK(st.partitions == 3);  // ceil(1400 / 512)
    CHECK(!st.truncated);
    CHECK(whole.size() >= 90);  // most of the 100 planted pairs (k-means recall is not 1)
    std::size_t most = 0;       // the largest of the three parts
    for (const std::size_t parts : {1u, 2u, 3u, 5u}) {
      CAPTURE(parts);
      std::vector<scored_pair> u;
      std::size_t nonempty = 0;
      for (std::size_t b = 0; b < parts; ++b) {
        std::vector<scored_pair> piece;
        (void)detail::kmeans_pairs(x, rows, t, o, 0, cosine_kernel{}, piece, kmeans_part{b, parts});
        nonempty += piece.empty() ? 0 : 1;
        if (parts == 3) most = std::max(most, piece.size());
        u.insert(u.end(), piece.begin(), piece.end());
      }
      CHECK(nonempty == std::min<std::size_t>(parts, 3));  // parts beyond 3 partitions: empty
      CHECK(unique_sorted(std::move(u)) == whole);  // scored_pair's == compares scores exactly
    }
    // the same through the workers' pieces: three block results, then the scope job's supply
    std::vector<std::string> results;
    for (std::size_t b = 0; b < 3; ++b) {
      detail::pgw::block_collector col(kmeans_part{b, 3});
      std::vector<scored_pair> none;
      CHECK_THROWS_AS((void)col.pairs(x, rows, t, o, 0, none), detail::pgw::block_stop);
      CHECK_THROWS_AS((void)col.pairs(x, rows, t, o, 0, none), detail::pgw::block_stop);
      CHECK(col.result().at("pieces").size() == 1);  // the second ask computed nothing more
      results.push_back(col.result().dump());
    }
    detail::pgw::block_supply sup(results, "test");
    std::vector<scored_pair> got;
    const auto cut = sup.pairs(x, rows, t, o, 0, got);
    REQUIRE(cut.has_value());
    CHECK(!*cut);
    CHECK(got == whole);
    // another threshold, other rows or another budget: not in the blocks (the caller computes)
    CHECK(!sup.pairs(x, rows, t + 0.01f, o, 0, got).has_value());
    CHECK(
        !sup.pairs(x, std::span<const std::uint32_t>(rows).first(n - 1), t, o, 0, got).has_value());
    CHECK(!sup.pairs(x, rows, t, o, whole.size(), got).has_value());
    CHECK(sup.use().joins == 1);
    CHECK(sup.use().misses == 3);
    // a pair budget every block keeps but the union exceeds: the whole join is over it, and so
    // is the supplied one (nothing given)
    REQUIRE(most < whole.size());
    std::vector<scored_pair> none;
    CHECK(detail::kmeans_pairs(x, rows, t, o, most, cosine_kernel{}, none).truncated);
    std::vector<std::string> capped;
    for (std::size_t b = 0; b < 3; ++b) {
      detail::pgw::block_collector col(kmeans_part{b, 3});
      CHECK_THROWS_AS((void)col.pairs(x, rows, t, o, most, none), detail::pgw::block_stop);
      CHECK(col.result().at("pieces").at(0).at("truncated") == false);
      capped.push_back(col.result().dump());
    }
    detail::pgw::block_supply sup2(capped, "test");
    got.push_back({});
    const auto over = sup2.pairs(x, rows, t, o, most, got);
    REQUIRE(over.has_value());
    CHECK(*over);
    CHECK(got.empty());
  }
  // a block result of another shape is a clear error
  CHECK_THROWS_AS(detail::pgw::block_supply({"[1, 2]"}, "test"), memhealth::error);
}

TEST_CASE("pg workers: a scope above job_records is split into k-means blocks, same report") {
  const auto uri = server();
  if (!uri) return;
  const auto db = fresh_schema(*uri, "workers_blocks");
  { auto s = pg_store<>::create(db, big_scope_records()); }
  auto s = pg_store<>::open(db, pg_own_mapping());
  const auto settings = big_settings();
  const std::string single = check_json_settings_via_jsonl(s, "workers-blocks", settings);
  conn c(db);
  for (const unsigned n : {1u, 2u, 4u}) {
    CAPTURE(n);
    pg_run_options ro;
    ro.workers = n;
    ro.job_records = 500;
    ro.poll = std::chrono::milliseconds(20);
    ro.keep_tables = true;
    ro.run_id = "blocks" + std::to_string(n);
    const auto res = pg_parallel_check(db, pg_own_mapping(), settings, check_options(), ro);
    CHECK(res.jobs == 6);
    CHECK(res.block_jobs == 3);
    CHECK(res.job_claims == 6);
    // the scope's job took its one partitioned join from the blocks (duplicates and conflicts
    // ask for the same rows at 0.6; the shared cache answers the second), none computed itself
    CHECK(res.blocks_used.joins == 1);
    CHECK(res.blocks_used.misses == 0);
    CHECK(parallel_json(res) == single);
    const std::string t = "memhealth_jobs_" + ro.run_id, r = "memhealth_results_" + ro.run_id;
    // user:big had four jobs: three blocks (claimed first) and its own, done after them
    CHECK(c.dump("SELECT job, coalesce(parent, -1), coalesce(block, -1), blocks, records, state "
                 "FROM " +
                 t + " WHERE scopes = '[\"user:big\"]'::jsonb ORDER BY job") ==
          "0|4|0|3|1400|done\n1|4|1|3|1400|done\n2|4|2|3|1400|done\n4|-1|-1|3|1400|done\n");
    CHECK(c.dump("SELECT count(*) FROM " + t +
                 " j WHERE j.parent IS NOT NULL AND j.finished_at > "
                 "(SELECT finished_at FROM " +
                 t + " WHERE job = 4)") == "0\n");
    // each block handed in its share of the join's pairs; together at least the 50 planted near
    // pairs, and none of them all
    CHECK(c.dump("SELECT bool_and(jsonb_array_length(r.findings::jsonb->'pieces') = 1) FROM " + r +
                 " r JOIN " + t + " j USING (job) WHERE j.parent IS NOT NULL") == "t\n");
    const std::string shares =
        c.dump("SELECT jsonb_array_length(r.findings::jsonb->'pieces'->0->'pairs') / 3 FROM " + r +
               " r JOIN " + t + " j USING (job) WHERE j.parent IS NOT NULL ORDER BY job");
    std::size_t total = 0, nonzero = 0;
    for (std::size_t at = 0, nl; (nl = shares.find('\n', at)) != std::string::npos; at = nl + 1) {
      const auto k = std::stoul(shares.substr(at, nl - at));
      total += k;
      nonzero += k > 0;
    }
    CHECK(total >= 50);
    CHECK(nonzero >= 2);
    c.run("DROP TABLE " + r + ", " + t + ", memhealth_run_" + ro.run_id);
    // planted findings, by hand: a1/a2 and the ten copies in user:big, near copies found
    CHECK(res.findings.count("exact_duplicate") == 11);
    CHECK(res.findings.count("near_duplicate") >= 40);
  }
}

TEST_CASE("pg workers: a block job whose worker dies is redone by another, its scope after it") {
  const auto uri = server();
  if (!uri) return;
  const auto db = fresh_schema(*uri, "workers_blockkill");
  { auto s = pg_store<>::create(db, big_scope_records()); }
  auto s = pg_store<>::open(db, pg_own_mapping());
  const auto settings = big_settings();
  const std::string single = check_json_settings_via_jsonl(s, "workers-blockkill", settings);
  conn c(db);
  pg_run_options ro;
  ro.workers = 0;
  ro.job_records = 500;
  ro.lease = std::chrono::milliseconds(1500);
  ro.poll = std::chrono::milliseconds(20);
  ro.keep_tables = true;
  ro.run_id = "blockkill";
  std::promise<void> ready;
  ro.on_ready = [&](const std::string&) { ready.set_value(); };
  auto coordinator = std::async(std::launch::async, [&] {
    return pg_parallel_check(db, pg_own_mapping(), settings, check_options(), ro);
  });
  REQUIRE(ready.get_future().wait_for(std::chrono::seconds(60)) == std::future_status::ready);
  // a worker claims block 0 of user:big and dies
  conn dead(db);
  const auto claim = pg_claim_job(dead.c, "blockkill", "dead", std::chrono::milliseconds(1500));
  REQUIRE(claim);
  CHECK(claim->job == 0);
  CHECK(claim->parent == 4);
  CHECK(claim->block == 0);
  CHECK(claim->blocks == 3);
  CHECK(claim->records == 1400);
  // a live worker does blocks 1, 2 and the jobs of user:a and user:z; user:big's job waits for
  // block 0, which the live worker takes once the dead worker's lease expired
  pg_worker_options live;
  live.name = "live";
  live.poll = std::chrono::milliseconds(20);
  const auto t0 = std::chrono::steady_clock::now();
  const auto wr = pg_run_worker(db, "blockkill", settings, live);
  CHECK(wr.jobs_done == 6);
  CHECK(wr.results_refused == 0);
  CHECK(wr.blocks_used.joins == 1);
  CHECK(wr.blocks_used.misses == 0);
  CHECK(std::chrono::steady_clock::now() - t0 >= std::chrono::milliseconds(1000));
  const auto res = coordinator.get();
  CHECK(res.jobs == 6);
  CHECK(res.job_claims == 7);           // 6 jobs + the dead claim
  CHECK(parallel_json(res) == single);  // nothing twice, nothing lost
  CHECK(!pg_finish_job(dead.c, "blockkill", *claim, "dead", "{\"pieces\": []}"));
  CHECK(c.dump("SELECT job, worker, attempts, state FROM memhealth_jobs_blockkill ORDER BY job") ==
        "0|live|2|done\n1|live|1|done\n2|live|1|done\n3|live|1|done\n4|live|1|done\n"
        "5|live|1|done\n");
  // user:big's job was done after every one of its blocks, the redone block 0 included
  CHECK(c.dump("SELECT (SELECT finished_at FROM memhealth_jobs_blockkill WHERE job = 4) > "
               "max(finished_at) FROM memhealth_jobs_blockkill WHERE parent = 4") == "t\n");
  CHECK(c.dump("SELECT count(*), count(DISTINCT job) FROM memhealth_results_blockkill") == "6|6\n");
  c.run(
      "DROP TABLE memhealth_results_blockkill, memhealth_jobs_blockkill, memhealth_run_blockkill");
}
}  // namespace pg_store_test
