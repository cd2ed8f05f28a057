// Tests of the record model: timestamps, customization points, capability concepts and the
// in-memory store. Expected values are worked out by hand in the comments.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "memhealth/record/memory_record.hpp"
#include "memhealth/record/time.hpp"
#include "memhealth/record/traits.hpp"
#include "memhealth/store/memory_store.hpp"

namespace record_test {
using namespace memhealth;
using namespace std::chrono;

namespace {
// 2024-03-01T00:00:00Z: 19783 days after 1970-01-01 (54 years: 13 leap days 1972..2020 ->
// 54*365+13 = 19723 days to 2024-01-01, plus 31 (Jan) + 29 (Feb, leap) = 19783).
constexpr std::int64_t k_2024_03_01_ms = 19783LL * 86400 * 1000;
}  // namespace

TEST_CASE("parse_timestamp normalises offsets to the UTC instant") {
  auto z = parse_timestamp("2024-03-01T00:00:00Z");
  REQUIRE(z);
  CHECK(epoch_ms(*z) == k_2024_03_01_ms);
  CHECK(z->utc_offset_minutes == 0);

  // 08:00 at +08:00 is 00:00Z; 17:00 the previous day at -07:00 is 00:00Z.
  auto east = parse_timestamp("2024-03-01T08:00:00+08:00");
  auto west = parse_timestamp("2024-02-29T17:00:00-07:00");
  REQUIRE(east);
  REQUIRE(west);
  CHECK(epoch_ms(*east) == k_2024_03_01_ms);
  CHECK(epoch_ms(*west) == k_2024_03_01_ms);
  CHECK(east->utc_offset_minutes == 480);
  CHECK(west->utc_offset_minutes == -420);
  CHECK(*east == *west);

  // Fractions truncate to ms; compact offsets; date only; space separator; lower-case z.
  CHECK(epoch_ms(*parse_timestamp("2024-03-01T00:00:00.123456Z")) == k_2024_03_01_ms + 123);
  CHECK(epoch_ms(*parse_timestamp("2024-03-01T05:30:00+0530")) == k_2024_03_01_ms);
  CHECK(epoch_ms(*parse_timestamp("2024-03-01")) == k_2024_03_01_ms);
  CHECK(epoch_ms(*parse_timestamp("2024-03-01 00:00:01z")) == k_2024_03_01_ms + 1000);
  CHECK(epoch_ms(*parse_timestamp("2024-03-01T00:00")) == k_2024_03_01_ms);
}

TEST_CASE("parse_timestamp rejects malformed text") {
  for (const char* bad :
       {"", "2024", "2024-13-01", "2023-02-29", "2024-04-31T00:00Z", "2024-03-01T24:00:00Z",
        "2024-03-01T00:00:00+19:00", "2024-03-01T00:00:00Q", "2024-03-01T00:00:00.Z",
        "1:56 pm on 8 May, 2023", "2024-03-01T00:00:00Z junk"}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_timestamp(bad).has_value());
  }
}

TEST_CASE("timestamps sort by instant, not by text") {
  // As strings, "2024-03-01T07:00:00+08:00" > "2024-03-01T00:30:00Z", but as instants it is
  // 2024-02-29T23:00Z, half an hour before midnight: earlier.
  const std::string a = "2024-03-01T07:00:00+08:00";
  const std::string b = "2024-03-01T00:30:00Z";
  CHECK(a > b);
  CHECK(*parse_timestamp(a) < *parse_timestamp(b));
  CHECK(epoch_ms(*parse_timestamp(b)) - epoch_ms(*parse_timestamp(a)) == 90LL * 60 * 1000);
}

TEST_CASE("format_timestamp writes the original offset and round-trips") {
  auto t = parse_timestamp("2024-02-29T17:00:00.5-07:00");
  REQUIRE(t);
  CHECK(format_timestamp(*t) == "2024-02-29T17:00:00.500-07:00");
  CHECK(format_timestamp(timestamp_from_epoch_ms(k_2024_03_01_ms)) == "2024-03-01T00:00:00.000Z");
  CHECK(format_timestamp(timestamp_from_epoch_ms(0)) == "1970-01-01T00:00:00.000Z");
  // Before the epoch: -1 ms is 1969-12-31T23:59:59.999Z.
  CHECK(format_timestamp(timestamp_from_epoch_ms(-1)) == "1969-12-31T23:59:59.999Z");
  auto back = parse_timestamp(format_timestamp(*t));
  REQUIRE(back);
  CHECK(back->instant == t->instant);
  CHECK(back->utc_offset_minutes == -420);
}

// ------------------------------------------------------------- customization points

namespace user_ns {
// A user's own type with other field names, mapped through record_traits.
struct note {
  std::string key;
  std::string text;
  std::vector<float> vec;
  std::chrono::sys_seconds modified;
  std::string owner_scope;
};
// A type mapped by members (same names as memhealth's fields).
struct plain {
  std::string id;
  std::string content;
  std::array<float, 3> embedding{};
  std::int64_t updated_at = 0;  // epoch ms
  std::int64_t created_at = 0;
};
// A type mapped through ADL free functions.
struct adl_rec {
  std::string k, c, s;
};
inline std::string_view memhealth_id(const adl_rec& r) {
  return r.k;
}
inline std::string_view memhealth_content(const adl_rec& r) {
  return r.c;
}
inline std::string_view memhealth_scope(const adl_rec& r) {
  return r.s;
}
// A type with both a member `content` and a traits entry: traits win.
struct both {
  std::string id;
  std::string content = "member";
  std::string alt = "traits";
};
enum class mood { active, archived };
inline std::string_view to_string(mood m) {
  return m == mood::active ? "active" : "archived";
}
struct with_enum {
  std::string id, content;
  mood status = mood::archived;
};
}  // namespace user_ns

}  // namespace record_test
template <>
struct memhealth::record_traits<record_test::user_ns::note> {
  static constexpr auto id = &record_test::user_ns::note::key;
  static constexpr auto content = &record_test::user_ns::note::text;
  static constexpr auto embedding = &record_test::user_ns::note::vec;
  static constexpr auto updated_at = &record_test::user_ns::note::modified;
  static constexpr auto created_at = [](const record_test::user_ns::note& n) {
    return n.modified - std::chrono::hours(1);
  };
  static constexpr auto scope = [](const record_test::user_ns::note& n) -> const std::string& {
    return n.owner_scope;
  };
};
template <>
struct memhealth::record_traits<record_test::user_ns::both> {
  static constexpr auto content = &record_test::user_ns::both::alt;
};

namespace record_test {
TEST_CASE("record_traits specialisation maps renamed fields") {
  user_ns::note n{"n1", "likes tea", {0.6f, 0.8f}, sys_seconds{seconds{1'700'000'000}}, "user:7"};
  CHECK(field::id(n) == "n1");
  CHECK(field::content(n) == "likes tea");
  CHECK(field::embedding(n).size() == 2);
  CHECK(field::embedding(n)[1] == doctest::Approx(0.8f));
  REQUIRE(field::updated_at(n));
  CHECK(epoch_ms(*field::updated_at(n)) == 1'700'000'000'000LL);
  CHECK(epoch_ms(*field::created_at(n)) == 1'700'000'000'000LL - 3'600'000);
  CHECK(field::scope(n) == "user:7");  // through a callable returning a reference
  static_assert(embedded_record<user_ns::note>);
  static_assert(timestamped_record<user_ns::note>);
  static_assert(scoped_record<user_ns::note>);
  static_assert(!claimed_record<user_ns::note>);
  static_assert(!status_record<user_ns::note>);
  static_assert(!repairable_record<user_ns::note>);
}

TEST_CASE("members and ADL functions are found, traits win over members") {
  user_ns::plain p{"p1", "hello", {1, 0, 0}, 5000, 4000};
  CHECK(field::id(p) == "p1");
  CHECK(field::embedding(p).size() == 3);
  CHECK(epoch_ms(*field::updated_at(p)) == 5000);
  static_assert(timestamped_record<user_ns::plain>);
  static_assert(!scoped_record<user_ns::plain>);

  user_ns::adl_rec a{"a1", "text", "user:1"};
  CHECK(field::id(a) == "a1");
  CHECK(field::scope(a) == "user:1");
  static_assert(scoped_record<user_ns::adl_rec>);
  static_assert(!embedded_record<user_ns::adl_rec>);

  user_ns::both b{"b1"};
  CHECK(field::content(b) == "traits");

  user_ns::with_enum e{"e1", "x"};
  CHECK(field::status(e) == "archived");  // enum through ADL to_string
}

TEST_CASE("memory_record maps every field, links through traits") {
  memory_record r;
  r.id = "r1";
  r.links.duplicate_of = "r0";
  r.links.supersedes = {"r-old"};
  r.effective_weight = 0.5;
  r.claim = fact_claim{"user", "diet", "vegetarian"};
  CHECK(field::duplicate_of(r) == "r0");
  CHECK(field::supersedes(r).size() == 1);
  CHECK(*field::effective_weight(r) == 0.5);
  CHECK_FALSE(field::confidence(r).has_value());
  REQUIRE(field::claim(r) != nullptr);
  CHECK(std::get<fact_claim>(*field::claim(r)).value == "vegetarian");
  static_assert(repairable_record<memory_record>);
  static_assert(versioned_embedding_record<memory_record> && linked_record<memory_record> &&
                claimed_record<memory_record> && metadata_record<memory_record> &&
                accessed_record<memory_record> && kinded_record<memory_record> &&
                sourced_record<memory_record> && confidence_record<memory_record>);
  field::raw::duplicate_of(r) = "r9";
  CHECK(r.links.duplicate_of == "r9");
}

TEST_CASE("status and source vocabulary") {
  CHECK(parse_status("active") == record_status::active);
  CHECK_FALSE(parse_status("Active").has_value());
  CHECK_FALSE(parse_status("").has_value());
  CHECK(source_rank("user_declared") > source_rank("manual_entry"));
  CHECK(source_rank("manual_entry") == source_rank("system_config"));
  CHECK(source_rank("system_config") > source_rank("model_extracted"));
  CHECK(source_rank("model_extracted") > source_rank("system_log"));
  CHECK(source_rank("system_log") > source_rank(""));
  CHECK(source_rank("rumour") == 0);
}

// ------------------------------------------------------------- memory_store

namespace {
memory_record rec(std::string id, std::vector<float> e, std::string scope = "user:1") {
  memory_record r;
  r.id = std::move(id);
  r.content = "content of " + r.id;
  r.embedding = std::move(e);
  r.scope = std::move(scope);
  r.status = "active";
  return r;
}
}  // namespace

TEST_CASE("memory_store keeps malformed records and lays embeddings out contiguously") {
  std::vector<memory_record> v;
  v.push_back(rec("a", {1, 0, 0}));
  v.push_back(rec("b", {0, 1, 0}));
  v.push_back(rec("c", {0.5f, 0.5f}));  // wrong dimension: kept, not in the block
  v.push_back(rec("d", {}));            // missing: kept
  v.push_back(rec("a", {0, 0, 1}));     // duplicate id: kept
  auto s = memory_store<>::from_records(std::move(v));
  CHECK(s.size() == 5);
  CHECK(s.dimension() == 3);  // 3 of 4 embeddings have length 3
  CHECK(s.block_rows() == 3);
  CHECK(s.find("a") == 0u);  // the first of the duplicate ids
  CHECK(s.find("d") == 3u);
  CHECK_FALSE(s.find("zz").has_value());
  CHECK(s.embedding(2).size() == 2);
  CHECK(s.embedding(3).empty());
  CHECK(s.block_row(2) == memory_store<>::no_row);
  // The block is row-major and contiguous: row 2 is record 4's vector (0,0,1).
  const auto m = s.matrix();
  CHECK(m.rows() == 3);
  CHECK(m(2, 2) == 1.0f);
  CHECK(s.matrix().data() + 3 == s.embedding(1).data());
  CHECK(s.block_records()[2] == 4u);
  // The stored record no longer carries its own copy; extract() restores it.
  CHECK(s.record(0).embedding.empty());
  CHECK(s.extract(0).embedding == std::vector<float>{1, 0, 0});
}

TEST_CASE("memory_store dimension: explicit, most common, and first insert") {
  std::vector<memory_record> v{rec("a", {1, 0}), rec("b", {1, 0, 0}), rec("c", {0, 1, 0})};
  CHECK(memory_store<>::from_records(v).dimension() == 3);
  CHECK(memory_store<>::from_records(v, 2).block_rows() == 1);
  memory_store<> s;
  s.insert(rec("x", {}));
  CHECK(s.dimension() == 0);
  s.insert(rec("y", {0, 1}));
  CHECK(s.dimension() == 2);
  CHECK(s.insert(rec("z", {1, 1, 1})) == 2u);
  CHECK(s.block_rows() == 1);
  CHECK(s.find("z") == 2u);
}

// Changes record i of store s through the one mutation stores have (extract, edit, restore).
// @return the record as it was (restore's before-image).
template <class S, class F>
auto change(S& s, std::size_t i, F f) {
  auto r = s.extract(i);
  f(r);
  return s.restore(i, r);
}

TEST_CASE("memory_store mutations return exact before-images and restore undoes them") {
  auto s = memory_store<>::from_records({rec("a", {1, 0, 0}), rec("b", {0, 1, 0}), rec("c", {})});
  static_assert(mutable_record_store<memory_store<>>);
  const auto original_b = s.extract(1);

  auto before = change(s, 1, [](auto& r) { r.status = "archived"; });
  CHECK(before == original_b);
  CHECK(s.record(1).status == "archived");

  record_links l;
  l.duplicate_of = "a";
  change(s, 1, [&](auto& r) { r.links = l; });
  change(s, 0, [](auto& r) { r.links.related_notes.push_back("from b: same fact"); });
  change(s, 1, [](auto& r) { r.effective_weight = 0.25; });
  change(s, 1, [](auto& r) { r.metadata["topic"] = std::string("food"); });
  CHECK(s.record(0).links.related_notes == std::vector<std::string>{"from b: same fact"});
  CHECK(s.record(1).links.duplicate_of == "a");
  CHECK(*s.record(1).effective_weight == 0.25);

  // Re-embedding replaces vector and version together; the block row is reused.
  auto pre_embed = change(s, 1, [](auto& r) {
    r.embedding = std::vector<float>{0, 0, 1};
    r.embedding_version = "model-v2";
  });
  CHECK(pre_embed.embedding == std::vector<float>{0, 1, 0});
  CHECK(s.embedding(1)[2] == 1.0f);
  CHECK(s.record(1).embedding_version == "model-v2");
  CHECK(s.matrix()(1, 2) == 1.0f);

  // A record without embedding gets a block row when it receives one of length d.
  change(s, 2, [](auto& r) {
    r.embedding = std::vector<float>{1, 1, 0};
    r.embedding_version = "model-v2";
  });
  CHECK(s.block_rows() == 3);
  CHECK(s.embedding(2)[1] == 1.0f);

  // Restore the very first before-image: the record is exactly as it was.
  s.restore(1, original_b);
  CHECK(s.extract(1) == original_b);
  CHECK(s.embedding(1)[1] == 1.0f);

  CHECK_THROWS_AS(s.restore(99, memory_record{}), memhealth::error);
}

TEST_CASE("boxed_optional: one pointer, deep copies, optional-like equality and errors") {
  static_assert(sizeof(boxed_optional<claim>) == sizeof(void*));
  boxed_optional<claim> a;
  CHECK(!a);
  CHECK(!a.has_value());
  CHECK(a == std::nullopt);
  CHECK_THROWS_AS((void)a.value(), std::bad_optional_access);

  a = fact_claim{"user", "diet", "vegetarian"};
  REQUIRE(a);
  CHECK(std::get<fact_claim>(*a).value == "vegetarian");
  CHECK(!(a == std::nullopt));

  boxed_optional<claim> b = a;  // a deep copy: changing b leaves a alone
  std::get<fact_claim>(*b).value = "vegan";
  CHECK(std::get<fact_claim>(*a).value == "vegetarian");
  CHECK(!(a == b));
  b = a;
  CHECK(a == b);

  boxed_optional<claim> c = std::move(b);  // a move takes the value and leaves b empty
  CHECK(c == a);
  CHECK(!b);  // NOLINT(bugprone-use-after-move): the documented moved-from state

  std::optional<claim> none;
  c = none;  // assigning an empty std::optional empties
  CHECK(!c);
  c = std::optional<claim>(preference_claim{"dinner", "cilantro", "", polarity::negative});
  REQUIRE(c);
  CHECK(std::get<preference_claim>(*c).polarity == polarity::negative);
  c.reset();
  CHECK(c == boxed_optional<claim>{});  // two empty values are equal

  // in a record: copies compare equal, and a claim changed on the copy makes them differ
  memory_record r;
  r.id = "m1";
  r.claim = fact_claim{"bob", "current_project", "atlas"};
  memory_record s = r;
  CHECK(s == r);
  std::get<fact_claim>(*s.claim).value = "borealis";
  CHECK(!(s == r));
  CHECK(std::get<fact_claim>(*r.claim).value == "atlas");
  CHECK(field::claim(r) == &*r.claim);  // the accessor yields a pointer to the boxed value
}
}  // namespace record_test
