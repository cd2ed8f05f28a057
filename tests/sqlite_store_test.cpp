// Tests of store/sqlite_store.hpp: schema and lossless round trip, lazy blocks, transactions,
// clear errors on bad databases, and the same detection / repair suite over memory_store and
// sqlite_store (TEST_CASE_TEMPLATE). The crash test is tests/sqlite_crash_child.cpp.
#include <doctest/doctest.h>
#include <memhealth/detect/default_pipeline.hpp>
#include <memhealth/io/jsonl.hpp>
#include <memhealth/repair/executor.hpp>
#include <memhealth/repair/rollback.hpp>
#include <memhealth/repair/planner.hpp>
#include <memhealth/store/memory_store.hpp>
#include <memhealth/store/sqlite_store.hpp>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <sys/resource.h>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace memhealth;

static_assert(record_store<sqlite_store<>>);
static_assert(mutable_record_store<sqlite_store<>>);
static_assert(transactional_record_store<sqlite_store<>>);
static_assert(!transactional_record_store<memory_store<>>);
static_assert(std::is_same_v<decltype(std::declval<const sqlite_store<>&>().record(0)), const memory_record&>);

namespace {

struct sq_dir {
  fs::path path;
  explicit sq_dir(const std::string& name) {
    path = fs::temp_directory_path() / ("memhealth-sqlite-test-" + std::to_string(::getpid()) + "-" + name);
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~sq_dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
void write_bytes(const fs::path& p, const std::string& s) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << s;
}

std::vector<memory_record> canonical_records() {
  auto lr = read_jsonl(fs::path(MEMHEALTH_SOURCE_DIR) / "tests/data/io/canonical.jsonl");
  REQUIRE(lr.records.size() == 3);
  return std::move(lr.records);
}

// Runs raw SQL on a file (setup of foreign databases).
void sql(const fs::path& p, const char* text) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(p.string().c_str(), &db) == SQLITE_OK);
  char* err = nullptr;
  const int rc = sqlite3_exec(db, text, nullptr, nullptr, &err);
  if (err) sqlite3_free(err);
  sqlite3_close(db);
  REQUIRE(rc == SQLITE_OK);
}

std::string error_of(const fs::path& p, error_code* code = nullptr) {
  try {
    (void)sqlite_store<>::open(p);
  } catch (const error& e) {
    if (code) *code = e.code();
    return e.what();
  }
  return "no error";
}

memory_record rec(std::string id, std::string content, std::vector<float> emb, std::string scope = "user:1") {
  memory_record r;
  r.id = std::move(id);
  r.content = std::move(content);
  r.embedding = std::move(emb);
  r.embedding_version = "m1";
  r.scope = std::move(scope);
  r.status = "active";
  r.source = "user_declared";
  r.kind = "fact";
  r.created_at = parse_timestamp("2024-03-01T09:30:00.000Z");
  r.updated_at = parse_timestamp("2024-03-02T09:00:00.000Z");
  return r;
}

}  // namespace

// Changes record i of store s through the one mutation stores have (extract, edit, restore).
// @return the record as it was (restore's before-image).
template <class S, class F>
auto change(S& s, std::size_t i, F f) {
  auto r = s.extract(i);
  f(r);
  return s.restore(i, r);
}

TEST_CASE("sqlite_store: every field survives create, close and reopen byte for byte") {
  sq_dir dir("roundtrip");
  const auto recs = canonical_records();
  const auto file = read_bytes(fs::path(MEMHEALTH_SOURCE_DIR) / "tests/data/io/canonical.jsonl");
  { auto s = sqlite_store<>::create(dir.path / "s.db", recs); }
  auto s = sqlite_store<>::open(dir.path / "s.db");
  REQUIRE(s.size() == 3);
  CHECK(s.dimension() == 5);  // m-1's embedding is the only one: 5 floats
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    append_json(s.extract(i), out);
    out.push_back('\n');
  }
  CHECK(out == file);
  // record(i) holds every field but the embedding; embedding(i) has the exact bits (NaN, -inf).
  CHECK(s.record(0).embedding.empty());
  CHECK(s.record(0).extra.size() == 1);
  CHECK(s.record(0).extra[0].name == "ingest");
  auto e = s.embedding(0);
  REQUIRE(e.size() == 5);
  CHECK(e[0] == 0.1f);
  CHECK(e[1] == -0.25f);
  CHECK(std::isnan(e[3]));
  CHECK(e[4] == -std::numeric_limits<float>::infinity());
  CHECK(s.embedding(1).empty());
  CHECK(*s.find("m-2") == 1);
  CHECK(!s.find("nope"));
  // streaming gives the same complete records
  std::string streamed;
  s.for_each([&](std::size_t i, const memory_record& r) {
    CHECK(r.id == "m-" + std::to_string(i + 1));
    append_json(r, streamed);
    streamed.push_back('\n');
  });
  CHECK(streamed == file);
}

TEST_CASE("sqlite_store: schema columns hold the documented values") {
  sq_dir dir("columns");
  { auto s = sqlite_store<>::create(dir.path / "s.db", canonical_records()); }
  auto s = sqlite_store<>::open(dir.path / "s.db");
  sqlite3_stmt* st = nullptr;
  REQUIRE(sqlite3_prepare_v2(s.native_handle(),
                             "SELECT id, scope, status, kind, updated_at, metadata, claim, length(embedding),"
                             " embedding_dim, embedding_version FROM records ORDER BY seq",
                             -1, &st, nullptr) == SQLITE_OK);
  auto text = [&](int c) {
    auto* t = sqlite3_column_text(st, c);
    return t ? std::string(reinterpret_cast<const char*>(t)) : std::string("<null>");
  };
  REQUIRE(sqlite3_step(st) == SQLITE_ROW);
  CHECK(text(0) == "m-1");
  CHECK(text(1) == "user:7/project:alpha");
  CHECK(text(2) == "active");
  CHECK(text(3) == "preference");
  CHECK(sqlite3_column_int64(st, 4) == 1709253000000);  // 2024-03-01T00:30:00Z in ms
  CHECK(text(5) == R"({"batch":7,"entities":["user","cilantro"],"score":0.5,"topic":"diet","verified":true,"x":null})");
  CHECK(text(6) == R"({"scene":"dinner","preference":"cilantro","constraint":"any amount","polarity":"negative"})");
  CHECK(sqlite3_column_int64(st, 7) == 20);  // 5 float32
  CHECK(sqlite3_column_int64(st, 8) == 5);
  CHECK(text(9) == "bge-small/l2");
  REQUIRE(sqlite3_step(st) == SQLITE_ROW);
  CHECK(text(0) == "m-2");
  CHECK(sqlite3_column_type(st, 4) == SQLITE_NULL);
  CHECK(text(5) == "<null>");
  CHECK(text(6) == R"({"entity":"user","attribute":"diet","value":"vegetarian"})");
  CHECK(sqlite3_column_type(st, 7) == SQLITE_NULL);
  CHECK(sqlite3_column_int64(st, 8) == 0);
  sqlite3_finalize(st);
  CHECK(s.integrity_check() == "ok");
  // WAL journal mode and the indexes of the schema
  sqlite3_stmt* q = nullptr;
  REQUIRE(sqlite3_prepare_v2(s.native_handle(), "PRAGMA journal_mode", -1, &q, nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_step(q) == SQLITE_ROW);
  CHECK(std::string(reinterpret_cast<const char*>(sqlite3_column_text(q, 0))) == "wal");
  sqlite3_finalize(q);
  REQUIRE(sqlite3_prepare_v2(s.native_handle(),
                             "SELECT group_concat(name, ',') FROM (SELECT name FROM sqlite_master WHERE type='index'"
                             " AND tbl_name='records' ORDER BY name)",
                             -1, &q, nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_step(q) == SQLITE_ROW);
  CHECK(std::string(reinterpret_cast<const char*>(sqlite3_column_text(q, 0))) ==
        "records_id,records_scope,records_status,records_updated_at");
  sqlite3_finalize(q);
}

TEST_CASE("sqlite_store: small blocks, LRU embeddings, mutations and appends") {
  sq_dir dir("blocks");
  std::vector<memory_record> v;
  for (int i = 0; i < 7; ++i) v.push_back(rec("r" + std::to_string(i), "c" + std::to_string(i), {float(i), 1.0f, 2.0f}));
  v[5].embedding.clear();
  sqlite_store_options o;
  o.block_rows = 2;
  o.cached_embedding_blocks = 1;
  { auto s = sqlite_store<>::create(dir.path / "s.db", v, 0, o); }
  auto s = sqlite_store<>::open(dir.path / "s.db", o);
  CHECK(s.dimension() == 3);
  // random order crosses blocks; each span is read before the next call
  for (int i : {6, 0, 3, 1, 4, 2}) {
    auto e = s.embedding(std::size_t(i));
    REQUIRE(e.size() == 3);
    CHECK(e[0] == float(i));
  }
  CHECK(s.embedding(5).empty());
  const memory_record& r3 = s.record(3);
  const memory_record& r2 = s.record(2);  // same block as r3: both references stay valid
  CHECK(r3.id == "r3");
  CHECK(r2.id == "r2");
  auto before = change(s, 3, [](auto& r) { r.status = "archived"; });
  CHECK(before.status == "active");
  CHECK(before.embedding == std::vector<float>{3.0f, 1.0f, 2.0f});
  CHECK(r3.status == "archived");  // the reference sees the mutation
  CHECK(r2.status == "active");
  change(s, 3, [](auto& r) { r.embedding = std::vector<float>{9.0f, 9.0f, 9.0f}; r.embedding_version = "m2"; });
  CHECK(s.embedding(3)[0] == 9.0f);
  CHECK(s.record(3).embedding_version == "m2");
  // append into the loaded last block (index 7 lands in block 3, which holds r6)
  CHECK(s.record(6).id == "r6");
  CHECK(s.insert(rec("r7", "c7", {7.0f, 1.0f, 2.0f})) == 7);
  CHECK(s.record(7).id == "r7");
  CHECK(s.embedding(7)[0] == 7.0f);
  CHECK(*s.find("r7") == 7);
  // an id change moves the index entry
  auto img = s.extract(1);
  img.id = "renamed";
  s.restore(1, img);
  CHECK(!s.find("r1"));
  CHECK(*s.find("renamed") == 1);
  // everything is in the database: a fresh open sees it
  auto t = sqlite_store<>::open(dir.path / "s.db");
  REQUIRE(t.size() == 8);
  CHECK(t.record(3).status == "archived");
  CHECK(t.embedding(3)[1] == 9.0f);
  CHECK(t.record(1).id == "renamed");
  CHECK(t.embedding(7)[0] == 7.0f);
  CHECK_THROWS_AS(s.restore(99, memory_record{}), error);
}

TEST_CASE("sqlite_store: an action commits or vanishes as a whole") {
  sq_dir dir("tx");
  std::vector<memory_record> v;
  for (int i = 0; i < 4; ++i) v.push_back(rec("r" + std::to_string(i), "c" + std::to_string(i), {1.0f, float(i)}));
  { auto s = sqlite_store<>::create(dir.path / "s.db", v); }
  auto s = sqlite_store<>::open(dir.path / "s.db");
  const memory_record& r0 = s.record(0);
  s.begin_action();
  CHECK(s.in_action());
  CHECK_THROWS_AS(s.begin_action(), error);
  change(s, 0, [](auto& r) { r.status = "archived"; });
  change(s, 2, [](auto& r) { r.effective_weight = 0.5; });
  s.insert(rec("r4", "c4", {1.0f, 4.0f}));
  CHECK(r0.status == "archived");
  CHECK(s.size() == 5);
  {
    // another connection sees nothing of the open action
    auto other = sqlite_store<>::open(dir.path / "s.db", {.read_only = true, .verify = false});
    CHECK(other.size() == 4);
    CHECK(other.record(0).status == "active");
  }
  s.rollback_action();
  CHECK(!s.in_action());
  CHECK(r0.status == "active");  // same reference, rolled-back value
  CHECK(!s.record(2).effective_weight);
  CHECK(s.size() == 4);
  CHECK(!s.find("r4"));
  s.begin_action();
  change(s, 1, [](auto& r) { r.status = "archived"; });
  change(s, 3, [](auto& r) { r.status = "archived"; });
  s.commit_action();
  CHECK_THROWS_AS(s.commit_action(), error);
  auto t = sqlite_store<>::open(dir.path / "s.db");
  CHECK(t.size() == 4);
  CHECK(t.record(0).status == "active");
  CHECK(t.record(1).status == "archived");
  CHECK(t.record(3).status == "archived");
  CHECK(!t.record(2).effective_weight);
}

TEST_CASE("sqlite_store: bad databases give a clear error and are not written") {
  sq_dir dir("bad");
  error_code code{};
  SUBCASE("missing file") {
    CHECK(error_of(dir.path / "none.db", &code).find("no such SQLite store") != std::string::npos);
    CHECK(code == error_code::io);
    CHECK(!fs::exists(dir.path / "none.db"));
  }
  SUBCASE("not an SQLite file") {
    const std::string junk = "{\"id\":\"a\",\"content\":\"this is JSONL, not SQLite\"}\n" + std::string(5000, 'x');
    write_bytes(dir.path / "junk.db", junk);
    CHECK(error_of(dir.path / "junk.db", &code).find("not an SQLite database") != std::string::npos);
    CHECK(code == error_code::parse);
    CHECK(read_bytes(dir.path / "junk.db") == junk);
  }
  SUBCASE("foreign schema") {
    sql(dir.path / "f.db", "CREATE TABLE users(name TEXT); CREATE TABLE orders(id INTEGER);");
    const auto bytes = read_bytes(dir.path / "f.db");
    const auto msg = error_of(dir.path / "f.db", &code);
    CHECK(msg.find("foreign schema") != std::string::npos);
    CHECK(msg.find("orders, users") != std::string::npos);
    CHECK(code == error_code::schema);
    CHECK(read_bytes(dir.path / "f.db") == bytes);
  }
  SUBCASE("empty database") {
    write_bytes(dir.path / "e.db", "");
    CHECK(error_of(dir.path / "e.db", &code).find("empty SQLite database") != std::string::npos);
    CHECK(code == error_code::schema);
    CHECK(fs::file_size(dir.path / "e.db") == 0);
  }
  SUBCASE("missing table, missing column, other format or version") {
    { auto s = sqlite_store<>::create(dir.path / "m.db", canonical_records()); }
    fs::copy_file(dir.path / "m.db", dir.path / "c.db");
    fs::copy_file(dir.path / "m.db", dir.path / "v.db");
    fs::copy_file(dir.path / "m.db", dir.path / "fmt.db");
    sql(dir.path / "m.db", "DROP TABLE records;");
    CHECK(error_of(dir.path / "m.db", &code).find("missing table 'records'") != std::string::npos);
    CHECK(code == error_code::schema);
    sql(dir.path / "c.db", "ALTER TABLE records DROP COLUMN claim;");
    CHECK(error_of(dir.path / "c.db").find("lacks column 'claim'") != std::string::npos);
    sql(dir.path / "v.db", "UPDATE memhealth_meta SET value='7' WHERE key='schema_version';");
    CHECK(error_of(dir.path / "v.db").find("schema_version '7' is not supported") != std::string::npos);
    sql(dir.path / "fmt.db", "UPDATE memhealth_meta SET value='other' WHERE key='format';");
    CHECK(error_of(dir.path / "fmt.db").find("format is 'other'") != std::string::npos);
  }
  SUBCASE("corrupt pages") {
    std::vector<memory_record> v;
    for (int i = 0; i < 3000; ++i)
      v.push_back(rec("r" + std::to_string(i), "content number " + std::to_string(i) + std::string(100, 'z'), {1.0f, 2.0f}));
    { auto s = sqlite_store<>::create(dir.path / "k.db", v); }
    auto bytes = read_bytes(dir.path / "k.db");
    REQUIRE(bytes.size() > 40 * 4096);
    for (std::size_t p = 8; p < 40; p += 3)  // scribble over b-tree pages past the header page
      std::memset(bytes.data() + p * 4096, 0x5a, 2000);
    write_bytes(dir.path / "k.db", bytes);
    const auto msg = error_of(dir.path / "k.db", &code);
    CHECK(msg.find("corrupt") != std::string::npos);
    CHECK(code == error_code::parse);
    CHECK(read_bytes(dir.path / "k.db") == bytes);
  }
  SUBCASE("create refuses an existing file") {
    write_bytes(dir.path / "x.db", "keep me");
    CHECK_THROWS_AS(sqlite_store<>::create(dir.path / "x.db", canonical_records()), error);
    CHECK(read_bytes(dir.path / "x.db") == "keep me");
  }
}

TEST_CASE("sqlite_store: a new database appears complete or not at all") {
  sq_dir dir("atomic");
  std::vector<memory_record> v;
  for (int i = 0; i < 3000; ++i)
    v.push_back(rec("r" + std::to_string(i), "content number " + std::to_string(i) + std::string(100, 'z'), {1.0f, 2.0f}));
  auto names = [&] {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir.path)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  };
  const std::size_t live_before = live_temporaries::count();
  SUBCASE("built under a temporary name, then only the database is left") {
    sqlite_store<>::write_new(dir.path / "w.db", v);
    CHECK(names() == std::vector<std::string>{"w.db"});  // no temporary, no -wal, no -shm
    CHECK(live_temporaries::count() == live_before);
    auto s = sqlite_store<>::open(dir.path / "w.db");
    CHECK(s.size() == 3000);
    CHECK(s.record(2999).id == "r2999");
    CHECK_THROWS_AS(sqlite_store<>::write_new(dir.path / "w.db", v), error);  // never over an existing file
  }
  SUBCASE("a write that fails (file-size limit, as a full disk) leaves nothing") {
    auto* old_handler = std::signal(SIGXFSZ, SIG_IGN);  // EFBIG instead of a kill
    rlimit old{};
    REQUIRE(::getrlimit(RLIMIT_FSIZE, &old) == 0);
    rlimit small = old;
    small.rlim_cur = 64 * 1024;  // the database is ~450 KB
    REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
    error_code code{};
    try {
      sqlite_store<>::write_new(dir.path / "full.db", v);
    } catch (const error& e) {
      code = e.code();
    }
    ::setrlimit(RLIMIT_FSIZE, &old);
    std::signal(SIGXFSZ, old_handler);
    CHECK(code == error_code::io);
    CHECK(names().empty());
    CHECK(live_temporaries::count() == live_before);
  }
}

// ------------------------------------------------------------------ one suite, both stores

namespace {

// A small store whose findings are known by construction (d = 4, unit vectors):
// a1/a2 exact duplicates (same text, scope, vector); c NaN; d 3 floats; e no embedding;
// f status "bogus"; g1/g2 share the id "g".
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
  v.push_back(rec("g", "The user reads science fiction.", {-0.5f, -0.5f, 0.5f, 0.5f}));
  v.push_back(rec("g", "The user collects vinyl records.", {0.5f, 0.5f, -0.5f, -0.5f}));
  return v;
}

struct memory_kind {
  using store_type = memory_store<>;
  static store_type make(const fs::path&, std::vector<memory_record> v) { return store_type::from_records(std::move(v)); }
};
struct sqlite_kind {
  using store_type = sqlite_store<>;
  static store_type make(const fs::path& dir, std::vector<memory_record> v) {
    sqlite_store_options o;
    o.block_rows = 3;  // several blocks even for this small store
    o.cached_embedding_blocks = 2;
    { auto s = store_type::create(dir / "suite.db", v, 0, o); }
    return store_type::open(dir / "suite.db", o);
  }
};

std::vector<std::string> ids_of(const report& r, std::string_view kind) {
  std::vector<std::string> out;
  for (const auto& f : r.findings)
    if (f.kind == kind)
      for (const auto& id : f.record_ids) out.push_back(id);
  return out;
}

}  // namespace

TEST_CASE_TEMPLATE("store suite: detection, planning and repair run unchanged", K, memory_kind, sqlite_kind) {
  sq_dir dir("suite");
  auto store = K::make(dir.path, suite_records());
  REQUIRE(store.size() == 9);
  CHECK(store.dimension() == 4);
  detect_options d;
  d.now = parse_timestamp("2024-03-10T00:00:00Z")->instant;
  const report r = make_default_pipeline().run(store, d);
  CHECK(r.records_total == 9);
  CHECK(ids_of(r, finding_kinds::embedding_non_finite) == std::vector<std::string>{"c"});
  CHECK(ids_of(r, finding_kinds::embedding_dim_mismatch) == std::vector<std::string>{"d"});
  CHECK(ids_of(r, finding_kinds::embedding_missing) == std::vector<std::string>{"e"});
  CHECK(ids_of(r, finding_kinds::illegal_status) == std::vector<std::string>{"f"});
  CHECK(r.count(finding_kinds::duplicate_id) == 1);
  CHECK(ids_of(r, finding_kinds::exact_duplicate) == std::vector<std::string>{"a1", "a2"});

  const repair_plan plan = make_plan(store, r, planner_options{});
  REQUIRE(!plan.actions.empty());
  wal_writer wal(dir.path / "run.wal", wal_sync::none);
  apply_options ao;
  ao.approve_tier2 = true;
  const auto res = apply_plan(store, plan, wal, ao);
  CHECK(!res.applied.empty());
  // the merge: a2 now names a1 as its primary and is no longer active; a1 is untouched in status
  const auto a2 = store.extract(*store.find("a2"));
  CHECK(a2.links.duplicate_of == "a1");
  CHECK(a2.status != "active");
  CHECK(store.record(*store.find("a1")).status == "active");
  // rollback gives back the original store exactly
  const auto log = read_wal_file(dir.path / "run.wal");
  rollback(store, log);
  const auto orig = suite_records();
  for (std::size_t i = 0; i < orig.size(); ++i) CHECK(to_json(store.extract(i)) == to_json(orig[i]));
}

TEST_CASE("store suite: both stores end in the same state after the same plan") {
  sq_dir dir("same");
  auto mem = memory_kind::make(dir.path, suite_records());
  auto sq = sqlite_kind::make(dir.path, suite_records());
  detect_options d;
  d.now = parse_timestamp("2024-03-10T00:00:00Z")->instant;
  const report rm = make_default_pipeline().run(mem, d);
  const report rs = make_default_pipeline().run(sq, d);
  REQUIRE(rm.findings.size() == rs.findings.size());
  for (std::size_t k = 0; k < rm.findings.size(); ++k) {
    CHECK(rm.findings[k].kind == rs.findings[k].kind);
    CHECK(rm.findings[k].record_ids == rs.findings[k].record_ids);
  }
  const auto plan = make_plan(mem, rm, planner_options{});
  wal_writer wm(dir.path / "m.wal", wal_sync::none), ws(dir.path / "s.wal", wal_sync::none);
  apply_options ao;
  ao.approve_tier2 = ao.approve_tier3 = true;
  const auto a = apply_plan(mem, plan, wm, ao);
  const auto b = apply_plan(sq, plan, ws, ao);
  CHECK(a.applied == b.applied);
  CHECK(a.failed == b.failed);
  auto reopened = sqlite_store<>::open(dir.path / "suite.db");
  for (std::size_t i = 0; i < mem.size(); ++i) {
    CHECK(to_json(mem.extract(i)) == to_json(sq.extract(i)));
    CHECK(to_json(mem.extract(i)) == to_json(reopened.extract(i)));
  }
}

TEST_CASE("sqlite_store: a failing action is rolled back in the database, other actions commit") {
  sq_dir dir("fail");
  auto store = sqlite_kind::make(dir.path, suite_records());
  repair_plan plan;
  auto action = [](std::string key, std::vector<record_edit> edits) {
    repair_action a;
    a.type = "test";
    a.idempotency_key = std::move(key);
    for (const auto& e : edits) a.targets.push_back(e.record_id);
    a.edits = std::move(edits);
    return a;
  };
  plan.actions.push_back(action("ok1", {{"b", edit_set_weight{0.5}}}));
  plan.actions.push_back(action("bad", {{"c", edit_set_weight{0.25}}, {"e", edit_set_weight{0.25}}}));
  plan.actions.push_back(action("ok2", {{"f", edit_set_status{"archived"}}}));
  wal_writer wal(dir.path / "run.wal", wal_sync::none);
  apply_options ao;
  int writes = 0;
  bool in_bad = false;
  ao.crash_hook = [&](std::string_view point) {
    // the second record write of action "bad" fails on every attempt
    if (point == "after_intent") writes = 0;
    if (point == "after_apply_record" && in_bad && ++writes == 2) throw error(error_code::io, "disk hiccup");
  };
  // the hook cannot see which action runs: mark it by the state of record c
  auto wrapped = ao.crash_hook;
  ao.crash_hook = [&](std::string_view point) {
    if (point == "after_apply_record") in_bad = store.record(*store.find("c")).effective_weight.has_value();
    wrapped(point);
  };
  const auto res = apply_plan(store, plan, wal, ao);
  CHECK(res.applied == std::vector<std::string>{"ok1", "ok2"});
  CHECK(res.failed == std::vector<std::string>{"bad"});
  auto t = sqlite_store<>::open(dir.path / "suite.db");
  CHECK(*t.record(*t.find("b")).effective_weight == 0.5);
  CHECK(!t.record(*t.find("c")).effective_weight);
  CHECK(!t.record(*t.find("e")).effective_weight);
  CHECK(t.record(*t.find("f")).status == "archived");
}

TEST_CASE("sqlite_store: read_only refuses writes and leaves no -wal or -shm file behind") {
  sq_dir dir("ro");
  { auto s = sqlite_store<>::create(dir.path / "s.db", canonical_records()); }
  CHECK(!fs::exists(dir.path / "s.db-wal"));
  {
    auto s = sqlite_store<>::open(dir.path / "s.db", {.read_only = true});
    CHECK(s.record(0).id == "m-1");
    error_code code{};
    try {
      change(s, 0, [](auto& r) { r.status = "archived"; });
    } catch (const error& e) {
      code = e.code();
    }
    CHECK(code == error_code::io);
    CHECK(s.record(0).status == "active");  // the cache is not changed by a failed write
  }
  CHECK(!fs::exists(dir.path / "s.db-wal"));
  CHECK(!fs::exists(dir.path / "s.db-shm"));
  auto t = sqlite_store<>::open(dir.path / "s.db");
  CHECK(t.record(0).status == "active");
}
