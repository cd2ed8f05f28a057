// Tests for the structural, staleness, scope and hygiene detectors (with the content hygiene
// detectors: secrets, mojibake, content size, content dates), decay curves, scope helpers
// and metadata schemas. Every expected value below was worked out by hand (noted where not
// obvious), not copied from program output.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "memhealth/detect/content_size.hpp"
#include "memhealth/detect/content_time.hpp"
#include "memhealth/detect/decay.hpp"
#include "memhealth/detect/hygiene.hpp"
#include "memhealth/detect/metadata_schema.hpp"
#include "memhealth/detect/mojibake.hpp"
#include "memhealth/detect/pipeline.hpp"
#include "memhealth/detect/scope.hpp"
#include "memhealth/detect/secrets.hpp"
#include "memhealth/detect/staleness.hpp"
#include "memhealth/detect/structural.hpp"
#include "memhealth/io/metadata_schema_json.hpp"
#include "memhealth/record/memory_record.hpp"
#include "memhealth/store/memory_store.hpp"

#include "test_data.hpp"

namespace detect_structural_test {
namespace {

using namespace memhealth;
using namespace std::chrono_literals;
using std::chrono::days;
using std::chrono::hours;
using std::chrono::milliseconds;

timestamp ts(std::string_view s) {
  auto t = parse_timestamp(s);
  REQUIRE(t.has_value());
  return *t;
}

const utc_time fixed_now = parse_timestamp("2024-06-10T00:00:00Z")->instant;

detect_options opts() {
  detect_options o;
  o.now = fixed_now;
  return o;
}

// A record that passes every check with the default settings and the schema below.
memory_record healthy(std::string id, std::string content = "The user lives in Berlin") {
  memory_record r;
  r.id = std::move(id);
  r.content = std::move(content);
  r.embedding = {0.5f, 0.5f, 0.5f, 0.5f};
  r.embedding_version = "m1";
  r.metadata["topic"] = std::string("home");
  r.metadata["ingest_batch"] = std::string("b1");
  r.created_at = ts("2024-01-01T00:00:00Z");
  r.updated_at = ts("2024-06-01T00:00:00Z");
  r.last_accessed_at = ts("2024-06-02T00:00:00Z");
  r.source = "user_declared";
  r.scope = "user:7";
  r.status = "active";
  r.kind = "fact";
  return r;
}

metadata_schema test_schema() {
  metadata_schema s;
  s.required["topic"] = metadata_types::string;
  s.required["ingest_batch"] = metadata_types::string;
  return s;
}

template <class D, class S>
std::vector<finding> run1(const D& d, const S& store, detect_options o = opts()) {
  detection_context<S> ctx(store, o);
  std::vector<finding> out;
  d.run(ctx, out);
  return out;
}

std::vector<finding> of_kind(const std::vector<finding>& fs, std::string_view kind) {
  std::vector<finding> r;
  for (const auto& f : fs)
    if (f.kind == kind) r.push_back(f);
  return r;
}

std::vector<std::string> first_ids(const std::vector<finding>& fs) {
  std::vector<std::string> r;
  for (const auto& f : fs) r.push_back(f.record_ids.at(0));
  return r;
}

template <class T>
T ev(const finding& f, std::string_view key) {
  const evidence_value* v = f.evidence_of(key);
  REQUIRE_MESSAGE(v != nullptr, "missing evidence " << key);
  REQUIRE(std::holds_alternative<T>(*v));
  return std::get<T>(*v);
}

std::vector<std::string> all_ev(const finding& f, std::string_view key) {
  std::vector<std::string> r;
  for (const auto& [k, v] : f.evidence)
    if (k == key) r.push_back(std::get<std::string>(v));
  return r;
}

using strings = std::vector<std::string>;

}  // namespace

// ------------------------------------------------------------------ healthy store: no findings

TEST_CASE("a healthy store produces no findings from any of the four detectors") {
  auto a = healthy("a");
  auto b = healthy("b", "The user prefers green tea");
  b.embedding = {0.5f, -0.5f, 0.5f, -0.5f};
  b.kind = "preference";
  b.scope = "user:7/project:alpha";
  b.links.related_ids = {"a"};  // link into an ancestor scope: allowed
  auto c = healthy("c", "用户喜欢喝茶");
  c.embedding = {-0.5f, 0.5f, 0.5f, -0.5f};
  c.links.duplicate_of = "";
  auto d = healthy("d", "Old duplicate of a");
  d.status = "archived";
  d.links.duplicate_of = "a";
  auto e = healthy("e", "Replacement fact");
  e.links.supersedes = {"d"};  // d lost twice (d -> a, d -> e): no cycle; d is archived
  auto store = memory_store<>::from_records({a, b, c, d, e});
  REQUIRE(store.dimension() == 4);

  structural_detector sd;
  sd.schema = test_schema();
  pipeline p{sd, staleness_detector{}, scope_detector{}, hygiene_detector{}};
  const report r = p.run(store, opts());
  for (const auto& f : r.findings) MESSAGE(f.kind << " " << f.record_ids.at(0));
  CHECK(r.findings.empty());
  CHECK(r.records_total == 5);
  CHECK(r.records_checked == 5);
}

// ------------------------------------------------------------------ structural: content

TEST_CASE("structural: empty and whitespace-only content") {
  auto r1 = healthy("empty", "");
  auto r2 = healthy("ascii_ws", "  \t\n ");
  auto r3 = healthy("ideographic", "\u3000\u00a0");  // ideographic space + no-break space (Zs)
  auto r4 = healthy("zero_width", "\u200b \ufeff");  // zero-width space, BOM (Cf)
  auto r5 = healthy("one_letter", " x ");
  auto r6 = healthy("cjk", "茶");
  auto store = memory_store<>::from_records({r1, r2, r3, r4, r5, r6});
  const auto fs = of_kind(run1(structural_detector{}, store), finding_kinds::content_empty);
  CHECK(first_ids(fs) == strings{"empty", "ascii_ws", "ideographic", "zero_width"});
  CHECK(fs[0].severity == severity::error);
  CHECK(fs[0].detector == "structural");
  CHECK(fs[0].suggested_repair == "manual_review");
}

// ------------------------------------------------------------------ structural: embeddings

TEST_CASE("structural: embedding checks on a 4-d store") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<memory_record> rs;
  auto add = [&](std::string id, std::vector<float> e) {
    auto r = healthy(std::move(id));
    r.embedding = std::move(e);
    rs.push_back(std::move(r));
  };
  add("ok", {0.5f, 0.5f, 0.5f, 0.5f});
  add("near_unit", {0.5f, 0.5f, 0.5f, 0.5002f});     // norm = sqrt(1.00020004) = 1.0001 < 1 + 1e-3
  add("one_zero_inside", {0.6f, 0.0f, 0.8f, 0.0f});  // 1 trailing zero < 2 needed for m = 4
  add("missing", {});
  add("dim3", {0.6f, 0.0f, 0.8f});  // length 3, unit norm, 0 trailing zeros
  add("nan", {0.5f, nan, 0.5f, 0.5f});
  add("inf", {inf, 0.0f, 0.0f, 0.0f});  // non-finite wins; no padding report
  add("zero", {0.0f, 0.0f, 0.0f, 0.0f});
  add("unnorm", {1.0f, 1.0f, 1.0f, 1.0f});  // norm 2
  add("padded", {0.6f, 0.8f, 0.0f, 0.0f});  // unit norm, 2 trailing zeros
  auto store = memory_store<>::from_records(rs, 4);
  const auto all = run1(structural_detector{}, store);

  CHECK(first_ids(of_kind(all, finding_kinds::embedding_missing)) == strings{"missing"});
  const auto dim = of_kind(all, finding_kinds::embedding_dim_mismatch);
  REQUIRE(first_ids(dim) == strings{"dim3"});
  CHECK(ev<std::int64_t>(dim[0], "dimension") == 3);
  CHECK(ev<std::int64_t>(dim[0], "expected_dimension") == 4);
  const auto nf = of_kind(all, finding_kinds::embedding_non_finite);
  REQUIRE(first_ids(nf) == strings{"nan", "inf"});
  CHECK(ev<std::int64_t>(nf[0], "non_finite_count") == 1);
  CHECK(ev<std::int64_t>(nf[0], "first_index") == 1);
  CHECK(ev<std::int64_t>(nf[1], "first_index") == 0);
  CHECK(first_ids(of_kind(all, finding_kinds::embedding_zero_norm)) == strings{"zero"});
  const auto un = of_kind(all, finding_kinds::embedding_not_normalized);
  REQUIRE(first_ids(un) == strings{"unnorm"});
  CHECK(ev<double>(un[0], "norm") == doctest::Approx(2.0));
  CHECK(un[0].severity == severity::warning);
  const auto pad = of_kind(all, finding_kinds::embedding_zero_padded);
  REQUIRE(first_ids(pad) == strings{"padded"});
  CHECK(ev<std::int64_t>(pad[0], "trailing_zeros") == 2);
  CHECK(ev<std::int64_t>(pad[0], "likely_dimension") == 2);
  CHECK(all.size() ==
        7);  // exactly the findings above, nothing for ok / near_unit / one_zero_inside
  for (const auto& f : all) CHECK(f.suggested_repair == "reembed");

  structural_detector lenient;
  lenient.expect_unit_norm = false;
  CHECK(of_kind(run1(lenient, store), finding_kinds::embedding_not_normalized).empty());
}

TEST_CASE("structural: zero padding in realistic dimensions") {
  // 384-d unit vector padded to 1536: 1152 trailing zeros.
  std::vector<float> padded(1536, 0.0f);
  for (int k = 0; k < 384; ++k) padded[k] = 1.0f / std::sqrt(384.0f);
  std::vector<float> full(1536, 1.0f / std::sqrt(1536.0f));
  auto a = healthy("padded384");
  a.embedding = padded;
  auto b = healthy("full");
  b.embedding = full;
  auto store = memory_store<>::from_records({a, b});
  const auto all = run1(structural_detector{}, store);
  const auto pad = of_kind(all, finding_kinds::embedding_zero_padded);
  REQUIRE(first_ids(pad) == strings{"padded384"});
  CHECK(ev<std::int64_t>(pad[0], "trailing_zeros") == 1152);
  CHECK(ev<std::int64_t>(pad[0], "likely_dimension") == 384);
  CHECK(all.size() == 1);

  // 16-d: threshold min(8, max(2, 16/4)) = 4 trailing zeros.
  auto make16 = [](std::string id, int nonzero) {
    auto r = healthy(std::move(id));
    r.embedding.assign(16, 0.0f);
    for (int k = 0; k < nonzero; ++k)
      r.embedding[k] = 1.0f / std::sqrt(static_cast<float>(nonzero));
    return r;
  };
  auto store16 = memory_store<>::from_records({make16("t3", 13), make16("t4", 12)});
  CHECK(first_ids(of_kind(run1(structural_detector{}, store16),
                          finding_kinds::embedding_zero_padded)) == strings{"t4"});
}

// ------------------------------------------------------------------ structural: fields

TEST_CASE("structural: illegal status, missing source and scope") {
  auto a = healthy("typo");
  a.status = "actve";
  auto b = healthy("empty_status");
  b.status = "";
  auto c = healthy("upper");
  c.status = "Active";
  auto d = healthy("archived");
  d.status = "archived";
  auto e = healthy("pending");
  e.status = "pending_review";
  auto f = healthy("no_source");
  f.source = "";
  auto g = healthy("blank_source");
  g.source = "  ";
  auto h = healthy("no_scope");
  h.scope = "";
  auto store = memory_store<>::from_records({a, b, c, d, e, f, g, h});
  const auto all = run1(structural_detector{}, store);
  const auto st = of_kind(all, finding_kinds::illegal_status);
  CHECK(first_ids(st) == strings{"typo", "empty_status", "upper"});
  CHECK(ev<std::string>(st[0], "value") == "actve");
  CHECK(st[0].suggested_repair == "set_status_pending_review");
  CHECK(first_ids(of_kind(all, finding_kinds::missing_source)) ==
        strings{"no_source", "blank_source"});
  CHECK(first_ids(of_kind(all, finding_kinds::missing_scope)) == strings{"no_scope"});
  CHECK(all.size() == 6);
}

TEST_CASE("structural: metadata schema from a JSON file") {
  const auto path = std::filesystem::temp_directory_path() / "memhealth_h4_schema_test.json";
  {
    std::ofstream f(path);
    f << R"({"required": {"topic": "string", "ingest_batch": "string"},
            "types": {"priority": "integer", "score": ["number", "null"]}})";
  }
  const metadata_schema schema = load_schema_json(path);
  std::filesystem::remove(path);
  CHECK(schema.required.size() == 2);
  CHECK(schema.types.at("priority") == metadata_types::integer);
  CHECK(schema.types.at("score") ==
        (metadata_types::integer | metadata_types::number | metadata_types::null));

  auto ok = healthy("ok");
  ok.metadata["score"] = std::int64_t{3};  // integer is a number
  ok.metadata["priority"] = std::int64_t{1};
  auto nulls = healthy("null_score");
  nulls.metadata["score"] = std::monostate{};
  auto missing = healthy("no_topic");
  missing.metadata.erase("topic");
  auto wrong = healthy("int_batch");
  wrong.metadata["ingest_batch"] = std::int64_t{7};
  auto both = healthy("both");
  both.metadata.clear();
  both.metadata["priority"] = std::string("high");
  auto store = memory_store<>::from_records({ok, nulls, missing, wrong, both});
  structural_detector sd;
  sd.schema = schema;
  const auto fs = of_kind(run1(sd, store), finding_kinds::metadata_schema_violation);
  REQUIRE(first_ids(fs) == strings{"no_topic", "int_batch", "both"});
  CHECK(all_ev(fs[0], "missing") == strings{"topic"});
  CHECK(all_ev(fs[0], "wrong_type").empty());
  CHECK(all_ev(fs[1], "wrong_type") == strings{"ingest_batch"});
  CHECK(ev<std::string>(fs[1], "expected") == "string");
  CHECK(ev<std::string>(fs[1], "actual") == "integer");
  CHECK(all_ev(fs[2], "missing") == strings{"ingest_batch", "topic"});  // flat_map key order
  CHECK(all_ev(fs[2], "wrong_type") == strings{"priority"});
  CHECK(fs[2].severity == severity::warning);
  CHECK(fs[2].suggested_repair == "fill_metadata_defaults");

  // a plain std::map without heterogeneous lookup works too
  const std::map<std::string, metadata_value> plain{{"topic", std::string("t")}, {"priority", 2.5}};
  const auto v = check_metadata(schema, plain);
  CHECK(v.missing == strings{"ingest_batch"});
  REQUIRE(v.wrong_type.size() == 1);
  CHECK(v.wrong_type[0].key == "priority");
  CHECK(v.wrong_type[0].expected == "integer");
  CHECK(v.wrong_type[0].actual == "number");

  // default (empty) schema: no schema findings at all
  CHECK(of_kind(run1(structural_detector{}, store), finding_kinds::metadata_schema_violation)
            .empty());
}

TEST_CASE("metadata schema parsing errors are memhealth::error with stable codes") {
  auto code_of = [](auto&& fn) {
    try {
      fn();
    } catch (const memhealth::error& e) {
      return e.code();
    }
    return error_code{};
  };
  CHECK(code_of([] { (void)parse_schema_json("not json"); }) == error_code::parse);
  CHECK(code_of([] { (void)parse_schema_json("[1,2]"); }) == error_code::parse);
  CHECK(code_of([] { (void)parse_schema_json(R"({"required": {"a": "strng"}})"); }) ==
        error_code::schema);
  CHECK(code_of([] { (void)parse_schema_json(R"({"required": ["a"]})"); }) == error_code::schema);
  CHECK(code_of([] { (void)parse_schema_json(R"({"types": {"a": 5}})"); }) == error_code::schema);
  CHECK(code_of([] { (void)load_schema_json("/nonexistent/h4/schema.json"); }) == error_code::io);
  const auto s = parse_schema_json(R"({"required": {"x": "any", "y": "boolean"}, "other": 1})");
  CHECK(s.required.at("x") == metadata_types::any);
  CHECK(s.required.at("y") == metadata_types::boolean);
  CHECK(s.types.empty());
}

// ------------------------------------------------------------------ structural: ids and links

TEST_CASE("structural: duplicate ids, one critical finding per id") {
  auto store = memory_store<>::from_records(
      {healthy("a"), healthy("b"), healthy("a"), healthy("c"), healthy("a"), healthy("b")});
  const auto fs = of_kind(run1(structural_detector{}, store), finding_kinds::duplicate_id);
  REQUIRE(fs.size() == 2);
  // order of groups follows id hashes: check as a set
  const finding& fa = fs[0].record_ids[0] == "a" ? fs[0] : fs[1];
  const finding& fb = fs[0].record_ids[0] == "a" ? fs[1] : fs[0];
  CHECK(fa.record_ids == strings{"a"});
  CHECK(fb.record_ids == strings{"b"});
  CHECK(ev<std::int64_t>(fa, "count") == 3);
  CHECK(ev<std::int64_t>(fb, "count") == 2);
  std::vector<std::int64_t> idx;
  for (const auto& [k, v] : fa.evidence)
    if (k == "index") idx.push_back(std::get<std::int64_t>(v));
  CHECK(idx == std::vector<std::int64_t>{0, 2, 4});
  CHECK(fa.severity == severity::critical);
}

TEST_CASE("structural: dangling references") {
  auto a = healthy("a");
  a.status = "archived";
  a.links.duplicate_of = "ghost";
  auto b = healthy("b");
  b.links.related_ids = {"a", "missing1"};
  auto c = healthy("c");
  c.links.supersedes = {"gone"};
  auto store = memory_store<>::from_records({a, b, c});
  const auto all = run1(structural_detector{}, store);
  const auto fs = of_kind(all, finding_kinds::dangling_reference);
  REQUIRE(first_ids(fs) == strings{"a", "b", "c"});
  CHECK(ev<std::string>(fs[0], "field") == "duplicate_of");
  CHECK(ev<std::string>(fs[0], "target") == "ghost");
  CHECK(ev<std::string>(fs[1], "field") == "related_ids");
  CHECK(ev<std::string>(fs[1], "target") == "missing1");
  CHECK(ev<std::string>(fs[2], "field") == "supersedes");
  CHECK(fs[2].suggested_repair == "drop_dangling_links");
  CHECK(all.size() == 3);
}

TEST_CASE("structural: reference cycles, each reported once") {
  std::vector<memory_record> rs;
  auto add = [&](std::string id, std::string dup, std::vector<std::string> sup,
                 std::string status) {
    auto r = healthy(std::move(id));
    r.links.duplicate_of = std::move(dup);
    r.links.supersedes = std::move(sup);
    r.status = std::move(status);
    rs.push_back(std::move(r));
  };
  add("a", "b", {}, "archived");  // a <-> b via duplicate_of
  add("b", "a", {}, "archived");
  add("c", "", {"d"}, "archived");  // c <-> d via supersedes
  add("d", "", {"c"}, "archived");
  add("e", "e", {}, "archived");  // self loop
  add("f", "g", {}, "archived");  // f dup_of g and g supersedes f: both say g won: no cycle
  add("g", "", {"f"}, "active");
  add("h", "i", {}, "archived");  // h -> i -> j -> h
  add("i", "j", {}, "archived");
  add("j", "h", {}, "archived");
  auto store = memory_store<>::from_records(rs);
  const auto all = run1(structural_detector{}, store);
  const auto fs = of_kind(all, finding_kinds::reference_cycle);
  REQUIRE(fs.size() == 4);
  std::vector<strings> got;
  for (const auto& f : fs) got.push_back(f.record_ids);
  std::sort(got.begin(), got.end());
  CHECK(got == std::vector<strings>{{"a", "b"}, {"c", "d"}, {"e"}, {"h", "i", "j"}});
  for (const auto& f : fs)
    CHECK(ev<std::int64_t>(f, "length") == static_cast<std::int64_t>(f.record_ids.size()));
  CHECK(all.size() == 4);  // nothing else: all links resolve, merged ones are archived
}

TEST_CASE("structural: merged but still active") {
  auto p = healthy("p");
  auto p2 = healthy("p2");
  p2.links.supersedes = {"m2", "m4"};
  auto m1 = healthy("m1");
  m1.links.duplicate_of = "p";
  auto m2 = healthy("m2");
  auto m3 = healthy("m3");
  m3.status = "archived";
  m3.links.duplicate_of = "p";
  auto m4 = healthy("m4");
  m4.links.duplicate_of = "p";
  auto store = memory_store<>::from_records({p, p2, m1, m2, m3, m4});
  const auto all = run1(structural_detector{}, store);
  const auto fs = of_kind(all, finding_kinds::merged_but_active);
  REQUIRE(first_ids(fs) == strings{"m1", "m2", "m4"});
  CHECK(ev<std::string>(fs[0], "duplicate_of") == "p");
  CHECK(fs[0].evidence_of("superseded_by") == nullptr);
  CHECK(ev<std::string>(fs[1], "superseded_by") == "p2");
  CHECK(fs[1].evidence_of("duplicate_of") == nullptr);
  CHECK(ev<std::string>(fs[2], "duplicate_of") == "p");
  CHECK(ev<std::string>(fs[2], "superseded_by") == "p2");
  CHECK(fs[0].suggested_repair == "archive_merged");
  CHECK(all.size() == 3);
}

// ------------------------------------------------------------------ structural: timestamps

TEST_CASE("structural: timestamps against a fixed now, compared as instants") {
  std::vector<memory_record> rs;
  auto add = [&](std::string id, std::optional<timestamp> c, std::optional<timestamp> u,
                 std::optional<timestamp> a) {
    auto r = healthy(std::move(id));
    r.created_at = c;
    r.updated_at = u;
    r.last_accessed_at = a;
    rs.push_back(std::move(r));
  };
  add("upd_before", ts("2024-03-01T10:00:00Z"), ts("2024-02-01T00:00:00Z"), std::nullopt);
  // 09:00+08:00 is 01:00Z, before 02:00Z, although it sorts after it as text: not a finding
  add("mixed_offsets", ts("2024-01-01T09:00:00+08:00"), ts("2024-01-01T02:00:00Z"), std::nullopt);
  add("no_updated", ts("2024-01-01T00:00:00Z"), std::nullopt, std::nullopt);
  add("within_tol", ts("2024-06-10T00:04:00Z"), ts("2024-06-10T00:04:00Z"), std::nullopt);
  add("future", ts("2024-05-01T00:00:00Z"), ts("2024-06-11T00:00:00Z"), std::nullopt);
  add("accessed_before", ts("2024-01-01T00:00:00Z"), ts("2024-01-02T00:00:00Z"),
      ts("2023-12-01T00:00:00Z"));
  // 07:00+08:00 on June 10 is June 9 23:00Z: in the past although "T07" > "T00" as text
  add("local_not_future", ts("2024-01-01T00:00:00Z"), ts("2024-06-10T07:00:00+08:00"),
      std::nullopt);
  auto store = memory_store<>::from_records(rs);
  const auto all = run1(structural_detector{}, store);
  const auto fs = of_kind(all, finding_kinds::timestamp_inconsistent);
  REQUIRE(first_ids(fs) == strings{"upd_before", "no_updated", "future", "accessed_before"});
  CHECK(ev<std::string>(fs[0], "problem") == "updated_before_created");
  CHECK(ev<std::string>(fs[1], "problem") == "missing_updated_at");
  CHECK(ev<std::string>(fs[2], "problem") == "in_future");
  CHECK(ev<std::string>(fs[2], "field") == "updated_at");
  CHECK(ev<double>(fs[2], "ahead_seconds") == doctest::Approx(86400.0));
  CHECK(fs[2].severity == severity::error);
  CHECK(ev<std::string>(fs[3], "problem") == "accessed_before_created");
  CHECK(fs[0].suggested_repair == "normalize_timestamps");
  CHECK(all.size() == 4);

  structural_detector relaxed;
  relaxed.require_updated_at = false;
  relaxed.check_future = false;
  CHECK(first_ids(of_kind(run1(relaxed, store), finding_kinds::timestamp_inconsistent)) ==
        strings{"upd_before", "accessed_before"});
  // a tighter tolerance turns the 4-minute-ahead record into two findings (created, updated)
  structural_detector strict;
  strict.future_tolerance = 1min;
  CHECK(of_kind(run1(strict, store), finding_kinds::timestamp_inconsistent).size() == 6);
}

// ------------------------------------------------------------------ structural: versions

TEST_CASE("structural: mixed embedding versions, one capped finding") {
  std::vector<memory_record> rs;
  for (const char* id : {"a", "b", "c"}) rs.push_back(healthy(id));
  for (const char* id : {"x", "y"}) {
    auto r = healthy(id);
    r.embedding_version = "m2";
    rs.push_back(std::move(r));
  }
  auto none = healthy("no_vec");
  none.embedding.clear();
  none.embedding_version = "m3";  // no embedding: does not count as a version in the index
  rs.push_back(none);
  auto store = memory_store<>::from_records(rs);
  const auto fs =
      of_kind(run1(structural_detector{}, store), finding_kinds::mixed_embedding_version);
  REQUIRE(fs.size() == 1);
  CHECK(fs[0].record_ids == strings{"x", "y"});
  CHECK(ev<std::string>(fs[0], "majority_version") == "m1");
  CHECK(ev<std::int64_t>(fs[0], "version:m1") == 3);
  CHECK(ev<std::int64_t>(fs[0], "version:m2") == 2);
  CHECK(fs[0].evidence_of("version:m3") == nullptr);
  CHECK(ev<std::int64_t>(fs[0], "minority_count") == 2);

  structural_detector capped;
  capped.max_listed_ids = 1;
  const auto fc = of_kind(run1(capped, store), finding_kinds::mixed_embedding_version);
  REQUIRE(fc.size() == 1);
  CHECK(fc[0].record_ids == strings{"x"});
  CHECK(ev<std::int64_t>(fc[0], "minority_count") == 2);
  CHECK(ev<std::int64_t>(fc[0], "listed") == 1);
}

// ------------------------------------------------------------------ incremental

TEST_CASE("incremental runs check changed records only, resolving against the whole store") {
  auto old_bad = healthy("old_bad");
  old_bad.status = "actve";
  old_bad.links.related_ids = {"ghost"};
  auto new_bad = healthy("new_bad");
  new_bad.status = "actve";
  new_bad.updated_at = ts("2024-06-05T00:00:00Z");
  new_bad.links.related_ids = {"old_bad", "ghost2"};  // old_bad resolves, ghost2 dangles
  auto x_old = healthy("x");
  auto x_new = healthy("x");
  x_new.updated_at = ts("2024-06-05T00:00:00Z");
  auto y1 = healthy("y");
  auto y2 = healthy("y");
  auto store = memory_store<>::from_records({old_bad, new_bad, x_old, x_new, y1, y2});
  auto o = opts();
  o.since = ts("2024-06-03T00:00:00Z").instant;

  detection_context<memory_store<>> ctx(store, o);
  CHECK(ctx.changed_count() == 2);
  std::vector<finding> out;
  structural_detector{}.run(ctx, out);
  CHECK(first_ids(of_kind(out, finding_kinds::illegal_status)) == strings{"new_bad"});
  const auto dang = of_kind(out, finding_kinds::dangling_reference);
  REQUIRE(first_ids(dang) == strings{"new_bad"});
  CHECK(ev<std::string>(dang[0], "target") == "ghost2");
  const auto dup = of_kind(out, finding_kinds::duplicate_id);
  REQUIRE(dup.size() == 1);  // "x" has a changed member; "y" has none
  CHECK(dup[0].record_ids == strings{"x"});
  CHECK(out.size() == 3);

  // the full run sees both bad statuses, both dangling links and both duplicate groups
  const auto full = run1(structural_detector{}, store);
  CHECK(of_kind(full, finding_kinds::illegal_status).size() == 2);
  CHECK(of_kind(full, finding_kinds::dangling_reference).size() == 2);
  CHECK(of_kind(full, finding_kinds::duplicate_id).size() == 2);
}

// ------------------------------------------------------------------ decay curves

TEST_CASE("decay curves at hand-computed ages") {
  const exponential_decay e30{days{30}};
  CHECK(e30(days{0}) == 1.0);
  CHECK(e30(-days{5}) == 1.0);
  CHECK(e30(days{30}) == doctest::Approx(0.5));
  CHECK(e30(days{60}) == doctest::Approx(0.25));
  CHECK(e30(days{15}) == doctest::Approx(0.70710678));  // 2^-0.5

  const step_ttl ttl{days{3}};
  CHECK(ttl(days{2} + hours{23}) == 1.0);
  CHECK(ttl(days{3}) == 0.0);
  CHECK(ttl(days{4}) == 0.0);

  const linear_decay lin{days{100}};
  CHECK(lin(days{25}) == doctest::Approx(0.75));
  CHECK(lin(days{150}) == 0.0);
  CHECK(lin(-days{1}) == 1.0);

  const power_law_decay p1{days{10}, 1.0};
  CHECK(p1(days{30}) == doctest::Approx(0.25));  // (1 + 3)^-1
  const power_law_decay p05{days{1}, 0.5};
  CHECK(p05(days{3}) == doctest::Approx(0.5));  // 4^-0.5

  const kind_decay table;
  auto w = [&](std::string_view kind, milliseconds age) {
    return evaluate(table.curve_for(kind), age);
  };
  CHECK(w("temporary", days{2}) == 1.0);
  CHECK(w("temporary", days{4}) == 0.0);
  CHECK(w("episodic", days{60}) == doctest::Approx(0.25));
  CHECK(w("preference", days{180}) == doctest::Approx(0.5));
  CHECK(w("fact", days{365}) == doctest::Approx(0.5));
  CHECK(w("something_else", days{730}) == doctest::Approx(0.25));
  CHECK(w("", days{365}) == doctest::Approx(0.5));

  CHECK(describe(e30) == "exponential(half_life=30d)");
  CHECK(describe(ttl) == "step_ttl(ttl=3d)");
  CHECK(describe(exponential_decay{hours{12}}) == "exponential(half_life=0.5d)");
  CHECK(describe(p1) == "power_law(scale=10d,exponent=1)");
  CHECK(describe(lin) == "linear(lifetime=100d)");

  kind_decay custom;
  custom.set("episodic", linear_decay{days{10}});
  CHECK(evaluate(custom.curve_for("episodic"), days{5}) == doctest::Approx(0.5));
}

// ------------------------------------------------------------------ staleness

TEST_CASE("staleness: decayed weight below threshold") {
  std::vector<memory_record> rs;
  auto add = [&](std::string id, std::string kind, std::optional<timestamp> upd,
                 std::optional<timestamp> acc) {
    auto r = healthy(std::move(id));
    r.kind = std::move(kind);
    r.created_at = ts("2024-01-01T00:00:00Z");
    r.updated_at = upd;
    r.last_accessed_at = acc;
    rs.push_back(std::move(r));
    return &rs.back();
  };
  // Mar 12 -> Jun 10 = 19 + 30 + 31 + 10 = 90 days: episodic weight 2^-3 = 0.125 (info: >= 0.1)
  add("ep90", "episodic", ts("2024-03-12T00:00:00Z"), std::nullopt);
  // 60 days: 0.25, not stale
  add("ep60", "episodic", ts("2024-04-11T00:00:00Z"), std::nullopt);
  // temporary, updated 4 days ago: step TTL 3 days -> 0 (warning)
  add("tmp_old", "temporary", ts("2024-06-06T00:00:00Z"), std::nullopt);
  // updated 4 days ago but accessed 2 days ago: the later one counts -> weight 1
  add("tmp_read", "temporary", ts("2024-06-06T00:00:00Z"), ts("2024-06-08T00:00:00Z"));
  // episodic 60 days (curve 0.25) with stored weight 0.5: product 0.125 < 0.2 -> info; the
  // stored weight is above the curve, so it has not been down-weighted yet
  add("weighted_hi", "episodic", ts("2024-04-11T00:00:00Z"), std::nullopt)->effective_weight = 0.5;
  // fact 1 day old (curve 2^(-1/365) = 0.99810) with stored weight 0.1 <= curve: already
  // down-weighted (by a repair or by hand), not reported again
  add("weighted_lo", "fact", ts("2024-06-09T00:00:00Z"), std::nullopt)->effective_weight = 0.1;
  // episodic 90 days (curve 0.125) down-weighted to exactly 0.125 by a repair: converged
  add("repaired", "episodic", ts("2024-03-12T00:00:00Z"), std::nullopt)->effective_weight = 0.125;
  // temporary 4 days old (curve 0) down-weighted to a floor of 0.05: above the curve but below
  // the threshold: converged too
  add("floored", "temporary", ts("2024-06-06T00:00:00Z"), std::nullopt)->effective_weight = 0.05;
  add("archived", "episodic", ts("2024-03-12T00:00:00Z"), std::nullopt)->status = "archived";
  // only created_at (Jan 1): age 161 days, episodic weight 2^(-161/30) = 0.02424 -> warning
  add("created_only", "episodic", std::nullopt, std::nullopt);
  auto* nt = add("no_time", "episodic", std::nullopt, std::nullopt);
  nt->created_at.reset();
  add("future", "temporary", ts("2024-07-01T00:00:00Z"), std::nullopt);  // negative age -> 1
  auto store = memory_store<>::from_records(rs);
  const auto fs = run1(staleness_detector{}, store);
  REQUIRE(first_ids(fs) == strings{"ep90", "tmp_old", "weighted_hi", "created_only"});
  for (const auto& f : fs) {
    CHECK(f.kind == finding_kinds::stale);
    CHECK(f.detector == "staleness");
    CHECK(f.suggested_repair == "downweight");
  }
  CHECK(ev<double>(fs[0], "age_days") == doctest::Approx(90.0));
  CHECK(ev<double>(fs[0], "weight") == doctest::Approx(0.125));
  CHECK(ev<std::string>(fs[0], "curve") == "exponential(half_life=30d)");
  CHECK(ev<std::string>(fs[0], "kind") == "episodic");
  CHECK(fs[0].severity == severity::info);
  CHECK(ev<double>(fs[1], "weight") == 0.0);
  CHECK(ev<std::string>(fs[1], "curve") == "step_ttl(ttl=3d)");
  CHECK(fs[1].severity == severity::warning);
  CHECK(ev<double>(fs[2], "curve_weight") == doctest::Approx(0.25));
  CHECK(ev<double>(fs[2], "weight") == doctest::Approx(0.125));
  CHECK(fs[2].severity == severity::info);
  CHECK(ev<double>(fs[3], "age_days") == doctest::Approx(161.0));
  CHECK(ev<double>(fs[3], "weight") == doctest::Approx(0.0242366).epsilon(1e-4));

  staleness_detector loose;
  loose.threshold = 0.05;
  // at threshold 0.05 the floored record (stored 0.05, not below 0.05; curve 0) is stale again
  CHECK(first_ids(run1(loose, store)) == strings{"tmp_old", "floored", "created_only"});
}

TEST_CASE("staleness in incremental runs: unchanged records are checked, reported once") {
  // episodic: half-life 30 days, stale below 0.2, i.e. older than 30 * log2(5) = 69.66 days;
  // clock 2024-06-10, cursor 2024-06-01
  auto crossed = healthy("crossed");  // 2024-03-28: 65 days at the cursor (0.223), 74 now (0.181)
  crossed.kind = "episodic";
  crossed.updated_at = ts("2024-03-28T00:00:00Z");
  crossed.last_accessed_at.reset();
  auto old = crossed;  // 2024-03-12: 81 days at the cursor (0.154), already stale then
  old.id = "old";
  old.updated_at = ts("2024-03-12T00:00:00Z");
  auto store = memory_store<>::from_records({crossed, old});
  auto o = opts();
  CHECK(run1(staleness_detector{}, store, o).size() == 2);  // a full run: both
  o.since = ts("2024-06-01T00:00:00Z").instant;
  const auto f = run1(staleness_detector{}, store, o);
  REQUIRE(f.size() == 1);
  CHECK(f[0].record_ids == strings{"crossed"});
  staleness_detector follow;
  follow.check_unchanged = false;
  CHECK(run1(follow, store, o).empty());
}

// ------------------------------------------------------------------ scope

TEST_CASE("scope helpers") {
  CHECK(scope_is_ancestor_or_self("user:7", "user:7/project:alpha"));
  CHECK(scope_is_ancestor_or_self("user:7", "user:7"));
  CHECK(scope_is_ancestor_or_self("user:7/", "user:7/project:alpha"));
  CHECK_FALSE(scope_is_ancestor_or_self("user:7", "user:70"));
  CHECK_FALSE(scope_is_ancestor_or_self("user:7", "user:70/project:alpha"));
  CHECK_FALSE(scope_is_ancestor_or_self("user:7/project:alpha", "user:7"));
  CHECK_FALSE(scope_is_ancestor_or_self("", "user:7"));
  CHECK(scope_parent("user:7/project:alpha") == "user:7");
  CHECK(scope_parent("tenant:1/user:7/project:alpha") == "tenant:1/user:7");
  CHECK(scope_parent("user:7") == "");
  CHECK(scope_parent("") == "");
  CHECK(scope_depth("") == 0);
  CHECK(scope_depth("user:7") == 1);
  CHECK(scope_depth("user:7/project:alpha") == 2);
  CHECK(scope_depth("a//b/") == 2);
  static_assert(scope_is_ancestor_or_self("t:1", "t:1/u:2"));
  static_assert(!scope_is_ancestor_or_self("t:1", "t:10"));
}

TEST_CASE("scope detector: cross-scope links, ancestors allowed, user:7 vs user:70") {
  auto a = healthy("a");
  a.scope = "user:7";
  a.links.related_ids = {"b"};  // into a descendant scope: a finding
  auto b = healthy("b");
  b.scope = "user:7/project:alpha";
  b.links.related_ids = {"a"};  // into the ancestor: allowed
  auto c = healthy("c");
  c.scope = "user:70";
  c.status = "archived";
  c.links.duplicate_of = "a";  // user:70 -> user:7: not an ancestor
  auto d = healthy("d");
  d.scope = "user:8";
  d.links.supersedes = {"c"};
  auto e = healthy("e");
  e.scope = "user:7";
  e.links.related_ids = {"a", "ghost"};  // same scope; dangling left to structural
  auto store = memory_store<>::from_records({a, b, c, d, e});
  const auto fs = run1(scope_detector{}, store);
  REQUIRE(fs.size() == 3);
  CHECK(fs[0].record_ids == strings{"a", "b"});
  CHECK(ev<std::string>(fs[0], "field") == "related_ids");
  CHECK(ev<std::string>(fs[0], "from_scope") == "user:7");
  CHECK(ev<std::string>(fs[0], "to_scope") == "user:7/project:alpha");
  CHECK(fs[1].record_ids == strings{"c", "a"});
  CHECK(ev<std::string>(fs[1], "field") == "duplicate_of");
  CHECK(ev<std::string>(fs[1], "from_scope") == "user:70");
  CHECK(fs[2].record_ids == strings{"d", "c"});
  CHECK(ev<std::string>(fs[2], "field") == "supersedes");
  CHECK(fs[0].severity == severity::error);
  CHECK(fs[0].kind == finding_kinds::cross_scope_link);

  scope_detector strict;
  strict.allow_ancestor_links = false;
  CHECK(run1(strict, store).size() == 4);

  // incremental: only links touching a changed record
  auto o = opts();
  o.since = ts("2024-06-03T00:00:00Z").instant;
  CHECK(run1(scope_detector{}, store, o).empty());
}

// ------------------------------------------------------------------ hygiene

TEST_CASE("hygiene: template fragments, placeholders, no letters") {
  std::vector<memory_record> rs;
  auto add = [&](std::string id, std::string content) {
    rs.push_back(healthy(std::move(id), std::move(content)));
  };
  add("im_start", "<|im_start|>system you are terse");
  add("mustache", "{{user_name}} likes tea");
  add("inst", "[INST] remember this [/INST]");
  add("ai_model", "As an AI language model, I cannot have preferences.");
  add("todo", "TODO");
  add("todo_item", "todo: buy milk");
  add("na", "N/A.");
  add("digits", "12345 !!!");
  add("chinese", "用户喜欢喝茶");
  add("fullwidth", "ＬＯＲＥＭ ＩＰＳＵＭ dolor");
  add("blank", "   ");
  add("null_hyp", "The null hypothesis was rejected");
  add("custom", "begin prompt: be nice");
  auto store = memory_store<>::from_records(rs);
  const auto fs = run1(hygiene_detector{}, store);
  REQUIRE(first_ids(fs) ==
          strings{"im_start", "mustache", "inst", "ai_model", "todo", "na", "digits", "fullwidth"});
  CHECK(all_ev(fs[0], "pattern") == strings{"<|im_start|>"});
  CHECK(all_ev(fs[1], "pattern") == strings{"{{", "}}"});
  CHECK(all_ev(fs[2], "pattern") == strings{"[INST]", "[/INST]"});
  CHECK(all_ev(fs[3], "pattern") == strings{"As an AI language model"});
  CHECK(all_ev(fs[4], "pattern") == strings{"TODO"});
  CHECK(ev<std::string>(fs[4], "match") == "exact");
  CHECK(all_ev(fs[5], "pattern") == strings{"N/A"});
  CHECK(all_ev(fs[6], "pattern") == strings{"no_letters"});
  CHECK(all_ev(fs[7], "pattern") == strings{"lorem ipsum"});
  CHECK(ev<std::string>(fs[7], "match") == "contains");
  CHECK(fs[0].kind == finding_kinds::junk_content);
  CHECK(fs[0].detector == "hygiene");

  hygiene_detector extended;
  extended.contains_patterns.push_back("BEGIN PROMPT");
  const auto fe = run1(extended, store);
  CHECK(fe.size() == 9);
  CHECK(fe.back().record_ids == strings{"custom"});
}

TEST_CASE("hygiene: model boilerplate in Chinese, Japanese, Spanish, German, reply openers") {
  std::vector<memory_record> rs;
  auto add = [&](std::string id, std::string content) {
    rs.push_back(healthy(std::move(id), std::move(content)));
  };
  add("zh_ai", "作为一个AI语言模型，我没有个人喜好。");
  add("zh_refuse", "很抱歉，我不能提供这个信息。");
  add("zh_system", "你是一个乐于助人的助手，请回答用户的问题");
  add("zh_opener", "以下是用户的饮食偏好：不吃辣。");
  add("zh_ok", "好的，我来帮你总结一下");
  add("ja", "AIアシスタントとして、お答えできません。");
  add("es", "Como modelo de lenguaje, no tengo opiniones.");
  add("de", "Als KI-Sprachmodell habe ich keine Meinung.");
  add("en_opener", "Sure! Here's a summary of the user's preferences.");
  // ordinary memories: a user who cannot eat spicy food, "以下是" inside a sentence
  add("zh_user", "我无法吃辣的东西。");
  add("zh_mid", "她说以下是她最喜欢的三本书。");
  add("en_mid", "The list below is what she wants; sure, here is fine.");
  auto store = memory_store<>::from_records(rs);
  const auto fs = run1(hygiene_detector{}, store);
  REQUIRE(first_ids(fs) == strings{"zh_ai", "zh_refuse", "zh_system", "zh_opener", "zh_ok", "ja",
                                   "es", "de", "en_opener"});
  CHECK(all_ev(fs[0], "pattern") == strings{"作为一个AI语言模型"});
  CHECK(ev<std::string>(fs[3], "match") == "prefix");
  CHECK(all_ev(fs[8], "pattern") == strings{"Sure! Here"});
}

TEST_CASE("secrets: rules, masking, look-alikes") {
  // fake values of the real shapes, never issued
  const std::string aws = "AKIAZ7QK3M9FAKE2XW4P";
  auto found = find_secrets("key " + aws + " for staging");
  REQUIRE(found.size() == 1);
  CHECK(found[0].rule == "aws_access_key_id");
  CHECK(found[0].begin == 4);
  CHECK(found[0].end == 24);
  CHECK(mask_secret(aws) == "AKIA…(20)");
  CHECK(mask_secret("hunter22") == "hu…(8)");  // 8 / 4 = 2 bytes shown
  CHECK(mask_secret("abc") == "…(3)");
  CHECK(mask_secrets("key " + aws + " for staging") ==
        "key [secret aws_access_key_id AKIA…(20)] for staging");
  // low entropy and prefix inside a word are not secrets
  CHECK(find_secrets("AKIAAAAAAAAAAAAAAAAA").empty());
  CHECK(find_secrets("xAKIAZ7QK3M9FAKE2XW4P").empty());
  CHECK(find_secrets("sk-learn-compatible-pipeline-for-text-classification").empty());
  // password keyword + separator + password-like value; the value only is the span
  const std::string pw = "My password is Tr0ub4dor&3.";
  found = find_secrets(pw);
  REQUIRE(found.size() == 1);
  CHECK(found[0].rule == "password");
  CHECK(pw.substr(found[0].begin, found[0].end - found[0].begin) == "Tr0ub4dor&3");
  CHECK(find_secrets("她的密码是 Abc12345").size() == 1);
  CHECK(find_secrets("密码忘了").empty());
  CHECK(find_secrets("uses 1Password").empty());
  CHECK(find_secrets("the password policy requires 12 characters").empty());
  // connection strings: the password only
  const std::string url = "postgres://admin:s3cr3tPW99@db.example:5432/app";
  found = find_secrets(url);
  REQUIRE(found.size() == 1);
  CHECK(url.substr(found[0].begin, found[0].end - found[0].begin) == "s3cr3tPW99");
  CHECK(find_secrets("postgres://USER:<password>@HOST/DB").empty());
  // configuration: a rule off, a user prefix
  secret_rules rules;
  rules.disabled = {"aws_access_key_id"};
  CHECK(find_secrets(aws, rules).empty());
  rules.extra_prefixes.push_back({"acme_token", "acme_", 24, 0});
  found = find_secrets("token acme_9fK2LmQ8xR4tZ7vB1nC6yH3w", rules);
  REQUIRE(found.size() == 1);
  CHECK(found[0].rule == "acme_token");

  // the detector: critical, masked evidence, never the value
  std::vector<memory_record> rs{healthy("s1", "deploy with " + aws),
                                healthy("ok", "She forgot her password again.")};
  auto store = memory_store<>::from_records(rs);
  const auto fs = run1(secret_detector{}, store);
  REQUIRE(fs.size() == 1);
  CHECK(fs[0].kind == finding_kinds::secret_in_content);
  CHECK(fs[0].severity == severity::critical);
  CHECK(fs[0].detector == "secrets");
  CHECK(fs[0].suggested_repair == "quarantine");
  CHECK(ev<std::string>(fs[0], "rule") == "aws_access_key_id");
  CHECK(ev<std::string>(fs[0], "masked") == "AKIA…(20)");
  for (const auto& [k, v] : fs[0].evidence)
    if (const auto* t = std::get_if<std::string>(&v)) CHECK(t->find(aws) == std::string::npos);
}

TEST_CASE("secrets: masking keeps a password's trailing '!', '?', '#' inside the span") {
  // fake values, written for this test
  auto value = [](const std::string& t) {
    const auto f = find_secrets(t);
    REQUIRE(f.size() == 1);
    return t.substr(f[0].begin, f[0].end - f[0].begin);
  };
  CHECK(value("My password is Lantern2031!") == "Lantern2031!");
  CHECK(value("The wifi password is Otter#58?") == "Otter#58?");
  CHECK(value("gate code #4417#") == "#4417#");
  CHECK(value("password: Pebble77##") == "Pebble77##");
  // a sentence's full stop, a comma and a closing quote or bracket are cut
  CHECK(value("My password is Lantern2031.") == "Lantern2031");
  CHECK(value("password \"Quill!72\", then log in") == "Quill!72");
  CHECK(value("(password: Marble2029)") == "Marble2029");
  // a quoted value runs to its closing quote: a passphrase keeps its spaces
  CHECK(value("passphrase: \"orchid lantern seventy copper\"") == "orchid lantern seventy copper");
  CHECK(value("パスワードは「Kumo 2031」です") == "Kumo 2031");
  CHECK(find_secrets("password: \"see the vault\"").empty());
  // nothing of the value is left in the masked text
  const std::string t = "Das Passwort lautet Wolke7Regen!!";
  const std::string masked = mask_secrets(t);
  CHECK(masked == "Das Passwort lautet [secret password Wol…(13)]");
  CHECK(masked.find('!') == std::string::npos);
}

TEST_CASE("secrets: vendor formats, commands, other languages, codes, allowlist, settings") {
  // every value fake, written for this test
  auto rule = [](const std::string& t) {
    const auto f = find_secrets(t);
    return f.size() == 1 ? std::string(f[0].rule) : std::to_string(f.size()) + " matches";
  };
  CHECK(rule("token glpat-Zr8kQ2wXv5Lm9Tn3Bc7Y") == "gitlab_token");
  CHECK(rule("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") == "huggingface_token");  // letters only
  CHECK(rule("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") == "shopify_token");
  CHECK(rule("bot 7311940256:AAGm3kLq9ZxWv8TnRb2YcPd5Hs4Jf7Ue1Qo") == "telegram_bot_token");
  CHECK(rule("AccountName=x;AccountKey=Q2hhcmxpZTEyMzQ1Njc4OTBhYmNkZWZnaGlqa2xtbm9wcXJz==") ==
        "azure_connection_string");
  // the account SID is no secret, the 32-hex auth token next to it is
  const std::string twilio =
      "AC0a1b2c3d4e5f60718293a4b5c6d7e8f9 auth 9f8e7d6c5b4a39281706f5e4d3c2b1a0";
  CHECK(rule(twilio) == "twilio_auth_token");
  CHECK(find_secrets(twilio)[0].begin == 40);
  CHECK(rule("mysql -u app -pW4lnutTree analytics") == "cli_credential");
  CHECK(rule("docker run -u 1000:1000 -p 8080:80 nginx") == "0 matches");
  CHECK(rule("Authorization: Basic YWxpY2U6V2FsbnV0OTk=") == "basic_auth");
  CHECK(rule("The basic idea is simple") == "0 matches");
  CHECK(rule("redis://:Kx82nQpLw0@cache:6379") == "connection_string");
  CHECK(rule("Mot de passe : Renard!2030") == "password");
  CHECK(rule("社内wifiのパスワードはTsuki2030です") == "password");
  CHECK(rule("Passwort vergessen, bitte zurücksetzen") == "0 matches");
  CHECK(rule("alarm code: 6-0-3-9") == "access_code");
  CHECK(rule("The zip code is 94107") == "0 matches");
  CHECK(rule("The PIN must be 6 digits") == "0 matches");
  CHECK(rule("TOTP seed KRUGS4ZANFZSAYJAORSXG5BAONSWG4TF") == "totp_secret");
  CHECK(rule("recovery codes: 7h2kq-9x3m1 4b8nz-2p6w0") == "backup_codes");
  CHECK(rule("seed phrase: tunnel maple orbit cactus ribbon lizard sponge walnut pencil "
             "harvest copper meadow") == "seed_phrase");
  CHECK(rule("mnemonic devices help her remember the order of the planets") == "0 matches");
  CHECK(rule("card 4242 4242 4242 4242 exp 11/29") == "payment_card");
  CHECK(rule("order 4242424242424242 shipped") == "0 matches");  // no card named: not a secret
  // allowlist: a value holding "example", or "example"/"dummy"/... right before it
  CHECK(find_secrets("AKIAIOSFODNN7EXAMPLE").empty());
  CHECK(find_secrets("a dummy token: ghp_Zq3Ly8Lw2Nd5Kp7Rt1Vb4Xc6Hj9Mf0Sa2Qe5").empty());
  CHECK(find_secrets("ghp_Zq3Ly8Lw2Nd5Kp7Rt1Vb4Xc6Hj9Mf0Sa2Qe5").size() == 1);
  CHECK(find_secrets("login alice@example.com, password: Birch2031x").size() == 1);
  secret_rules rules;
  rules.allow_words.clear();
  CHECK(find_secrets("a dummy token: ghp_Zq3Ly8Lw2Nd5Kp7Rt1Vb4Xc6Hj9Mf0Sa2Qe5", rules).size() == 1);
  rules.disabled = {"access_code"};
  CHECK(find_secrets("alarm code: 6-0-3-9", rules).empty());
  rules.disabled.clear();
  rules.extra_code_keywords = {"locker code"};
  CHECK(find_secrets("locker code 5521", rules).size() == 1);
}

namespace {
struct labelled_counts {
  std::size_t tp = 0, fp = 0, fn = 0, tn = 0;
  std::vector<std::string> misses;
  [[nodiscard]] double precision() const { return tp + fp ? double(tp) / double(tp + fp) : 1; }
  [[nodiscard]] double recall() const { return tp + fn ? double(tp) / double(tp + fn) : 1; }
};
template <class F>
labelled_counts measure(const std::filesystem::path& file, F&& flagged) {
  labelled_counts c;
  for (const auto& row : memhealth::test::read_tsv_rows(file)) {
    REQUIRE(row.size() == 3);
    const bool label = row[0] == "1", got = flagged(row[2]);
    (label ? (got ? c.tp : c.fn) : (got ? c.fp : c.tn)) += 1;
    if (label != got) c.misses.push_back(row[0] + " " + row[1] + ": " + mask_secrets(row[2]));
  }
  return c;
}
}  // namespace

// The labelled sets (tests/data/hygiene/README.md): hand-written memories, fake secrets of the
// real shapes and look-alikes (password managers, billing notes, hashes in URLs, UUIDs, talk about
// passwords, Chinese); mojibake made by decoding UTF-8 as Windows-1252 / Latin-1 and legitimate
// accented and CJK text. Thresholds: a false positive on a secret costs a person a look (tier-3
// quarantine), a miss leaves a credential in the store, so both must stay >= 0.95; the set has
// 154 positives and 142 negatives, so 0.95 allows 8 misses or 8 false alarms.
TEST_CASE("secrets and mojibake: precision and recall on the labelled sets") {
  const auto dir = memhealth::test::bundled_data_dir() / "hygiene";
  const auto sec =
      measure(dir / "secrets.tsv", [](const std::string& t) { return !find_secrets(t).empty(); });
  MESSAGE("secrets: tp " << sec.tp << " fp " << sec.fp << " fn " << sec.fn << " tn " << sec.tn
                         << " precision " << sec.precision() << " recall " << sec.recall());
  for (const auto& m : sec.misses) MESSAGE("secrets miss: " << m);
  CHECK(sec.tp + sec.fn >= 150);
  CHECK(sec.fp + sec.tn >= 140);
  CHECK(sec.precision() >= 0.95);
  CHECK(sec.recall() >= 0.95);

  const auto moj = measure(dir / "mojibake.tsv", [](const std::string& t) {
    const auto c = scan_mojibake(t);
    return c.double_encoded + c.replacement + c.invalid_bytes + c.c1_controls > 0;
  });
  MESSAGE("mojibake: tp " << moj.tp << " fp " << moj.fp << " fn " << moj.fn << " tn " << moj.tn
                          << " precision " << moj.precision() << " recall " << moj.recall());
  for (const auto& m : moj.misses) MESSAGE("mojibake miss: " << m);
  CHECK(moj.tp + moj.fn >= 30);
  CHECK(moj.fp + moj.tn >= 30);
  CHECK(moj.precision() >= 0.95);
  CHECK(moj.recall() >= 0.95);
}

TEST_CASE("mojibake: double-encoded UTF-8, U+FFFD, invalid bytes, legitimate text is not") {
  auto c = scan_mojibake("Elle a commandÃ© un cafÃ©.");
  CHECK(c.double_encoded == 2);
  CHECK(c.sample == "Ã©");
  CHECK(c.repaired == "é");
  c = scan_mojibake("å¤©æ°”å¾ˆå¥½");  // 天气很好 read as Windows-1252
  CHECK(c.double_encoded == 4);
  CHECK(c.repaired == "天");
  CHECK(scan_mojibake("Caf\xE9 au lait").invalid_bytes == 1);  // Latin-1 byte, not UTF-8
  CHECK(scan_mojibake("Jos\xEF\xBF\xBD").replacement == 1);
  for (std::string_view ok :
       {"café naïve Ärger São Paulo", "今天天气很好", "東京の天気は晴れです。", "“quoted” — fine…",
        "Ñandú, ½ cup, 25°C, © 2024"}) {
    CAPTURE(ok);
    const auto k = scan_mojibake(ok);
    CHECK(k.double_encoded + k.replacement + k.invalid_bytes + k.c1_controls == 0);
  }
  std::vector<memory_record> rs{healthy("m", "He doesnâ€™t like coffee"), healthy("ok", "café")};
  auto store = memory_store<>::from_records(rs);
  const auto fs = run1(mojibake_detector{}, store);
  REQUIRE(fs.size() == 1);
  CHECK(fs[0].kind == finding_kinds::mojibake);
  CHECK(fs[0].severity == severity::warning);
  CHECK(all_ev(fs[0], "rule") == strings{"double_encoded_utf8"});  // ’ = E2 80 99 -> â € ™
  CHECK(ev<std::int64_t>(fs[0], "count") == 1);
  CHECK(ev<std::string>(fs[0], "repaired") == "’");
}

TEST_CASE("content size: the store-wide byte limit and the record's own metadata limits") {
  std::vector<memory_record> rs;
  rs.push_back(healthy("big", std::string(9000, 'a')));
  rs.push_back(healthy("fits", std::string(8192, 'a')));
  auto meta_bytes = healthy("meta_bytes", std::string(300, 'b'));
  meta_bytes.metadata["max_bytes"] = std::int64_t{256};
  rs.push_back(meta_bytes);
  // 100 CJK characters = 300 bytes: over a 90-character limit, within a 100-character one
  std::string cjk;
  for (int i = 0; i < 100; ++i) cjk += "字";
  auto meta_chars = healthy("meta_chars", cjk);
  meta_chars.metadata["max_chars"] = std::string("90");
  rs.push_back(meta_chars);
  auto within = healthy("within", cjk);
  within.metadata["max_length"] = 100.0;
  rs.push_back(within);
  auto store = memory_store<>::from_records(rs);
  const auto fs = run1(content_size_detector{}, store);
  REQUIRE(first_ids(fs) == strings{"big", "meta_bytes", "meta_chars"});
  CHECK(fs[0].kind == finding_kinds::oversized_content);
  CHECK(ev<std::string>(fs[0], "unit") == "bytes");
  CHECK(ev<std::int64_t>(fs[0], "size") == 9000);
  CHECK(ev<std::int64_t>(fs[0], "limit") == 8192);
  CHECK(ev<std::string>(fs[0], "limit_source") == "max_bytes");
  CHECK(ev<std::string>(fs[1], "limit_source") == "metadata.max_bytes");
  CHECK(ev<std::string>(fs[2], "unit") == "chars");
  CHECK(ev<std::int64_t>(fs[2], "size") == 100);
  CHECK(ev<std::int64_t>(fs[2], "limit") == 90);
  content_size_detector loose;
  loose.max_bytes = 0;
  CHECK(first_ids(run1(loose, store)) == strings{"meta_bytes", "meta_chars"});
}

TEST_CASE("content time: dates read, past events after created_at, today is") {
  using std::chrono::sys_days;
  const sys_days day = std::chrono::year{2025} / 1 / 10;
  auto dates = find_content_dates(
      "2025-03-14, March 14, 2025, 14th of March 2025, 2025年3月14日, 2025-02-30, "
      "https://x.example/2025-03-14/p");
  REQUIRE(dates.size() == 4);
  for (const auto& d : dates) CHECK(d.day == sys_days{std::chrono::year{2025} / 3 / 14});
  auto rules = [&](std::string_view text) {
    std::vector<std::string> out;
    for (const auto& i : check_content_time(text, day)) out.emplace_back(i.rule);
    return out;
  };
  CHECK(rules("We visited Kyoto on 2025-03-14 and loved it.") ==
        strings{"past_event_after_creation"});
  CHECK(rules("他2025年5月3日去了上海。") == strings{"past_event_after_creation"});
  CHECK(rules("Today is 2025-03-01.") == strings{"today_mismatch"});
  CHECK(rules("今天是2025年3月1日。") == strings{"today_mismatch"});
  // plans, dates before the record, today within a day, the next day (time zones)
  CHECK(rules("She has a flight on 2027-01-05.").empty());
  CHECK(rules("Booked a table for March 14, 2025.").empty());
  CHECK(rules("他计划2025年5月3日去上海。").empty());
  CHECK(rules("The deadline was moved to 2025-06-01.").empty());
  CHECK(rules("Graduated on 14th of June, 2019.").empty());
  CHECK(rules("今天是2025年1月11日。").empty());
  CHECK(rules("Went to Paris on 2025-01-11.").empty());

  auto r = healthy("late", "We visited Kyoto on 2024-03-14.");  // created 2024-01-01
  auto ok = healthy("ok", "We visited Kyoto on 2023-03-14.");
  auto store = memory_store<>::from_records(std::vector<memory_record>{r, ok});
  const auto fs = run1(content_time_detector{}, store);
  REQUIRE(fs.size() == 1);
  CHECK(fs[0].kind == finding_kinds::content_time_mismatch);
  CHECK(ev<std::string>(fs[0], "date") == "2024-03-14");
  CHECK(ev<std::string>(fs[0], "record_day") == "2024-01-01");
  CHECK(ev<std::int64_t>(fs[0], "days_after") == 73);  // Jan 31 + Feb 29 (leap) + 13 days
}

// ------------------------------------------------------------------ a minimal user record type

namespace h4_user {
struct note {
  std::string id;
  std::string content;
  std::string scope;
};
}  // namespace h4_user

static_assert(memhealth::scoped_record<h4_user::note>);
static_assert(!memhealth::embedded_record<h4_user::note>);
static_assert(!memhealth::status_record<h4_user::note>);
static_assert(!memhealth::timestamped_record<h4_user::note>);

TEST_CASE("a record type without status or embedding runs and skips what it cannot check") {
  using h4_user::note;
  auto store = memory_store<note>::from_records({
      note{"n1", "The user likes tea", "user:7"},
      note{"n2", "   ", "user:7"},
      note{"n3", "The user likes coffee", ""},
      note{"n1", "{{template}}", "user:7"},
  });
  pipeline p{structural_detector{}, hygiene_detector{}};
  const report r = p.run(store, opts());
  const auto counts = r.counts_by_kind();
  CHECK(counts.size() == 4);
  CHECK(r.count(finding_kinds::content_empty) == 1);
  CHECK(r.count(finding_kinds::missing_scope) == 1);
  CHECK(r.count(finding_kinds::duplicate_id) == 1);
  CHECK(r.count(finding_kinds::junk_content) == 1);
  CHECK(r.findings.size() == 4);
  CHECK(first_ids(of_kind(r.findings, finding_kinds::content_empty)) == strings{"n2"});
  CHECK(first_ids(of_kind(r.findings, finding_kinds::missing_scope)) == strings{"n3"});
}

TEST_CASE("structural: a sparse embedding with a zero tail is not zero padding") {
  // 384-d with 40 non-zero coordinates at k = 0, 9, 18, ..., 351 (every 9th): the last non-zero
  // is at 351, so 32 trailing zeros, but 312 of the 352 head coordinates are zero too
  // (88.6% > 1/8): hashed features, not padding.
  std::vector<float> sparse(384, 0.0f);
  for (int k = 0; k < 40; ++k) sparse[static_cast<std::size_t>(k) * 9] = 1.0f / std::sqrt(40.0f);
  auto a = healthy("sparse");
  a.embedding = sparse;
  auto store = memory_store<>::from_records({a});
  CHECK(of_kind(run1(structural_detector{}, store), finding_kinds::embedding_zero_padded).empty());
  structural_detector strict;
  strict.max_head_zero_fraction = 0.9;  // 312/352 = 0.886 <= 0.9: now taken for padding
  const auto pad = of_kind(run1(strict, store), finding_kinds::embedding_zero_padded);
  REQUIRE(pad.size() == 1);
  CHECK(ev<std::int64_t>(pad[0], "trailing_zeros") == 32);
}
}  // namespace detect_structural_test
