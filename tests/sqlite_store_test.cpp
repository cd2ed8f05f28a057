// Tests of store/sqlite_store.hpp: schema and lossless round trip, lazy blocks, transactions,
// clear errors on bad databases, and the same detection / repair suite over memory_store and
// sqlite_store (TEST_CASE_TEMPLATE). The crash test is tests/sqlite_crash_child.cpp.
#include <doctest/doctest.h>
#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <new>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <memhealth/detect/default_pipeline.hpp>
#include <memhealth/embed/lexical_embedder.hpp>
#include <memhealth/io/jsonl.hpp>
#include <memhealth/repair/executor.hpp>
#include <memhealth/repair/planner.hpp>
#include <memhealth/repair/rollback.hpp>
#include <memhealth/store/memory_store.hpp>
#include <memhealth/store/sqlite_store.hpp>

#include "sim_file_io.hpp"
#include "test_records.hpp"
#include <sys/resource.h>
#include <unistd.h>

namespace sqlite_store_test {
namespace fs = std::filesystem;
using namespace memhealth;

static_assert(record_store<sqlite_store<>>);
static_assert(mutable_record_store<sqlite_store<>>);
static_assert(transactional_record_store<sqlite_store<>>);
static_assert(!transactional_record_store<memory_store<>>);
static_assert(std::is_same_v<decltype(std::declval<const sqlite_store<>&>().record(0)),
                             const memory_record&>);

namespace {

struct sq_dir {
  fs::path path;
  explicit sq_dir(const std::string& name) {
    path = fs::temp_directory_path() /
           ("memhealth-sqlite-test-" + std::to_string(::getpid()) + "-" + name);
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

memory_record rec(std::string id, std::string content, std::vector<float> emb,
                  std::string scope = "user:1") {
  return memhealth::test::make_record(
      std::move(id), std::move(content), std::move(emb),
      {"m1", std::move(scope), "fact", "2024-03-01T09:30:00.000Z", "2024-03-02T09:00:00.000Z"});
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
  REQUIRE(sqlite3_prepare_v2(
              s.native_handle(),
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
  CHECK(
      text(5) ==
      R"({"batch":7,"entities":["user","cilantro"],"score":0.5,"topic":"diet","verified":true,"x":null})");
  CHECK(
      text(6) ==
      R"({"scene":"dinner","preference":"cilantro","constraint":"any amount","polarity":"negative"})");
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
  REQUIRE(sqlite3_prepare_v2(s.native_handle(), "PRAGMA journal_mode", -1, &q, nullptr) ==
          SQLITE_OK);
  REQUIRE(sqlite3_step(q) == SQLITE_ROW);
  CHECK(std::string(reinterpret_cast<const char*>(sqlite3_column_text(q, 0))) == "wal");
  sqlite3_finalize(q);
  REQUIRE(
      sqlite3_prepare_v2(
          s.native_handle(),
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
  for (int i = 0; i < 7; ++i)
    v.push_back(rec("r" + std::to_string(i), "c" + std::to_string(i), {float(i), 1.0f, 2.0f}));
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
  change(s, 3, [](auto& r) {
    r.embedding = std::vector<float>{9.0f, 9.0f, 9.0f};
    r.embedding_version = "m2";
  });
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
  for (int i = 0; i < 4; ++i)
    v.push_back(rec("r" + std::to_string(i), "c" + std::to_string(i), {1.0f, float(i)}));
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
    const std::string junk =
        "{\"id\":\"a\",\"content\":\"this is JSONL, not SQLite\"}\n" + std::string(5000, 'x');
    write_bytes(dir.path / "junk.db", junk);
    CHECK(error_of(dir.path / "junk.db", &code).find("not an SQLite database") !=
          std::string::npos);
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
    CHECK(error_of(dir.path / "v.db").find("schema_version '7' is not supported") !=
          std::string::npos);
    sql(dir.path / "fmt.db", "UPDATE memhealth_meta SET value='other' WHERE key='format';");
    CHECK(error_of(dir.path / "fmt.db").find("format is 'other'") != std::string::npos);
  }
  SUBCASE("corrupt pages") {
    std::vector<memory_record> v;
    for (int i = 0; i < 3000; ++i)
      v.push_back(rec("r" + std::to_string(i),
                      "content number " + std::to_string(i) + std::string(100, 'z'), {1.0f, 2.0f}));
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
  SUBCASE("a record column that is not one JSON object on one line (was an out-of-range read)") {
    // Rows are read a block at a time as JSONL, one line per row. A line break inside a row
    // gave more lines than rows: the bad line's row was looked up past the end of the block
    // (an out-of-range read, abort under _GLIBCXX_ASSERTIONS); with a blank row after it the
    // counts matched and every later record got the wrong embedding.
    { auto s = sqlite_store<>::create(dir.path / "l.db", canonical_records()); }
    fs::copy_file(dir.path / "l.db", dir.path / "b.db");
    fs::copy_file(dir.path / "l.db", dir.path / "s.db");
    sql(dir.path / "l.db",
        "UPDATE records SET record = '{\"id\":\"a\"}' || char(10) || '{\"id\":\"b\"}' || "
        "char(10) || '{\"id\":\"c\"}' || char(10) || 'x' WHERE seq = 1;");
    sql(dir.path / "b.db", "UPDATE records SET record = ' ' WHERE seq = 2;");
    sql(dir.path / "s.db",
        "UPDATE records SET record = '{\"id\":\"a\"}' || char(10) || '{\"id\":\"b\"}' "
        "WHERE seq = 1; UPDATE records SET record = '' WHERE seq = 2;");
    for (const auto& c : {std::pair{"l.db", "1"}, {"b.db", "2"}, {"s.db", "1"}}) {
      const char* file = c.first;  // no structured binding: clang 14 cannot capture one
      const char* seq = c.second;
      CAPTURE(file);
      for (int way = 0; way < 2; ++way) {  // record(i) and for_each
        try {
          const auto s = sqlite_store<>::open(dir.path / file);
          if (way == 0)
            (void)s.record(0);
          else
            s.for_each([](std::size_t, const memory_record&) {});
          FAIL("reading the records did not throw");
        } catch (const error& e) {
          CHECK(e.code() == error_code::parse);
          CHECK(std::string(e.what()).find(std::string("row seq ") + seq +
                                           ": column 'record' is not one JSON object on one "
                                           "line") != std::string::npos);
        }
      }
    }
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
    v.push_back(rec("r" + std::to_string(i),
                    "content number " + std::to_string(i) + std::string(100, 'z'), {1.0f, 2.0f}));
  auto names = [&] {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir.path))
      out.push_back(e.path().filename().string());
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
    CHECK_THROWS_AS(sqlite_store<>::write_new(dir.path / "w.db", v),
                    error);  // never over an existing file
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
  static store_type make(const fs::path&, std::vector<memory_record> v) {
    return store_type::from_records(std::move(v));
  }
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

TEST_CASE_TEMPLATE("store suite: detection, planning and repair run unchanged", K, memory_kind,
                   sqlite_kind) {
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
  for (std::size_t i = 0; i < orig.size(); ++i)
    CHECK(to_json(store.extract(i)) == to_json(orig[i]));
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
  plan.actions.push_back(
      action("bad", {{"c", edit_set_weight{0.25}}, {"e", edit_set_weight{0.25}}}));
  plan.actions.push_back(action("ok2", {{"f", edit_set_status{"archived"}}}));
  wal_writer wal(dir.path / "run.wal", wal_sync::none);
  apply_options ao;
  int writes = 0;
  bool in_bad = false;
  ao.crash_hook = [&](std::string_view point) {
    // the second record write of action "bad" fails on every attempt
    if (point == "after_intent") writes = 0;
    if (point == "after_apply_record" && in_bad && ++writes == 2)
      throw error(error_code::io, "disk hiccup");
  };
  // the hook cannot see which action runs: mark it by the state of record c
  auto wrapped = ao.crash_hook;
  ao.crash_hook = [&](std::string_view point) {
    if (point == "after_apply_record")
      in_bad = store.record(*store.find("c")).effective_weight.has_value();
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

// ---------------------------------------------------------------- power loss under SQLite

namespace {

// An SQLite VFS shim in the manner of SQLite's own crash tests (test6.c): every call goes to the
// real default VFS, and while `sim` is set each write, sync and truncation of a named file is
// also recorded in the shared timeline of a sim_file_io (the write-ahead log writer records
// there too), so a power loss can be cut across the database, its -wal file and the repair log.
namespace simvfs {

memhealth::test::sim_file_io* sim = nullptr;
sqlite3_vfs* real = nullptr;
sqlite3_vfs shim;

struct file {
  sqlite3_file base;
  sqlite3_file* real;
  std::string path;
};

sqlite3_file* r(sqlite3_file* f) {
  return reinterpret_cast<file*>(f)->real;
}
const std::string& path_of(sqlite3_file* f) {
  return reinterpret_cast<file*>(f)->path;
}
bool recorded(sqlite3_file* f) {
  return sim && !path_of(f).empty() && !path_of(f).ends_with("-shm");
}

int x_close(sqlite3_file* f) {
  const int rc = r(f)->pMethods ? r(f)->pMethods->xClose(r(f)) : SQLITE_OK;
  sqlite3_free(r(f));
  reinterpret_cast<file*>(f)->path.~basic_string();
  return rc;
}
int x_read(sqlite3_file* f, void* p, int n, sqlite3_int64 off) {
  return r(f)->pMethods->xRead(r(f), p, n, off);
}
int x_write(sqlite3_file* f, const void* p, int n, sqlite3_int64 off) {
  if (recorded(f))
    sim->record(path_of(f), memhealth::test::sim_file_io::op::write,
                static_cast<std::uint64_t>(off),
                std::string(static_cast<const char*>(p), static_cast<std::size_t>(n)));
  return r(f)->pMethods->xWrite(r(f), p, n, off);
}
int x_truncate(sqlite3_file* f, sqlite3_int64 size) {
  if (recorded(f))
    sim->record(path_of(f), memhealth::test::sim_file_io::op::truncate,
                static_cast<std::uint64_t>(size));
  return r(f)->pMethods->xTruncate(r(f), size);
}
int x_sync(sqlite3_file* f, int flags) {
  if (recorded(f)) sim->record(path_of(f), memhealth::test::sim_file_io::op::sync, 0);
  return r(f)->pMethods->xSync(r(f), flags);
}
int x_size(sqlite3_file* f, sqlite3_int64* s) {
  return r(f)->pMethods->xFileSize(r(f), s);
}
int x_lock(sqlite3_file* f, int l) {
  return r(f)->pMethods->xLock(r(f), l);
}
int x_unlock(sqlite3_file* f, int l) {
  return r(f)->pMethods->xUnlock(r(f), l);
}
int x_check(sqlite3_file* f, int* out) {
  return r(f)->pMethods->xCheckReservedLock(r(f), out);
}
int x_control(sqlite3_file* f, int op, void* arg) {
  return r(f)->pMethods->xFileControl(r(f), op, arg);
}
int x_sector(sqlite3_file* f) {
  return r(f)->pMethods->xSectorSize(r(f));
}
int x_device(sqlite3_file* f) {
  return r(f)->pMethods->xDeviceCharacteristics(r(f));
}
int x_shm_map(sqlite3_file* f, int pg, int sz, int ext, void volatile** pp) {
  return r(f)->pMethods->xShmMap(r(f), pg, sz, ext, pp);
}
int x_shm_lock(sqlite3_file* f, int off, int n, int flags) {
  return r(f)->pMethods->xShmLock(r(f), off, n, flags);
}
void x_shm_barrier(sqlite3_file* f) {
  r(f)->pMethods->xShmBarrier(r(f));
}
int x_shm_unmap(sqlite3_file* f, int del) {
  return r(f)->pMethods->xShmUnmap(r(f), del);
}

const sqlite3_io_methods methods = {
    2,          x_close,       x_read,      x_write,   x_truncate, x_sync,   x_size,
    x_lock,     x_unlock,      x_check,     x_control, x_sector,   x_device, x_shm_map,
    x_shm_lock, x_shm_barrier, x_shm_unmap, nullptr,   nullptr};

int x_open(sqlite3_vfs*, const char* name, sqlite3_file* f, int flags, int* out) {
  auto* sf = reinterpret_cast<file*>(f);
  sf->base.pMethods = nullptr;
  sf->real = static_cast<sqlite3_file*>(sqlite3_malloc(real->szOsFile));
  if (!sf->real) return SQLITE_NOMEM;
  std::memset(sf->real, 0, static_cast<std::size_t>(real->szOsFile));
  new (&sf->path) std::string(name ? name : "");
  const int rc = real->xOpen(real, name, sf->real, flags, out);
  if (rc != SQLITE_OK) {
    sqlite3_free(sf->real);
    sf->path.~basic_string();
    return rc;
  }
  sf->base.pMethods = &methods;
  // The file's bytes before the run are its first durable state.
  if (recorded(f) && !sim->knows(sf->path)) {
    sqlite3_int64 size = 0;
    sf->real->pMethods->xFileSize(sf->real, &size);
    std::string bytes(static_cast<std::size_t>(size), '\0');
    if (size > 0) sf->real->pMethods->xRead(sf->real, bytes.data(), static_cast<int>(size), 0);
    sim->record(sf->path, memhealth::test::sim_file_io::op::write, 0, std::move(bytes));
    sim->record(sf->path, memhealth::test::sim_file_io::op::sync, 0);
  }
  return SQLITE_OK;
}
int x_delete(sqlite3_vfs*, const char* name, int sync_dir) {
  if (sim && sim->knows(name)) {
    sim->record(name, memhealth::test::sim_file_io::op::truncate, 0);
    if (sync_dir) sim->record(name, memhealth::test::sim_file_io::op::sync, 0);
  }
  return real->xDelete(real, name, sync_dir);
}
int x_access(sqlite3_vfs*, const char* n, int flags, int* out) {
  return real->xAccess(real, n, flags, out);
}
int x_full(sqlite3_vfs*, const char* n, int size, char* out) {
  return real->xFullPathname(real, n, size, out);
}
void* x_dlopen(sqlite3_vfs*, const char* n) {
  return real->xDlOpen(real, n);
}
void x_dlerror(sqlite3_vfs*, int n, char* out) {
  real->xDlError(real, n, out);
}
void (*x_dlsym(sqlite3_vfs*, void* h, const char* s))(void) {
  return real->xDlSym(real, h, s);
}
void x_dlclose(sqlite3_vfs*, void* h) {
  real->xDlClose(real, h);
}
int x_random(sqlite3_vfs*, int n, char* out) {
  return real->xRandomness(real, n, out);
}
int x_sleep(sqlite3_vfs*, int us) {
  return real->xSleep(real, us);
}
int x_time(sqlite3_vfs*, double* t) {
  return real->xCurrentTime(real, t);
}
int x_last_error(sqlite3_vfs*, int n, char* out) {
  return real->xGetLastError ? real->xGetLastError(real, n, out) : 0;
}
int x_time64(sqlite3_vfs*, sqlite3_int64* t) {
  return real->xCurrentTimeInt64(real, t);
}

// Registers the shim as the default VFS (once per process; harmless while `sim` is null).
void install() {
  if (real) return;
  real = sqlite3_vfs_find(nullptr);
  REQUIRE(real != nullptr);
  shim = sqlite3_vfs{2,
                     static_cast<int>(sizeof(file)),
                     real->mxPathname,
                     nullptr,
                     "memhealth-sim",
                     nullptr,
                     x_open,
                     x_delete,
                     x_access,
                     x_full,
                     x_dlopen,
                     x_dlerror,
                     x_dlsym,
                     x_dlclose,
                     x_random,
                     x_sleep,
                     x_time,
                     x_last_error,
                     x_time64,
                     nullptr,
                     nullptr,
                     nullptr};
  REQUIRE(sqlite3_vfs_register(&shim, 1) == SQLITE_OK);
}

}  // namespace simvfs

// The database `db` (and its -wal file) as power loss `how` after `n` recorded steps leaves them,
// written as a fresh copy `dir`/crash/`name` (+ "-wal"). @return the copy's path.
fs::path crash_copy(memhealth::test::sim_file_io& sim, const fs::path& dir, const std::string& name,
                    const std::string& db, std::size_t n, memhealth::test::sim_file_io::loss how,
                    std::mt19937& rng) {
  const fs::path crash = dir / "crash";
  fs::remove_all(crash);
  fs::create_directories(crash);
  write_bytes(crash / name, sim.after_power_loss(db, n, how, rng));
  const std::string w = sim.after_power_loss(db + "-wal", n, how, rng);
  if (!w.empty()) write_bytes(crash / (name + "-wal"), w);
  return crash / name;
}

// n actions over records q0..q19, each touching 1-3 records (weights fall, notes are new).
repair_plan power_plan(int n) {
  repair_plan p;
  for (int k = 0; k < n; ++k) {
    repair_action act;
    act.type = "test";
    act.automation = automation::automatic;
    act.tier = 1;
    const std::string a = "q" + std::to_string(k % 20), b = "q" + std::to_string((k * 7 + 3) % 20);
    act.edits.push_back({a, edit_set_weight{1.0 - 0.01 * (k + 1)}});
    act.edits.push_back({a, edit_append_notes{{"note of action " + std::to_string(k)}}});
    if (k % 2 == 0)
      act.edits.push_back({b, edit_fill_metadata{"k" + std::to_string(k), std::int64_t{k}}});
    for (const auto& e : act.edits)
      if (std::find(act.targets.begin(), act.targets.end(), e.record_id) == act.targets.end())
        act.targets.push_back(e.record_id);
    act.idempotency_key = "pk" + std::to_string(k);
    p.actions.push_back(std::move(act));
  }
  return p;
}

std::vector<memory_record> power_records() {
  std::vector<memory_record> v;
  for (int i = 0; i < 20; ++i)
    v.push_back(rec("q" + std::to_string(i), "memory " + std::to_string(i),
                    {1.0f + float(i), 0.5f, -2.0f}));
  return v;
}

}  // namespace

TEST_CASE(
    "power loss under SQLite: after any write or sync of the database, its -wal file or the repair "
    "log, recovery gives whole actions") {
  using test::sim_file_io;
  simvfs::install();
  sq_dir dir("powerloss");
  const auto base = power_records();
  const repair_plan plan = power_plan(10);
  std::vector<std::vector<std::string>> prefixes;  // the store after the first m actions
  for (std::size_t m = 0; m <= plan.actions.size(); ++m) {
    auto v = base;
    for (std::size_t k = 0; k < m; ++k)
      for (const auto& e : plan.actions[k].edits)
        apply_edit(*std::find_if(v.begin(), v.end(),
                                 [&](const memory_record& x) { return x.id == e.record_id; }),
                   e.op);
    std::vector<std::string> imgs;
    for (const auto& x : v) imgs.push_back(to_json(x));
    prefixes.push_back(std::move(imgs));
  }
  std::size_t crashes = 0, opened = 0;
  std::map<int, std::size_t> reached;
  for (std::size_t batch : {std::size_t{1}, std::size_t{3}}) {
    CAPTURE(batch);
    const fs::path db = dir.path / ("run" + std::to_string(batch) + ".db");
    (void)sqlite_store<>::create(db.string(), base);
    sim_file_io sim;
    simvfs::sim = &sim;
    std::size_t opened_at =
        0;  // ops recorded by opening the store (its files' states before the run)
    {
      auto store = sqlite_store<>::open(db.string());
      opened_at = sim.ops.size();
      wal_writer_options wo;
      wo.io = &sim;
      apply_options ao;
      ao.batch_size = batch;
      wal_writer wal((dir.path / "run.wal").string(), wo);
      REQUIRE(apply_plan(store, plan, wal, ao).applied.size() == 10);
    }
    simvfs::sim = nullptr;
    const std::string dbp = db.string(), logp = (dir.path / "run.wal").string();
    std::mt19937 rng(static_cast<unsigned>(batch));
    const std::size_t step = std::max<std::size_t>(
        1, (sim.ops.size() - opened_at) / 150);  // about 150 cut points per run
    for (std::size_t n = opened_at; n <= sim.ops.size(); n += step) {
      for (auto how : {sim_file_io::loss::keep_all, sim_file_io::loss::drop_unsynced,
                       sim_file_io::loss::torn, sim_file_io::loss::reorder}) {
        CAPTURE(n);
        CAPTURE(static_cast<int>(how));
        const fs::path crashed = crash_copy(sim, dir.path, "s.db", dbp, n, how, rng);
        const std::string log = sim.after_power_loss(logp, n, how, rng);
        const std::string synced_log =
            sim.after_power_loss(logp, n, sim_file_io::loss::drop_unsynced, rng);
        ++crashes;
        // The database must open (PRAGMA quick_check) and recover to whole actions, keeping every
        // commit that was durable in the log.
        auto store = sqlite_store<>::open(crashed.string());
        ++opened;
        const auto rc = recover(store, read_wal(log));
        CHECK(rc.conflicts.empty());
        std::vector<std::string> imgs;
        for (std::size_t i = 0; i < store.size(); ++i) imgs.push_back(to_json(store.extract(i)));
        int m = -1;
        for (std::size_t k = 0; k < prefixes.size(); ++k)
          if (imgs == prefixes[k]) m = static_cast<int>(k);
        CHECK(m >= 0);
        std::size_t durable_commits = 0;
        const auto synced = read_wal(synced_log);
        for (const auto& a : logged_actions(synced))
          durable_commits += a.state == logged_state::committed;
        CHECK(m >= static_cast<int>(durable_commits));
        ++reached[m];
      }
    }
  }
  MESSAGE("power loss under SQLite: " << crashes << " simulated crashes, " << opened
                                      << " databases opened and recovered, " << reached.size()
                                      << " distinct recovered prefixes");
  CHECK(crashes >= 1000);
  CHECK(reached.size() == 11);
}

TEST_CASE("sqlite_store: a database id of its own decides which logs belong to it") {
  sq_dir dir("dbid");
  const auto records = suite_records();
  sqlite_store<>::write_new(dir.path / "a.db", records);
  sqlite_store<>::write_new(dir.path / "b.db", records);  // the same records, another database
  auto a = sqlite_store<>::open(dir.path / "a.db");
  auto b = sqlite_store<>::open(dir.path / "b.db");
  CHECK(a.database_id().size() == 32);
  CHECK(a.database_id().find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(a.database_id() != b.database_id());
  CHECK(sqlite_store<>::open(dir.path / "a.db").database_id() == a.database_id());
  const store_identity ia = identify_store(a), ib = identify_store(b);
  CHECK(ia.fingerprint == ib.fingerprint);  // the record ids alone cannot tell them apart
  CHECK(ia.database_id == a.database_id());

  repair_plan plan;
  repair_action act;
  act.type = "test";
  act.idempotency_key = "w";
  act.targets = {"b"};
  act.edits = {{"b", edit_set_weight{0.5}}};
  plan.actions.push_back(act);
  {
    wal_writer_options wo;
    wo.policy = wal_sync::none;
    wo.store = ia;
    wal_writer wal(dir.path / "a.wal", wo);
    CHECK(apply_plan(a, plan, wal).applied.size() == 1);
  }
  const wal_contents log = read_wal_file(dir.path / "a.wal");
  REQUIRE(log.store);
  CHECK(log.store->database_id == a.database_id());
  // Another database with the same record ids: its writer and its rollback refuse the log.
  {
    wal_writer_options wo;
    wo.policy = wal_sync::none;
    wo.store = ib;
    CHECK_THROWS_AS(wal_writer(dir.path / "a.wal", wo), error);
  }
  CHECK(!check_log_store(log, b).same_store);
  CHECK_THROWS_AS((void)rollback(b, log), error);
  CHECK(!b.record(*b.find("b")).effective_weight);
  // The same database after a record was added: still its log; the rollback restores "b".
  a.append(std::vector<memory_record>{rec("zz", "a record added after the run", {1, 0, 0, 0})});
  const auto chk = check_log_store(log, a);
  CHECK(chk.same_store);
  CHECK(chk.store_changed);
  const auto rb = rollback(a, log);
  CHECK(rb.complete());
  CHECK(rb.records_restored == 1);
  CHECK(!a.record(*a.find("b")).effective_weight);
}

// ---------------------------------------------------------------- the state database (issue 20)

}  // namespace sqlite_store_test
#include <memhealth/store/sqlite_state.hpp>

namespace sqlite_store_test {
TEST_CASE("sqlite_state: cursors, fingerprints, versions, schedule, runs, repair history") {
  sq_dir dir("state");
  const fs::path p = dir.path / "store.jsonl.memhealth-state.db";
  CHECK(default_state_path((dir.path / "store.jsonl").string()) == p);
  CHECK(default_state_path("sqlite:" + (dir.path / "store.jsonl").string()) == p);
  const utc_time t1 = parse_timestamp("2024-07-15T00:00:00Z")->instant;
  const utc_time t2 = parse_timestamp("2024-07-15T01:00:00Z")->instant;
  auto recs = canonical_records();
  std::vector<std::string> ids;
  std::vector<std::uint64_t> fps;
  for (const auto& r : recs) ids.push_back(r.id), fps.push_back(record_fingerprint(r, r.embedding));
  {
    auto s = sqlite_state::open(p);
    CHECK(!s.cursor("check"));
    s.set_cursor("check", t1);
    s.set_cursor("check", t2);  // moves
    // nothing committed yet: every record is new
    auto c = s.changes(ids, fps);
    CHECK(c.changed_count == 3);
    CHECK(c.removed.empty());
    s.commit_fingerprints(ids, fps, t2);
    CHECK(s.note_embedding_versions({{"m1", 3}}, t1) == std::vector<std::string>{"m1"});
    CHECK(s.note_embedding_versions({{"m1", 3}}, t2).empty());
    s.set_schedule("duplicates", t1, t2);
    const std::int64_t day = 19919;  // 2024-07-15
    CHECK(s.take_run(day, 2));
    CHECK(s.take_run(day, 2));
    CHECK(!s.take_run(day, 2));  // the budget of the day is used up
    s.give_back_run(day);
    CHECK(s.runs_on(day) == 1);
    CHECK(s.note_attempt("k1", false, "disk full", t1).state == "retry");
    CHECK(s.note_attempt("k1", false, "disk full", t1).state == "retry");
    const auto third = s.note_attempt("k1", false, "EIO", t2);
    CHECK(third.state == "manual");
    CHECK(third.attempts == 3);
    CHECK(s.note_attempt("k2", true, "", t2).state == "done");
  }
  // everything survives a reopen (a new process)
  auto s = sqlite_state::open(p);
  REQUIRE(s.cursor("check"));
  CHECK(*s.cursor("check") == t2);
  CHECK(s.changes(ids, fps).changed_count == 0);
  CHECK(s.note_embedding_versions({{"m1", 2}, {"m2", 1}}, t2) == std::vector<std::string>{"m2"});
  CHECK(s.embedding_versions().size() == 2);
  REQUIRE(s.schedule("duplicates"));
  CHECK(s.schedule("duplicates")->second == t2);
  CHECK(s.runs_on(19919) == 1);
  const auto q = s.manual_queue();
  REQUIRE(q.size() == 1);
  CHECK(q[0].action_key == "k1");
  CHECK(q[0].last_error == "EIO");
  // a content edit that leaves updated_at alone still changes the fingerprint; a removed id and
  // a changed vector are seen too
  recs[1].content += " (edited)";
  const auto fp1 = record_fingerprint(recs[1], recs[1].embedding);
  CHECK(fp1 != fps[1]);
  std::vector<float> other = recs[0].embedding;
  if (!other.empty()) other[0] += 1.0f;
  const bool vector_seen =
      recs[0].embedding.empty() || record_fingerprint(recs[0], other) != fps[0];
  CHECK(vector_seen);
  const std::vector<std::string> ids2{ids[0], ids[1]};
  const std::vector<std::uint64_t> fps2{fps[0], fp1};
  const auto c = s.changes(ids2, fps2);
  CHECK(c.changed == std::vector<bool>{false, true});
  CHECK(c.removed == std::vector<std::string>{ids[2]});
  // a second connection (another process) counts against the same budget
  auto s2 = sqlite_state::open(p);
  CHECK(s2.take_run(19919, 2));
  CHECK(!s.take_run(19919, 2));
}

TEST_CASE("sqlite_state: what is not a state database is refused with a clear error") {
  sq_dir dir("state-bad");
  const auto code_of = [](const fs::path& p) -> std::optional<error_code> {
    try {
      (void)sqlite_state::open(p);
    } catch (const error& e) {
      return e.code();
    }
    return std::nullopt;
  };
  CHECK(code_of(dir.path) == error_code::io);  // a directory
  write_bytes(dir.path / "text.db", "this is not a database, just some text of no interest\n");
  CHECK(code_of(dir.path / "text.db") == error_code::parse);
  sql(dir.path / "other.db", "CREATE TABLE t(x);");
  CHECK(code_of(dir.path / "other.db") == error_code::schema);  // an SQLite file of another kind
  (void)sqlite_state::open(dir.path / "v.db");
  sql(dir.path / "v.db", "UPDATE state_meta SET value='9' WHERE key='schema_version';");
  CHECK(code_of(dir.path / "v.db") == error_code::schema);  // a newer schema
  sqlite_state_options ro;
  ro.read_only = true;
  CHECK_THROWS_AS((void)sqlite_state::open(dir.path / "missing.db", ro), error);
}

TEST_CASE(
    "incremental detection by fingerprints gives the full run's findings on changed records") {
  // 40 scopes of 12 records: in each scope two exact duplicates, two near duplicates and a
  // contradicting pair, plus unrelated records; records carry updated_at, and edits below keep
  // it (a writer that forgot it). After a first full run commits the fingerprints, 30 records
  // spread over the scopes are edited (content or vector). The incremental run (changed mask
  // from the fingerprints) must report exactly the findings of a full run that involve an edited
  // record.
  std::mt19937 rng(5);
  std::normal_distribution<float> g;
  const std::size_t d = 8;
  const auto unit = [&] {
    std::vector<float> v(d);
    float s = 0;
    for (auto& x : v) x = g(rng), s += x * x;
    for (auto& x : v) x /= std::sqrt(s);
    return v;
  };
  const char* things[] = {"tea", "jazz", "chess", "opera", "sushi", "tennis", "poetry", "kayaks"};
  std::vector<memory_record> rs;
  for (int sc = 0; sc < 40; ++sc) {
    const std::string scope = "user:" + std::to_string(sc);
    const auto base = unit();
    for (int k = 0; k < 12; ++k) {
      std::string text = std::string("User collects ") + things[(sc + k) % 8] + " items of kind " +
                         std::string(1, char('a' + k)) + std::string(1, char('a' + sc % 26));
      std::vector<float> e = unit();
      if (k == 1) text = rs[rs.size() - 1].content;  // exact duplicate of k = 0
      if (k == 3) {                                  // near duplicate of k = 2
        e = rs.back().embedding;
        for (auto& x : e) x += 0.001f;
        text = "User gathers " + std::string(things[(sc + 2) % 8]) + " items";
      }
      if (k == 4) e = base, text = "User loves jazz";
      if (k == 5) {
        e = base;
        e[0] += 0.05f;
        text = "User can't stand jazz";
      }
      auto r = rec(scope + "-r" + std::to_string(k), text, e, scope);
      rs.push_back(r);
    }
  }
  sq_dir dir("incremental");
  auto state = sqlite_state::open(dir.path / "state.db");
  const auto fingerprints = [](const std::vector<memory_record>& v) {
    std::pair<std::vector<std::string>, std::vector<std::uint64_t>> out;
    for (const auto& r : v)
      out.first.push_back(r.id), out.second.push_back(record_fingerprint(r, r.embedding));
    return out;
  };
  auto [ids0, fps0] = fingerprints(rs);
  state.commit_fingerprints(ids0, fps0, parse_timestamp("2024-07-15T00:00:00Z")->instant);
  // edits: 30 records over the scopes, content or vector, updated_at kept
  std::uniform_int_distribution<std::size_t> any(0, rs.size() - 1);
  std::set<std::string> edited;
  while (edited.size() < 30) {
    const std::size_t i = any(rng);
    auto& r = rs[i];
    if (!edited.insert(r.id).second) continue;
    // half copy the text of the scope's record k = 8 (an exact duplicate appears), half move the
    // vector next to that of k = 9 (a near duplicate may appear, unless a guard keeps it apart)
    const std::size_t k8 = i / 12 * 12 + 8, k9 = i / 12 * 12 + 9;
    if (edited.size() % 2) {
      r.content = i == k8 ? "User now rides bikes" : rs[k8].content;
    } else {
      r.embedding = rs[k9].embedding;
      r.embedding[1] += 0.002f;
      if (i == k9) r.embedding = unit();
    }
  }
  auto [ids1, fps1] = fingerprints(rs);
  const auto ch = state.changes(ids1, fps1);
  CHECK(ch.changed_count == 30);
  const auto store = memory_store<>::from_records(rs);
  detect_options full;
  full.now = parse_timestamp("2024-07-15T00:00:00Z")->instant;
  detect_options inc = full;
  inc.changed = std::make_shared<const std::vector<bool>>(ch.changed);
  const auto pipe = make_default_pipeline();
  const auto r_full = pipe.run(store, full);
  const auto r_inc = pipe.run(store, inc);
  CHECK(r_inc.records_checked == 30);
  const auto key = [](const finding& f) {
    auto ids = f.record_ids;
    std::sort(ids.begin(), ids.end());
    std::string k = f.kind;
    for (const auto& i : ids) k += "|" + i;
    return k;
  };
  std::multiset<std::string> expect, got;
  for (const auto& f : r_full.findings)
    if (std::any_of(f.record_ids.begin(), f.record_ids.end(),
                    [&](const std::string& i) { return edited.count(i) > 0; }))
      expect.insert(key(f));
  for (const auto& f : r_inc.findings) got.insert(key(f));
  CHECK(expect.size() > 5);
  CHECK(got == expect);
  // a wrong-sized mask is a clear error
  detect_options bad = full;
  bad.changed = std::make_shared<const std::vector<bool>>(3, true);
  CHECK_THROWS_AS((void)pipe.run(store, bad), error);
}

TEST_CASE("power loss under the state database: every cut gives the state after whole operations") {
  // The VFS shim above records the state database's and its -wal file's writes and syncs; a
  // sequence of 96 operations (runs counted, cursors moved, fingerprints replaced, repair
  // attempts) runs once, then power is lost after every recorded step in four ways. The database
  // must open and hold exactly the state after some prefix of the operations, never less than
  // every operation that had returned (each commit syncs the -wal file) before the cut.
  using test::sim_file_io;
  simvfs::install();
  sq_dir dir("state-powerloss");
  const fs::path db = dir.path / "state.db";
  const utc_time t0 = parse_timestamp("2024-07-15T00:00:00Z")->instant;
  std::vector<std::string> ids;
  for (int i = 0; i < 20; ++i) ids.push_back("r" + std::to_string(i));
  const auto fps_of = [](int round) {
    std::vector<std::uint64_t> v;
    for (int i = 0; i < 20; ++i) v.push_back(static_cast<std::uint64_t>(1000 * round + i));
    return v;
  };
  // what a reader sees: runs of the day, the cursor, which fingerprint round is committed, and
  // the attempts of one action
  const auto snapshot = [&](const sqlite_state& s) {
    std::string out = std::to_string(s.runs_on(19919)) + "|";
    const auto c = s.cursor("check");
    out += c ? format_timestamp(timestamp{*c, 0}) : "-";
    for (int round = 0; round < 24; ++round)
      if (s.changes(ids, fps_of(round)).changed_count == 0) out += "|fp" + std::to_string(round);
    const auto a = s.attempt("k");
    out += "|" + (a ? std::to_string(a->attempts) + a->state : std::string("-"));
    return out;
  };
  (void)sqlite_state::open(db);  // created before the recorded run
  sim_file_io sim;
  simvfs::sim = &sim;
  std::vector<std::string> states;  // the state after the first m operations
  std::vector<std::size_t> ends;    // the recorded step count when operation m returned
  {
    auto s = sqlite_state::open(db);
    states.push_back(snapshot(s));
    ends.push_back(sim.ops.size());
    std::vector<std::function<void()>> ops;
    for (int r = 0; r < 8; ++r) {  // 8 rounds of 12 operations, each leaving a new state
      const auto at = [&t0, r](int k) { return t0 + std::chrono::minutes(60 * r + k); };
      ops.push_back([&] { s.take_run(19919, 100); });
      ops.push_back([&, at] { s.set_cursor("check", at(1)); });
      ops.push_back([&, r] { s.commit_fingerprints(ids, fps_of(3 * r), t0); });
      ops.push_back([&] { s.note_attempt("k", false, "EIO", t0); });
      ops.push_back([&] { s.take_run(19919, 100); });
      ops.push_back([&, at] { s.set_cursor("check", at(2)); });
      ops.push_back([&, r] { s.commit_fingerprints(ids, fps_of(3 * r + 1), t0); });
      ops.push_back([&] { s.note_attempt("k", true, "", t0); });
      ops.push_back([&] { s.give_back_run(19919); });
      ops.push_back([&, r] { s.commit_fingerprints(ids, fps_of(3 * r + 2), t0); });
      ops.push_back([&] { s.note_attempt("k", false, "EIO", t0); });
      ops.push_back([&, at] { s.set_cursor("check", at(3)); });
    }
    for (const auto& op : ops) {
      op();
      states.push_back(snapshot(s));
      ends.push_back(sim.ops.size());
    }
  }
  simvfs::sim = nullptr;
  const std::string dbp = db.string();
  std::mt19937 rng(3);
  std::size_t crashes = 0;
  std::map<std::size_t, std::size_t> reached;
  const std::size_t first = ends.front();
  const std::size_t step = std::max<std::size_t>(1, (sim.ops.size() - first) / 400);
  for (std::size_t n = first; n <= sim.ops.size(); n += step) {
    for (auto how : {sim_file_io::loss::keep_all, sim_file_io::loss::drop_unsynced,
                     sim_file_io::loss::torn, sim_file_io::loss::reorder}) {
      CAPTURE(n);
      CAPTURE(static_cast<int>(how));
      const fs::path crashed = crash_copy(sim, dir.path, "state.db", dbp, n, how, rng);
      ++crashes;
      const auto s = sqlite_state::open(crashed);
      const std::string got = snapshot(s);
      std::size_t returned = 0;  // operations that had returned before the cut
      for (std::size_t m = 1; m < ends.size(); ++m) returned += ends[m] <= n;
      std::optional<std::size_t> m_at;
      for (std::size_t m = returned; m < states.size() && !m_at; ++m)
        if (states[m] == got) m_at = m;
      INFO("state after the cut: " << got);
      CHECK(m_at.has_value());
      if (m_at) ++reached[*m_at];
    }
  }
  MESSAGE("power loss under the state database: " << crashes << " simulated crashes, "
                                                  << reached.size() << " distinct states reached");
  CHECK(crashes >= 1000);
  CHECK(reached.size() >= 90);
}

TEST_CASE("sqlite_state: a cursor never moves back, the database belongs to one store") {
  sq_dir dir("state-bind");
  auto s = sqlite_state::open(dir.path / "s.db");
  const utc_time t1 = parse_timestamp("2024-07-15T00:00:00Z")->instant;
  s.set_cursor("check", t1);
  s.set_cursor("check", t1 - std::chrono::hours(24));  // an earlier clock: ignored
  CHECK(*s.cursor("check") == t1);
  s.bind_store("/data/a.jsonl");
  s.bind_store("/data/a.jsonl");  // the same store again: fine
  CHECK_THROWS_AS(s.bind_store("/data/b.jsonl"), error);
  // processes that create one new database at the same moment all open it
  std::vector<std::thread> ts;
  std::atomic<int> failed{0};
  for (int k = 0; k < 6; ++k)
    ts.emplace_back([&] {
      try {
        (void)sqlite_state::open(dir.path / "new.db");
      } catch (const error&) {
        failed.fetch_add(1);
      }
    });
  for (auto& t : ts) t.join();
  CHECK(failed.load() == 0);
}

TEST_CASE("sqlite_state: a database locked beyond the busy timeout is error(busy), not io") {
  sq_dir dir("state-busy");
  const fs::path p = dir.path / "s.db";
  (void)sqlite_state::open(p);
  sqlite3* other = nullptr;  // another process, holding the write lock
  REQUIRE(sqlite3_open(p.string().c_str(), &other) == SQLITE_OK);
  REQUIRE(sqlite3_exec(other, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite_state_options o;
  o.busy_timeout = std::chrono::milliseconds{50};
  auto s = sqlite_state::open(p, o);
  std::optional<error_code> code;
  std::string what;
  try {
    (void)s.take_run(19919, 3);
  } catch (const error& e) {
    code = e.code();
    what = e.what();
  }
  CHECK(code == error_code::busy);
  CHECK(what.find("busy timeout") != std::string::npos);
  sqlite3_exec(other, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(other);
  CHECK(s.take_run(19919, 3));  // free again
}

// ---------------------------------------------------------------- repair history in the state

}  // namespace sqlite_store_test
#include <memhealth/live/sqlite_repair_history.hpp>

#include "repair_test_support.hpp"

namespace sqlite_store_test {
namespace {

repair_action history_action(std::string key, std::string id, record_edit_op op) {
  repair_action a;
  a.type = "test";
  a.automation = automation::automatic;
  a.tier = 1;
  a.targets = {id};
  a.edits.push_back({std::move(id), std::move(op)});
  a.idempotency_key = std::move(key);
  return a;
}

// One apply run in a "process" of its own: the state database opened for the run only.
template <class S>
apply_result history_run(S& store, const repair_action& act, const fs::path& state,
                         const fs::path& wal, apply_options opt = {}) {
  auto st = sqlite_state::open(state);
  sqlite_repair_history h(st, opt.retry_limit + 1, "store-a", "store-a");
  opt.history = &h;
  repair_plan plan;
  plan.actions.push_back(act);
  wal_writer w(wal, wal_sync::none);
  return apply_plan(store, plan, w, opt);
}

}  // namespace

TEST_CASE("sqlite_repair_history: failures, loops and done actions are kept across runs") {
  sq_dir dir("state-history");
  const fs::path state = dir.path / "memhealth-state.db";
  auto store = memory_store<>::from_records(
      {rec("a", "alice lives in berlin", {1, 0}), rec("b", "bob likes tea", {0, 1})});
  const std::string key_a = sqlite_repair_history::scoped("store-a", "archive-a");

  SUBCASE("one failure in each of three runs: the manual queue, then not tried again") {
    test::flaky_store flaky{store, 0, 100};  // writes of record "a" always fail
    const auto w = history_action("weight-a", "a", edit_set_weight{0.5});
    apply_options opt;
    opt.retry_limit = 2;                           // 3 attempts in all
    opt.crash_hook = [](std::string_view point) {  // each run dies after its first failure
      if (point == "after_abort") throw std::runtime_error("the process died");
    };
    for (int run = 1; run <= 3; ++run) {
      CHECK_THROWS_AS(
          (void)history_run(flaky, w, state, dir.path / ("r" + std::to_string(run)), opt),
          std::runtime_error);
      auto st = sqlite_state::open(state);
      const auto a = st.attempt(sqlite_repair_history::scoped("store-a", "weight-a"));
      REQUIRE(a);
      CHECK(a->failures == run);
      CHECK(a->state == (run == 3 ? "manual" : "retry"));
    }
    CHECK(flaky.failures == 97);  // one write tried per run
    opt.crash_hook = nullptr;
    const auto res = history_run(flaky, w, state, dir.path / "r4", opt);
    CHECK(res.failed == std::vector<std::string>{"weight-a"});
    CHECK(res.outcomes[0].attempts == 0);
    CHECK(flaky.failures == 97);  // not tried again
    auto st = sqlite_state::open(state);
    const auto q = st.manual_queue();
    REQUIRE(q.size() == 1);
    CHECK(q[0].action_key == sqlite_repair_history::scoped("store-a", "weight-a"));
    CHECK(q[0].failures == 3);
    CHECK(q[0].last_error.find("flaky backend") != std::string::npos);
  }
  SUBCASE("an action that exhausts its attempts in one run is held by the next") {
    const auto bad = history_action("bad", "a", edit_set_weight{7.0});  // out of range: throws
    apply_options opt;
    opt.retry_limit = 2;
    for (int run = 1; run <= 2; ++run) {
      const auto res = history_run(store, bad, state, dir.path / ("r" + std::to_string(run)), opt);
      CHECK(res.failed == std::vector<std::string>{"bad"});
      CHECK(res.outcomes[0].attempts == (run == 1 ? 3 : 0));  // 1 + retry_limit, then none
    }
  }
  SUBCASE("a loop across two runs, then held") {
    (void)history_run(store, history_action("archive-a", "a", edit_set_status{"archived"}), state,
                      dir.path / "r1");
    CHECK(store.record(0).status == "archived");
    const auto back = history_action("unarchive-a", "a", edit_set_status{"active"});
    const auto res = history_run(store, back, state, dir.path / "r2");
    CHECK(res.failed == std::vector<std::string>{"unarchive-a"});
    CHECK(res.outcomes[0].reason.find("repair loop across runs") != std::string::npos);
    CHECK(store.record(0).status == "archived");
    auto st = sqlite_state::open(state);
    REQUIRE(st.attempt(sqlite_repair_history::scoped("store-a", "unarchive-a")));
    CHECK(st.attempt(sqlite_repair_history::scoped("store-a", "unarchive-a"))->state == "manual");
    CHECK(st.attempt(key_a)->state == "done");
  }
  SUBCASE("a done action is not re-run after another writer undid it") {
    const auto before = store.extract(1);
    const auto w = history_action("weight-b", "b", edit_set_weight{0.25});
    CHECK(history_run(store, w, state, dir.path / "r1").applied.size() == 1);
    (void)store.restore(1, before);  // another writer
    const auto res = history_run(store, w, state, dir.path / "r2");
    CHECK(res.skipped_already_applied.empty());
    CHECK(res.failed == std::vector<std::string>{"weight-b"});  // manual queue: a person decides
    CHECK(!store.record(1).effective_weight);
    // another store's scope knows nothing of it: applied there
    auto st = sqlite_state::open(state);
    sqlite_repair_history other(st, 4, "store-b", "store-b");
    apply_options opt;
    opt.history = &other;
    repair_plan plan;
    plan.actions.push_back(w);
    wal_writer wal(dir.path / "r3", wal_sync::none);
    CHECK(apply_plan(store, plan, wal, opt).applied == std::vector<std::string>{"weight-b"});
  }
  SUBCASE("proposed a third time over the same before-image: held; a release lets it run") {
    const auto b0 = store.extract(1);
    // three down-weights of b with keys of their own (weights from the clock); another writer
    // puts b back after each of the first two
    CHECK(
        history_run(store, history_action("w1", "b", edit_set_weight{0.5}), state, dir.path / "r1")
            .applied.size() == 1);
    (void)store.restore(1, b0);
    CHECK(
        history_run(store, history_action("w2", "b", edit_set_weight{0.45}), state, dir.path / "r2")
            .applied.size() == 1);
    (void)store.restore(1, b0);
    const auto w3 = history_action("w3", "b", edit_set_weight{0.4});
    const auto r3 = history_run(store, w3, state, dir.path / "r3");
    CHECK(r3.failed == std::vector<std::string>{"w3"});
    CHECK(r3.outcomes[0].reason.find("after 2 applications") != std::string::npos);
    CHECK(!store.record(1).effective_weight);
    const std::string k3 = sqlite_repair_history::scoped("store-a", "w3");
    {
      auto st = sqlite_state::open(state);
      REQUIRE(st.attempt(k3));
      CHECK(st.attempt(k3)->state == "manual");
      const std::vector<repair_image_note> img{{"b", repair_image_checksum(to_json(b0))}};
      const std::string pk =
          sqlite_repair_history::scoped("store-a", repair_proposal_key("test", img));
      CHECK(st.proposals(pk) == 2);
      // a release needs a reviewer and a reason; an unknown key is not found
      CHECK_THROWS_AS((void)st.release_action(k3, "", "why", 5), memhealth::error);
      CHECK_THROWS_AS((void)st.release_action("store-a\x1fnope", "ana", "why", 5),
                      memhealth::error);
      const auto was = st.release_action(k3, "ana", "the writer that reset b is fixed", 1000);
      CHECK(was.state == "manual");
      CHECK(was.failures == 1);
      CHECK(st.attempt(k3)->state == "retry");
      CHECK(st.attempt(k3)->failures == 0);
      CHECK(st.attempt(k3)->last_error == "released by ana: the writer that reset b is fixed");
      CHECK(st.proposals(pk) == 0);
      const auto rel = st.releases("store-a\x1f");
      REQUIRE(rel.size() == 1);
      CHECK(rel[0].action_key == k3);
      CHECK(rel[0].reviewer == "ana");
      CHECK(rel[0].released_ms == 1000);
      CHECK(rel[0].before.state == "manual");
      CHECK(st.repair_attempts_with_prefix("store-a\x1f").size() == 3);  // w1, w2, w3
      CHECK(st.repair_attempts_with_prefix("store-b\x1f").empty());
    }
    // released: the next run applies it
    CHECK(history_run(store, w3, state, dir.path / "r4").applied == std::vector<std::string>{"w3"});
    CHECK(store.record(1).effective_weight == 0.4);
  }
}

TEST_CASE("sqlite_state: the findings history gives recurrence and uptime") {
  using namespace std::chrono;
  sq_dir dir("state-findings-history");
  auto st = sqlite_state::open(dir.path / "memhealth-state.db");
  const auto h = [](double x) {
    return memhealth::utc_time{milliseconds{1'767'225'600'000}} +  // 2026-01-01T00:00:00Z
           milliseconds{static_cast<std::int64_t>(x * 3'600'000.0)};
  };
  const auto run = [&](double at, bool full, std::size_t errors, std::vector<std::string> found) {
    return st.note_history_run("s", h(at), full, errors, found);
  };
  // ten full runs over five days, an error open after the runs at 24 h and 30 h
  CHECK(run(0, true, 0, {}));
  CHECK(run(10, true, 0, {}));
  // faults k1 and k2 repaired at 12 h by one action
  const std::vector<std::pair<std::string, std::string>> f12{{"k1", "near_duplicate"},
                                                             {"k2", "conflict"}};
  st.note_repaired_faults("s",
                          "s\x1f"
                          "act1",
                          f12, h(12));
  CHECK(run(24, true, 1, {"x"}));
  CHECK(run(30, true, 1, {"k1", "x"}));  // k1 came back
  CHECK(!run(40, false, 1, {}));         // same state, not full: not kept
  CHECK(run(50, true, 0, {}));
  CHECK(!run(55, false, 0, {}));
  CHECK(run(60, true, 0, {}));
  CHECK(run(72, true, 0, {}));
  CHECK(run(80, false, 2, {}));  // errors open from 80 h: kept (a state change)
  CHECK(run(90, true, 0, {}));
  const std::vector<std::pair<std::string, std::string>> f100{{"k3", "stale"}, {"k4", "conflict"}};
  st.note_repaired_faults("s",
                          "s\x1f"
                          "act2",
                          f100, h(100));
  CHECK(run(100, true, 0, {"k4"}));        // at the repair's own time: before it, not a recurrence
  CHECK(run(110, true, 0, {"k4", "k1"}));  // k4 came back; k1 keeps its first recurrence
  CHECK(st.pending_fault_keys("s") == std::vector<std::string>{"k2", "k3"});
  const auto faults = st.repaired_faults("s");
  REQUIRE(faults.size() == 4);
  std::map<std::string, std::optional<memhealth::utc_time>> back;
  for (const auto& f : faults) back[f.finding_key] = f.recurred_at;
  CHECK(back["k1"] == h(30));
  CHECK(!back["k2"]);
  CHECK(!back["k3"]);
  CHECK(back["k4"] == h(110));
  // runs kept: the ten full ones and the state change at 80 h; from 27 h: the one at 24 h first
  CHECK(st.history_runs("s", h(0), h(120)).size() == 11);
  CHECK(st.history_runs("s", h(27), h(120)).front().at == h(24));

  // at 120 h, a 2-day window: k2 held (12 h + 48 h = 60 h passed), k1 and k4 recurred, k3 too
  // early (100 h + 48 h = 148 h); uptime over 5 days: errors 24-50 h and 80-90 h, so 84 h of
  // 120 h clean (70 %), 8 of 10 full runs clean (80 %)
  const auto fig = st.history_figures_of("s", {hours{48}, 0}, hours{120}, h(120));
  CHECK(fig.repair.repaired == 4);
  CHECK(fig.repair.held == 1);
  CHECK(fig.repair.recurred == 2);
  CHECK(fig.repair.too_early == 1);
  CHECK(*fig.repair.success_rate == doctest::Approx(1.0 / 3.0));
  CHECK(fig.uptime.clean == hours{84});
  CHECK(fig.uptime.measured == hours{120});
  CHECK(*fig.uptime.time_share == doctest::Approx(0.7));
  CHECK(fig.uptime.runs == 10);
  CHECK(fig.uptime.clean_runs == 8);
  // three full runs instead of two days: k2's window closes at the third full run after 12 h
  // (50 h): held; k3 has one full run after it (110 h): too early
  const auto by_runs = st.history_figures_of("s", {hours{0}, 3}, hours{120}, h(120));
  CHECK(by_runs.repair.held == 1);
  CHECK(by_runs.repair.too_early == 1);
  // another store of the same database knows nothing
  const auto other = st.history_figures_of("t", {hours{48}, 0}, hours{120}, h(120));
  CHECK(other.repair.repaired == 0);
  CHECK(!other.repair.success_rate);
  CHECK(!other.uptime.time_share);
}

// ---------------------------------------------------------------- watch (live/watch.hpp)

}  // namespace sqlite_store_test
#include <memhealth/live/watch.hpp>

namespace sqlite_store_test {
namespace {

// Unit vectors (d = 4) with known cosines: wa.wb = 0.80 (a conflict candidate, >= 0.6),
// wa.wu = wa.ww = wu.ww = 0 (unrelated).
const std::vector<float> wa{0.5f, 0.5f, 0.5f, 0.5f};
const std::vector<float> wb{0.7f, 0.1f, 0.1f, 0.7f};
const std::vector<float> wu{0.5f, -0.5f, 0.5f, -0.5f};
const std::vector<float> ww{0.5f, 0.5f, -0.5f, -0.5f};

memhealth::memory_record watch_rec(std::string id, std::string text, std::vector<float> e,
                                   std::string scope) {
  return memhealth::test::make_record(
      std::move(id), std::move(text), std::move(e),
      {"e5-small-v1", std::move(scope), "fact", "2024-07-01T10:00:00Z", ""});
}

struct watch_log {
  std::vector<memhealth::watch_event> events;
  void operator()(const memhealth::watch_event& e) { events.push_back(e); }
  [[nodiscard]] std::size_t count(bool resolved, std::string_view kind,
                                  std::set<std::string> ids = {}) const {
    std::size_t n = 0;
    for (const auto& e : events)
      if (e.resolved == resolved && e.what.kind == kind &&
          (ids.empty() ||
           std::set<std::string>(e.what.record_ids.begin(), e.what.record_ids.end()) == ids))
        ++n;
    return n;
  }
};

bool ran(const memhealth::watch_poll_result& r, std::string_view task) {
  return std::any_of(r.runs.begin(), r.runs.end(),
                     [&](const memhealth::watch_task_run& x) { return x.task == task; });
}

}  // namespace

TEST_CASE("watcher: cadence, write-time checks, no finding twice, restart, risk windows") {
  using namespace std::chrono;
  sq_dir dir("watch");
  const auto state_path = dir.path / "state.db";
  const memhealth::utc_time t0 = memhealth::parse_timestamp("2024-07-15T00:00:00Z")->instant;
  std::vector<memhealth::memory_record> recs{
      watch_rec("m1", "User loves cilantro.", wu, "user:1"),
      watch_rec("m2", "User loves cilantro.", wu, "user:1"),  // an exact duplicate of m1
      watch_rec("m3", "User works at Acme.", wa, "user:2")};
  memhealth::watch_options opt;
  opt.risk.burst_writes = 3;
  opt.risk.burst_window = minutes{1};
  watch_log log;
  {
    auto state = memhealth::sqlite_state::open(state_path);
    auto ws = memhealth::watch_state::open(state_path);
    memhealth::watcher w(opt, state, ws);
    // first poll: one full run covers every record check due
    auto store = memhealth::memory_store<>::from_records(recs);
    auto r1 = w.poll(store, t0, log);
    CHECK(r1.changed == 3);
    CHECK(r1.risk_windows.empty());  // everything is new on a first poll: no window
    REQUIRE(r1.runs.size() == 1);
    CHECK(r1.runs[0].task == "full");
    CHECK(r1.runs[0].records_checked == 3);
    CHECK(log.count(false, "exact_duplicate", {"m1", "m2"}) == 1);
    const std::size_t after_first = log.events.size();
    CHECK(w.open_findings() == after_first);
    // nothing changed, nothing due: nothing runs, nothing is reported
    auto r2 = w.poll(store, t0 + seconds{10}, log);
    CHECK(r2.changed == 0);
    CHECK(r2.runs.empty());
    CHECK(log.events.size() == after_first);
    // a write: the write-time checks run on that record only and find the conflict
    recs.push_back(watch_rec("m4", "User works at Globex.", wb, "user:2"));
    store = memhealth::memory_store<>::from_records(recs);
    auto r3 = w.poll(store, t0 + seconds{20}, log);
    CHECK(r3.changed == 1);
    CHECK(r3.risk_windows.empty());
    REQUIRE(r3.runs.size() == 1);
    CHECK(r3.runs[0].task == "write_checks");
    CHECK(r3.runs[0].records_checked == 1);
    CHECK(log.count(false, "conflict", {"m3", "m4"}) == 1);
    CHECK(log.count(false, "exact_duplicate") == 1);  // not again
    // 5 minutes after the first poll: the incremental structural check, on m4 alone
    auto r4 = w.poll(store, t0 + minutes{5}, log);
    REQUIRE(r4.runs.size() == 1);
    CHECK(r4.runs[0].task == "structural");
    CHECK(r4.runs[0].records_checked == 1);
  }
  const std::size_t before_restart = log.events.size();
  {
    // a restart resumes from the state database: nothing is reported again
    auto state = memhealth::sqlite_state::open(state_path);
    auto ws = memhealth::watch_state::open(state_path);
    memhealth::watcher w(opt, state, ws);
    auto store = memhealth::memory_store<>::from_records(recs);
    auto r5 = w.poll(store, t0 + minutes{6}, log);
    CHECK(r5.changed == 0);
    CHECK(r5.runs.empty());
    CHECK(log.events.size() == before_restart);
    CHECK(w.open_findings() > 0);
    CHECK(w.schedule().state_of("structural").next == t0 + minutes{10});
    // a record removed: the findings that name it are resolved
    recs.erase(recs.begin() + 1);  // m2
    store = memhealth::memory_store<>::from_records(recs);
    auto r6 = w.poll(store, t0 + minutes{7}, log);
    CHECK(r6.removed == 1);
    CHECK(log.count(true, "exact_duplicate") == 1);
    // a scope change opens a risk window over both scopes
    recs[1].scope = "user:9";  // m3
    store = memhealth::memory_store<>::from_records(recs);
    auto r7 = w.poll(store, t0 + minutes{8}, log);
    REQUIRE(r7.risk_windows.size() == 1);
    CHECK(r7.risk_windows[0].find("scope changed: m3 (user:2 -> user:9)") == 0);
    CHECK(ran(r7, "risk_window"));
    // three writes within a minute (burst_writes = 3) of a new ingest batch: two windows
    for (int i = 0; i < 3; ++i) {
      auto r = watch_rec("b" + std::to_string(i), "Note number " + std::to_string(i) + ".", ww,
                         "user:5");
      r.metadata["ingest_batch"] = std::string("import-7");
      recs.push_back(std::move(r));
    }
    store = memhealth::memory_store<>::from_records(recs);
    auto r8 = w.poll(store, t0 + minutes{9}, log);
    CHECK(r8.changed == 3);
    CHECK(r8.risk_windows == std::vector<std::string>{"new ingest batch: import-7",
                                                      "write burst: 3 records within 60 s"});
    CHECK(ran(r8, "risk_window"));
    CHECK(ran(r8, "write_checks"));
    // a new embedding model: drift and the full structural check run at once
    recs[0].embedding_version = "e5-large-v2";  // m1
    store = memhealth::memory_store<>::from_records(recs);
    auto r9 = w.poll(store, t0 + minutes{10}, log);
    CHECK(r9.new_versions == std::vector<std::string>{"e5-large-v2"});
    CHECK(ran(r9, "drift"));
    CHECK(ran(r9, "structural_full"));
    CHECK_FALSE(ran(r9, "structural"));  // covered by the full one
    CHECK(log.count(false, "mixed_embedding_version", {"m1"}) == 1);
    // drift ran against the old model's sample (too small for the test: check_skipped)
    bool drift_finding = false;
    for (const auto& e : log.events)
      if (e.what.detector == "drift" || e.what.detector == "migration_gate") {
        const auto* v = e.what.evidence_of("current_version");
        drift_finding = drift_finding || (v && std::get<std::string>(*v) == "e5-large-v2");
      }
    CHECK(drift_finding);
    // a cluster that grows supersedes the smaller one; a member removed: the rest is found again
    const std::set<std::string> m1_m1b{"m1", "m1b"}, all3{"m1", "m1b", "m1c"};
    recs.push_back(watch_rec("m1b", "User loves cilantro.", wu, "user:1"));
    store = memhealth::memory_store<>::from_records(recs);
    (void)w.poll(store, t0 + minutes{11}, log);
    CHECK(log.count(false, "exact_duplicate", m1_m1b) == 1);
    recs.push_back(watch_rec("m1c", "User loves cilantro.", wu, "user:1"));
    store = memhealth::memory_store<>::from_records(recs);
    (void)w.poll(store, t0 + minutes{12}, log);
    CHECK(log.count(false, "exact_duplicate", all3) == 1);
    CHECK(log.count(true, "exact_duplicate", m1_m1b) == 1);  // superseded, with its ids
    recs.pop_back();                                         // m1c removed
    store = memhealth::memory_store<>::from_records(recs);
    auto r12 = w.poll(store, t0 + minutes{13}, log);
    CHECK(r12.removed == 1);
    CHECK(log.count(true, "exact_duplicate", all3) == 1);
    CHECK(log.count(false, "exact_duplicate", m1_m1b) == 2);  // found again at once
    std::size_t open_dups = 0;
    for (const auto& [k, n] : w.open_by_kind())
      if (k.first == "exact_duplicate") open_dups += n;
    CHECK(open_dups == 1);
  }
}

// ------------------------------------------------------------------ writes beside another writer

}  // namespace sqlite_store_test
#include <memhealth/live/watch_repair.hpp>

namespace sqlite_store_test {
TEST_CASE("sqlite_store: a write never overwrites a record another process changed since") {
  sq_dir dir("cas");
  const auto db = dir.path / "cas.db";
  {
    auto s = sqlite_store<>::create(
        db, {rec("a", "User drinks tea.", {1, 0}), rec("b", "User has a cat.", {0, 1})});
  }
  auto mine = sqlite_store<>::open(db);
  auto image = mine.extract(0);  // read before the other writer's change
  {
    auto agent = sqlite_store<>::open(db);
    (void)change(agent, 0, [](memory_record& r) { r.content = "User drinks coffee now."; });
  }
  // outside an action: its own transaction, refused, nothing written, the record read again
  image.status = "archived";
  error_code code{};
  try {
    (void)mine.restore(0, image);
  } catch (const error& e) {
    code = e.code();
    CHECK(std::string(e.what()).find("changed by another writer") != std::string::npos);
  }
  CHECK(code == error_code::busy);
  CHECK(mine.record(0).content == "User drinks coffee now.");
  CHECK(mine.record(0).status == "active");
  // inside an action: the same, and the rollback re-reads it
  {
    auto agent = sqlite_store<>::open(db);
    (void)change(agent, 0, [](memory_record& r) { r.kind = "preference"; });
  }
  auto stale = mine.extract(0);
  stale.status = "archived";
  mine.begin_action();
  CHECK_THROWS_AS((void)mine.restore(0, stale), error);
  mine.rollback_action();
  CHECK(mine.record(0).kind == "preference");
  // on fresh content the write goes through, and another record is untouched
  auto fresh = mine.extract(0);
  fresh.status = "archived";
  (void)mine.restore(0, fresh);
  auto check = sqlite_store<>::open(db);
  CHECK(check.record(0).content == "User drinks coffee now.");
  CHECK(check.record(0).kind == "preference");
  CHECK(check.record(0).status == "archived");
  CHECK(check.record(1).status == "active");
}

TEST_CASE(
    "apply_plan on a live sqlite store: an action whose record the agent changed is retried "
    "on the agent's content, never written over it") {
  sq_dir dir("cas-apply");
  const auto db = dir.path / "live.db";
  {
    auto s = sqlite_store<>::create(
        db, {rec("a", "User drinks tea.", {1, 0}), rec("b", "User has a cat.", {0, 1})});
  }
  auto live = sqlite_store<>::open(db);
  (void)live.record(0);  // cached, as a long-open store has it
  repair_plan plan;
  repair_action a;
  a.type = "test";
  a.targets = {"a"};
  a.edits = {{"a", edit_set_weight{0.5}}};
  a.idempotency_key = compute_idempotency_key(a);
  plan.actions.push_back(a);
  wal_writer wal(dir.path / "run.wal", wal_sync::none);
  apply_options ao;
  int intents = 0;
  ao.crash_hook = [&](std::string_view point) {
    // the agent writes record a between the log's intent and the store write, once
    if (point == "after_intent" && ++intents == 1) {
      auto agent = sqlite_store<>::open(db);
      (void)change(agent, 0, [](memory_record& r) { r.content = "User drinks coffee now."; });
    }
  };
  const auto res = apply_plan(live, plan, wal, ao);
  REQUIRE(res.outcomes.size() == 1);
  CHECK(res.outcomes[0].status == action_status::applied);
  CHECK(res.outcomes[0].attempts == 2);
  auto check = sqlite_store<>::open(db);
  CHECK(check.record(0).content == "User drinks coffee now.");  // the agent's write stays
  REQUIRE(check.record(0).effective_weight.has_value());
  CHECK(*check.record(0).effective_weight == 0.5);  // and the repair is on top of it
  // the log: the first attempt aborted, the second committed; a rollback restores the agent's
  // content (the second attempt's before-image), not the stale one
  wal.sync();
  const auto log = read_wal_file(dir.path / "run.wal");
  auto undo = sqlite_store<>::open(db);
  const auto rb = rollback(undo, log);
  CHECK(rb.conflicts.empty());
  auto after = sqlite_store<>::open(db);
  CHECK(after.record(0).content == "User drinks coffee now.");
  CHECK_FALSE(after.record(0).effective_weight.has_value());
}

TEST_CASE(
    "apply_plan on a live sqlite store: a record the action names but does not write, changed "
    "by the agent meanwhile, makes the action stale") {
  sq_dir dir("cas-unwritten");
  const auto db = dir.path / "live.db";
  {
    auto s = sqlite_store<>::create(
        db, {rec("p", "User drinks tea.", {1, 0}), rec("d", "User drinks tea.", {1, 0})});
  }
  auto live = sqlite_store<>::open(db);
  // d merged into p: only d is written; p is the primary the decision rests on
  repair_plan plan;
  repair_action a;
  a.type = std::string(action_types::merge_duplicates);
  a.targets = {"p", "d"};
  a.edits = {{"d", edit_set_duplicate_of{"p"}}, {"d", edit_set_status{"archived"}}};
  for (const char* id : {"p", "d"})
    a.seen[id] = record_decision_digest(live.record(*live.find(id)));
  a.idempotency_key = compute_idempotency_key(a);
  plan.actions.push_back(a);
  wal_writer wal(dir.path / "run.wal", wal_sync::none);
  apply_options ao;
  ao.approve_tier2 = true;
  int intents = 0;
  ao.crash_hook = [&](std::string_view point) {
    // the agent rewrites the primary between the log's intent and the store write, once
    if (point == "after_intent" && ++intents == 1) {
      auto agent = sqlite_store<>::open(db);
      (void)change(agent, 0, [](memory_record& r) { r.content = "User drinks coffee now."; });
    }
  };
  const auto res = apply_plan(live, plan, wal, ao);
  REQUIRE(res.outcomes.size() == 1);
  CHECK(res.outcomes[0].stale());
  CHECK(res.outcomes[0].reason.find("(p)") != std::string::npos);
  CHECK(res.outcomes[0].attempts == 1);  // the check refused it; the retry found it stale
  auto check = sqlite_store<>::open(db);
  CHECK(check.record(0).content == "User drinks coffee now.");
  CHECK(check.record(1).status == "active");  // the duplicate stays: its primary changed
  CHECK(check.record(1).links.duplicate_of.empty());
}

namespace {
// Detection on the tests' clock (the records are of 2024: no staleness findings on this day).
report check_at_test_clock(const memory_store<>& s) {
  detect_options d;
  d.now = parse_timestamp("2024-07-15T00:00:00Z")->instant;
  return make_default_pipeline().run(s, d);
}
}  // namespace

TEST_CASE("repair_watch_findings: tier 1 applied, tier 2 by rule, tier 3 queued once") {
  sq_dir dir("watch-repair");
  const auto db = dir.path / "live.db";
  // a/b exact duplicates (merge_duplicates, tier 2); c an illegal status (tier 1); d/e the same
  // text in two scopes (cross_scope_duplicate: send_to_review, tier 3)
  std::vector<memory_record> recs{rec("a", "User drinks oat milk.", {0.6f, 0.8f}),
                                  rec("b", "User drinks oat milk.", {0.6f, 0.8f}),
                                  rec("c", "User has a cat named Tom.", {0.8f, -0.6f}),
                                  rec("d", "User is allergic to nuts.", {-0.6f, 0.8f}, "user:2"),
                                  rec("e", "User is allergic to nuts.", {-0.6f, 0.8f}, "user:3")};
  recs[2].status = "bogus";
  { auto s = sqlite_store<>::create(db, recs); }
  auto state = sqlite_state::open(dir.path / "state.db");
  const auto snapshot = memory_store<>::from_records(recs);
  auto findings = check_at_test_clock(snapshot).findings;
  const auto has = [&](std::string_view kind) {
    return std::any_of(findings.begin(), findings.end(),
                       [&](const finding& f) { return f.kind == kind; });
  };
  REQUIRE(has("exact_duplicate"));
  REQUIRE(has("illegal_status"));
  REQUIRE(has("cross_scope_duplicate"));
  const utc_time now = parse_timestamp("2024-07-15T00:00:00Z")->instant;
  watch_repair_options o;
  o.history_scope = "sqlite:" + db.string();
  {
    auto live = sqlite_store<>::open(db);
    wal_writer wal(dir.path / "watch.wal", wal_sync::none);
    const auto r = repair_watch_findings(snapshot, findings, live, wal, state, o, now);
    CHECK(r.applied == 1);  // the illegal status
    CHECK(r.failed == 0);
    CHECK(r.queued >= 2);  // the merge (no rule for it) and the review
  }
  std::set<std::string> queued_types;
  for (const auto& it : state.review_items()) {
    queued_types.insert(it.type);
    CHECK(it.status == "pending");
    CHECK(it.key.starts_with(o.history_scope + '\x1f'));
    CHECK(nlohmann::json::parse(it.action_json)["type"] == it.type);
  }
  CHECK(queued_types.count("merge_duplicates") == 1);
  CHECK(queued_types.count("send_to_review") == 1);
  const std::size_t queued = state.review_count();
  // the applied action's fault goes to the findings history: c's illegal status, repaired now
  {
    const auto faults = state.repaired_faults(o.history_scope);
    REQUIRE(faults.size() == 1);
    CHECK(faults[0].kind == "illegal_status");
    CHECK(faults[0].repaired_at == now);
    CHECK(faults[0].action_key.starts_with(o.history_scope + '\x1f'));
    CHECK(faults[0].finding_key.find("\x1f"
                                     "illegal_status\x1f"
                                     "c") != std::string::npos);
    CHECK(!faults[0].recurred_at);
  }
  {
    auto s = sqlite_store<>::open(db);
    CHECK(s.record(*s.find("c")).status == "pending_review");
    CHECK(s.record(*s.find("b")).status == "active");  // tier 2 not applied without a rule
  }
  // the same findings again: nothing queued twice, the tier-1 repair already holds
  o.tier2_apply = {"merge_duplicates"};
  {
    auto live = sqlite_store<>::open(db);
    wal_writer wal(dir.path / "watch.wal", wal_sync::none);
    const auto r = repair_watch_findings(snapshot, findings, live, wal, state, o, now);
    CHECK(r.queued == 0);
    CHECK(r.changed_meanwhile == 1);  // c: repaired since this snapshot, not touched again
    CHECK(r.applied == 1);            // the merge, now that a rule applies it
  }
  CHECK(state.review_count() == queued);
  {  // and the merge's: the exact duplicate a/b
    std::set<std::string> kinds;
    for (const auto& f : state.repaired_faults(o.history_scope)) kinds.insert(f.kind);
    CHECK(kinds.count("exact_duplicate") == 1);
    CHECK(kinds.count("illegal_status") == 1);
  }
  auto s = sqlite_store<>::open(db);
  const auto& a = s.record(*s.find("a"));
  const auto& b = s.record(*s.find("b"));
  CHECK(a.status == "active");  // the older (or first) record is the primary
  CHECK(b.status == "archived");
  CHECK(b.links.duplicate_of == "a");
  CHECK(s.record(*s.find("d")).status == "active");  // tier 3 waits for a person
  CHECK(s.record(*s.find("e")).status == "active");
}

TEST_CASE(
    "repair_watch_findings: an action whose records the agent changed after the snapshot "
    "is skipped, never applied to the new content, a stop request ends the run") {
  sq_dir dir("watch-repair-stale");
  const auto db = dir.path / "live.db";
  std::vector<memory_record> recs{rec("a", "User drinks oat milk.", {0.6f, 0.8f}),
                                  rec("b", "User drinks oat milk.", {0.6f, 0.8f}),
                                  rec("c", "User has a cat named Tom.", {0.8f, -0.6f}),
                                  rec("f", "User has a dog named Rex.", {-0.8f, 0.6f})};
  recs[2].status = "bogus";
  recs[3].status = "bogus";
  { auto s = sqlite_store<>::create(db, recs); }
  auto state = sqlite_state::open(dir.path / "state.db");
  const auto snapshot = memory_store<>::from_records(recs);
  const auto findings = check_at_test_clock(snapshot).findings;
  // the agent writes after the snapshot: b is no longer a duplicate, c's status is fixed by it
  {
    auto agent = sqlite_store<>::open(db);
    (void)change(agent, 1, [](memory_record& r) { r.content = "User switched to soy milk."; });
    (void)change(agent, 2, [](memory_record& r) { r.status = "active"; });
  }
  watch_repair_options o;
  o.history_scope = "sqlite:" + db.string();
  o.tier2_apply = {"merge_duplicates"};
  const utc_time now = parse_timestamp("2024-07-15T00:00:00Z")->instant;
  {
    auto live = sqlite_store<>::open(db);
    wal_writer wal(dir.path / "watch.wal", wal_sync::none);
    const auto r = repair_watch_findings(snapshot, findings, live, wal, state, o, now);
    CHECK(r.changed_meanwhile == 2);  // the merge of a/b, the status of c
    CHECK(r.applied == 1);            // f: unchanged since the snapshot
    CHECK(r.failed == 0);
    CHECK(r.queued == 0);
  }
  {
    auto s = sqlite_store<>::open(db);
    CHECK(s.record(1).content == "User switched to soy milk.");
    CHECK(s.record(1).status == "active");
    CHECK(s.record(1).links.duplicate_of.empty());
    CHECK(s.record(2).status == "active");  // the agent's value, not pending_review
    CHECK(s.record(3).status == "pending_review");
  }
  CHECK(state.manual_queue().empty());  // a concurrent change is not a failure
  // a stop request before the first action: nothing runs, everything is left for the next run
  auto fresh = recs;
  fresh[3].status = "bogus2";
  { auto s = sqlite_store<>::create(dir.path / "two.db", fresh); }
  auto live = sqlite_store<>::open(dir.path / "two.db");
  wal_writer wal(dir.path / "two.wal", wal_sync::none);
  const auto snap2 = memory_store<>::from_records(fresh);
  o.history_scope = "sqlite:two";
  const auto r = repair_watch_findings(snap2, check_at_test_clock(snap2).findings, live, wal, state,
                                       o, now, [] { return true; });
  CHECK(r.applied == 0);
  CHECK(r.not_run >= 2);
  // a record budget of one: one action runs, the other is left for the next run and counted
  o.max_records = 1;
  o.planner.max_records_per_run = 1;
  o.history_scope = "sqlite:two-budget";
  const auto rb =
      repair_watch_findings(snap2, check_at_test_clock(snap2).findings, live, wal, state, o, now);
  CHECK(rb.applied == 1);
  CHECK(rb.deferred + rb.plan_deferred >= 1);
}

}  // namespace sqlite_store_test
#include <memhealth/live/sqlite_review.hpp>

namespace sqlite_store_test {
TEST_CASE(
    "review queue: decisions are recorded, a rejected item returns only when its records "
    "change, approving applies the action through the log") {
  sq_dir dir("review");
  const auto db = dir.path / "live.db";
  std::vector<memory_record> recs{rec("a", "User drinks oat milk.", {0.6f, 0.8f}),
                                  rec("b", "User drinks oat milk.", {0.6f, 0.8f}),
                                  rec("d", "User is allergic to nuts.", {-0.6f, 0.8f}, "user:2"),
                                  rec("e", "User is allergic to nuts.", {-0.6f, 0.8f}, "user:3")};
  { auto s = sqlite_store<>::create(db, recs); }
  auto state = sqlite_state::open(dir.path / "state.db");
  auto snapshot = memory_store<>::from_records(recs);
  const utc_time now = parse_timestamp("2024-07-15T00:00:00Z")->instant;
  const std::int64_t now_ms = 1721001600000;  // 2024-07-15T00:00:00Z
  watch_repair_options o;
  o.history_scope = "sqlite:" + db.string();
  const auto queue_all = [&](const memory_store<>& snap) {
    auto live = sqlite_store<>::open(db);
    wal_writer wal(dir.path / "watch.wal", wal_sync::none);
    return repair_watch_findings(snap, check_at_test_clock(snap).findings, live, wal, state, o,
                                 now);
  };
  CHECK(queue_all(snapshot).queued == 2);  // merge a/b (no tier-2 rule), review d/e (tier 3)
  std::optional<review_item> merge, review;
  for (auto& it : state.review_items()) (it.type == "merge_duplicates" ? merge : review) = it;
  REQUIRE(merge);
  REQUIRE(review);
  CHECK(review->type == "send_to_review");
  CHECK_FALSE(merge->fingerprint.empty());
  // a decision needs a reviewer; an unknown key is not_found
  CHECK_THROWS_AS(state.decide_review(merge->key, "rejected", "", "no", now_ms), error);
  CHECK_THROWS_AS(state.decide_review("nope", "rejected", "ana", "no", now_ms), error);
  // rejected: recorded, and not proposed again while its records stay as they are
  state.decide_review(merge->key, "rejected", "ana", "two different oat milk facts", now_ms);
  auto r = state.review(merge->key);
  REQUIRE(r);
  CHECK(r->status == "rejected");
  CHECK(r->decided_by == "ana");
  CHECK(r->decision_note == "two different oat milk facts");
  CHECK(r->decided_ms == now_ms);
  CHECK(queue_all(snapshot).queued == 0);
  CHECK(state.review(merge->key)->status == "rejected");
  CHECK(state.review_count() == 1);  // the review of d/e only
  // deferred: pending again once its time came
  state.decide_review(review->key, "deferred", "ana", "ask the user", now_ms, now_ms + 1000);
  CHECK(state.review_items("pending", now_ms + 999).empty());
  CHECK(state.review_items("pending", now_ms + 1000).size() == 1);
  // the agent writes b (a new note in its metadata, updated_at bumped as a writer does): the
  // rejected merge is proposed again (metadata alone, like the weight, is not what the decision
  // rests on: review_fingerprint)
  const auto agent_edit = [](memory_record& x) {
    x.metadata["source_app"] = std::string("chat");
    x.updated_at = parse_timestamp("2024-07-14T09:00:00Z");
  };
  agent_edit(recs[1]);
  {
    auto s = sqlite_store<>::open(db);
    (void)change(s, 1, agent_edit);
  }
  snapshot = memory_store<>::from_records(recs);
  CHECK(queue_all(snapshot).queued == 1);
  r.reset();
  for (auto& it : state.review_items())
    if (it.type == "merge_duplicates") r = it;
  REQUIRE(r);
  if (r->key == merge->key)  // the same action: proposed again, the old decision noted
    CHECK(r->decision_note.find("rejected by ana") != std::string::npos);
  // at the queue itself: the same key with the same fingerprint stays rejected, another
  // fingerprint is proposed again
  review_item same = *merge;
  same.key = "k1";
  CHECK(state.queue_review(same));
  state.decide_review("k1", "rejected", "ana", "no", now_ms);
  CHECK_FALSE(state.queue_review(same));
  CHECK(state.review("k1")->status == "rejected");
  same.fingerprint = "another";
  CHECK(state.queue_review(same));
  CHECK(state.review("k1")->status == "pending");
  CHECK(state.review("k1")->decision_note ==
        "rejected by ana (no), proposed again: its records changed");
  CHECK_FALSE(state.queue_review(same));                       // pending: not queued twice
  state.decide_review("k1", "rejected", "ana", "no", now_ms);  // out of the way
  // approved: applied through the log, one transaction, and recorded
  {
    auto live = sqlite_store<>::open(db);
    wal_writer wal(dir.path / "watch.wal", wal_sync::none);
    CHECK_THROWS_AS(
        (void)approve_review_items(live, {*r}, wal, state, o.history_scope, "ana", "", now), error);
    const auto out =
        approve_review_items(live, {*r}, wal, state, o.history_scope, "ana", "same fact", now);
    REQUIRE(out.size() == 1);
    CHECK(out[0].status == action_status::applied);
    CHECK(out[0].records_changed >= 1);
  }
  CHECK(state.review(r->key)->status == "approved");
  CHECK(state.review(r->key)->decided_by == "ana");
  // one of a, b is archived as a duplicate of the other (the planner picks the primary), and the
  // agent's metadata on b is kept
  auto s = sqlite_store<>::open(db);
  const auto& a = s.record(*s.find("a"));
  const auto& b = s.record(*s.find("b"));
  CHECK(((a.status == "archived" && a.links.duplicate_of == "b" && b.status == "active") ||
         (b.status == "archived" && b.links.duplicate_of == "a" && a.status == "active")));
  CHECK(b.metadata.at("source_app") == metadata_value{std::string("chat")});
  // an item whose records changed since it was queued is not applied: the reviewer saw others
  {
    auto agent = sqlite_store<>::open(db);
    (void)change(agent, *agent.find("d"), [](memory_record& x) { x.content = "User is fine."; });
  }
  {
    auto live = sqlite_store<>::open(db);
    wal_writer wal(dir.path / "watch.wal", wal_sync::none);
    const auto item = state.review(review->key);
    REQUIRE(item);
    const auto out =
        approve_review_items(live, {*item}, wal, state, o.history_scope, "ana", "both wrong", now);
    CHECK(out[0].status == action_status::failed);
    CHECK(out[0].reason.find("changed since it was queued") != std::string::npos);
    CHECK(state.review(review->key)->status == "deferred");  // unchanged
  }
  const auto log = read_wal_file(dir.path / "watch.wal");
  CHECK(log.runs() >= 1);
}

TEST_CASE("repair_watch_findings: tier 2 under a veto window, on a fake clock") {
  sq_dir dir("watch-veto");
  const auto db = dir.path / "live.db";
  // three pairs of exact duplicates (merge_duplicates, tier 2) in three scopes, and one pair of
  // one text in two scopes (cross_scope_duplicate: send_to_review, tier 3)
  std::vector<memory_record> recs{rec("a", "User drinks oat milk.", {0.6f, 0.8f}, "user:1"),
                                  rec("b", "User drinks oat milk.", {0.6f, 0.8f}, "user:1"),
                                  rec("f", "User plays chess.", {0.8f, 0.6f}, "user:4"),
                                  rec("g", "User plays chess.", {0.8f, 0.6f}, "user:4"),
                                  rec("h", "User owns a red car.", {0.0f, 1.0f}, "user:5"),
                                  rec("i", "User owns a red car.", {0.0f, 1.0f}, "user:5"),
                                  rec("d", "User is allergic to nuts.", {-0.6f, 0.8f}, "user:2"),
                                  rec("e", "User is allergic to nuts.", {-0.6f, 0.8f}, "user:3")};
  { auto s = sqlite_store<>::create(db, recs); }
  auto state = sqlite_state::open(dir.path / "state.db");
  const auto snapshot = memory_store<>::from_records(recs);
  const auto findings = check_at_test_clock(snapshot).findings;
  const utc_time t0 = parse_timestamp("2024-07-15T00:00:00Z")->instant;
  const std::int64_t t0_ms = 1721001600000;
  constexpr std::int64_t hour_ms = 3'600'000;
  watch_repair_options o;
  o.history_scope = "sqlite:" + db.string();
  o.tier2_veto_window = std::chrono::hours(24);
  const auto run_at = [&](std::int64_t hours) {
    auto live = sqlite_store<>::open(db);
    wal_writer wal(dir.path / "watch.wal", wal_sync::none);
    return repair_watch_findings(snapshot, findings, live, wal, state, o,
                                 t0 + std::chrono::hours(hours));
  };
  const auto status = [&](const char* id) {
    auto s = sqlite_store<>::open(db);
    return s.record(*s.find(id)).status;
  };
  auto r = run_at(0);
  CHECK(r.queued == 4);  // three merges (no rule: the window) and the review
  CHECK(r.applied == 0);
  std::map<std::string, review_item> by_first;  // by the first target
  for (auto& it : state.review_items()) {
    const auto targets = nlohmann::json::parse(it.targets);
    by_first[targets[0].get<std::string>()] = it;
  }
  REQUIRE(by_first.size() == 4);
  for (const char* first : {"a", "f", "h"}) {
    REQUIRE(by_first.count(first));
    CHECK(by_first[first].type == "merge_duplicates");
    CHECK(by_first[first].apply_after_ms == t0_ms + 24 * hour_ms);
    CHECK(by_first[first].reason.find("unless vetoed") != std::string::npos);
  }
  CHECK(by_first["d"].apply_after_ms == 0);  // tier 3: never by the clock
  // a person vetoes f/g; the agent changes i (its metadata, updated_at bumped)
  state.decide_review(by_first["f"].key, "rejected", "ana", "two chess clubs", t0_ms + hour_ms);
  {
    auto agent = sqlite_store<>::open(db);
    (void)change(agent, *agent.find("i"), [](memory_record& x) {
      x.metadata["source_app"] = std::string("chat");
      x.updated_at = parse_timestamp("2024-07-15T01:00:00Z");
    });
  }
  // 23 h: nothing applied yet; h/i can never be applied as queued: closed (obsolete)
  r = run_at(23);
  CHECK(r.veto_applied == 0);
  CHECK(r.veto_failed == 0);
  CHECK(r.closed == 1);
  CHECK(status("a") == "active");
  CHECK(status("b") == "active");
  // 24 h: a/b merged by the window; f/g vetoed; h/i closed before
  r = run_at(24);
  CHECK(r.veto_applied == 1);
  CHECK(r.veto_failed == 0);
  CHECK(((status("a") == "archived") != (status("b") == "archived")));
  const auto merged = state.review(by_first["a"].key);
  REQUIRE(merged);
  CHECK(merged->status == "approved");
  CHECK(merged->decided_by == "veto-window");
  CHECK(merged->decided_ms == t0_ms + 24 * hour_ms);
  CHECK(state.review(by_first["f"].key)->status == "rejected");
  CHECK(status("f") == "active");
  CHECK(status("g") == "active");
  CHECK(state.review(by_first["h"].key)->status == "obsolete");
  CHECK(state.review(by_first["h"].key)->decided_by == "memhealth");
  CHECK(status("h") == "active");
  CHECK(status("i") == "active");
  CHECK(state.review(by_first["d"].key)->status == "pending");
  // a week later: the vetoed and the tier-3 item still wait; nothing is applied twice
  r = run_at(24 * 7);
  CHECK(r.veto_applied == 0);
  CHECK(status("f") == "active");
  CHECK(status("d") == "active");
  CHECK(status("e") == "active");
  // the merge went through the log like any action, and rolls back
  const auto log = read_wal_file(dir.path / "watch.wal");
  CHECK(log.runs() >= 1);
  auto undo = sqlite_store<>::open(db);
  const auto rb = rollback(undo, log);
  CHECK(rb.conflicts.empty());
  CHECK(status("a") == "active");
  CHECK(status("b") == "active");
}

// The live store's records as a snapshot (what a poll reads).
memory_store<> snapshot_of(const std::filesystem::path& db) {
  auto live = sqlite_store<>::open(db);
  std::vector<memory_record> out;
  for (std::size_t i = 0; i < live.size(); ++i) out.push_back(detail::whole_record(live, i));
  return memory_store<>::from_records(out);
}

TEST_CASE(
    "veto window: a rejection holds against memhealth's own weight changes, proposed again it "
    "waits for a person, the rejection kept, the approval counts in repair success") {
  sq_dir dir("veto-reject");
  const auto db = dir.path / "live.db";
  {
    auto s = sqlite_store<>::create(db, {rec("a", "User drinks oat milk.", {0.6f, 0.8f}),
                                         rec("b", "User drinks oat milk.", {0.6f, 0.8f})});
  }
  auto state = sqlite_state::open(dir.path / "state.db");
  const utc_time t0 = parse_timestamp("2024-07-15T00:00:00Z")->instant;
  constexpr std::int64_t t0_ms = 1721001600000, hour_ms = 3'600'000;
  watch_repair_options o;
  o.history_scope = "sqlite:" + db.string();
  o.tier2_veto_window = std::chrono::hours(1);
  const auto poll = [&](std::int64_t hours) {
    const auto snap = snapshot_of(db);
    auto live = sqlite_store<>::open(db);
    wal_writer wal(dir.path / "watch.wal", wal_sync::none);
    return repair_watch_findings(snap, check_at_test_clock(snap).findings, live, wal, state, o,
                                 t0 + std::chrono::hours(hours));
  };
  const auto status = [&](const char* id) {
    auto s = sqlite_store<>::open(db);
    return s.record(*s.find(id)).status;
  };
  const auto agent = [&](const char* id, auto edit) {
    auto s = sqlite_store<>::open(db);
    (void)change(s, *s.find(id), edit);
  };
  CHECK(poll(0).queued == 1);
  const auto items = state.review_items();
  REQUIRE(items.size() == 1);
  const std::string key = items[0].key;
  CHECK(items[0].type == "merge_duplicates");
  CHECK(items[0].apply_after_ms == t0_ms + hour_ms);
  state.decide_review(key, "rejected", "ana", "asked the user: keep both", t0_ms + 1000);
  // memhealth's own down-weight of a and b (weight only): not "records changed"
  agent("a", [](memory_record& x) { x.effective_weight = 0.05; });
  agent("b", [](memory_record& x) { x.effective_weight = 0.05; });
  auto r = poll(2);
  CHECK(r.queued == 0);
  CHECK(r.veto_applied == 0);
  CHECK(state.review(key)->status == "rejected");
  CHECK(state.review(key)->decision_note == "asked the user: keep both");
  CHECK(status("a") == "active");
  CHECK(status("b") == "active");
  // the agent writes b (updated_at bumped): proposed again, for a person (no veto window), the
  // rejection kept
  agent("b", [](memory_record& x) { x.updated_at = parse_timestamp("2024-07-15T02:30:00Z"); });
  r = poll(3);
  CHECK(r.queued == 1);
  // the same key, or another one when the newer b changes the merge's primary
  const auto pending = state.review_items();
  REQUIRE(pending.size() == 1);
  const auto& again = pending[0];
  CHECK(again.type == "merge_duplicates");
  CHECK(again.apply_after_ms == 0);
  CHECK(again.decided_by == "ana");
  CHECK(again.decision_note.starts_with("rejected by ana (asked the user: keep both)"));
  CHECK(again.decision_note.ends_with(", proposed again: its records changed"));
  // long past any window: never applied by the clock
  r = poll(30);
  CHECK(r.veto_applied == 0);
  CHECK(status("a") == "active");
  CHECK(status("b") == "active");
  CHECK(state.review(again.key)->status == "pending");
  // a person approves it: applied, the whole trail kept, its fault in the findings history
  {
    auto live = sqlite_store<>::open(db);
    wal_writer wal(dir.path / "review.wal", wal_sync::none);
    const auto out =
        approve_review_items(live, {*state.review(again.key)}, wal, state, o.history_scope, "bob",
                             "asked again: one fact", t0 + std::chrono::hours(31));
    REQUIRE(out.size() == 1);
    CHECK(out[0].status == action_status::applied);
  }
  CHECK((status("a") == "archived") != (status("b") == "archived"));
  const auto decided = state.review(again.key);
  CHECK(decided->status == "approved");
  CHECK(decided->decided_by == "bob");
  CHECK(decided->decision_note.starts_with(
      "asked again: one fact; earlier: pending by ana (rejected by ana (asked the user: keep "
      "both)"));
  const auto faults = state.repaired_faults(o.history_scope);
  REQUIRE(faults.size() == 1);
  CHECK(faults[0].kind == "exact_duplicate");
  CHECK(faults[0].action_key == again.key);
  CHECK(faults[0].repaired_at == t0 + std::chrono::hours(31));
}

TEST_CASE("veto window: a deferral that ends leaves the item to a person, the deferral kept") {
  sq_dir dir("veto-defer");
  const auto db = dir.path / "live.db";
  {
    auto s = sqlite_store<>::create(db, {rec("f", "User plays chess.", {0.8f, 0.6f}, "user:4"),
                                         rec("g", "User plays chess.", {0.8f, 0.6f}, "user:4"),
                                         rec("h", "User owns a red car.", {0.0f, 1.0f}, "user:5"),
                                         rec("i", "User owns a red car.", {0.0f, 1.0f}, "user:5")});
  }
  auto state = sqlite_state::open(dir.path / "state.db");
  const utc_time t0 = parse_timestamp("2024-07-15T00:00:00Z")->instant;
  constexpr std::int64_t t0_ms = 1721001600000, hour_ms = 3'600'000;
  watch_repair_options o;
  o.history_scope = "sqlite:" + db.string();
  o.tier2_veto_window = std::chrono::hours(1);
  const auto poll = [&](std::int64_t hours) {
    const auto snap = snapshot_of(db);
    auto live = sqlite_store<>::open(db);
    wal_writer wal(dir.path / "watch.wal", wal_sync::none);
    return repair_watch_findings(snap, check_at_test_clock(snap).findings, live, wal, state, o,
                                 t0 + std::chrono::hours(hours));
  };
  CHECK(poll(0).queued == 2);
  std::string fg, hi;
  for (const auto& it : state.review_items())
    (nlohmann::json::parse(it.targets)[0] == "f" || nlohmann::json::parse(it.targets)[0] == "g"
         ? fg
         : hi) = it.key;
  REQUIRE(!fg.empty());
  REQUIRE(!hi.empty());
  state.decide_review(fg, "deferred", "ana", "ask the user first", t0_ms + 1000,
                      t0_ms + 2 * hour_ms);
  const auto r = poll(5);      // past the window and the deferral
  CHECK(r.veto_applied == 1);  // h/i only
  CHECK(state.review(hi)->status == "approved");
  CHECK(state.review(hi)->decided_by == "veto-window");
  const auto d = state.review(fg);
  CHECK(d->status == "deferred");
  CHECK(d->decided_by == "ana");
  CHECK(d->decision_note == "ask the user first");
  auto s = sqlite_store<>::open(db);
  CHECK(s.record(*s.find("f")).status == "active");
  CHECK(s.record(*s.find("g")).status == "active");
  // pending for a person again
  const auto open = state.review_items("pending", t0_ms + 5 * hour_ms);
  REQUIRE(open.size() == 1);
  CHECK(open[0].key == fg);
}

TEST_CASE(
    "veto window: applied in the plan's order (merges before down-weights), an item whose "
    "records a repair retired is closed, not left pending") {
  sq_dir dir("veto-order");
  const auto db = dir.path / "live.db";
  {
    auto s = sqlite_store<>::create(db, {rec("a", "User drinks oat milk.", {0.6f, 0.8f}),
                                         rec("b", "User drinks oat milk.", {0.6f, 0.8f})});
  }
  auto state = sqlite_state::open(dir.path / "state.db");
  const utc_time t0 = parse_timestamp("2024-07-15T00:00:00Z")->instant;
  watch_repair_options o;
  o.history_scope = "sqlite:" + db.string();
  o.tier2_veto_window = std::chrono::hours(1);
  // two years on: a and b are stale (down-weights, priority 100) and duplicates (a merge, 200)
  const auto check_late = [](const memory_store<>& s) {
    detect_options d;
    d.now = parse_timestamp("2026-07-15T00:00:00Z")->instant;
    return make_default_pipeline().run(s, d).findings;
  };
  const auto poll = [&](std::int64_t hours) {
    const auto snap = snapshot_of(db);
    auto live = sqlite_store<>::open(db);
    wal_writer wal(dir.path / "watch.wal", wal_sync::none);
    return repair_watch_findings(snap, check_late(snap), live, wal, state, o,
                                 t0 + std::chrono::hours(hours));
  };
  (void)poll(0);
  std::size_t merges = 0, downweights = 0;
  for (const auto& it : state.review_items()) {
    merges += it.type == "merge_duplicates" ? 1 : 0;
    downweights += it.type == "downweight" ? 1 : 0;
  }
  REQUIRE(merges == 1);
  REQUIRE(downweights == 2);  // a and b
  const auto r = poll(2);
  CHECK(r.veto_applied == 2);  // the merge, then the kept record's down-weight
  CHECK(r.veto_failed == 1);   // the archived record's down-weight: its record was retired
  CHECK(r.closed == 1);
  auto s = sqlite_store<>::open(db);
  const std::string kept = s.record(*s.find("a")).status == "archived" ? "b" : "a";
  const std::string gone = kept == "a" ? "b" : "a";
  CHECK(s.record(*s.find(gone)).status == "archived");
  CHECK(s.record(*s.find(kept)).status == "active");
  CHECK(s.record(*s.find(kept)).effective_weight.value_or(1.0) < 1.0);
  for (const auto& it : state.review_items("")) {
    const auto target = nlohmann::json::parse(it.targets)[0].get<std::string>();
    if (it.type == "merge_duplicates") {
      CHECK(it.status == "approved");
    } else if (target == gone) {
      CHECK(it.status == "obsolete");
      CHECK(it.decision_note.find("retired") != std::string::npos);
    } else {
      CHECK(it.status == "approved");
    }
  }
  CHECK(state.review_count("pending") == 0);
  // the next poll proposes nothing new and leaves nothing pending
  CHECK(poll(3).veto_failed == 0);
  CHECK(state.review_count("pending") == 0);
}

TEST_CASE(
    "veto window: the poll that applies due down-weights does not queue the same down-weights "
    "again under new keys") {
  // found by a tester: on the real clock a down-weight's weight, and so its key, changes at every
  // poll; the poll that applied the due down-weights planned them again from its snapshot (taken
  // before), queued them under new keys, and the next window applied them: every stale record
  // down-weighted twice and counted twice in the repair history
  sq_dir dir("veto-twice");
  const auto db = dir.path / "live.db";
  {
    auto s = sqlite_store<>::create(db, {rec("a", "User drinks oat milk.", {0.6f, 0.8f}),
                                         rec("c", "User plays the cello.", {0.8f, -0.6f})});
  }
  auto state = sqlite_state::open(dir.path / "state.db");
  const utc_time t0 = parse_timestamp("2026-07-15T00:00:00Z")->instant;
  watch_repair_options o;
  o.history_scope = "sqlite:" + db.string();
  o.tier2_veto_window = std::chrono::hours(1);
  // the clock of the check moves with the poll (records of 2024-07, so both are stale)
  const auto poll = [&](std::int64_t hours) {
    const auto snap = snapshot_of(db);
    auto live = sqlite_store<>::open(db);
    wal_writer wal(dir.path / "watch.wal", wal_sync::none);
    detect_options d;
    d.now = t0 + std::chrono::hours(hours);
    return repair_watch_findings(snap, make_default_pipeline().run(snap, d).findings, live, wal,
                                 state, o, t0 + std::chrono::hours(hours));
  };
  CHECK(poll(0).queued == 2);  // a's and c's down-weights
  REQUIRE(state.review_count("pending") == 2);
  const auto r = poll(2);  // past the window: both applied
  CHECK(r.veto_applied == 2);
  CHECK(state.review_count("pending") == 0);  // not the same down-weights again (new keys)
  CHECK(state.review_count("approved") == 2);
  // the next polls apply nothing more; each stale fault counted once in the repair history
  CHECK(poll(4).veto_applied == 0);
  CHECK(poll(6).veto_applied == 0);
  std::size_t stale = 0;
  for (const auto& f : state.repaired_faults(o.history_scope)) stale += f.kind == "stale" ? 1 : 0;
  CHECK(stale == 2);
}

TEST_CASE(
    "repair_watch_findings: a fault the agent writes back after an approved repair goes to a "
    "person again, and the run says why it did not apply it") {
  sq_dir dir("watch-came-back");
  const auto db = dir.path / "live.db";
  std::vector<memory_record> recs{rec("c", "User has a cat named Tom.", {0.8f, -0.6f})};
  recs[0].status = "bogus";
  { auto s = sqlite_store<>::create(db, recs); }
  auto state = sqlite_state::open(dir.path / "state.db");
  const utc_time t0 = parse_timestamp("2024-07-15T00:00:00Z")->instant;
  watch_repair_options o;
  o.history_scope = "sqlite:" + db.string();
  const auto poll = [&](std::int64_t hours) {
    const auto snap = snapshot_of(db);
    auto live = sqlite_store<>::open(db);
    wal_writer wal(dir.path / "watch.wal", wal_sync::none);
    return repair_watch_findings(snap, check_at_test_clock(snap).findings, live, wal, state, o,
                                 t0 + std::chrono::hours(hours));
  };
  const auto revert = [&] {
    auto s = sqlite_store<>::open(db);
    (void)change(s, *s.find("c"), [](memory_record& x) { x.status = "bogus"; });
  };
  CHECK(poll(0).applied == 1);  // tier 1: c to pending_review
  revert();
  auto r = poll(1);
  CHECK(r.failed == 1);
  CHECK(r.queued == 1);
  const auto items = state.review_items();
  REQUIRE(items.size() == 1);
  const std::string key = items[0].key;
  {
    auto live = sqlite_store<>::open(db);
    wal_writer wal(dir.path / "review.wal", wal_sync::none);
    const auto out = approve_review_items(live, items, wal, state, o.history_scope, "ana",
                                          "pending_review it is", t0 + std::chrono::hours(2));
    CHECK(out[0].status == action_status::applied);
  }
  CHECK(state.review(key)->status == "approved");
  revert();  // again
  r = poll(3);
  CHECK(r.failed == 1);
  CHECK(r.queued == 1);
  REQUIRE(r.failures.size() == 1);
  CHECK(r.failures[0].find("done in an earlier run") != std::string::npos);
  const auto reopened = state.review(key);
  CHECK(reopened->status == "pending");
  CHECK(reopened->decision_note.starts_with(
      "approved by ana (pending_review it is), proposed again: the fault came back"));
  // the next poll: the item waits; the run still says why
  r = poll(4);
  CHECK(r.failed == 1);
  CHECK(r.queued == 0);
  CHECK(r.failures.empty());
  CHECK(r.failures_waiting.size() == 1);
}

TEST_CASE("review queue: an approved item is reopened by a new fault, not by the same one") {
  sq_dir dir("review-new-fault");
  auto state = sqlite_state::open(dir.path / "state.db");
  constexpr std::int64_t now_ms = 1721001600000;
  review_item it;
  it.key =
      "s\x1f"
      "k1";
  it.type = "send_to_review";
  it.targets = R"(["r1"])";
  it.action_json = "{}";
  it.fingerprint = "f1";
  it.faults = R"([["leak-window-1", "scope_leak"]])";
  CHECK(state.queue_review(it));
  state.decide_review(it.key, "approved", "ana", "seen, told the team", now_ms);
  CHECK_FALSE(state.queue_review(it));  // the same leak window: nothing new
  CHECK(state.review(it.key)->status == "approved");
  it.faults = R"([["leak-window-2", "scope_leak"]])";
  it.apply_after_ms = now_ms + 1000;
  CHECK(state.queue_review(it));
  const auto r = state.review(it.key);
  CHECK(r->status == "pending");
  CHECK(r->apply_after_ms == 0);  // a person decided it before: a person again
  CHECK(r->decision_note ==
        "approved by ana (seen, told the team), proposed again: a new fault (leak-window-2)");
  CHECK(r->faults == it.faults);
}

TEST_CASE(
    "review queue: the same proposal under another key (a down-weight at a later clock) is not "
    "queued again while an earlier item waits or was rejected") {
  sq_dir dir("review-proposal");
  auto state = sqlite_state::open(dir.path / "state.db");
  const utc_time now = parse_timestamp("2024-07-15T00:00:00Z")->instant;
  const std::int64_t now_ms = 1721001600000;  // 2024-07-15T00:00:00Z
  // a down-weight of r1 as the watch queues it; its weight (and so its key) follows the clock
  const auto downweight = [&](double weight, const std::string& scope, const std::string& fp) {
    repair_action a;
    a.type = "downweight";
    a.tier = 2;
    a.automation = automation::confirm;
    a.priority = 100;
    a.rollback_method = "restore_before_images";
    a.targets = {"r1"};
    a.edits.push_back({"r1", edit_set_weight{weight}});
    a.blast = {1, {"user:1"}};
    a.idempotency_key = compute_idempotency_key(a);
    auto item = detail::to_review_item(a, "tier 2: no rule applies downweight at once", now);
    item.key = sqlite_repair_history::scoped(scope, item.key);
    item.fingerprint = fp;
    return item;
  };
  const auto first = downweight(0.50, "sqlite:/s.db", "f1");
  const auto later = downweight(0.49, "sqlite:/s.db", "f1");  // a day on: another weight
  REQUIRE(first.key != later.key);
  CHECK(state.queue_review(first));
  CHECK_FALSE(state.queue_review(later));  // pending: the one item stays
  CHECK(state.review_count("") == 1);
  state.decide_review(first.key, "rejected", "ana", "the fact still holds", now_ms);
  CHECK_FALSE(state.queue_review(later));  // rejected: not proposed again
  CHECK(state.review_count("") == 1);
  state.decide_review(first.key, "deferred", "ana", "ask later", now_ms, now_ms + 1000);
  CHECK_FALSE(state.queue_review(later));  // deferred: it stays the item
  CHECK(state.review_count("") == 1);
  // another store's item, records changed since (another fingerprint), or no fingerprint: queued
  CHECK(state.queue_review(downweight(0.49, "sqlite:/other.db", "f1")));
  CHECK(state.queue_review(downweight(0.48, "sqlite:/s.db", "f2")));
  CHECK(state.queue_review(downweight(0.30, "sqlite:/s.db", "")));
  CHECK(state.queue_review(downweight(0.29, "sqlite:/s.db", "")));
  CHECK(state.review_count("") == 5);
  CHECK(state.review(first.key)->status == "deferred");
  CHECK_FALSE(state.review(later.key));
}

TEST_CASE(
    "review queue: a pending item whose records changed since is superseded by the new proposal "
    "(kept, not deleted), decisions and other stores are left alone") {
  sq_dir dir("review-supersede");
  auto state = sqlite_state::open(dir.path / "state.db");
  const utc_time now = parse_timestamp("2024-07-15T00:00:00Z")->instant;
  const std::int64_t now_ms = 1721001600000;  // 2024-07-15T00:00:00Z
  const auto downweight = [&](double weight, const std::string& scope, const std::string& fp) {
    repair_action a;
    a.type = "downweight";
    a.tier = 2;
    a.automation = automation::confirm;
    a.priority = 100;
    a.rollback_method = "restore_before_images";
    a.targets = {"r1"};
    a.edits.push_back({"r1", edit_set_weight{weight}});
    a.blast = {1, {"user:1"}};
    a.idempotency_key = compute_idempotency_key(a);
    auto item = detail::to_review_item(a, "tier 2: no rule applies downweight at once", now);
    item.key = sqlite_repair_history::scoped(scope, item.key);
    item.fingerprint = fp;
    return item;
  };
  const auto rejected = downweight(0.52, "sqlite:/s.db", "f0");
  CHECK(state.queue_review(rejected));
  state.decide_review(rejected.key, "rejected", "ana", "keep it", now_ms);
  const auto old = downweight(0.50, "sqlite:/s.db", "f1");  // r1 as it was
  CHECK(state.queue_review(old));
  CHECK(state.review(rejected.key)->status == "rejected");  // a decision is not superseded
  const auto elsewhere = downweight(0.49, "sqlite:/other.db", "f1");
  CHECK(state.queue_review(elsewhere));
  auto fresh = downweight(0.48, "sqlite:/s.db", "f2");  // r1 changed: a new proposal
  fresh.queued_ms = now_ms + 5000;
  CHECK(state.queue_review(fresh));
  const auto o = state.review(old.key);
  REQUIRE(o);
  CHECK(o->status == "superseded");
  CHECK(o->decided_by == "memhealth");
  CHECK(o->decided_ms == now_ms + 5000);
  const std::string fresh_id = fresh.key.substr(fresh.key.rfind('\x1f') + 1);
  CHECK(o->decision_note ==
        "superseded by " + fresh_id + ": its records changed since it was queued");
  CHECK(state.review(rejected.key)->status == "rejected");
  CHECK(state.review(elsewhere.key)->status == "pending");  // another store's item
  CHECK(state.review(fresh.key)->status == "pending");
  // nothing deleted; "pending" lists the current items only
  CHECK(state.review_count("") == 4);
  CHECK(state.review_count("superseded") == 1);
  std::vector<std::string> pending;
  for (const auto& it : state.review_items("pending")) pending.push_back(it.key);
  std::sort(pending.begin(), pending.end());
  std::vector<std::string> want{elsewhere.key, fresh.key};
  std::sort(want.begin(), want.end());
  CHECK(pending == want);
  // an item without a fingerprint supersedes nothing; the superseded one is not proposed again
  // by a later proposal (it is no longer pending)
  CHECK(state.queue_review(downweight(0.30, "sqlite:/s.db", "")));
  CHECK(state.review(fresh.key)->status == "pending");
  CHECK(state.supersede_reviews(fresh) == 0);  // nothing else pending over other records
  CHECK(state.review(old.key)->decided_ms == now_ms + 5000);
}

namespace {
// A review item as the watch queues a conflict nobody's rule decided (planner: send_to_review,
// pending_review on each record), for `targets` of `live`, under `scope`.
template <class S>
review_item queue_conflict(sqlite_state& state, const S& live, const std::string& scope,
                           std::vector<std::string> targets, utc_time now,
                           std::string first_reason = {}) {
  repair_action a;
  a.type = "send_to_review";
  a.tier = 3;
  a.automation = automation::manual;
  a.priority = 300;
  a.rollback_method = "restore_before_images";
  a.targets = targets;
  std::string ids;
  for (const auto& t : targets) ids += (ids.empty() ? "" : " ") + t;
  a.reasons = {first_reason.empty() ? "conflict: " + ids + " (conflicts)" : first_reason,
               "undecided by the conflict rules"};
  for (const auto& t : targets) a.edits.push_back({t, edit_set_status{"pending_review"}});
  a.blast = {targets.size(), {"user:1"}};
  a.idempotency_key = compute_idempotency_key(a);
  auto item = detail::to_review_item(a, "tier 3: a person decides", now);
  item.key = sqlite_repair_history::scoped(scope, item.key);
  item.fingerprint = detail::review_fingerprint(live, a.targets);
  REQUIRE(state.queue_review(item));
  return *state.review(item.key);
}

template <class S>
std::map<std::string, std::string> store_images(const S& s) {
  std::map<std::string, std::string> out;
  for (std::size_t i = 0; i < s.size(); ++i) out[s.record(i).id] = encode_image(s.extract(i));
  return out;
}
}  // namespace

TEST_CASE(
    "resolve_review_item: a person picks the winner of a conflict (and may edit its text, "
    "re-embedded), refusals change nothing, rollback restores text and vector exactly") {
  sq_dir dir("resolve");
  const auto db = dir.path / "live.db";
  {
    std::vector<memory_record> recs{rec("c1", "User works at Acme.", {1.f, 0.f, 0.f, 0.f}),
                                    rec("c2", "User works at Globex.", {0.f, 1.f, 0.f, 0.f}),
                                    rec("c3", "User works at Initech.", {0.f, 0.f, 1.f, 0.f}),
                                    rec("d1", "User lives in Paris.", {0.f, 0.f, 0.f, 1.f}),
                                    rec("d2", "User lives in Rome.", {0.6f, 0.8f, 0.f, 0.f}),
                                    rec("j1", "asdf qwer zxcv", {0.f, 0.6f, 0.8f, 0.f})};
    recs[1].status = "pending_review";  // the queue's quarantine was applied to c2
    auto s = sqlite_store<>::create(db, recs);
  }
  auto state = sqlite_state::open(dir.path / "state.db");
  const std::string scope = "sqlite:" + db.string();
  const utc_time now = parse_timestamp("2024-07-15T00:00:00Z")->instant;
  auto live = sqlite_store<>::open(db);
  const auto conflict3 = queue_conflict(state, live, scope, {"c1", "c2", "c3"}, now);
  const auto conflict2 = queue_conflict(state, live, scope, {"d1", "d2"}, now);
  const auto junk =
      queue_conflict(state, live, scope, {"j1", "c1"}, now, "junk_content: j1 c1 (hygiene)");
  const auto lonely = queue_conflict(state, live, scope, {"d1"}, now);
  const auto original = store_images(live);
  const lexical_embedder lex(4, 0);
  apply_options ao;
  ao.embed_version = std::string(lex.version());
  ao.embed = [&lex](const memory_record& r) {
    std::vector<float> v(4);
    lex.embed(r.content, v);
    return v;
  };
  wal_writer wal(dir.path / "watch.wal", wal_sync::none);
  const auto resolve = [&](const review_item& it, const std::string& keep,
                           std::optional<std::string> text, apply_options opt) {
    return resolve_review_item(live, it, keep, text, wal, state, scope, "ana",
                               "the user changed jobs", now, std::move(opt));
  };
  const auto refused = [&](const review_item& it, const std::string& keep,
                           std::optional<std::string> text, apply_options opt,
                           const std::string& why) {
    try {
      (void)resolve(it, keep, std::move(text), std::move(opt));
      FAIL("not refused: " << why);
    } catch (const error& e) {
      CHECK(e.code() == error_code::invalid_argument);
      CHECK_MESSAGE(std::string(e.what()).find(why) != std::string::npos, e.what());
    }
  };

  // refusals, before anything changes
  const std::string token = "ghp_0123456789abcdefghijABCDEFGHIJ012345";
  REQUIRE_FALSE(find_secrets("my token is " + token).empty());
  refused(conflict3, "d1", std::nullopt, ao, "is not a target");
  refused(junk, "j1", std::nullopt, ao, "not a conflict's");
  {  // the item is named "ID of STORE": the key's unit separator never reaches a message
    const std::string id = junk.key.substr(junk.key.rfind('\x1f') + 1);
    refused(junk, "j1", std::nullopt, ao, "review item " + id + " of " + scope + " is a ");
    try {
      (void)resolve(junk, "j1", std::nullopt, ao);
    } catch (const error& e) {
      CHECK(std::string(e.what()).find('\x1f') == std::string::npos);
    }
    CHECK(detail::review_item_label("plain-key") == "plain-key");
  }
  refused(lonely, "d1", std::nullopt, ao, "fewer than two records");
  refused(conflict2, "d1", "my token is " + token, ao, "holds a secret (github_token");
  refused(conflict2, "d1", std::string(""), ao, "the new text is empty");
  refused(conflict2, "d1", std::string(" \n "), ao, "the new text is empty");
  refused(conflict2, "d1", std::string("User lives in Lyon."), apply_options{}, "an embedder");
  CHECK_THROWS_AS((void)resolve_review_item(live, conflict2, "d1", std::nullopt, wal, state, scope,
                                            "ana", "", now),
                  error);
  CHECK(store_images(live) == original);
  CHECK(state.review_count("pending") == 4);

  // the winner only: c2 kept (back to active) and superseding the others, which are archived
  {
    const auto out = resolve(conflict3, "c2", std::nullopt, ao);
    CHECK(out.status == action_status::applied);
    CHECK(out.records_changed == 3);
  }
  {
    auto s = sqlite_store<>::open(db);
    CHECK(s.record(*s.find("c2")).status == "active");
    CHECK(s.record(*s.find("c2")).links.supersedes == std::vector<std::string>{"c1", "c3"});
    CHECK(s.record(*s.find("c2")).content == "User works at Globex.");
    CHECK(s.record(*s.find("c1")).status == "archived");
    CHECK(s.record(*s.find("c3")).status == "archived");
    CHECK(s.record(*s.find("d1")).status == "active");
  }
  auto decided = state.review(conflict3.key);
  REQUIRE(decided);
  CHECK(decided->status == "approved");
  CHECK(decided->decided_by == "ana");
  CHECK(decided->decision_note == "keep c2 (archived: c1, c3): the user changed jobs");
  CHECK(decided->decided_ms == 1721001600000);
  // already decided: refused, nothing changes
  const auto after_first = store_images(live);
  refused(*decided, "c1", std::nullopt, ao, "is approved (by ana)");
  CHECK(store_images(live) == after_first);

  // a new text: d1's content and vector replaced in one action, the vector of the new text
  const std::string lyon = "User lives in Lyon since 2024.";
  std::vector<float> lyon_vec(4);
  lexical_embedder(4, 0).embed(lyon, lyon_vec);
  {
    const auto out = resolve(conflict2, "d1", lyon, ao);
    CHECK(out.status == action_status::applied);
    CHECK(out.records_changed == 2);
  }
  {
    auto s = sqlite_store<>::open(db);
    const auto d1 = s.extract(*s.find("d1"));
    CHECK(d1.content == lyon);
    CHECK(d1.embedding == lyon_vec);
    CHECK(d1.embedding != std::vector<float>{0.f, 0.f, 0.f, 1.f});
    CHECK(d1.embedding_version == "lexical-v1-d4-s0");
    CHECK(d1.links.supersedes == std::vector<std::string>{"d2"});
    CHECK(d1.status == "active");
    CHECK(s.record(*s.find("d2")).status == "archived");
    CHECK(s.record(*s.find("d2")).content == "User lives in Rome.");
  }
  CHECK(state.review(conflict2.key)->decision_note ==
        "keep d1 (archived: d2), text edited: the user changed jobs");
  CHECK(state.review_count("pending") == 2);  // the junk and the lonely items

  // idempotent: the same resolution applied again changes nothing
  const auto resolved = store_images(live);
  {
    repair_plan again;
    again.actions.push_back(
        make_resolution_action(live, conflict2, "d1", lyon, ao.embed_version, "ana"));
    CHECK(again.actions[0].type == "resolve_conflict");
    CHECK(again.actions[0].targets == std::vector<std::string>{"d1", "d2"});
    apply_options ao2 = ao;
    ao2.approve_tier3 = true;
    const auto res = apply_plan(live, again, wal, ao2);
    CHECK(res.outcomes[0].status == action_status::already_applied);
  }
  CHECK(store_images(live) == resolved);

  // rollback of the log: every record back to its image before the resolutions, byte for byte
  wal.sync();
  const auto log = read_wal_file(dir.path / "watch.wal");
  {
    auto undo = sqlite_store<>::open(db);
    const auto rb = rollback(undo, log);
    CHECK(rb.conflicts.empty());
  }
  auto back = sqlite_store<>::open(db);
  CHECK(store_images(back) == original);
  CHECK(back.record(*back.find("d1")).content == "User lives in Paris.");
  CHECK(back.extract(*back.find("d1")).embedding == std::vector<float>{0.f, 0.f, 0.f, 1.f});
  CHECK(back.record(*back.find("c2")).status == "pending_review");
}

}  // namespace sqlite_store_test
#include <memhealth/live/sqlite_migration.hpp>
namespace sqlite_store_test {

namespace {

// Ten texts on different subjects (the gate compares their neighbours in two spaces).
const std::vector<std::string> migration_texts{
    "User prefers window seats on long flights to Tokyo",
    "User is allergic to peanuts and tree nuts",
    "User's daughter plays the violin in the school orchestra",
    "User drinks oat milk in coffee every morning",
    "User works as a structural engineer in Rotterdam",
    "User's favourite novel is One Hundred Years of Solitude",
    "User runs a half marathon every spring in Berlin",
    "User keeps two cats named Miso and Tofu",
    "User is learning Japanese with evening classes",
    "User's car is a blue electric hatchback leased until 2026"};

// The store of the migration tests: one record per text embedded by `e` (id r0, r1, ...), and
// one record "z" without a vector (never migrated: neither old nor new).
template <class E>
std::vector<memory_record> migration_records(const E& e, std::size_t n) {
  std::vector<memory_record> out;
  for (std::size_t k = 0; k < n; ++k) {
    std::vector<float> v(e.dimension());
    e.embed(migration_texts[k], v);
    auto r = rec("r" + std::to_string(k), migration_texts[k], v);
    r.embedding_version = std::string(e.version());
    out.push_back(std::move(r));
  }
  out.push_back(rec("z", "User has no vector yet", {}));
  out.back().embedding_version.clear();
  return out;
}

template <class S>
std::vector<std::string> images_of(const S& s) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < s.size(); ++i) out.push_back(encode_image(s.extract(i)));
  return out;
}

}  // namespace

TEST_CASE(
    "migration: start, two resumed runs under the rate limiter, status, gate, switch, "
    "retention and compaction") {
  sq_dir dir("migration");
  const auto db = dir.path / "live.db";
  const lexical_embedder old_e(128, 0), new_e(256, 1);
  REQUIRE(std::string(old_e.version()) == "lexical-v1-d128-s0");
  REQUIRE(std::string(new_e.version()) == "lexical-v1-d256-s1");
  { auto s = sqlite_store<>::create(db, migration_records(old_e, 10)); }
  auto state = sqlite_state::open(dir.path / "state.db");
  const utc_time t0 = parse_timestamp("2024-07-15T00:00:00Z")->instant;
  auto live = sqlite_store<>::open(db);
  // a retention outside 7..15 days and a target that is not the embedder's are refused
  CHECK_THROWS_AS((void)start_migration(state, live, new_e.version(), "x", 6, t0), error);
  CHECK_THROWS_AS((void)start_migration(state, live, new_e.version(), "x", 16, t0), error);
  CHECK_FALSE(current_migration(state));
  const auto m = start_migration(state, live, new_e.version(), "lexical d=256 seed 1", 10, t0);
  CHECK(m.id == 1);
  CHECK(m.status == "running");
  CHECK(m.from_versions == "lexical-v1-d128-s0");
  CHECK(m.retention_days == 10);
  CHECK(current_embedding_version(state) == "lexical-v1-d256-s1");  // new writes: new version
  CHECK_THROWS_AS((void)start_migration(state, live, new_e.version(), "again", 7, t0), error);
  CHECK(records_left(live, m.to_version) == 10);  // "z" has no vector: not counted

  // part 1: batches of 4, at most 2, 4 tokens at once and 4 per second on a fake clock: the
  // first 4 embeddings take the full bucket, the next 4 wait 250 ms each (one token per text,
  // not per action: per action the second batch would wait 250 ms, not 1000)
  utc_time fake = t0;
  migration_run_options ro;
  ro.batch_size = 4;
  ro.max_batches = 2;
  ro.limits.burst = 4;
  ro.limits.per_second = 4;
  ro.limits.clock = [&] { return fake; };
  ro.limits.sleep = [&](std::chrono::milliseconds d) { fake += d; };
  wal_writer wal(dir.path / "migrate.wal", wal_sync::none);
  auto r1 = run_migration(live, state, new_e, wal, ro, t0);
  CHECK(r1.batches == 2);
  CHECK(r1.reembedded == 8);
  CHECK(r1.embed_calls == 2);
  CHECK(r1.left == 2);
  CHECK(r1.rate_waited == std::chrono::milliseconds(1000));
  CHECK(r1.stopped == "--max-batches 2 reached");
  CHECK(migration_kept(state, 1) == 8);
  auto counts = count_versions(live);
  CHECK(counts.per_version.size() == 2);
  CHECK(counts.per_version["lexical-v1-d128-s0"] == 2);
  CHECK(counts.per_version["lexical-v1-d256-s1"] == 8);
  CHECK(counts.without_vector == 1);
  // the new vectors are the new embedder's, from the records' texts, in store order
  {
    std::vector<float> v(256);
    new_e.embed(migration_texts[7], v);
    const auto e7 = live.embedding(*live.find("r7"));
    CHECK(std::equal(e7.begin(), e7.end(), v.begin(), v.end()));
    CHECK(live.record(*live.find("r8")).embedding_version == "lexical-v1-d128-s0");
  }
  // detection during the migration: mixed versions are progress (info), listing what is left
  {
    std::vector<memory_record> snap;
    for (std::size_t i = 0; i < live.size(); ++i) snap.push_back(live.extract(i));
    structural_detector sd;
    sd.migration_to = m.to_version;
    const auto rep = pipeline{sd}.run(memory_store<>::from_records(snap, 256), detect_options{});
    const auto f = std::find_if(rep.findings.begin(), rep.findings.end(), [](const finding& x) {
      return x.kind == finding_kinds::mixed_embedding_version;
    });
    REQUIRE(f != rep.findings.end());
    CHECK(f->severity == severity::info);
    CHECK(std::get<std::int64_t>(*f->evidence_of("migrated")) == 8);
    CHECK(std::get<std::int64_t>(*f->evidence_of("left")) == 2);
    CHECK(f->record_ids == std::vector<std::string>{"r8", "r9"});
    // and the planner leaves them to the migration (r8 and r9 are still re-embedded for their
    // 128-d vectors in a 256-d store, embedding_dim_mismatch, not for the mixed versions)
    const auto plan = make_plan(memory_store<>::from_records(snap, 256), rep, planner_options{});
    CHECK(std::any_of(plan.deferred.begin(), plan.deferred.end(), [](const std::string& d) {
      return d.find("migration to lexical-v1-d256-s1 in progress") != std::string::npos;
    }));
    for (const auto& a : plan.actions)
      for (const auto& why : a.reasons)
        CHECK(why.find("mixed_embedding_version") == std::string::npos);
  }
  // not switched while records are left; the gate on what is there so far
  CHECK_THROWS_AS((void)switch_migration(live, state, t0), error);
  auto g1 = gate_migration(live, state, 500, gate_options{}, t0);
  REQUIRE(g1.groups.size() == 1);
  CHECK(g1.groups[0].eligible == 8);
  CHECK(g1.groups[0].gate.n == 8);
  CHECK(g1.groups[0].old_version == "lexical-v1-d128-s0");

  // part 2 resumes: the 2 left, one batch
  ro.max_batches = 0;
  auto r2 = run_migration(live, state, new_e, wal, ro, t0);
  CHECK(r2.batches == 1);
  CHECK(r2.reembedded == 2);
  CHECK(r2.left == 0);
  CHECK(r2.stopped.empty());
  CHECK(latest_migration(state)->batches == 3);
  CHECK(migration_kept(state, 1) == 10);
  // a batch ran after the gate: the switch wants the gate again
  CHECK_THROWS_AS((void)switch_migration(live, state, t0), error);
  // The lexical stand-ins are not semantic: between two of them (other dimension, other seed)
  // neighbours of unrelated texts are ordered by hash noise, so the default gate fails (mean
  // rank correlation 1/3 here, measured, below 0.5) and the switch is refused; a gate with a
  // lower bar passes on the same sample.
  auto g2 = gate_migration(live, state, 500, gate_options{}, t0);
  REQUIRE(g2.groups.size() == 1);
  CHECK(g2.groups[0].eligible == 10);
  CHECK(g2.groups[0].gate.n == 10);
  CHECK(g2.groups[0].gate.k == 9);               // k = 10 clamped to n - 1
  CHECK(g2.groups[0].gate.mean_overlap == 1.0);  // with k = n - 1 every top-k is all the others
  CHECK_FALSE(g2.groups[0].gate.passed);
  CHECK_FALSE(g2.passed);
  CHECK(latest_migration(state)->gate_summary.find("from lexical-v1-d128-s0: FAIL n=10 k=9") == 0);
  CHECK_THROWS_AS((void)switch_migration(live, state, t0), error);
  gate_options low;
  low.min_rank_correlation = 0.3;
  CHECK(gate_migration(live, state, 500, low, t0).passed);
  const auto sw = switch_migration(live, state, t0);
  CHECK(sw.status == "switched");
  CHECK(sw.retention_end_ms() == 1721001600000 + 10 * 86'400'000LL);
  CHECK(current_embedding_version(state) == "lexical-v1-d256-s1");
  CHECK_FALSE(current_migration(state));
  // compaction keeps the previous vectors within the window, drops them after it
  auto c1 = compact_migrations(state, t0 + std::chrono::days(9));
  REQUIRE(c1.size() == 1);
  CHECK(c1[0].dropped == 0);
  CHECK(c1[0].kept == 10);
  CHECK(migration_kept(state, 1) == 10);
  CHECK_THROWS_AS((void)rollback_migration(live, state, wal, 4, t0 + std::chrono::days(10)), error);
  auto c2 = compact_migrations(state, t0 + std::chrono::days(10));
  REQUIRE(c2.size() == 1);
  CHECK(c2[0].dropped == 10);
  CHECK(migration_kept(state, 1) == 0);
  CHECK(compact_migrations(state, t0 + std::chrono::days(11)).empty());
}

TEST_CASE("migration: a rollback restores every record byte for byte through the log") {
  sq_dir dir("migration-rollback");
  const auto db = dir.path / "live.db";
  const lexical_embedder old_e(64, 0), new_e(32, 0);
  { auto s = sqlite_store<>::create(db, migration_records(old_e, 7)); }
  auto state = sqlite_state::open(dir.path / "state.db");
  const utc_time t0 = parse_timestamp("2024-07-15T00:00:00Z")->instant;
  auto live = sqlite_store<>::open(db);
  const auto before = images_of(live);
  REQUIRE(before.size() == 8);
  (void)start_migration(state, live, new_e.version(), "lexical d=32", 7, t0);
  wal_writer wal(dir.path / "migrate.wal", wal_sync::none);
  migration_run_options ro;
  ro.batch_size = 3;
  ro.limits.rate_limited = false;
  const auto r = run_migration(live, state, new_e, wal, ro, t0);
  CHECK(r.batches == 3);  // 3 + 3 + 1
  CHECK(r.reembedded == 7);
  CHECK(r.left == 0);
  CHECK(images_of(live) != before);
  CHECK(live.embedding(*live.find("r0")).size() == 32);
  const auto rb = rollback_migration(live, state, wal, 4, t0 + std::chrono::hours(1));
  CHECK(rb.restored == 7);
  CHECK(rb.batches == 2);  // 4 + 3
  CHECK(rb.already == 0);
  CHECK(rb.changed_since == 0);
  CHECK(rb.missing == 0);
  CHECK(images_of(live) == before);  // every record, vector and version included
  CHECK(latest_migration(state)->status == "rolled_back");
  CHECK(current_embedding_version(state).empty());
  CHECK_THROWS_AS((void)rollback_migration(live, state, wal, 4, t0), error);  // nothing running
  // a rolled-back migration's kept vectors are back in the store: compaction drops them
  auto c = compact_migrations(state, t0 + std::chrono::hours(2));
  REQUIRE(c.size() == 1);
  CHECK(c[0].dropped == 7);

  // a second migration; a writer changes r0 after it was re-embedded: the rollback leaves r0
  // as the writer left it and restores the 6 others
  const auto m2 = start_migration(state, live, new_e.version(), "lexical d=32", 7, t0);
  CHECK(m2.id == 2);
  (void)run_migration(live, state, new_e, wal, ro, t0);
  (void)change(live, *live.find("r0"), [](memory_record& x) { x.content = "User moved to Oslo"; });
  const auto rb2 = rollback_migration(live, state, wal, 100, t0);
  CHECK(rb2.restored == 6);
  CHECK(rb2.changed_since == 1);
  CHECK(rb2.batches == 1);
  CHECK(live.record(*live.find("r0")).embedding_version == "lexical-v1-d32-s0");
  auto after = images_of(live);
  for (std::size_t i = 1; i < after.size(); ++i) CHECK(after[i] == before[i]);
}

TEST_CASE(
    "migration: the store is recorded and another one refused, batches the store never got are "
    "re-embedded, nothing re-embedded: no gate to run, none needed") {
  sq_dir dir("migration-identity");
  const lexical_embedder old_e(16, 0), new_e(8, 0);
  const auto records = migration_records(old_e, 6);  // r0..r5 on the old version, z no vector
  auto state = sqlite_state::open(dir.path / "state.db");
  const utc_time t0 = parse_timestamp("2024-07-15T00:00:00Z")->instant;
  auto live = memory_store<>::from_records(records, 16);
  const auto m = start_migration(state, live, new_e.version(), "lexical d=8", 7, t0);
  const auto recorded = migration_store_of(state, m.id);
  REQUIRE(recorded);
  CHECK(recorded->fingerprint == plan_store_of(live));
  CHECK(recorded->database_id.empty());
  // the gate before anything was re-embedded: refused, saying what to do, nothing recorded
  try {
    (void)gate_migration(live, state, 500, gate_options{}, t0);
    FAIL("the gate ran with nothing re-embedded");
  } catch (const error& e) {
    CHECK(e.code() == error_code::precondition);
    CHECK(std::string(e.what()).find("nothing re-embedded yet: 6 records are left") !=
          std::string::npos);
  }
  CHECK(latest_migration(state)->gate_ms == 0);
  migration_run_options ro;
  ro.batch_size = 3;
  ro.limits.rate_limited = false;
  // one batch of 3 applied to a copy that never becomes the store (a JSONL file not written
  // back): the state holds it, the store does not
  {
    auto copy = memory_store<>::from_records(records, 16);
    wal_writer wal(dir.path / "a.wal", wal_sync::none);
    ro.max_batches = 1;
    const auto r = run_migration(copy, state, new_e, wal, ro, t0);
    CHECK(r.batches == 1);
    CHECK(r.reembedded == 3);
  }
  auto g = migration_progress_of(live, state, m.id);
  CHECK(g.kept == 3);
  CHECK(g.holding_previous == 3);
  CHECK(g.written == 0);
  CHECK(g.batches_written == 0);
  // the next run drops those 3 rows, re-embeds all 6 records (2 batches) and counts 2 batches
  ro.max_batches = 0;
  wal_writer wal(dir.path / "b.wal", wal_sync::none);
  const auto r = run_migration(live, state, new_e, wal, ro, t0);
  CHECK(r.reconciled == 3);
  CHECK(r.batches == 2);
  CHECK(r.reembedded == 6);
  CHECK(r.left == 0);
  CHECK(latest_migration(state)->batches == 2);
  g = migration_progress_of(live, state, m.id);
  CHECK(g.kept == 6);
  CHECK(g.written == 6);
  CHECK(g.holding_previous == 0);
  CHECK(g.batches_written == 2);
  CHECK(reconcile_migration(live, state) == 0);  // in line now: nothing to do
  // records added by an agent: the same store; a store of other ids: refused, nothing changed
  auto grown_records = records;
  grown_records.push_back(rec("a1", "User added a note", {}));
  grown_records.back().embedding_version.clear();
  const auto grown = memory_store<>::from_records(grown_records, 16);
  CHECK_NOTHROW(require_migration_store(state, m, grown));
  std::vector<memory_record> others;
  for (int k = 0; k < 5; ++k) {
    others.push_back(records[static_cast<std::size_t>(k)]);
    others.back().id = "o" + std::to_string(k);
  }
  auto other = memory_store<>::from_records(others, 16);
  const auto other_before = images_of(other);
  try {
    (void)run_migration(other, state, new_e, wal, ro, t0);
    FAIL("a run on another store");
  } catch (const error& e) {
    CHECK(e.code() == error_code::precondition);
    CHECK(std::string(e.what()).find("was declared on another store: 0% of the record ids") !=
          std::string::npos);
  }
  CHECK(images_of(other) == other_before);
  CHECK(latest_migration(state)->batches == 2);
  CHECK_THROWS_AS((void)gate_migration(other, state, 500, gate_options{}, t0), error);

  // a store with nothing to re-embed (every vector on the target): declared; the gate has
  // nothing to compare (refused) and the switch needs none
  auto state2 = sqlite_state::open(dir.path / "state2.db");
  const auto m2 = start_migration(state2, live, new_e.version(), "lexical d=8", 7, t0);
  CHECK(records_left(live, m2.to_version) == 0);
  try {
    (void)gate_migration(live, state2, 500, gate_options{}, t0);
    FAIL("the gate ran with nothing to compare");
  } catch (const error& e) {
    CHECK(std::string(e.what()).find("nothing to compare") != std::string::npos);
  }
  CHECK(switch_migration(live, state2, t0).status == "switched");
}

namespace {

// A 2-d embedder for the gate tests: migration text k goes to the unit vector at angle
// `degrees[k]` (cosine order = order of angular distance, for distances below 180 degrees).
struct angle_embedder {
  std::vector<double> degrees;
  [[nodiscard]] std::size_t dimension() const noexcept { return 2; }
  [[nodiscard]] std::string_view version() const noexcept { return "angles-v1"; }
  void embed(std::string_view text, std::span<float> out) const {
    const auto k = static_cast<std::size_t>(
        std::find(migration_texts.begin(), migration_texts.end(), text) - migration_texts.begin());
    const double rad = degrees.at(k) * 3.14159265358979323846 / 180.0;
    out[0] = static_cast<float>(std::cos(rad));
    out[1] = static_cast<float>(std::sin(rad));
  }
};

// Records r0 .. r(n-1) of the first n migration texts, embedded at `degrees` by angle_embedder,
// version `va` before index `split` and `vb` from it.
std::vector<memory_record> angle_records(const std::vector<double>& degrees, std::size_t n,
                                         std::size_t split, const std::string& va,
                                         const std::string& vb) {
  const angle_embedder e{degrees};
  std::vector<memory_record> out;
  for (std::size_t k = 0; k < n; ++k) {
    std::vector<float> v(2);
    e.embed(migration_texts[k], v);
    auto r = rec("r" + std::to_string(k), migration_texts[k], v);
    r.embedding_version = k < split ? va : vb;
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace

TEST_CASE(
    "migration: the gate compares every previous version apart, the switch needs each to pass") {
  sq_dir dir("migration-groups");
  // The new space puts r0..r5 at 200, 215, 235, 260, 290, 325 degrees and r6..r9 at 0, 10, 90,
  // 100 (nearest neighbours r6-r7 and r8-r9). On "model-a" r0..r5 hold exactly their new
  // vectors: overlap 1 and rank correlation 1, a pass. On "model-b" r6..r9 sit at 0, 90, 10,
  // 100 (nearest neighbours r6-r8 and r7-r9). With k = 1 every query's nearest neighbour
  // differs between the spaces (overlap 0), and the two neighbours compared (old top-1 ranked
  // 1 old and 2 new, new top-1 ranked 2 old and 1 new) give rho = -1: a fail. The old code gated
  // only the most common previous version (model-a, 6 records) and passed.
  const std::vector<double> now_deg{200, 215, 235, 260, 290, 325, 0, 10, 90, 100};
  std::vector<double> was_deg = now_deg;
  was_deg[7] = 90;
  was_deg[8] = 10;
  const angle_embedder new_e{now_deg};
  const utc_time t0 = parse_timestamp("2024-07-15T00:00:00Z")->instant;
  migration_run_options ro;
  ro.batch_size = 4;
  ro.limits.rate_limited = false;
  gate_options k1;
  k1.k = 1;
  {
    auto state = sqlite_state::open(dir.path / "state.db");
    auto live =
        memory_store<>::from_records(angle_records(was_deg, 10, 6, "model-a", "model-b"), 2);
    (void)start_migration(state, live, new_e.version(), "angles", 7, t0);
    wal_writer wal(dir.path / "a.wal", wal_sync::none);
    REQUIRE(run_migration(live, state, new_e, wal, ro, t0).reembedded == 10);
    const auto g = gate_migration(live, state, 500, k1, t0);
    REQUIRE(g.groups.size() == 2);
    CHECK(g.groups[0].old_version == "model-a");
    CHECK(g.groups[0].eligible == 6);
    CHECK(g.groups[0].gated);
    CHECK(g.groups[0].gate.n == 6);
    CHECK(g.groups[0].gate.k == 1);
    CHECK(g.groups[0].gate.mean_overlap == doctest::Approx(1.0));
    CHECK(g.groups[0].gate.mean_rank_correlation == doctest::Approx(1.0));
    CHECK(g.groups[0].gate.passed);
    CHECK(g.groups[1].old_version == "model-b");
    CHECK(g.groups[1].eligible == 4);
    CHECK(g.groups[1].gate.n == 4);
    CHECK(g.groups[1].gate.k == 1);
    CHECK(g.groups[1].gate.mean_overlap == doctest::Approx(0.0));
    CHECK(g.groups[1].gate.mean_rank_correlation == doctest::Approx(-1.0));
    CHECK_FALSE(g.groups[1].gate.passed);
    CHECK_FALSE(g.passed);
    const auto m = latest_migration(state);
    CHECK_FALSE(m->gate_passed);
    CHECK(m->gate_summary.find("from model-a: PASS n=6 k=1") == 0);
    CHECK(m->gate_summary.find("; from model-b: FAIL n=4 k=1") != std::string::npos);
    const auto rows = migration_gate_groups_of(state, m->id);
    REQUIRE(rows.size() == 2);
    CHECK(rows[0].old_version == "model-a");
    CHECK(rows[0].n == 6);
    CHECK(rows[0].passed);
    CHECK(rows[1].old_version == "model-b");
    CHECK(rows[1].eligible == 4);
    CHECK(rows[1].mean_rank_correlation == doctest::Approx(-1.0));
    CHECK_FALSE(rows[1].passed);
    try {
      (void)switch_migration(live, state, t0);
      FAIL("switched though model-b failed the gate");
    } catch (const error& e) {
      CHECK(std::string(e.what()).find("from model-b: FAIL") != std::string::npos);
    }
    // a bar model-b meets too: both pass, the switch goes ahead
    gate_options none = k1;
    none.min_overlap = 0.0;
    none.min_rank_correlation = -1.0;
    CHECK(gate_migration(live, state, 500, none, t0).passed);
    CHECK(switch_migration(live, state, t0).status == "switched");
  }
  // r7 and r8 alone on "model-b", both faithful: 2 records cannot be gated (neighbours within
  // one space need 3), so the gate does not pass and the switch is refused, naming the group
  {
    auto state = sqlite_state::open(dir.path / "state2.db");
    auto live = memory_store<>::from_records(angle_records(now_deg, 9, 7, "model-a", "model-b"), 2);
    (void)start_migration(state, live, new_e.version(), "angles", 7, t0);
    wal_writer wal(dir.path / "b.wal", wal_sync::none);
    REQUIRE(run_migration(live, state, new_e, wal, ro, t0).reembedded == 9);
    const auto g = gate_migration(live, state, 500, gate_options{}, t0);
    REQUIRE(g.groups.size() == 2);
    CHECK(g.groups[0].gated);
    CHECK(g.groups[0].gate.n == 7);
    CHECK(g.groups[0].gate.passed);  // the same vectors in both spaces
    CHECK_FALSE(g.groups[1].gated);
    CHECK(g.groups[1].eligible == 2);
    CHECK(g.groups[1].note ==
          "2 of its 2 re-embedded records hold both vectors; comparing neighbours within one "
          "space needs at least 3");
    CHECK_FALSE(g.passed);
    CHECK(migration_gate_groups_of(state, 1)[1].n == 0);
    try {
      (void)switch_migration(live, state, t0);
      FAIL("switched though model-b was not gated");
    } catch (const error& e) {
      CHECK(std::string(e.what()).find("from model-b: not gated (2 of its 2") != std::string::npos);
    }
  }
}

TEST_CASE(
    "migration: a run stops when asked, after the batch in hand, a rollback does not count "
    "batches the store never got") {
  sq_dir dir("migration-stop");
  const lexical_embedder old_e(16, 0), new_e(8, 0);
  const auto records = migration_records(old_e, 10);  // r0..r9, and z without a vector
  const utc_time t0 = parse_timestamp("2024-07-15T00:00:00Z")->instant;
  auto state = sqlite_state::open(dir.path / "state.db");
  auto live = memory_store<>::from_records(records, 16);
  (void)start_migration(state, live, new_e.version(), "lexical d=8", 7, t0);
  // asked to stop once the first batch is committed: 1 batch of 4, 6 left
  bool asked = false;
  std::vector<std::size_t> seen;
  migration_run_options ro;
  ro.batch_size = 4;
  ro.limits.rate_limited = false;
  ro.stop_requested = [&] { return asked; };
  ro.on_batch = [&](std::size_t done) {
    seen.push_back(done);
    asked = true;
  };
  wal_writer wal(dir.path / "a.wal", wal_sync::none);
  const auto r = run_migration(live, state, new_e, wal, ro, t0);
  CHECK(r.batches == 1);
  CHECK(r.reembedded == 4);
  CHECK(r.left == 6);
  CHECK(r.interrupted);
  CHECK(r.stopped == "interrupted");
  CHECK(seen == std::vector<std::size_t>{1});
  CHECK(latest_migration(state)->batches == 1);
  // a second batch of 4 applied to a copy that never becomes the store (a killed JSONL run):
  // the state holds 8 rows, the store 4 re-embedded records
  {
    auto copy = memory_store<>::from_records(records, 16);
    for (const char* id : {"r0", "r1", "r2", "r3"}) {
      const auto i = *live.find(id);
      (void)change(copy, *copy.find(id), [&](memory_record& x) { x = live.extract(i); });
    }
    migration_run_options one;
    one.batch_size = 4;
    one.max_batches = 1;
    one.limits.rate_limited = false;
    REQUIRE(run_migration(copy, state, new_e, wal, one, t0).reembedded == 4);
  }
  CHECK(migration_kept(state, 1) == 8);
  // the rollback: the 4 records of batch 2 never reached the store (nothing to restore, not
  // "held it already"); the 4 of batch 1 are restored
  const auto rb = rollback_migration(live, state, wal, 100, t0);
  CHECK(rb.never_written == 4);
  CHECK(rb.restored == 4);
  CHECK(rb.already == 0);
  CHECK(rb.complete());
  CHECK(migration_kept(state, 1) == 4);
  CHECK(images_of(live) == images_of(memory_store<>::from_records(records, 16)));
  const auto g = migration_progress_of(live, state, 1);
  CHECK(g.kept == 4);
  CHECK(g.holding_previous == 4);
}

TEST_CASE("planner: a mixed-version finding re-embeds every record off the target, in batches") {
  std::vector<memory_record> recs;
  for (int k = 0; k < 30; ++k) {
    recs.push_back(
        rec("a" + std::to_string(k), "fact a" + std::to_string(k), {0.5f, 0.5f, 0.5f, 0.5f}));
    recs.back().embedding_version = "A";
  }
  for (int k = 0; k < 25; ++k) {
    recs.push_back(
        rec("b" + std::to_string(k), "fact b" + std::to_string(k), {0.5f, 0.5f, 0.5f, 0.5f}));
    recs.back().embedding_version = "B";
  }
  auto store = memory_store<>::from_records(recs);
  const auto rep = pipeline{structural_detector{}}.run(store, detect_options{});
  const auto f = std::find_if(rep.findings.begin(), rep.findings.end(), [](const finding& x) {
    return x.kind == finding_kinds::mixed_embedding_version;
  });
  REQUIRE(f != rep.findings.end());
  CHECK(f->severity == severity::error);
  CHECK(f->record_ids.size() == 20);  // the finding lists 20 of the 25
  const auto reembedded = [](const repair_plan& p, std::vector<std::size_t>& sizes) {
    std::set<std::string> ids;
    for (const auto& a : p.actions)
      if (a.type == action_types::reembed) {
        sizes.push_back(a.targets.size());
        ids.insert(a.targets.begin(), a.targets.end());
      }
    return ids;
  };
  planner_options po;
  po.reembed_batch_size = 10;
  auto plan = make_plan(store, rep, po);
  std::vector<std::size_t> sizes;
  auto ids = reembedded(plan, sizes);
  CHECK(ids.size() == 25);  // every B record, not the 20 listed
  CHECK(std::all_of(ids.begin(), ids.end(), [](const std::string& i) { return i[0] == 'b'; }));
  CHECK(sizes == std::vector<std::size_t>{10, 10, 5});
  const auto rebuild = std::find_if(plan.actions.begin(), plan.actions.end(), [](const auto& a) {
    return a.type == action_types::rebuild_index;
  });
  REQUIRE(rebuild != plan.actions.end());
  CHECK(rebuild->targets.size() == 25);
  CHECK(std::none_of(plan.deferred.begin(), plan.deferred.end(), [](const std::string& d) {
    return d.find("mixed_embedding_version") != std::string::npos;
  }));
  // with a target version of its own, every record off it (all 55)
  po.reembed_version = "C";
  sizes.clear();
  CHECK(reembedded(make_plan(store, rep, po), sizes).size() == 55);
  CHECK(sizes == std::vector<std::size_t>{10, 10, 10, 10, 10, 5});
  // applied with an embedder, the store is on one version: no mixed finding left
  po.reembed_version.clear();
  sq_dir dir("planner-reembed");
  wal_writer wal(dir.path / "run.wal", wal_sync::none);
  apply_options ao;
  ao.approve_tier2 = ao.approve_tier3 = true;
  ao.embed_version = "A";
  ao.embed = [](const memory_record&) { return std::vector<float>{0.5f, -0.5f, 0.5f, -0.5f}; };
  std::size_t reindexed = 0;
  ao.rebuild_index = [&](std::span<const std::string> ids) { reindexed += ids.size(); };
  const auto res = apply_plan(store, plan, wal, ao);
  CHECK(res.records_changed == 25);
  CHECK(res.failed.empty());
  CHECK(reindexed == 25);
  const auto rep2 = pipeline{structural_detector{}}.run(store, detect_options{});
  CHECK(std::none_of(rep2.findings.begin(), rep2.findings.end(), [](const finding& x) {
    return x.kind == finding_kinds::mixed_embedding_version;
  }));
  CHECK(store.record(*store.find("b3")).embedding_version == "A");
  CHECK(store.embedding(*store.find("b3"))[1] == -0.5f);
  CHECK(store.embedding(*store.find("a3"))[1] == 0.5f);
}

TEST_CASE("repair_watch_findings: retrieval alarms go to the review queue, nothing is applied") {
  sq_dir dir("watch-alarms");
  const auto db = dir.path / "live.db";
  std::vector<memory_record> recs{rec("a", "User drinks oat milk.", {0.6f, 0.8f}),
                                  rec("b", "User has a cat named Tom.", {0.8f, -0.6f})};
  { auto s = sqlite_store<>::create(db, recs); }
  auto state = sqlite_state::open(dir.path / "state.db");
  const auto snapshot = memory_store<>::from_records(recs);
  // the monitor's alarms: a ghost ("gone"), a latency regression, a scope leak (b), queries on
  // model m2 (the store holds m1)
  auto alarm = [](std::string_view kind, std::vector<std::string> ids) {
    finding f;
    f.kind = std::string(kind);
    f.detector = "retrieval_monitor";
    f.record_ids = std::move(ids);
    f.with("partition", std::string("user:1"));
    return f;
  };
  std::vector<finding> findings{
      alarm(finding_kinds::ghost_result, {"gone"}), alarm(finding_kinds::latency_regression, {}),
      alarm(finding_kinds::scope_leak, {"b"}), alarm(finding_kinds::query_version_mismatch, {"a"})};
  findings[3].with("query_embedding_version", std::string("m2"));
  watch_repair_options o;
  o.history_scope = "sqlite:" + db.string();
  const utc_time now = parse_timestamp("2024-07-15T00:00:00Z")->instant;
  {
    auto live = sqlite_store<>::open(db);
    wal_writer wal(dir.path / "watch.wal", wal_sync::none);
    const auto r = repair_watch_findings(snapshot, findings, live, wal, state, o, now);
    CHECK(r.applied == 0);  // the watch has no index policy: even tier 1 waits
    CHECK(r.failed == 0);
    CHECK(r.queued == 4);
  }
  std::set<std::string> types;
  for (const auto& it : state.review_items()) types.insert(it.type);
  CHECK(types == std::set<std::string>{"check_rebuild_index", "clean_index", "send_to_review",
                                       "start_migration"});
  auto s = sqlite_store<>::open(db);
  CHECK(s.record(*s.find("a")).status == "active");
  CHECK(s.record(*s.find("b")).status == "active");
}
}  // namespace sqlite_store_test
