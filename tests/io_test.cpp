// Tests of the JSONL format (io/jsonl.hpp). Expected texts and instants are worked out by hand
// in the comments; fixtures are in tests/data/io.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "memhealth/io/jsonl.hpp"
#include "memhealth/io/read_file.hpp"
#include "memhealth/store/memory_store.hpp"

#include "sim_file_io.hpp"
#include <unistd.h>

namespace io_test {
using namespace memhealth;

namespace {

std::filesystem::path fixture(const char* name) {
  return std::filesystem::path(MEMHEALTH_SOURCE_DIR) / "tests" / "data" / "io" / name;
}

std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::filesystem::path scratch_dir() {
  auto d =
      std::filesystem::temp_directory_path() / ("memhealth_io_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(d);
  return d;
}

// 2024-03-01T00:00:00Z = 19783 days after the epoch (see record_test.cpp) = 1709251200000 ms.
constexpr std::int64_t k_2024_03_01_ms = 1709251200000LL;

memory_record full_record() {
  memory_record r;
  r.id = "m-1";
  r.content = "用户不再吃香菜 \"quoted\" back\\slash";
  r.embedding = {0.1f, -0.25f, 1e-7f, std::numeric_limits<float>::quiet_NaN(),
                 std::numeric_limits<float>::infinity()};
  r.embedding_version = "bge-small/l2";
  r.metadata.emplace("topic", std::string("diet"));
  r.metadata.emplace("batch", std::int64_t{7});
  r.metadata.emplace("score", 0.5);
  r.metadata.emplace("whole", 2.0);
  r.metadata.emplace("verified", true);
  r.metadata.emplace("x", std::monostate{});
  r.metadata.emplace("entities", raw_json{R"(["user","cilantro"])"});
  r.created_at = parse_timestamp("2024-03-01T08:10:00+08:00");
  r.updated_at = parse_timestamp("2024-03-01T00:30:00Z");
  r.last_accessed_at = parse_timestamp("2024-02-29T17:15:00.250-07:00");
  r.source = "user_declared";
  r.scope = "user:7/project:alpha";
  r.status = "active";
  r.kind = "preference";
  r.claim = preference_claim{"dinner", "cilantro", "any amount", polarity::negative};
  r.links.duplicate_of = "m-0";
  r.links.related_ids = {"m-2", "m-3"};
  r.links.related_notes = {"merged from m-0"};
  r.links.supersedes = {"m-9"};
  r.confidence = 0.9;
  r.effective_weight = 0.25;
  r.extra.push_back({"ingest", R"({"tool":"v1"})"});
  return r;
}

bool same_bits(float a, float b) {
  return std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b);
}

}  // namespace

TEST_CASE("canonical JSON of a small record, key order and number forms") {
  memory_record r;
  r.id = "m1";
  r.content = "hi";
  r.embedding = {0.5f, -1.0f, 0.1f};
  r.created_at = parse_timestamp("2024-03-01T08:10:00+08:00");
  r.status = "active";
  r.confidence = 0.9;
  CHECK(
      to_json(r) ==
      R"({"id":"m1","content":"hi","embedding":[0.5,-1,0.1],"created_at":"2024-03-01T08:10:00.000+08:00",)"
      R"("status":"active","confidence":0.9})");
  // id and content are always written, everything else only when present
  CHECK(to_json(memory_record{}) == R"({"id":"","content":""})");
}

TEST_CASE("every field round-trips: write, read, compare field by field, write again") {
  const memory_record r = full_record();
  const std::string text = to_json(r);
  auto res = parse_jsonl(text);
  REQUIRE(res.issues.empty());
  REQUIRE(res.records.size() == 1);
  const memory_record& b = res.records[0];
  CHECK(b.id == r.id);
  CHECK(b.content == r.content);
  REQUIRE(b.embedding.size() == 5);
  CHECK(same_bits(b.embedding[0], 0.1f));
  CHECK(same_bits(b.embedding[1], -0.25f));
  CHECK(same_bits(b.embedding[2], 1e-7f));
  CHECK(std::isnan(b.embedding[3]));
  CHECK(b.embedding[4] == std::numeric_limits<float>::infinity());
  CHECK(b.embedding_version == "bge-small/l2");
  CHECK(b.metadata == r.metadata);
  CHECK(std::get<double>(b.metadata.at("whole")) == 2.0);  // written "2.0", read back as a double
  CHECK(std::get<std::int64_t>(b.metadata.at("batch")) == 7);
  REQUIRE(b.created_at);
  CHECK(epoch_ms(*b.created_at) == k_2024_03_01_ms + 10 * 60'000);
  CHECK(b.created_at->utc_offset_minutes == 480);
  CHECK(epoch_ms(*b.updated_at) == k_2024_03_01_ms + 30 * 60'000);
  CHECK(b.updated_at->utc_offset_minutes == 0);
  // 2024-02-29T17:15:00.250-07:00 = 2024-03-01T00:15:00.250Z
  CHECK(epoch_ms(*b.last_accessed_at) == k_2024_03_01_ms + 15 * 60'000 + 250);
  CHECK(b.last_accessed_at->utc_offset_minutes == -420);
  CHECK(b.source == r.source);
  CHECK(b.scope == r.scope);
  CHECK(b.status == r.status);
  CHECK(b.kind == r.kind);
  REQUIRE(b.claim);
  CHECK(std::get<preference_claim>(*b.claim) ==
        preference_claim{"dinner", "cilantro", "any amount", polarity::negative});
  CHECK(b.links == r.links);
  CHECK(b.confidence == 0.9);
  CHECK(b.effective_weight == 0.25);
  CHECK(b.extra == r.extra);
  CHECK(to_json(b) == text);
}

TEST_CASE("a file written by memhealth reads and writes back byte for byte") {
  const std::string original = slurp(fixture("canonical.jsonl"));
  REQUIRE(!original.empty());
  auto res = read_jsonl(fixture("canonical.jsonl"));
  REQUIRE(res.records.size() == 3);
  CHECK(res.lines_read == 3);
  CHECK(to_jsonl(res.records) == original);
  // line 3 carries an unparseable timestamp and a string confidence: both reported, both kept
  REQUIRE(res.issues.size() == 2);
  CHECK(res.issues[0].line == 3);
  CHECK(res.issues[0].field == "created_at");
  CHECK(res.issues[0].reason.find("yesterday") != std::string::npos);
  CHECK(res.issues[1].field == "confidence");
  CHECK(!res.records[2].created_at);
  CHECK(!res.records[2].confidence);
  CHECK(res.records[2].extra ==
        std::vector<extra_field>{{"created_at", R"("yesterday")"}, {"confidence", R"("high")"}});
  CHECK(std::holds_alternative<fact_claim>(*res.records[1].claim));
}

TEST_CASE("offsets +08:00, -07:00, Z and epoch ms land on the right UTC instant and sort by it") {
  auto res = read_jsonl(fixture("offsets.jsonl"));
  REQUIRE(res.issues.empty());
  REQUIRE(res.records.size() == 4);
  // t1 08:10+08:00 = 00:10Z; t2 00:30Z; t3 2024-02-29 17:15-07:00 = 00:15Z; t4 epoch ms = 00:00Z
  CHECK(epoch_ms(*res.records[0].created_at) == 1709251800000LL);
  CHECK(epoch_ms(*res.records[1].created_at) == 1709253000000LL);
  CHECK(epoch_ms(*res.records[2].created_at) == 1709252100000LL);
  CHECK(epoch_ms(*res.records[3].created_at) == 1709251200000LL);
  CHECK(res.records[3].created_at->utc_offset_minutes == 0);
  auto recs = res.records;
  std::sort(recs.begin(), recs.end(),
            [](const auto& a, const auto& b) { return *a.created_at < *b.created_at; });
  std::vector<std::string> order;
  for (auto& r : recs) order.push_back(r.id);
  // string order of the texts would be t3 < t2 < t1; instant order is t4 < t1 < t3 < t2
  CHECK(order == std::vector<std::string>{"t4", "t1", "t3", "t2"});
  // epoch ms are written back as ISO-8601 UTC; local times keep their offset
  CHECK(to_json(res.records[3]) ==
        R"({"id":"t4","content":"epoch ms","created_at":"2024-03-01T00:00:00.000Z"})");
  CHECK(to_json(res.records[2]).find(R"("created_at":"2024-02-29T17:15:00.000-07:00")") !=
        std::string::npos);
}

TEST_CASE("a bad line in the middle is reported with its line number, the rest loads") {
  auto res = read_jsonl(fixture("mixed.jsonl"));
  // 9 lines, line 4 blank: 8 non-blank lines; lines 3 (truncated) and 6 (an array) are skipped
  CHECK(res.lines_read == 8);
  REQUIRE(res.records.size() == 6);
  std::vector<std::string> ids;
  for (auto& r : res.records) ids.push_back(r.id);
  CHECK(ids == std::vector<std::string>{"a", "b", "c", "d", "", "e"});
  REQUIRE(res.issues.size() == 5);
  CHECK(res.issues[0].line == 3);
  CHECK(!res.issues[0].record_kept);
  CHECK(res.issues[0].file == fixture("mixed.jsonl").string());
  CHECK(res.issues[1].line == 6);
  CHECK(!res.issues[1].record_kept);
  CHECK(res.issues[1].reason.find("array") != std::string::npos);
  CHECK(res.issues[2].line == 8);
  CHECK(res.issues[2].field == "id");
  CHECK(res.issues[2].record_kept);
  CHECK(res.issues[3].line == 9);
  CHECK(res.issues[3].field == "embedding");  // 1e300 and -1e300 overflow float32
  CHECK(res.issues[4].line == 9);
  CHECK(res.issues[4].field == "created_at");

  SUBCASE("NaN / Infinity strings are kept as non-finite floats, without an issue") {
    const auto& c = res.records[2];
    REQUIRE(c.embedding.size() == 3);
    CHECK(std::isnan(c.embedding[0]));
    CHECK(c.embedding[1] == std::numeric_limits<float>::infinity());
    CHECK(c.embedding[2] == -std::numeric_limits<float>::infinity());
    CHECK(to_json(c) ==
          R"({"id":"c","content":"third","embedding":["NaN","Infinity","-Infinity"]})");
  }
  SUBCASE("wrong dimension, empty content and unknown status are kept as they are") {
    const auto& d = res.records[3];
    CHECK(d.embedding == std::vector<float>{1.0f, 0.0f});
    CHECK(res.records[1].embedding.size() == 3);
    CHECK(d.content.empty());
    CHECK(d.status == "actve");
  }
  SUBCASE("out-of-range numbers become infinities; unknown fields are kept minified") {
    const auto& e = res.records[5];
    REQUIRE(e.embedding.size() == 3);
    CHECK(e.embedding[0] == std::numeric_limits<float>::infinity());
    CHECK(e.embedding[1] == -std::numeric_limits<float>::infinity());
    CHECK(e.embedding[2] == 0.5f);
    CHECK(!e.created_at);
    CHECK(e.extra ==
          std::vector<extra_field>{{"created_at", R"("yesterday")"}, {"mood", R"({"x":[1,2]})"}});
  }
}

TEST_CASE("unknown fields are written back after the known ones, in input order") {
  auto res =
      parse_jsonl(R"({"zeta":[1, 2, {"k" : "v"}],"id":"u","alpha":"x \"q\"","content":"c"})");
  REQUIRE(res.issues.empty());
  CHECK(to_json(res.records[0]) ==
        R"({"id":"u","content":"c","zeta":[1,2,{"k":"v"}],"alpha":"x \"q\""})");
}

TEST_CASE("wrong JSON types: issue, field left empty, original kept and written back") {
  const std::string line =
      R"({"id":"w","content":42,"embedding":"oops","confidence":"high","related_ids":["a",3]})";
  auto res = parse_jsonl(line, "w.jsonl");
  REQUIRE(res.records.size() == 1);
  const auto& r = res.records[0];
  CHECK(r.content.empty());
  CHECK(r.embedding.empty());
  CHECK(!r.confidence);
  CHECK(r.links.related_ids.empty());
  REQUIRE(res.issues.size() == 4);
  CHECK(res.issues[0].field == "content");
  CHECK(res.issues[0].file == "w.jsonl");
  CHECK(res.issues[0].line == 1);
  CHECK(res.issues[1].field == "embedding");
  CHECK(res.issues[2].field == "confidence");
  CHECK(res.issues[3].field == "related_ids");
  CHECK(to_json(r) == line);  // the same bytes: nothing was lost

  SUBCASE("a typed value set later supersedes the kept original") {
    memory_record fixed = r;
    fixed.content = "now text";
    CHECK(
        to_json(fixed) ==
        R"({"id":"w","content":"now text","embedding":"oops","confidence":"high","related_ids":["a",3]})");
  }
}

TEST_CASE("claims: facts, preferences with numeric polarity, malformed claims kept in extra") {
  auto res = parse_jsonl(
      R"({"id":"p","content":"x","claim":{"scene":"dinner","preference":"cilantro","polarity":-1}})"
      "\n"
      R"({"id":"f","content":"x","claim":{"entity":"user","attribute":"age","value":42}})"
      "\n"
      R"({"id":"q","content":"x","claim":{"scene":"s","preference":"p","polarity":"maybe"}})");
  REQUIRE(res.records.size() == 3);
  CHECK(std::get<preference_claim>(*res.records[0].claim) ==
        preference_claim{"dinner", "cilantro", "", polarity::negative});
  CHECK(
      to_json(res.records[0]) ==
      R"({"id":"p","content":"x","claim":{"scene":"dinner","preference":"cilantro","constraint":"","polarity":"negative"}})");
  CHECK(!res.records[1].claim);
  CHECK(!res.records[2].claim);
  REQUIRE(res.issues.size() == 2);
  CHECK(res.issues[0].line == 2);
  CHECK(res.issues[0].field == "claim");
  CHECK(res.issues[1].line == 3);
  CHECK(to_json(res.records[1]) ==
        R"({"id":"f","content":"x","claim":{"entity":"user","attribute":"age","value":42}})");
  // a preference's holder: read, and written back only when set
  auto held = parse_jsonl(
      R"({"id":"h","content":"x","claim":{"preference":"sushi","polarity":"negative","holder":"wife"}})");
  REQUIRE(held.records.size() == 1);
  CHECK(std::get<preference_claim>(*held.records[0].claim) ==
        preference_claim{"", "sushi", "", polarity::negative, "wife"});
  CHECK(
      to_json(held.records[0]) ==
      R"({"id":"h","content":"x","claim":{"scene":"","preference":"sushi","constraint":"","polarity":"negative","holder":"wife"}})");
  CHECK(held.issues.empty());
}

TEST_CASE("metadata values keep their JSON type, keys are written sorted") {
  auto res = parse_jsonl(
      R"({"id":"m","content":"x","metadata":{"b":1.0,"a":[1, 2],"c":null,"d":7,"e":"s","f":true,"g":-3.5e-2}})");
  REQUIRE(res.issues.empty());
  const auto& m = res.records[0].metadata;
  CHECK(std::get<double>(m.at("b")) == 1.0);
  CHECK(std::get<raw_json>(m.at("a")).text == "[1,2]");
  CHECK(std::holds_alternative<std::monostate>(m.at("c")));
  CHECK(std::get<std::int64_t>(m.at("d")) == 7);
  CHECK(std::get<std::string>(m.at("e")) == "s");
  CHECK(std::get<bool>(m.at("f")) == true);
  CHECK(std::get<double>(m.at("g")) == -0.035);
  CHECK(
      to_json(res.records[0]) ==
      R"({"id":"m","content":"x","metadata":{"a":[1,2],"b":1.0,"c":null,"d":7,"e":"s","f":true,"g":-0.035}})");
}

TEST_CASE("escaping: quotes, backslashes, control characters and Chinese text round-trip") {
  memory_record r;
  r.id = "e";
  r.content = std::string("say \"hi\" \\ back\n\t\x01\x1f end 我不再吃香菜 \xF0\x9F\x8D\x9C");
  const std::string expected =
      "{\"id\":\"e\",\"content\":\"say \\\"hi\\\" \\\\ back\\n\\t\\u0001\\u001f end 我不再吃香菜 "
      "\xF0\x9F\x8D\x9C\"}";
  CHECK(to_json(r) == expected);
  auto res = parse_jsonl(expected);
  REQUIRE(res.issues.empty());
  CHECK(res.records[0].content == r.content);
  // \u escapes and \/ in input are decoded, then written canonically
  auto res2 = parse_jsonl(R"({"id":"e2","content":"\u6211 a\/b \u00e9"})");
  CHECK(res2.records[0].content == "我 a/b é");
}

TEST_CASE("floats written shortest round-trip read back bit-exactly") {
  std::mt19937 rng(12345);
  memory_record r;
  r.id = "f";
  for (int i = 0; i < 20000; ++i) {
    float f = std::bit_cast<float>(static_cast<std::uint32_t>(rng()));
    if (std::isnan(f)) f = 0.0f;
    r.embedding.push_back(f);
  }
  // edge values: subnormals, extremes, negative zero
  for (float f :
       {std::numeric_limits<float>::denorm_min(), -std::numeric_limits<float>::denorm_min(),
        std::numeric_limits<float>::min(), std::numeric_limits<float>::max(),
        std::numeric_limits<float>::lowest(), -0.0f, 16777217.0f, 0.3f})
    r.embedding.push_back(f);
  auto res = parse_jsonl(to_json(r));
  REQUIRE(res.issues.empty());
  REQUIRE(res.records[0].embedding.size() == r.embedding.size());
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i < r.embedding.size(); ++i)
    mismatches += !same_bits(res.records[0].embedding[i], r.embedding[i]);
  CHECK(mismatches == 0);
}

TEST_CASE("typical embedding values (the fast parsing path) read back bit-exactly") {
  std::mt19937_64 rng(777);
  memory_record r;
  r.id = "g";
  for (int i = 0; i < 50000; ++i) {
    // uniform in (-1, 1) and scaled down to 1e-6: what unit-norm embeddings hold
    const double u =
        static_cast<double>(static_cast<std::int64_t>(rng())) / 9.223372036854775807e18;
    r.embedding.push_back(static_cast<float>(u * std::pow(10.0, -static_cast<int>(rng() % 7))));
  }
  auto res = parse_jsonl(to_json(r));
  REQUIRE(res.records.size() == 1);
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i < r.embedding.size(); ++i)
    mismatches += !same_bits(res.records[0].embedding[i], r.embedding[i]);
  CHECK(mismatches == 0);
  // hand-written tokens: 0.1f is 0x3DCCCCCD, -2.5 is 0xC0200000, 3e-05f is 0x37FBA882
  auto h = parse_jsonl(R"({"id":"h","embedding":[0.1,-2.5e0,3e-05,0.0000300, -0]})");
  REQUIRE(h.records[0].embedding.size() == 5);
  CHECK(std::bit_cast<std::uint32_t>(h.records[0].embedding[0]) == 0x3DCCCCCDu);
  CHECK(std::bit_cast<std::uint32_t>(h.records[0].embedding[1]) == 0xC0200000u);
  CHECK(std::bit_cast<std::uint32_t>(h.records[0].embedding[2]) == 0x37FBA882u);
  CHECK(std::bit_cast<std::uint32_t>(h.records[0].embedding[3]) == 0x37FBA882u);
  CHECK(std::bit_cast<std::uint32_t>(h.records[0].embedding[4]) == 0x80000000u);
}

TEST_CASE("blank lines, CRLF line ends, a byte order mark and null fields") {
  auto res = parse_jsonl(
      "\xEF\xBB\xBF{\"id\":\"a\",\"content\":\"x\"}\r\n\r\n   "
      "\n{\"id\":\"b\",\"content\":\"y\",\"status\":null}\r\n");
  CHECK(res.issues.empty());
  CHECK(res.lines_read == 2);
  REQUIRE(res.records.size() == 2);
  CHECK(res.records[1].status.empty());
}

TEST_CASE("lines that are not one JSON object are skipped and reported") {
  auto res = parse_jsonl(
      "not json\n{\"id\":\"a\",\"content\":\"x\"} trailing\n{\"id\":\"b\",\"x\":[tru]}\n\"str\"\n");
  CHECK(res.records.empty());
  REQUIRE(res.issues.size() == 4);
  for (std::size_t i = 0; i < 4; ++i) {
    CHECK(res.issues[i].line == i + 1);
    CHECK(!res.issues[i].record_kept);
  }
}

TEST_CASE("streaming: read_jsonl_each hands over the same records, a line longer than the buffer") {
  const auto dir = scratch_dir() / "stream";
  std::filesystem::create_directories(dir);
  const auto path = dir / "long.jsonl";
  const std::string big(5u << 20, 'x');  // 5 MiB content: longer than the 4 MiB read buffer
  {
    std::ofstream f(path, std::ios::binary);
    f << R"({"id":"s1","content":"a"})"
      << "\n"
      << R"({"id":"s2","content":")" << big << R"("})"
      << "\n"
      << "oops\n"
      << R"({"id":"s3","content":"c"})";  // no final newline
  }
  auto all = read_jsonl(path);
  REQUIRE(all.records.size() == 3);
  CHECK(all.records[1].content.size() == big.size());
  REQUIRE(all.issues.size() == 1);
  CHECK(all.issues[0].line == 3);
  std::vector<std::string> ids;
  auto streamed = read_jsonl_each(path, [&](memory_record&& r) { ids.push_back(r.id); });
  CHECK(ids == std::vector<std::string>{"s1", "s2", "s3"});
  CHECK(streamed.records.empty());
  CHECK(streamed.lines_read == 4);
  REQUIRE(streamed.issues.size() == 1);
  CHECK(streamed.issues[0].line == 3);
  std::filesystem::remove_all(dir);
}

TEST_CASE("read_jsonl throws error(io) for a path it cannot read") {
  auto code_of = [](const std::filesystem::path& p) {
    try {
      (void)read_jsonl(p);
    } catch (const error& e) {
      return static_cast<int>(e.code());
    }
    return 0;
  };
  CHECK(code_of("/nonexistent-memhealth-dir/none.jsonl") == static_cast<int>(error_code::io));
  CHECK(code_of(scratch_dir()) == static_cast<int>(error_code::io));  // a directory
}

TEST_CASE("write_jsonl writes atomically and round-trips, the store overload writes the block") {
  const auto dir = scratch_dir();
  const auto path = dir / "out.jsonl";
  std::vector<memory_record> recs{full_record(), full_record()};
  recs[1].id = "m-2";
  recs[1].embedding = {1.0f, 2.0f, 3.0f, 4.0f, 5.0f};
  write_jsonl(path, recs);
  CHECK(slurp(path) == to_jsonl(recs));
  auto res = read_jsonl(path);
  CHECK(res.issues.empty());
  CHECK(to_jsonl(res.records) == slurp(path));

  // the store moves embeddings into its block; writing must take them from there
  const auto store = memory_store<memory_record>::from_records(recs);
  REQUIRE(store.record(1).embedding.empty());
  const auto store_path = dir / "store.jsonl";
  write_jsonl(store_path, store);
  CHECK(slurp(store_path) == to_jsonl(recs));
  CHECK(to_jsonl(store) == to_jsonl(recs));

  // no temporary file is left behind
  std::size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) files += e.is_regular_file();
  CHECK(files == 2);

  int code = 0;
  try {
    write_jsonl(dir / "missing-subdir" / "x.jsonl", recs);
  } catch (const error& e) {
    code = static_cast<int>(e.code());
  }
  CHECK(code == static_cast<int>(error_code::io));
  std::filesystem::remove_all(dir);
}

TEST_CASE("the known-length float path: hand-rounded tokens, and agreement with std::from_chars") {
  using detail::json_text::parse_float_token_fast;
  // bits worked out with exact rational arithmetic (round half to even) in a one-off script
  const std::pair<std::string, std::uint32_t> cases[] = {
      {"0.1", 0x3DCCCCCDu},         {"-0.0121343415", 0xBC46CF1Eu},
      {"0.085768856", 0x3DAFA795u}, {"-0.0006540996", 0xBA2B77E2u},
      {"0.5", 0x3F000000u},         {"0.7071067811865476", 0x3F3504F3u},
      {"-0.0000001", 0xB3D6BF95u}};
  for (const auto& c : cases) {
    const std::string& tok = c.first;
    const std::uint32_t bits = c.second;
    CAPTURE(tok);
    std::string padded = tok + std::string(32, '\0');  // the parser may read 16 bytes past the end
    const char* end = padded.data() + tok.size();
    float f = 0;
    const char* q = parse_float_token_fast(padded.data(), end, f);
    REQUIRE(q == end);
    CHECK(std::bit_cast<std::uint32_t>(f) == bits);
  }
  // tokens it must decline or reject (nullptr, or not the whole token): the general loop decides
  for (std::string tok : {"0.12a4", "0.", "0.1e5", "00.5", "0.12345678901234567"}) {
    CAPTURE(tok);
    std::string padded = tok + std::string(32, '\0');
    float f = 0;
    CHECK(parse_float_token_fast(padded.data(), padded.data() + tok.size(), f) !=
          padded.data() + tok.size());
  }
  // shortest round-trip texts of floats of every magnitude in (1e-9, 1), and 16-digit texts of
  // float midpoints (the hardest cases for the rounding check): whenever the fast path accepts a
  // token, its float equals std::from_chars'
  std::mt19937_64 rng(4242);
  std::size_t accepted = 0, total = 0, mismatches = 0;
  char buf[64];
  for (int i = 0; i < 200000; ++i) {
    const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
    const float x =
        static_cast<float>((rng() & 1 ? -u : u) * std::pow(10.0, -static_cast<int>(rng() % 9)));
    std::string tok;
    if (i % 2 == 0) {
      tok.assign(buf, std::to_chars(buf, buf + 64, x, std::chars_format::fixed).ptr);
    } else {  // the midpoint between |x| and the next float up, written with 16 fraction digits
      const float ax = std::fabs(x);
      const double mid =
          (static_cast<double>(ax) + static_cast<double>(std::nextafter(ax, 1.0f))) / 2;
      tok.assign(buf, std::to_chars(buf, buf + 64, mid, std::chars_format::fixed, 16).ptr);
    }
    std::string padded = tok + std::string(32, '\0');
    const char* end = padded.data() + tok.size();
    float fast = 0, ref = 0;
    ++total;
    if (parse_float_token_fast(padded.data(), end, fast) != end) continue;
    ++accepted;
    std::from_chars(padded.data(), end, ref);
    mismatches += !same_bits(fast, ref);
  }
  CHECK(mismatches == 0);
  CHECK(accepted > total * 3 / 4);  // the path is exercised, not declined wholesale
}

namespace {

bool same_result(const load_result& a, const load_result& b) {
  if (a.lines_read != b.lines_read || a.records.size() != b.records.size() ||
      a.issues.size() != b.issues.size())
    return false;
  for (std::size_t i = 0; i < a.issues.size(); ++i) {
    const auto &x = a.issues[i], &y = b.issues[i];
    if (x.file != y.file || x.line != y.line || x.field != y.field || x.reason != y.reason ||
        x.record_kept != y.record_kept)
      return false;
  }
  return to_jsonl(a.records) == to_jsonl(b.records);
}

}  // namespace

TEST_CASE(
    "parallel reading gives exactly the sequential result, for any thread count and piece size") {
  // 300 lines: records with embeddings of 0..40 values, blank and whitespace-only lines, CRLF
  // ends, lines that are not JSON, a wrong-typed field; a byte order mark first; no final newline.
  std::mt19937 rng(99);
  std::string text = "\xEF\xBB\xBF";
  std::vector<std::size_t> skipped_lines, wrong_type_lines;  // 1-based, counted while writing
  std::size_t records = 0, non_blank = 0;
  for (std::size_t line = 1; line <= 300; ++line) {
    const unsigned kind = rng() % 10;
    if (kind == 0) {
      text += (line % 2 ? "" : "   \t");
    } else if (kind == 1) {
      text += "{\"id\":\"broken\",";
      skipped_lines.push_back(line);
      ++non_blank;
    } else {
      memory_record r;
      r.id = "r" + std::to_string(line);
      r.content = std::string(rng() % 50, 'c');
      for (unsigned j = rng() % 41; j > 0; --j)
        r.embedding.push_back(static_cast<float>(static_cast<int>(rng() % 20001) - 10000) /
                              12345.0f);
      std::string json = to_json(r);
      if (kind == 2) {
        json.insert(json.size() - 1, ",\"status\":7");
        wrong_type_lines.push_back(line);
      }
      text += json;
      ++records;
      ++non_blank;
    }
    if (line < 300) text += (rng() % 3 == 0 ? "\r\n" : "\n");
  }
  load_options seq;
  seq.threads = 1;
  const load_result expected = parse_jsonl(text, "t.jsonl", seq);
  // the sequential result itself, against what was written
  REQUIRE(expected.records.size() == records);
  CHECK(expected.lines_read == non_blank);
  std::vector<std::size_t> skipped, wrong;
  for (const auto& is : expected.issues) (is.record_kept ? wrong : skipped).push_back(is.line);
  CHECK(skipped == skipped_lines);
  CHECK(wrong == wrong_type_lines);

  const auto dir = scratch_dir() / "parallel";
  std::filesystem::create_directories(dir);
  const auto path = dir / "t.jsonl";
  {
    std::ofstream f(path, std::ios::binary);
    f << text;
  }
  load_options file_seq = seq;
  const load_result expected_file = read_jsonl(path, file_seq);
  CHECK(same_result(expected_file, read_jsonl(path, file_seq)));
  REQUIRE(expected_file.issues.size() == expected.issues.size());
  for (unsigned threads : {1u, 2u, 3u, 7u}) {
    for (std::size_t piece : {std::size_t{1}, std::size_t{100}, std::size_t{777}, std::size_t{5000},
                              std::size_t{1} << 20}) {
      CAPTURE(threads);
      CAPTURE(piece);
      load_options opt;
      opt.threads = threads;
      opt.piece_bytes = piece;
      CHECK(same_result(parse_jsonl(text, "t.jsonl", opt), expected));
      CHECK(same_result(read_jsonl(path, opt), expected_file));
      load_result streamed;
      auto res = read_jsonl_each(
          path, opt, [&](memory_record&& r) { streamed.records.push_back(std::move(r)); });
      streamed.issues = std::move(res.issues);
      streamed.lines_read = res.lines_read;
      CHECK(same_result(streamed, expected_file));
    }
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("parallel streaming: an exception from the callback stops the workers and propagates") {
  std::string text;
  for (int i = 0; i < 2000; ++i)
    text += "{\"id\":\"x" + std::to_string(i) + "\",\"embedding\":[0.5,0.25]}\n";
  const auto dir = scratch_dir() / "throwing";
  std::filesystem::create_directories(dir);
  const auto path = dir / "t.jsonl";
  {
    std::ofstream f(path, std::ios::binary);
    f << text;
  }
  load_options opt;
  opt.threads = 3;
  opt.piece_bytes = 200;  // about 6 records a piece, so many pieces are in flight
  std::size_t seen = 0;
  bool thrown = false;
  try {
    (void)read_jsonl_each(path, opt, [&](memory_record&& r) {
      if (++seen == 500) throw std::runtime_error("stop at " + r.id);
    });
  } catch (const std::runtime_error& e) {
    thrown = true;
    CHECK(std::string(e.what()) == "stop at x499");
  }
  CHECK(thrown);
  CHECK(seen == 500);
  // an unreadable path is still error(io) on the parallel path
  int code = 0;
  try {
    (void)read_jsonl(dir, opt);  // a directory
  } catch (const error& e) {
    code = static_cast<int>(e.code());
  }
  CHECK(code == static_cast<int>(error_code::io));
  std::filesystem::remove_all(dir);
}

// ------------------------------------------------------------------ atomic_write
// (io/atomic_write.hpp)

namespace {
// Names in `dir` other than `keep` (a leftover temporary file would show up here).
std::vector<std::string> entries_except(const std::filesystem::path& dir, const std::string& keep) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().filename() != keep) out.push_back(e.path().filename().string());
  return out;
}
}  // namespace

TEST_CASE("atomic_write replaces the content whole and leaves no temporary file") {
  const auto dir = scratch_dir() / "atomic";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const auto target = dir / "out.txt";
  atomic_write(target, std::string_view("first version, longer than the second\n"));
  CHECK(slurp(target) == "first version, longer than the second\n");
  atomic_write(target, std::string_view("second\n"));  // shorter: nothing of the first is left
  CHECK(slurp(target) == "second\n");
  // Chunked form: flush() mid-way and the rest at the end give the concatenation, 7 + 5 bytes.
  atomic_write(target, [](std::string& buf, auto& flush) {
    buf += "chunk1\n";
    flush();
    buf += "tail\n";
  });
  CHECK(slurp(target) == "chunk1\ntail\n");
  CHECK(entries_except(dir, "out.txt").empty());
  std::filesystem::remove_all(dir);
}

TEST_CASE("atomic_write failures throw error(io) with the path and leave the original untouched") {
  const auto dir = scratch_dir() / "atomic_fail";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const auto target = dir / "keep.txt";
  atomic_write(target, std::string_view("original\n"));

  SUBCASE("a directory that does not exist") {
    const auto missing = dir / "no_such_dir" / "x.txt";
    try {
      atomic_write(missing, std::string_view("data"));
      FAIL("atomic_write into a missing directory did not throw");
    } catch (const error& e) {
      CHECK(e.code() == error_code::io);
      CHECK(std::string(e.what()).find("no_such_dir") != std::string::npos);
    }
    CHECK_FALSE(std::filesystem::exists(dir / "no_such_dir"));
  }
  SUBCASE("the content producer throws: the old file stays, the temporary file is removed") {
    CHECK_THROWS_AS(atomic_write(target,
                                 [](std::string& buf, auto& flush) {
                                   buf += "partial";
                                   flush();
                                   throw std::runtime_error("producer failed");
                                 }),
                    std::runtime_error);
  }
  SUBCASE("a read-only directory (skipped as root, who may write anyway)") {
    if (::geteuid() != 0) {
      std::filesystem::permissions(
          dir, std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
      CHECK_THROWS_AS(atomic_write(target, std::string_view("new\n")), error);
      std::filesystem::permissions(dir, std::filesystem::perms::owner_all);
    }
  }
  CHECK(slurp(target) == "original\n");
  CHECK(entries_except(dir, "keep.txt").empty());
  std::filesystem::remove_all(dir);
}

TEST_CASE(
    "temporary files: recognisable names, a signal-safe registry, stale ones of dead processes") {
  const auto dir = scratch_dir() / "temporaries";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string pid = std::to_string(::getpid());

  // .memhealth-tmp-<pid>-<n>-<name>, in the target's directory, n counting up
  const auto a = temp_path_for(dir / "store.jsonl");
  const auto b = temp_path_for(dir / "store.jsonl");
  CHECK(a.parent_path() == dir);
  CHECK(a.filename().string().starts_with(".memhealth-tmp-" + pid + "-"));
  CHECK(a.filename().string().ends_with("-store.jsonl"));
  CHECK(a != b);
  CHECK(temp_file_pid(a.filename().string()) == ::getpid());
  CHECK(temp_file_pid(".memhealth-tmp-123-0-x") == 123);
  CHECK(temp_file_pid(".memhealth-tmp--0-x") == -1);
  CHECK(temp_file_pid(".memhealth-tmp-123") == -1);
  CHECK(temp_file_pid("store.jsonl") == -1);

  // registry: add, contains, unlink_all removes the file, remove frees the slot
  const std::size_t before = live_temporaries::count();
  { std::ofstream(a) << "partial"; }
  const int slot = live_temporaries::add(a);
  REQUIRE(slot >= 0);
  CHECK(live_temporaries::contains(a));
  CHECK(live_temporaries::count() == before + 1);
  // a registered temporary of this process is not stale
  CHECK(stale_temporaries(dir).empty());
  live_temporaries::unlink_all();
  CHECK_FALSE(std::filesystem::exists(a));
  live_temporaries::remove(slot);
  CHECK_FALSE(live_temporaries::contains(a));
  CHECK(live_temporaries::count() == before);
  {
    temp_registration r(b);
    CHECK(live_temporaries::contains(b));
  }
  CHECK_FALSE(live_temporaries::contains(b));

  // stale: a dead pid (above any pid_max) and this pid unregistered (a previous process with
  // the same pid) are removed; pid 1 (alive) is kept; other names are not touched
  const auto dead = dir / ".memhealth-tmp-99999999-0-a.json";
  const auto mine = dir / (".memhealth-tmp-" + pid + "-999-b.json");
  const auto live = dir / ".memhealth-tmp-1-0-c.json";
  const auto other = dir / "memhealth-tmp-99999999-0-d.json";
  for (const auto& p : {dead, mine, live, other}) std::ofstream(p) << "x";
  const auto found = remove_stale_temporaries(dir);
  REQUIRE(found.size() == 3);  // sorted by path: -1-, -<pid>-, -99999999-
  CHECK(found[0].path == live);
  CHECK(found[0].alive);
  CHECK_FALSE(found[0].removed);
  CHECK(found[1].path == mine);
  CHECK(found[1].removed);
  CHECK(found[2].path == dead);
  CHECK(found[2].pid == 99999999);
  CHECK(found[2].removed);
  CHECK(std::filesystem::exists(live));
  CHECK(std::filesystem::exists(other));
  CHECK_FALSE(std::filesystem::exists(dead));
  CHECK_FALSE(std::filesystem::exists(mine));

  // atomic_write's temporary is registered while it exists and gone afterwards
  const auto target = dir / "out.json";
  atomic_write(target, [&](std::string& buf, auto& flush) {
    buf += "{";
    flush();
    CHECK(live_temporaries::count() == before + 1);
    CHECK(stale_temporaries(dir).size() == 1);  // only pid 1's: our own is registered
    buf += "}";
  });
  CHECK(slurp(target) == "{}");
  CHECK(live_temporaries::count() == before);
  std::filesystem::remove_all(dir);
}

// atomic_write through the simulated file system of tests/sim_file_io.hpp: power lost after
// every step, and failures injected at every step.

namespace {
// The old file: 1,300 bytes of 'o' (two full 512-byte sectors and part of a third).
const std::string old_bytes(1300, 'o');
// The new file, flushed in chunks of 100, 700, 1, 1500, 333 and 512 bytes (the writes start and
// end inside sectors and one spans three), chunk i filled with 'A' + i: 3,146 bytes that differ
// from the old file at every offset, so any mix of the two is neither.
constexpr std::size_t new_chunks[] = {100, 700, 1, 1500, 333, 512};
std::string new_bytes() {
  std::string s;
  for (std::size_t i = 0; i < std::size(new_chunks); ++i)
    s.append(new_chunks[i], static_cast<char>('A' + i));
  return s;
}
void write_new(const std::filesystem::path& target, file_io* io) {
  atomic_write(
      target,
      [](std::string& buf, auto& flush) {
        for (std::size_t i = 0; i < std::size(new_chunks); ++i) {
          buf.append(new_chunks[i], static_cast<char>('A' + i));
          if (i + 1 < std::size(new_chunks)) flush();  // the last chunk is written on return
        }
      },
      io);
}
}  // namespace

TEST_CASE("atomic_write with power lost after every step: the old bytes or the new, never a mix") {
  using test::sim_file_io;
  const std::string target = "sim/store.jsonl";
  const std::string fresh = new_bytes();
  REQUIRE(fresh.size() == 3146);
  sim_file_io io;
  atomic_write(target, std::string_view(old_bytes), &io);
  const std::size_t start = io.ops.size();
  write_new(target, &io);
  const std::size_t end = io.ops.size();
  // the old file: create the temporary, one write, sync, rename, sync the directory (5 ops);
  // the new one: create, 6 writes (one per chunk), sync, rename, sync the directory (10 ops)
  CHECK(start == 5);
  CHECK(end - start == 10);
  auto first = [&](sim_file_io::op::kind_t kind, std::size_t from) {  // index of the first such op
    std::size_t i = from;
    while (i < end && io.ops[i].kind != kind) ++i;
    return i;
  };
  // a power loss after the first n ops has the rename among them from n = renamed + 1 on
  const std::size_t renamed_old = first(sim_file_io::op::rename, 0);
  const std::size_t renamed = first(sim_file_io::op::rename, start);
  CHECK(renamed_old == 3);
  CHECK(renamed == start + 8);

  std::map<sim_file_io::loss, std::size_t> crashes;
  std::size_t old_seen = 0, new_seen = 0, stale_temporaries_seen = 0;
  for (std::size_t n = 0; n <= end; ++n) {
    for (auto how : {sim_file_io::loss::keep_all, sim_file_io::loss::drop_unsynced,
                     sim_file_io::loss::torn, sim_file_io::loss::reorder}) {
      const bool random = how == sim_file_io::loss::torn || how == sim_file_io::loss::reorder;
      for (unsigned seed = 0; seed < (random ? 40u : 1u); ++seed) {
        std::mt19937 rng(seed * 1009u + static_cast<unsigned>(n));
        const std::map<std::string, std::string> disk = io.disk_after_power_loss(n, how, rng);
        ++crashes[how];
        CAPTURE(n);
        CAPTURE(static_cast<int>(how));
        CAPTURE(seed);
        for (const auto& [name, bytes] : disk)  // nothing else on the disk but temporaries
          if (name != target) {
            CHECK(name.starts_with("sim/.memhealth-tmp-"));
            ++stale_temporaries_seen;
          }
        const auto it = disk.find(target);
        if (n < start) {  // during the first write: no file yet, or the whole old one
          if (it != disk.end()) CHECK(it->second == old_bytes);
          if (how == sim_file_io::loss::keep_all) CHECK((it != disk.end()) == (n > renamed_old));
          if (how == sim_file_io::loss::drop_unsynced) CHECK(it == disk.end());
          continue;
        }
        REQUIRE(it != disk.end());
        const std::string& got = it->second;
        CHECK((got == old_bytes || got == fresh));
        old_seen += got == old_bytes;
        new_seen += got == fresh;
        if (n == end) CHECK(got == fresh);  // atomic_write returned: the new bytes are durable
        if (how == sim_file_io::loss::keep_all) CHECK(got == (n > renamed ? fresh : old_bytes));
        if (how == sim_file_io::loss::drop_unsynced)  // the rename needs the directory sync
          CHECK(got == (n == end ? fresh : old_bytes));
      }
    }
  }
  const std::size_t total = crashes[sim_file_io::loss::keep_all] +
                            crashes[sim_file_io::loss::drop_unsynced] +
                            crashes[sim_file_io::loss::torn] + crashes[sim_file_io::loss::reorder];
  MESSAGE("atomic_write power-loss crashes: keep_all "
          << crashes[sim_file_io::loss::keep_all] << ", drop_unsynced "
          << crashes[sim_file_io::loss::drop_unsynced] << ", torn "
          << crashes[sim_file_io::loss::torn] << ", reorder " << crashes[sim_file_io::loss::reorder]
          << ", total " << total);
  CHECK(total == 16 * (1 + 1 + 40 + 40));  // 1,312 crashes at 16 points
  CHECK(old_seen > 0);  // both outcomes occur among the random crashes after the rename
  CHECK(new_seen > 0);
  CHECK(stale_temporaries_seen > 0);

  // The simulator does catch the classic bug: rename without syncing the file first. Power lost
  // after the directory sync leaves an empty file under the target name (drop_unsynced).
  sim_file_io naive;
  atomic_write(target, std::string_view(old_bytes), &naive);
  const int h = naive.open_new("sim/tmp");
  REQUIRE(naive.write(h, fresh.data(), fresh.size()) == static_cast<ssize_t>(fresh.size()));
  naive.close(h);
  REQUIRE(naive.rename("sim/tmp", target) == 0);
  naive.sync_directory("sim");
  std::mt19937 rng(1);
  CHECK(naive.after_power_loss(target, naive.ops.size(), sim_file_io::loss::keep_all, rng) ==
        fresh);
  CHECK(naive.after_power_loss(target, naive.ops.size(), sim_file_io::loss::drop_unsynced, rng)
            .empty());
}

TEST_CASE("atomic_write with I/O errors injected: error(io) naming the path, nothing changed") {
  using test::sim_file_io;
  const std::string target = "sim/store.jsonl";
  const std::string pid = std::to_string(::getpid());
  const std::string temporary = "'sim/.memhealth-tmp-" + pid + "-";  // then <n>-store.jsonl'
  struct fault {
    const char* name;
    int err;
    const char* reason;   // strerror(err) in glibc
    bool on_target;       // the message names the target, else the temporary file
    std::size_t written;  // writes that succeed (chunks that reach the temporary file)
  };
  const fault faults[] = {
      {"ENOSPC on the third write", ENOSPC, "No space left on device", false, 2},
      {"EIO on the first write", EIO, "Input/output error", false, 0},
      {"EIO on fsync", EIO, "Input/output error", false, 6},
      {"the rename fails", EXDEV, "Invalid cross-device link", true, 6},
      {"a read-only directory", EACCES, "Permission denied", false, 0},
  };
  for (const fault& f : faults) {
    CAPTURE(f.name);
    sim_file_io io;
    atomic_write(target, std::string_view(old_bytes), &io);
    const std::size_t start = io.ops.size();  // 5: create, write, sync, rename, sync dir
    const std::size_t writes = io.writes, live = live_temporaries::count();
    const std::string what = f.name;
    if (what.starts_with("ENOSPC") || what == "EIO on the first write") {
      io.fail_write_at = writes + f.written;
      io.fail_errno = f.err;
    } else if (what == "EIO on fsync") {
      io.fail_sync_at = io.syncs;
      io.fail_errno = f.err;
    } else if (what == "the rename fails") {
      io.fail_rename_errno = f.err;
    } else {
      io.read_only_dirs.insert("sim");
    }
    try {
      write_new(target, &io);
      FAIL("atomic_write did not throw");
    } catch (const error& e) {
      const std::string msg = e.what();
      CAPTURE(msg);
      CHECK(e.code() == error_code::io);
      CHECK(msg.find(f.reason) != std::string::npos);
      if (f.on_target) {
        CHECK(msg.find("'sim/store.jsonl'") != std::string::npos);
      } else {
        CHECK(msg.find(temporary) != std::string::npos);
        CHECK(msg.find("-store.jsonl'") != std::string::npos);
      }
    }
    CHECK(std::count_if(io.ops.begin() + start, io.ops.end(), [](const sim_file_io::op& o) {
            return o.kind == sim_file_io::op::write;
          }) == static_cast<std::ptrdiff_t>(f.written));
    CHECK(io.read_file(target) == old_bytes);
    CHECK(io.names() == std::vector<std::string>{target});  // no temporary left
    CHECK(live_temporaries::count() == live);
    std::mt19937 rng(7);  // and after a power loss too
    CHECK(io.after_power_loss(target, io.ops.size(), sim_file_io::loss::drop_unsynced, rng) ==
          old_bytes);
  }
}

TEST_CASE("read_whole_file refuses a directory instead of reading it as empty") {
  const auto dir = scratch_dir() / "a_directory";
  std::filesystem::create_directories(dir);
  try {
    (void)detail::read_whole_file(dir);
    FAIL("read_whole_file read a directory");
  } catch (const error& e) {
    CHECK(e.code() == error_code::io);
    CHECK(std::string(e.what()).find("is a directory") != std::string::npos);
  }
  std::filesystem::remove_all(dir);
}
}  // namespace io_test
