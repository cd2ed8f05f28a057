// Tests for similarity kernels, joins, blocking/LSH, union-find, information score, and the
// duplicate and conflict detectors. Expected values are worked out by hand (comments show how)
// or counted with one-off python3 scripts over the shared data (see the comments).
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <numbers>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "memhealth/detect/claim_judge.hpp"
#include "memhealth/detect/conflict_judge.hpp"
#include "memhealth/detect/conflicts.hpp"
#include "memhealth/detect/duplicates.hpp"
#include "memhealth/detect/information_score.hpp"
#include "memhealth/detect/pipeline.hpp"
#include "memhealth/detect/union_find.hpp"
#include "memhealth/embed/lexical_embedder.hpp"
#include "memhealth/similarity/blocking.hpp"
#include "memhealth/similarity/join.hpp"
#include "memhealth/similarity/kernels.hpp"
#include "memhealth/similarity/lsh.hpp"
#include "memhealth/store/memory_store.hpp"
#include "memhealth/store/subset_store.hpp"
#include "memhealth/text/normalize.hpp"

#include "test_data.hpp"

namespace detect_semantic_test {
namespace mh = memhealth;

namespace {

using pair_set = std::set<std::pair<std::uint32_t, std::uint32_t>>;

mh::row_matrix random_unit_rows(std::size_t n, std::size_t d, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> g(0.0f, 1.0f);
  mh::row_matrix x(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(d));
  for (Eigen::Index i = 0; i < x.rows(); ++i) {
    for (Eigen::Index j = 0; j < x.cols(); ++j) x(i, j) = g(gen);
    x.row(i).normalize();
  }
  return x;
}

// y = c x + sqrt(1 - c^2) z, z a unit vector orthogonal to unit x: cos(x, y) = c exactly.
Eigen::RowVectorXf planted(const Eigen::RowVectorXf& x, float c, std::mt19937& gen) {
  std::normal_distribution<float> g(0.0f, 1.0f);
  Eigen::RowVectorXf z(x.size());
  for (Eigen::Index j = 0; j < z.size(); ++j) z(j) = g(gen);
  z -= z.dot(x) * x;
  z.normalize();
  return c * x + std::sqrt(1.0f - c * c) * z;
}

mh::memory_record rec(std::string id, std::string content, std::vector<float> emb,
                      std::string scope, std::string status = "active") {
  mh::memory_record r;
  r.id = std::move(id);
  r.content = std::move(content);
  r.embedding = std::move(emb);
  r.scope = std::move(scope);
  r.status = std::move(status);
  r.source = "model_extracted";
  return r;
}

// A digit-free tag, unique for k < 676 ("xaa", "xab", ...; the "x" keeps it from being a word such
// as "no"): placeholder texts that differ by it stay near-duplicate candidates, where texts that
// differ by a number ("text 3" / "text 4") are kept apart by the duplicate guards
// (duplicate_guards.hpp: numbers differ).
std::string tag(std::size_t k) {
  return {'x', static_cast<char>('a' + k / 26 % 26), static_cast<char>('a' + k % 26)};
}

std::vector<float> unit(std::vector<float> v) {
  float s = 0;
  for (float x : v) s += x * x;
  for (float& x : v) x /= std::sqrt(s);
  return v;
}

std::vector<float> basis(std::size_t d, std::size_t k, float w0 = 1.0f, std::size_t k2 = 0,
                         float w2 = 0.0f) {
  std::vector<float> v(d, 0.0f);
  v[k] = w0;
  v[k2] += w2;
  return unit(v);
}

std::vector<mh::finding> of_kind(const mh::report& r, std::string_view kind) {
  std::vector<mh::finding> out;
  for (const auto& f : r.findings)
    if (f.kind == kind) out.push_back(f);
  return out;
}

double num(const mh::finding& f, std::string_view key) {
  const auto* v = f.evidence_of(key);
  REQUIRE(v != nullptr);
  if (const auto* d = std::get_if<double>(v)) return *d;
  return static_cast<double>(std::get<std::int64_t>(*v));
}

std::string text(const mh::finding& f, std::string_view key) {
  const auto* v = f.evidence_of(key);
  REQUIRE(v != nullptr);
  return std::get<std::string>(*v);
}

}  // namespace

// ------------------------------------------------------------------------------------ kernels

TEST_CASE("kernels: scalar values") {
  // a = (1,0), b = (0.6,0.8): a.b = 0.6; |a-b|^2 = 0.16 + 0.64 = 0.8
  const std::vector<float> a{1.0f, 0.0f}, b{0.6f, 0.8f};
  CHECK(mh::cosine_kernel{}(a, b) == doctest::Approx(0.6));
  CHECK(mh::l2_kernel{}(a, b) == doctest::Approx(-0.8));
  CHECK(mh::l2_kernel::from_cosine(0.6f) == doctest::Approx(-0.8));
  // (1,2,3).(4,5,6) = 4 + 10 + 18 = 32; cosine = 32 / (sqrt(14) sqrt(77)) = 0.974632
  const std::vector<float> u{1, 2, 3}, v{4, 5, 6};
  CHECK(mh::inner_product_kernel{}(u, v) == doctest::Approx(32.0));
  CHECK(mh::cosine_kernel::cosine_of(u, v) == doctest::Approx(0.974632).epsilon(1e-5));
  CHECK_THROWS_AS((void)mh::cosine_kernel{}(a, u), mh::error);
}

TEST_CASE("kernels: tile form writes into a preallocated buffer") {
  mh::row_matrix A(2, 3), B(3, 3);
  A << 1, 2, 3, 0, 1, 0;
  B << 4, 5, 6, 1, 0, 0, 0, 0, 2;
  mh::row_matrix buf(4, 4);
  buf.setConstant(99);
  mh::inner_product_kernel{}.tile(A, B, buf.topLeftCorner(2, 3));
  // row 0: (32, 1, 6); row 1: (5, 0, 0)
  CHECK(buf(0, 0) == 32);
  CHECK(buf(0, 1) == 1);
  CHECK(buf(0, 2) == 6);
  CHECK(buf(1, 0) == 5);
  CHECK(buf(1, 2) == 0);
  CHECK(buf(3, 3) == 99);  // outside the tile untouched
  mh::l2_kernel{}.tile(A, B, buf.topLeftCorner(2, 3));
  // -|a-b|^2: (1,2,3)-(4,5,6) -> 27; (1,2,3)-(1,0,0) -> 13; (0,1,0)-(0,0,2) -> 5
  CHECK(buf(0, 0) == doctest::Approx(-27));
  CHECK(buf(0, 1) == doctest::Approx(-13));
  CHECK(buf(1, 2) == doctest::Approx(-5));
}

// ------------------------------------------------------------------------------------ joins

TEST_CASE("threshold_join: hand-made vectors with known cosines") {
  // unit vectors at angles 0, 10, 30, 90, 180 degrees: cos(0,10)=0.9848, cos(10,30)=0.9397,
  // cos(0,30)=0.8660, cos(30,90)=0.5, everything else lower.
  const double deg[] = {0, 10, 30, 90, 180};
  mh::row_matrix X(5, 2);
  for (int i = 0; i < 5; ++i)
    X.row(i) << static_cast<float>(std::cos(deg[i] * std::numbers::pi / 180)),
        static_cast<float>(std::sin(deg[i] * std::numbers::pi / 180));
  for (Eigen::Index tile : {1, 2, 3, 512}) {
    CAPTURE(tile);
    auto p = mh::threshold_join_pairs(X, 0.9f, {.tile = tile});
    REQUIRE(p.size() == 2);
    CHECK((p[0].i == 0 && p[0].j == 1));
    CHECK(p[0].score == doctest::Approx(0.984808).epsilon(1e-5));
    CHECK((p[1].i == 1 && p[1].j == 2));
    CHECK(p[1].score == doctest::Approx(0.939693).epsilon(1e-5));
    auto q = mh::threshold_join_pairs(X, 0.45f, {.tile = tile});
    REQUIRE(q.size() == 4);  // (0,1) (0,2) (1,2) (2,3)
    CHECK((q[1].i == 0 && q[1].j == 2));
    CHECK((q[3].i == 2 && q[3].j == 3));
    CHECK(q[3].score == doctest::Approx(0.5).epsilon(1e-5));
  }
  CHECK(mh::threshold_join_pairs(X, 1.5f).empty());
  CHECK(mh::threshold_join_pairs(mh::row_matrix(0, 2), 0.0f).empty());
  CHECK_THROWS_AS((void)mh::threshold_join_pairs(X, 0.5f, {.tile = 0}), mh::error);
}

TEST_CASE("threshold_join: tiled result equals a brute-force double loop (n=700)") {
  const std::size_t n = 700, d = 32;
  const auto X = random_unit_rows(n, d, 7);
  const float t = 0.5f;
  // sure: s >= t + 1e-5 (must be found); possible: s >= t - 1e-5 (may be found: float GEMM
  // rounding differs from this double loop only within 1e-5 of t)
  pair_set sure, possible;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = i + 1; j < n; ++j) {
      double s = 0;
      for (std::size_t k = 0; k < d; ++k) s += static_cast<double>(X(i, k)) * X(j, k);
      if (s >= t + 1e-5) sure.emplace(i, j);
      if (s >= t - 1e-5) possible.emplace(i, j);
    }
  REQUIRE(sure.size() > 50);
  REQUIRE(possible.size() - sure.size() <= 2);
  auto between = [&](const pair_set& got) {
    return std::includes(got.begin(), got.end(), sure.begin(), sure.end()) &&
           std::includes(possible.begin(), possible.end(), got.begin(), got.end());
  };
  for (Eigen::Index tile : {1, 64, 100, 333, 512, 699, 700, 1000})
    for (unsigned threads : {1u, 2u}) {
      CAPTURE(tile);
      CAPTURE(threads);
      auto p = mh::threshold_join_pairs(X, t, {.tile = tile, .threads = threads});
      CHECK(std::is_sorted(p.begin(), p.end(), [](auto& a, auto& b) {
        return std::pair(a.i, a.j) < std::pair(b.i, b.j);
      }));
      pair_set got;
      for (auto& q : p) got.emplace(q.i, q.j);
      CHECK(got.size() == p.size());
      CHECK(between(got));
    }
  // l2 kernel at the equivalent threshold 2t - 2 finds the same pairs on unit rows
  auto l2 =
      mh::threshold_join_pairs(X, mh::l2_kernel::from_cosine(t), {.tile = 128}, mh::l2_kernel{});
  pair_set got;
  for (auto& q : l2) got.emplace(q.i, q.j);
  CHECK(between(got));
}

TEST_CASE("join: two-set variant equals brute force") {
  const auto A = random_unit_rows(300, 16, 11);
  const auto B = random_unit_rows(211, 16, 12);
  const float t = 0.6f;
  pair_set brute;
  for (Eigen::Index i = 0; i < A.rows(); ++i)
    for (Eigen::Index j = 0; j < B.rows(); ++j) {
      double s = 0;
      for (Eigen::Index k = 0; k < 16; ++k) s += static_cast<double>(A(i, k)) * B(j, k);
      REQUIRE(std::abs(s - t) > 1e-5);
      if (s >= t) brute.emplace(static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(j));
    }
  REQUIRE(brute.size() > 20);
  for (Eigen::Index tile : {7, 64, 512}) {
    auto p = mh::join_pairs(A, B, t, {.tile = tile, .threads = 2});
    pair_set got;
    for (auto& q : p) got.emplace(q.i, q.j);
    CHECK(got == brute);
    CHECK(std::is_sorted(p.begin(), p.end(), [](auto& a, auto& b) {
      return std::pair(a.i, a.j) < std::pair(b.i, b.j);
    }));
  }
}

// ------------------------------------------------------------------------------------ LSH

TEST_CASE("lsh: recall on 100 planted near-duplicate pairs (n=2000, d=64, cosine 0.95)") {
  const std::size_t n = 2000, d = 64;
  auto X = random_unit_rows(n, d, 2024);
  std::mt19937 gen(99);
  // rows 2k+1 = planted partner of row 2k for k < 100 (rows 0..199): 100 pairs at cosine 0.95
  for (Eigen::Index k = 0; k < 100; ++k) X.row(2 * k + 1) = planted(X.row(2 * k), 0.95f, gen);
  pair_set truth;
  for (std::uint32_t k = 0; k < 100; ++k) truth.emplace(2 * k, 2 * k + 1);
  // random pairs in d=64 have cosine sd 1/8, so nothing else reaches 0.9 (7 sd)
  const auto exact = mh::threshold_join_pairs(X, 0.9f);
  pair_set exact_set;
  for (auto& p : exact) exact_set.emplace(p.i, p.j);
  REQUIRE(exact_set == truth);
  for (auto& p : exact) CHECK(p.score == doctest::Approx(0.95).epsilon(1e-4));

  // defaults L=24, k=14: P(collide | cos 0.95) = 1 - (1 - 0.8989^14)^24 = 0.998
  pair_set lsh;
  mh::lsh_join(X, 0.9f, [&](std::uint32_t i, std::uint32_t j, float) { lsh.emplace(i, j); });
  std::size_t hit = 0;
  for (auto& p : lsh) {
    CHECK(truth.contains(p));  // verified: never a pair the exact join does not have
    hit += truth.contains(p);
  }
  const double recall = static_cast<double>(hit) / 100.0;
  MESSAGE("LSH recall (L=24, k=14) on planted cosine-0.95 pairs: " << recall);
  CHECK(recall >= 0.95);
  // the candidate set is a small fraction of the 1,999,000 pairs (expected ~0.15 % for random
  // pairs)
  const auto cand = mh::lsh_candidates(X);
  MESSAGE("LSH candidates verified: " << cand.size() << " of " << n * (n - 1) / 2);
  CHECK(cand.size() < n * (n - 1) / 2 / 100);
  // groups separate: putting every row in its own group leaves no candidates
  std::vector<std::uint32_t> own(n);
  for (std::uint32_t i = 0; i < n; ++i) own[i] = i;
  CHECK(mh::lsh_candidates(X, own).empty());
}

// ------------------------------------------------------------------------------------ union-find,
// score

TEST_CASE("union_find: unions, ranks, groups") {
  mh::union_find uf(6);
  CHECK(uf.unite(0, 3));
  CHECK(uf.unite(3, 5));
  CHECK_FALSE(uf.unite(5, 0));
  CHECK(uf.unite(1, 2));
  CHECK(uf.same(0, 5));
  CHECK_FALSE(uf.same(0, 1));
  const auto g = uf.groups(2);
  REQUIRE(g.size() == 2);
  CHECK(g[0] == std::vector<std::size_t>{0, 3, 5});
  CHECK(g[1] == std::vector<std::size_t>{1, 2});
  CHECK(uf.groups().size() == 3);  // {0,3,5} {1,2} {4}
  CHECK_THROWS_AS(uf.find(6), mh::error);
}

TEST_CASE("information_score: formula and deterministic tie-break") {
  const mh::utc_time now = mh::timestamp_from_epoch_ms(1'700'000'000'000).instant;
  mh::memory_record a = rec("a", "abc", {}, "s");
  a.metadata["topic"] = std::string("food");
  a.metadata["lang"] = std::int64_t{1};
  a.metadata["empty"] = std::monostate{};
  a.metadata["blank"] = std::string();
  a.source = "user_declared";
  a.updated_at = mh::timestamp{now, 0};
  // log2(1+3) = 2; 2 filled keys * 0.5 = 1; user_declared 4; age 0 -> recency 1 => 8
  CHECK(mh::information_score(a, now) == doctest::Approx(8.0));
  mh::memory_record b = rec("b", "abcdefg", {}, "s");
  b.source = "model_extracted";
  b.updated_at = mh::timestamp{now - std::chrono::hours(24 * 30), 0};
  // log2(8) = 3; source 2; one half-life old -> 0.5 => 5.5
  CHECK(mh::information_score(b, now) == doctest::Approx(5.5));
  // Chinese text counts code points: "我不吃香菜" = 5 code points -> log2(6) = 2.585
  mh::memory_record c = rec("c", "我不吃香菜", {}, "s");
  c.source = "";
  CHECK(mh::information_score(c, now) == doctest::Approx(std::log2(6.0)));
  // ties: equal records differing only by id -> smaller id first
  auto store = mh::memory_store<>::from_records(
      {rec("zeta", "same", {}, "s"), rec("alpha", "same", {}, "s"), b});
  const std::vector<std::size_t> idx{0, 1, 2};
  const auto order = mh::order_by_information(store, idx, now);
  CHECK(order == std::vector<std::size_t>{2, 1, 0});
}

// ------------------------------------------------------------------------------------ duplicates

namespace {

// scope A: r1 "likes green tea" e0; r2 cos 0.9806 with r1; r3 cos 0.8944 with r1, 0.9648 with r2
//   (e0 + 0.2 e1 normalised: cos = 1/sqrt(1.04); e0 + 0.5 e1: cos = 1/sqrt(1.25);
//    r2.r3 = 1.1 / (sqrt(1.04) sqrt(1.25)))
// scope A: e1 "Never eats cilantro." vs e2 "never eats cilantro" (orthogonal embeddings) and e3
//   "NEVER eats cilantro!!" without embedding -> one exact cluster of 3
// scope B: r4 same vector as r1 but other text; r5 same text as r1 (cross-scope duplicate)
// scope A: archived copy of r1's text -> ignored for clusters
std::vector<mh::memory_record> dup_fixture() {
  const std::size_t d = 8;
  std::vector<mh::memory_record> v;
  v.push_back(rec("r1", "likes green tea", basis(d, 0), "A"));
  v.push_back(rec("r2", "likes green tea a lot", basis(d, 0, 1.0f, 1, 0.2f), "A"));
  v.push_back(rec("r3", "really likes green tea", basis(d, 0, 1.0f, 1, 0.5f), "A"));
  v[1].source = "user_declared";
  v.push_back(rec("e1", "Never eats cilantro.", basis(d, 3), "A"));
  v.push_back(rec("e2", "never eats cilantro", basis(d, 4), "A"));
  v.push_back(rec("e3", "NEVER eats cilantro!!", {}, "A"));
  v.push_back(rec("r4", "enjoys matcha", basis(d, 0), "B"));
  v.push_back(rec("r5", "Likes green tea", basis(d, 5), "B"));
  v.push_back(rec("old", "likes green tea", basis(d, 0), "A", "archived"));
  return v;
}

}  // namespace

TEST_CASE_TEMPLATE("duplicates: exact, near, clusters, cross-scope", Candidates,
                   mh::exact_all_pairs, mh::lsh_blocking, mh::key_blocking<>) {
  auto store = mh::memory_store<>::from_records(dup_fixture());
  mh::pipeline p{mh::duplicate_detector<Candidates>{}};
  const auto r = p.run(store, mh::detect_options{});

  const auto exact = of_kind(r, mh::finding_kinds::exact_duplicate);
  REQUIRE(exact.size() == 1);
  // e1/e2/e3 share normalised text "never eats cilantro"; same source, lengths 20/19/21 -> e3, e1,
  // e2
  CHECK(exact[0].record_ids == std::vector<std::string>{"e3", "e1", "e2"});
  CHECK(num(exact[0], "cluster_size") == 3);
  CHECK(text(exact[0], "scope") == "A");
  CHECK(num(exact[0], "max_cosine") == doctest::Approx(0.0));  // orthogonal vectors, still exact
  CHECK(exact[0].suggested_repair == "merge_duplicates");
  CHECK(exact[0].severity == mh::severity::warning);

  const auto near = of_kind(r, mh::finding_kinds::near_duplicate);
  REQUIRE(near.size() == 1);
  // scores: r1 log2(16)+2 = 6; r2 log2(22)+4 = 8.46; r3 log2(23)+2 = 6.52
  CHECK(near[0].record_ids == std::vector<std::string>{"r2", "r3", "r1"});
  CHECK(text(near[0], "primary_id") == "r2");
  CHECK(num(near[0], "min_cosine") == doctest::Approx(1.0 / std::sqrt(1.25)).epsilon(1e-4));
  CHECK(num(near[0], "max_cosine") == doctest::Approx(1.0 / std::sqrt(1.04)).epsilon(1e-4));

  const auto cross = of_kind(r, mh::finding_kinds::cross_scope_duplicate);
  REQUIRE(cross.size() == 1);
  // "likes green tea" in A (r1, archived "old") and B (r5)
  CHECK(cross[0].record_ids == std::vector<std::string>{"r1", "r5", "old"});
  CHECK(text(cross[0], "scopes") == "A, B");
  CHECK(cross[0].severity == mh::severity::error);

  const auto skipped = of_kind(r, mh::finding_kinds::check_skipped);
  REQUIRE(skipped.size() == 1);
  CHECK(skipped[0].record_ids == std::vector<std::string>{"e3"});
}

TEST_CASE("duplicates: cross-scope check can be switched off, threshold and window") {
  auto store = mh::memory_store<>::from_records(dup_fixture());
  {
    mh::pipeline p{mh::duplicate_detector<>{.threshold = 0.97f, .cross_scope_check = false}};
    const auto r = p.run(store, mh::detect_options{});
    CHECK(r.count(mh::finding_kinds::cross_scope_duplicate) == 0);
    // at 0.97 only r1-r2 (0.9806) remains
    const auto near = of_kind(r, mh::finding_kinds::near_duplicate);
    REQUIRE(near.size() == 1);
    CHECK(near[0].record_ids == std::vector<std::string>{"r2", "r1"});
  }
  {
    auto recs = dup_fixture();
    recs[0].created_at = mh::timestamp_from_epoch_ms(0);
    recs[1].created_at = mh::timestamp_from_epoch_ms(10LL * 86'400'000);  // 10 days later
    recs[2].created_at = mh::timestamp_from_epoch_ms(10LL * 86'400'000 + 1000);
    auto s2 = mh::memory_store<>::from_records(std::move(recs));
    mh::pipeline p{mh::duplicate_detector<>{.window = std::chrono::hours(24)}};
    const auto near = of_kind(p.run(s2, mh::detect_options{}), mh::finding_kinds::near_duplicate);
    REQUIRE(near.size() == 1);  // r1 is 10 days away from both: only r2-r3
    CHECK(near[0].record_ids == std::vector<std::string>{"r2", "r3"});
    // key_blocking with its own window gives the same
    mh::pipeline q{mh::duplicate_detector<mh::key_blocking<>>{
        .candidates = {.window = std::chrono::hours(24)}}};
    const auto near2 = of_kind(q.run(s2, mh::detect_options{}), mh::finding_kinds::near_duplicate);
    REQUIRE(near2.size() == 1);
    CHECK(near2[0].record_ids == std::vector<std::string>{"r2", "r3"});
  }
}

TEST_CASE("duplicates: no cluster spans two scopes (random planted data, 3 scopes)") {
  const std::size_t n = 600, d = 48;
  auto X = random_unit_rows(n, d, 5);
  std::mt19937 gen(17);
  // plant partners both inside and across scopes (scope = i % 3): row i+1 is in another scope
  for (Eigen::Index i = 0; i < 200; i += 2) X.row(i + 1) = planted(X.row(i), 0.97f, gen);
  for (Eigen::Index i = 300; i < 400; i += 2) X.row(i + 3) = planted(X.row(i), 0.97f, gen);
  std::vector<mh::memory_record> recs;
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<float> e(X.row(static_cast<Eigen::Index>(i)).data(),
                         X.row(static_cast<Eigen::Index>(i)).data() + d);
    recs.push_back(
        rec("id" + std::to_string(i), "text " + tag(i), e, "scope" + std::to_string(i % 3)));
  }
  auto store = mh::memory_store<>::from_records(recs);
  // expected: partners (i, i+3) share scope i % 3; (i, i+1) never do. i in 300..398 step 2: 50
  // pairs.
  mh::pipeline p{mh::duplicate_detector<>{}};
  const auto r = p.run(store, mh::detect_options{});
  const auto near = of_kind(r, mh::finding_kinds::near_duplicate);
  std::size_t members = 0;
  for (const auto& f : near) {
    std::set<std::string> scopes;
    for (const auto& id : f.record_ids) scopes.insert(store.record(*store.find(id)).scope);
    CHECK(scopes.size() == 1);
    members += f.record_ids.size();
  }
  CHECK(near.size() == 50);
  CHECK(members == 100);
}

TEST_CASE_TEMPLATE("duplicates: incremental mode reports pairs with a changed side", Candidates,
                   mh::exact_all_pairs, mh::lsh_blocking, mh::key_blocking<>) {
  const auto t0 = mh::timestamp_from_epoch_ms(1'000'000);
  const auto t1 = mh::timestamp_from_epoch_ms(2'000'000);
  auto recs = dup_fixture();
  for (auto& r : recs) r.updated_at = t0;
  auto store = mh::memory_store<>::from_records(recs);
  const mh::detect_options inc{.since = mh::timestamp_from_epoch_ms(1'500'000).instant};
  mh::pipeline p{mh::duplicate_detector<Candidates>{}};
  const auto r0 = p.run(store, inc);  // nothing changed since the cursor
  CHECK(r0.records_checked == 0);
  CHECK(r0.findings.empty());
  // a new copy of r3's vector arrives later: the cluster with the old members is reported
  auto nr = rec("new", "really likes green tea a lot", basis(8, 0, 1.0f, 1, 0.5f), "A");
  nr.updated_at = t1;
  store.insert(nr);
  const auto r1 = p.run(store, inc);
  CHECK(r1.records_checked == 1);
  const auto near = of_kind(r1, mh::finding_kinds::near_duplicate);
  REQUIRE(near.size() == 1);
  // pairs with a changed side: new-r3 (1.0), new-r2 (0.965); r1-r2 is old-old, so r1 stays out
  CHECK(near[0].record_ids == std::vector<std::string>{"r2", "new", "r3"});
  CHECK(r1.count(mh::finding_kinds::exact_duplicate) ==
        0);  // the unchanged exact cluster is not re-reported
  CHECK(r1.count(mh::finding_kinds::cross_scope_duplicate) == 0);
}

TEST_CASE("detectors: default deduction and the pipeline") {
  // clang 14 has no aggregate CTAD: the deduction guides make these spell as defaults
  mh::pipeline p{mh::duplicate_detector{}, mh::conflict_detector{}};
  static_assert(std::is_same_v<decltype(mh::duplicate_detector{}), mh::duplicate_detector<>>);
  static_assert(std::is_same_v<decltype(mh::conflict_detector{}), mh::conflict_detector<>>);
  static_assert(
      mh::detector_for<mh::duplicate_detector<>, mh::detection_context<mh::memory_store<>>>);
  auto store = mh::memory_store<>::from_records(dup_fixture());
  const auto r = p.run(store, mh::detect_options{});
  // duplicates: exact, near, cross-scope, check_skipped; conflicts: none in this fixture
  CHECK(r.findings.size() == 4);
  CHECK(r.count(mh::finding_kinds::conflict) == 0);
}

namespace user_ns {
// a user's own minimal record: no status, source, timestamps, kind or claim
struct note {
  std::string id, content, scope;
  std::vector<float> embedding;
};
}  // namespace user_ns

TEST_CASE("detectors work on a minimal user record type") {
  std::vector<user_ns::note> notes{{"n1", "I drink coffee", "s", basis(4, 0)},
                                   {"n2", "I don't drink coffee", "s", basis(4, 0, 1.0f, 1, 0.2f)},
                                   {"n3", "i drink coffee!", "s", basis(4, 2)},
                                   {"n4", "I drink coffee", "t", basis(4, 3)}};
  auto store = mh::memory_store<user_ns::note>::from_records(notes);
  mh::pipeline p{mh::duplicate_detector{}, mh::conflict_detector{}};
  const auto r = p.run(store, mh::detect_options{});
  // exact: n1 + n3 in s ("i drink coffee"); n1-n2 has cosine 0.98 but differs by a negation, so
  // it is a conflict, not a near duplicate; cross-scope: "i drink coffee" in s and t.
  const auto exact = of_kind(r, mh::finding_kinds::exact_duplicate);
  REQUIRE(exact.size() == 1);
  // scores are log2(1 + length) only: n3 (15 code points) > n1 (14)
  CHECK(exact[0].record_ids == std::vector<std::string>{"n3", "n1"});
  CHECK(r.count(mh::finding_kinds::near_duplicate) == 0);
  CHECK(r.count(mh::finding_kinds::cross_scope_duplicate) == 1);
  const auto conflicts = of_kind(r, mh::finding_kinds::conflict);
  REQUIRE(conflicts.size() == 1);
  CHECK(conflicts[0].record_ids == std::vector<std::string>{"n1", "n2"});
}

// ------------------------------------------------------------------------------------ conflicts

namespace {
mh::memory_record fact(std::string id, std::string content, std::string e, std::string a,
                       std::string v, std::vector<float> emb, std::string scope = "u1") {
  auto r = rec(std::move(id), std::move(content), std::move(emb), std::move(scope));
  r.kind = "fact";
  r.claim = mh::fact_claim{std::move(e), std::move(a), std::move(v)};
  return r;
}
mh::memory_record pref(std::string id, std::string content, std::string scene, std::string p,
                       mh::polarity pol, std::vector<float> emb) {
  auto r = rec(std::move(id), std::move(content), std::move(emb), "u1");
  r.kind = "preference";
  r.claim = mh::preference_claim{std::move(scene), std::move(p), "", pol};
  return r;
}
}  // namespace

TEST_CASE("conflicts: structured claims") {
  const std::size_t d = 4;
  std::vector<mh::memory_record> v;
  v.push_back(fact("f1", "User's diet is vegetarian", "user", "diet", "vegetarian", basis(d, 0)));
  v.push_back(fact("f2", "User eats everything", "User", "Diet", "omnivore", basis(d, 1)));
  v.push_back(
      fact("f3", "User is Vegetarian.", "user", "diet", "Vegetarian.", basis(d, 2)));  // same value
  v.push_back(fact("f4", "User lives in Paris", "user", "city", "Paris", basis(d, 3)));
  v.push_back(
      fact("f5", "User's diet: omnivore", "user", "diet", "omnivore", {}, "u2"));  // other scope
  auto archived = fact("f6", "diet keto", "user", "diet", "keto", {});
  archived.status = "archived";
  v.push_back(archived);
  v.push_back(
      pref("p1", "Hates cilantro at dinner", "dinner", "cilantro", mh::polarity::negative, {}));
  v.push_back(
      pref("p2", "Loves cilantro at dinner", "Dinner", "Cilantro", mh::polarity::positive, {}));
  v.push_back(pref("p3", "Cilantro is fine", "dinner", "cilantro", mh::polarity::neutral, {}));
  v.push_back(
      pref("p4", "Loves cilantro at lunch", "lunch", "cilantro", mh::polarity::positive, {}));
  auto store = mh::memory_store<>::from_records(v);
  mh::pipeline p{mh::conflict_detector<>{}};
  const auto r = p.run(store, mh::detect_options{});
  std::vector<std::pair<std::string, std::string>> got;
  for (const auto& f : r.findings) {
    CHECK(f.kind == mh::finding_kinds::conflict);
    got.emplace_back(f.record_ids[0], f.record_ids[1]);
  }
  // f1-f2 and f2-f3 differ in value (vegetarian vs omnivore); f1-f3 same after normalisation;
  // f4 other attribute; f5 other scope; f6 archived; p1-p2 opposite; p3 neutral; p4 other scene.
  // p1/p2/p3/p4 share the subject "cilantro": the judge sees p1-p4, p2-p4, p3-p4 (p1-p3, p2-p3
  // are decided by claims); "hates cilantro at dinner" vs "loves cilantro at lunch" has no cue.
  const std::vector<std::pair<std::string, std::string>> want{
      {"f1", "f2"}, {"f2", "f3"}, {"p1", "p2"}};
  CHECK(got == want);
  REQUIRE(r.findings.size() == 3);
  CHECK(text(r.findings[0], "reason") == "fact_value_differs");
  CHECK(text(r.findings[0], "value_a") == "vegetarian");
  CHECK(text(r.findings[0], "value_b") == "omnivore");
  CHECK(num(r.findings[0], "cosine") == doctest::Approx(0.0));
  CHECK(r.findings[0].suggested_repair == "resolve_conflict");
  CHECK(text(r.findings[2], "reason") == "opposite_polarity");
  CHECK(text(r.findings[2], "polarity_a") == "negative");
  CHECK(r.findings[2].severity == mh::severity::error);
}

TEST_CASE("conflict judge: cue rules") {
  const mh::default_conflict_judge judge;
  const mh::text_normalizer norm;
  auto verdict = [&](std::string a, std::string b, std::string ka = "", std::string kb = "") {
    auto ra = rec("a", a, {}, "s"), rb = rec("b", b, {}, "s");
    ra.kind = ka;
    rb.kind = kb;
    return judge(ra, norm(a), rb, norm(b), 0.9f);
  };
  auto v = verdict("I am vegetarian", "I am not vegetarian");
  CHECK(v.conflict);
  CHECK_FALSE(v.needs_human);
  CHECK(v.reason == "negation_cue");
  CHECK(verdict("I drink coffee every morning", "I don't drink coffee every morning").conflict);
  CHECK(verdict("I eat meat", "I no longer eat meat").conflict);
  CHECK(verdict("I drive a Honda", "I sold my Honda").reason == "change_cue");
  CHECK(verdict("我吃香菜", "我不吃香菜").conflict);
  CHECK(verdict("The woman is peeling a potato", "The potato isn't being peeled by the woman")
            .conflict);
  // different holders
  CHECK(verdict("My brother is vegetarian", "I am not vegetarian").reason == "different_holders");
  CHECK_FALSE(verdict("Alice is vegetarian", "I am not vegetarian").conflict);
  CHECK_FALSE(verdict("我哥哥不吃香菜", "我吃香菜").conflict);
  // identical and refinement
  CHECK(verdict("Never eats cilantro.", "never eats cilantro").reason == "identical_text");
  CHECK(verdict("I like green tea", "I like green tea in the morning").reason == "refinement");
  CHECK(verdict("I never eat cilantro", "I never eat cilantro at dinner").reason == "refinement");
  // the negation must apply to something the other side says (false positives seen on LoCoMo and
  // the sample store): "not give up" negates "give", which the other text never says.
  CHECK_FALSE(verdict("Gina encourages Jon to keep pushing, assuring him he'll reach his dreams.",
                      "Gina encourages Jon to keep pushing for his dreams and not give up.")
                  .conflict);
  CHECK_FALSE(verdict("Bob's coffee: black.", "Bob takes his coffee black, no sugar.").conflict);
  CHECK(verdict("Alice likes cilantro", "Alice doesn't like cilantro")
            .conflict);  // likes/like stem alike
  CHECK(verdict("陈先生喜欢周末去爬山", "陈先生不再周末去爬山了")
            .conflict);  // 不再 -> 周 occurs on the other side
  // both negated: agreement, not a conflict
  CHECK_FALSE(verdict("I don't eat meat", "I stopped eating meat").conflict);
  // an aversion verb says what a negation says (PrefEval: "do not eat any animal products" vs
  // "avoid all animal products" were archived as conflicts); content words {eat, meat} vs
  // {avoid, eat, meat} overlap 1.0 and "not" applies to "eat", so only polarity separates them
  CHECK(verdict("I do not eat meat", "I avoid eating meat").reason == "same_polarity");
  CHECK(verdict("I refuse to fly at night", "I do not fly at night").reason == "same_polarity");
  CHECK_FALSE(verdict("我不吃辣", "我避免吃辣").conflict);
  CHECK(verdict("I refuse to use any beauty products that are tested on animals.",
                "I only use vegan, cruelty-free beauty products that are not tested on animals.")
            .reason == "same_polarity");
  // ...but a negated aversion is the opposite polarity again
  CHECK(verdict("I avoid meat", "I no longer avoid meat").conflict);
  CHECK(verdict("I avoid sugar in my coffee", "I don't avoid sugar in my coffee").reason ==
        "negation_cue");
  // negation on unrelated content
  CHECK_FALSE(verdict("I like tea", "I don't like coffee").conflict);
  // state versus event
  auto se = verdict("I am vegetarian", "I had steak last night");
  CHECK(se.conflict);
  CHECK(se.needs_human);
  CHECK(se.reason == "state_vs_event");
  CHECK(verdict("is vegetarian", "steak for dinner", "preference", "episodic").needs_human);
  CHECK_FALSE(
      verdict("I love Italian food", "Had pizza yesterday").conflict);  // no restriction cue
}

namespace {
// A claim extractor that counts the texts it reads.
struct counting_extractor {
  std::size_t* reads = nullptr;
  mh::claim_analysis operator()(std::string_view text) const {
    ++*reads;
    return mh::default_claim_extractor{}(text);
  }
};
}  // namespace

TEST_CASE("conflicts: text pairs through the detector, and a plugged-in judge") {
  const std::size_t d = 6;
  std::vector<mh::memory_record> v;
  v.push_back(rec("t1", "I am vegetarian", basis(d, 0), "u1"));
  v.push_back(rec("t2", "I am not vegetarian", basis(d, 0, 1.0f, 1, 0.3f), "u1"));  // cos 0.958
  v.push_back(rec("t3", "My brother is vegetarian", basis(d, 0, 1.0f, 2, 0.3f),
                  "u1"));                                            // cos 0.958 with t1
  v.push_back(rec("t4", "I am not vegetarian", basis(d, 0), "u2"));  // other scope
  v.push_back(
      rec("t5", "I had steak last night", basis(d, 0, 1.0f, 3, 1.0f), "u1"));  // cos 0.707 with t1
  v[4].kind = "episodic";
  v[0].kind = "preference";
  v.push_back(
      rec("t6", "I am vegetarian", basis(d, 5), "u1"));  // identical text to t1, unrelated vector
  auto store = mh::memory_store<>::from_records(v);
  mh::pipeline p{mh::conflict_detector<>{}};
  const auto r = p.run(store, mh::detect_options{});
  // candidates at cos >= 0.6 in u1: t1-t2 (0.958), t1-t3 (0.958), t2-t3 (1.09/1.09 = 0.917),
  // t1-t5 (0.707), t2-t5 (0.678), t3-t5 (0.678).
  // t1-t2: negation -> conflict; t1-t3, t2-t3: different holders; t1-t5: a lasting restriction
  // against a one-off event -> needs a person; t2-t5: "I am not vegetarian" and "I had steak"
  // agree (the claim judge reads that nothing denied is asserted; the cue judge before it called
  // it a state-vs-event review); t3-t5: holders differ (brother vs self).
  std::vector<std::tuple<std::string, std::string, bool>> got;
  for (const auto& f : r.findings)
    got.emplace_back(f.record_ids[0], f.record_ids[1],
                     std::get<bool>(*f.evidence_of("needs_human")));
  const std::vector<std::tuple<std::string, std::string, bool>> want{{"t1", "t2", false},
                                                                     {"t1", "t5", true}};
  CHECK(got == want);
  REQUIRE(r.findings.size() == 2);
  CHECK(r.findings[1].suggested_repair == "manual_review");
  CHECK(num(r.findings[0], "cosine") == doctest::Approx(1.0 / std::sqrt(1.09)).epsilon(1e-4));

  // a plugged-in judge (e.g. an NLI model behind a lambda) sees exactly the candidate pairs
  std::size_t calls = 0;
  auto counting = [&calls](const mh::memory_record&, std::string_view, const mh::memory_record&,
                           std::string_view, float cos) {
    ++calls;
    return mh::conflict_verdict{cos > 0.95f, false, "nli"};
  };
  mh::conflict_detector<decltype(counting)> custom{.judge = counting};
  std::vector<mh::finding> out;
  mh::detection_context ctx(store);
  custom.run(ctx, out);
  CHECK(calls == 6);
  CHECK(out.size() == 2);  // t1-t2 and t1-t3 at 0.958

  // The claim judge runs in two phases (analysing_conflict_judge): the detector reads each
  // record once per run, not once per pair. The 6 candidate pairs involve t1, t2, t3 and t5: 4
  // reads (12 when each pair reads both sides), and the findings are those of the run above.
  static_assert(mh::analysing_conflict_judge<mh::claim_conflict_judge<>, mh::memory_record>);
  static_assert(!mh::analysing_conflict_judge<decltype(counting), mh::memory_record>);
  std::size_t reads = 0;
  mh::conflict_detector<mh::claim_conflict_judge<counting_extractor>> once{
      .judge = {.extractor = {&reads}}};
  std::vector<mh::finding> out2;
  mh::detection_context ctx2(store);
  once.run(ctx2, out2);
  CHECK(reads == 4);
  REQUIRE(out2.size() == r.findings.size());
  for (std::size_t i = 0; i < out2.size(); ++i) {
    CHECK(out2[i].record_ids == r.findings[i].record_ids);
    CHECK(out2[i].evidence_of("reason") != nullptr);
    CHECK(std::get<std::string>(*out2[i].evidence_of("reason")) ==
          std::get<std::string>(*r.findings[i].evidence_of("reason")));
  }
  // the same judge called once per pair reads both sides of each: 12
  reads = 0;
  const mh::claim_conflict_judge<counting_extractor> per_pair{.extractor = {&reads}};
  const mh::text_normalizer norm;
  const std::pair<std::size_t, std::size_t> pairs[] = {{0, 1}, {0, 2}, {1, 2},
                                                       {0, 4}, {1, 4}, {2, 4}};
  for (const auto& [x, y] : pairs)
    (void)per_pair(v[x], norm(v[x].content), v[y], norm(v[y].content), 0.9f);
  CHECK(reads == 12);

  // Records with one content share one reading (keyed_analysing_conflict_judge): the same two
  // statements in three scopes are read twice, not six times, and each scope keeps its finding.
  static_assert(mh::keyed_analysing_conflict_judge<mh::claim_conflict_judge<>, mh::memory_record>);
  static_assert(
      !mh::keyed_analysing_conflict_judge<decltype(counting), mh::memory_record>);  // one phase
  std::vector<mh::memory_record> same;
  for (const char* scope : {"s1", "s2", "s3"}) {
    const std::string s = scope;
    same.push_back(rec("veg-" + s, "I am vegetarian", basis(d, 0), s));
    same.push_back(rec("not-" + s, "I am not vegetarian", basis(d, 0, 1.0f, 1, 0.3f), s));
  }
  const auto same_store = mh::memory_store<>::from_records(same);
  reads = 0;
  std::vector<mh::finding> out3;
  mh::detection_context ctx3(same_store);
  once.run(ctx3, out3);
  CHECK(reads == 2);
  REQUIRE(out3.size() == 3);
  for (std::size_t k = 0; k < 3; ++k) {
    const std::string s = "s" + std::to_string(k + 1);
    CHECK(out3[k].record_ids == std::vector<std::string>{"veg-" + s, "not-" + s});
    CHECK(std::get<std::string>(*out3[k].evidence_of("reason")) ==
          std::get<std::string>(*r.findings[0].evidence_of("reason")));
  }
}

// --------------------------------------------------------- detection context: unit embeddings

namespace {

// d = 64 rows of +-0.125 * scale with `flips` minus signs from position `from`: exactly unit for
// scale 1 (64 / 64), norm exactly `scale` otherwise (scale a power of two: v / |v| is then exact).
// The cosine of two such rows is (64 - 2 * positions where they differ) / 64, exact in float.
std::vector<float> pm(std::size_t from, std::size_t flips, float scale = 1.0f) {
  std::vector<float> v(64, 0.125f * scale);
  for (std::size_t k = 0; k < flips; ++k) v[(from + k) % 64] = -0.125f * scale;
  return v;
}

// Scope A: n1 (no flips), n2 (flip 0: cos 62/64 = 0.96875 with n1), n3 (flips 10, 11: cos 60/64
// = 0.9375 with n1, 58/64 = 0.90625 with n2) -> one near cluster at the default 0.92 (n1-n2,
// n1-n3); o1 (flips 0..31: cos 0 with n1) stands apart. Scope B: v1/v2 (vegetarian / not, flips
// 20 and 20, 21: cos 62/64) -> one conflict. All rows scaled by `scale`.
std::vector<mh::memory_record> unit_fixture(float scale) {
  std::vector<mh::memory_record> v;
  v.push_back(rec("n1", "likes green tea", pm(0, 0, scale), "A"));
  v.push_back(rec("n2", "likes green tea a lot", pm(0, 1, scale), "A"));
  v.push_back(rec("n3", "really likes green tea", pm(10, 2, scale), "A"));
  v.push_back(rec("o1", "walks the dog", pm(0, 32, scale), "A"));
  v.push_back(rec("v1", "I am vegetarian", pm(20, 1, scale), "B"));
  v.push_back(rec("v2", "I am not vegetarian", pm(20, 2, scale), "B"));
  return v;
}

}  // namespace

TEST_CASE("detection context: unit rows of a contiguous store are read in place, not copied") {
  static_assert(mh::contiguous_embedding_store<mh::memory_store<>>);
  static_assert(!mh::contiguous_embedding_store<mh::subset_store<mh::memory_store<>>>);  // copied
  auto store = mh::memory_store<>::from_records(unit_fixture(1.0f));
  mh::detection_context ctx(store);
  const auto& u = ctx.unit_embeddings();
  CHECK(u.data() == store.matrix().data());  // the store's block, no copy
  CHECK(u.rows() == 6);
  CHECK(u.cols() == 64);
  CHECK(ctx.unit_rows() == std::vector<std::size_t>{0, 1, 2, 3, 4, 5});
  CHECK(ctx.unit_embeddings().data() == u.data());  // computed once

  // a record whose embedding is not of length d has no block row: the others are still one
  // contiguous run of the block in record order
  auto recs = unit_fixture(1.0f);
  recs.insert(recs.begin() + 2, rec("short", "three floats", {0.6f, 0.8f, 0.0f}, "A"));
  auto gap = mh::memory_store<>::from_records(recs);
  mh::detection_context cg(gap);
  CHECK(cg.unit_embeddings().data() == gap.matrix().data());
  CHECK(cg.unit_rows() == std::vector<std::size_t>{0, 1, 3, 4, 5, 6});
  CHECK(cg.unit_row_of(2) == -1);
  CHECK(cg.unit_row_of(3) == 2);
  CHECK(cg.unit_embeddings()(2, 10) == -0.125f);  // n3's row
}

TEST_CASE("detection context: non-unit, short, NaN and zero rows are copied and normalised") {
  auto recs = unit_fixture(1.0f);
  recs[0].embedding = pm(0, 0, 2.0f);  // norm 2
  recs.push_back(rec("short", "three floats", {0.6f, 0.8f, 0.0f}, "A"));
  std::vector<float> nan_row = pm(0, 0);
  nan_row[5] = std::numeric_limits<float>::quiet_NaN();
  recs.push_back(rec("nan", "not a number", nan_row, "A"));
  recs.push_back(rec("zero", "all zeros", std::vector<float>(64, 0.0f), "A"));
  auto store = mh::memory_store<>::from_records(recs, 64);
  mh::detection_context ctx(store);
  const auto& u = ctx.unit_embeddings();
  CHECK(u.data() != store.matrix().data());
  CHECK(ctx.unit_rows() == std::vector<std::size_t>{0, 1, 2, 3, 4, 5});
  CHECK(ctx.unit_row_of(6) == -1);
  CHECK(ctx.unit_row_of(7) == -1);
  CHECK(ctx.unit_row_of(8) == -1);
  const auto unit_recs = unit_fixture(1.0f);  // the rows expected: n1 / 2 is exactly n1
  for (std::size_t r = 0; r < 6; ++r)
    for (std::size_t c = 0; c < 64; ++c)
      CHECK(u(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(c)) ==
            unit_recs[r].embedding[c]);

  // all rows unit, but a NaN row inside the block breaks the run of usable rows: copied
  auto holed = unit_fixture(1.0f);
  holed.insert(holed.begin() + 1, rec("nan", "not a number", nan_row, "A"));
  auto hs = mh::memory_store<>::from_records(holed);
  mh::detection_context ch(hs);
  CHECK(ch.unit_embeddings().data() != hs.matrix().data());
  CHECK(ch.unit_rows() == std::vector<std::size_t>{0, 2, 3, 4, 5, 6});
  CHECK(ch.unit_embeddings()(1, 0) == -0.125f);  // n2's row

  // the tolerance: a row with |norm - 1| <= 1e-5 is taken as it is (in place, or copied as it is
  // when the block cannot be read in place); 1e-4 off, it is normalised in a copy
  auto near = mh::memory_store<>::from_records(unit_fixture(1.0f + 4e-6f));
  mh::detection_context cn(near);
  CHECK(cn.unit_embeddings().data() == near.matrix().data());
  auto near_holed = unit_fixture(1.0f + 4e-6f);  // copied (a NaN row): the same rows, as they are
  near_holed.insert(near_holed.begin() + 1, rec("nan", "not a number", nan_row, "A"));
  auto nh = mh::memory_store<>::from_records(near_holed);
  mh::detection_context cnh(nh);
  CHECK(cnh.unit_embeddings().data() != nh.matrix().data());
  CHECK(cnh.unit_embeddings() == cn.unit_embeddings());
  CHECK(cnh.unit_embeddings()(0, 0) == 0.125f * (1.0f + 4e-6f));
  auto off = mh::memory_store<>::from_records(unit_fixture(1.0001f));
  mh::detection_context co(off);
  CHECK(co.unit_embeddings().data() != off.matrix().data());
  CHECK(co.unit_embeddings().row(0).norm() == doctest::Approx(1.0).epsilon(1e-6));
}

TEST_CASE(
    "detection context: a run's findings are the same with the block read in place or copied") {
  auto in_place = mh::memory_store<>::from_records(unit_fixture(1.0f));
  auto copied = mh::memory_store<>::from_records(unit_fixture(2.0f));  // norm 2: normalised copy
  {
    mh::detection_context a(in_place), b(copied);
    REQUIRE(a.unit_embeddings().data() == in_place.matrix().data());
    REQUIRE(b.unit_embeddings().data() != copied.matrix().data());
    CHECK(a.unit_embeddings() == b.unit_embeddings());  // v / 2 is exact
  }
  mh::pipeline p{mh::duplicate_detector<>{}, mh::conflict_detector<>{}};
  const auto ra = p.run(in_place, mh::detect_options{});
  const auto rb = p.run(copied, mh::detect_options{});
  REQUIRE(ra.findings.size() == rb.findings.size());
  for (std::size_t k = 0; k < ra.findings.size(); ++k) {
    const auto &x = ra.findings[k], &y = rb.findings[k];
    CHECK(x.kind == y.kind);
    CHECK(x.detector == y.detector);
    CHECK(x.record_ids == y.record_ids);
    CHECK(x.evidence == y.evidence);
    CHECK(x.severity == y.severity);
    CHECK(x.suggested_repair == y.suggested_repair);
  }
  // the cosines worked out above
  const auto near = of_kind(ra, mh::finding_kinds::near_duplicate);
  REQUIRE(near.size() == 1);
  std::vector<std::string> ids = near[0].record_ids;
  std::sort(ids.begin(), ids.end());
  CHECK(ids == std::vector<std::string>{"n1", "n2", "n3"});
  CHECK(num(near[0], "max_cosine") == 0.96875);
  CHECK(num(near[0], "min_cosine") == 0.90625);
  const auto conflicts = of_kind(ra, mh::finding_kinds::conflict);
  REQUIRE(conflicts.size() == 1);
  CHECK(conflicts[0].record_ids == std::vector<std::string>{"v1", "v2"});
  CHECK(num(conflicts[0], "cosine") == 0.96875);
}

// ------------------------------------------------------------------------------------ real data

TEST_CASE("real data: PrefEval repeated preferences are exact duplicates within their topic") {
  // Counted independently with python3 (NFKC + casefold, punctuation/symbols -> space, spaces
  // collapsed; and again with lower() + [^\w]+ -> space): over the 10 topic files (517 records),
  // 4 texts repeat within their topic, covering 9 records (games 3, shows 2, beauty 2, dietary 2),
  // and 3 texts occur in more than one topic.
  MEMHEALTH_TEST_DATA(dir, "prefeval-explicit");
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::vector<mh::memory_record> recs;
  for (const auto& f : files) {
    std::ifstream in(f);
    const auto j = nlohmann::json::parse(in);
    std::size_t k = 0;
    for (const auto& item : j) {
      auto r = rec(f.stem().string() + "#" + std::to_string(k++),
                   item.at("preference").get<std::string>(), {}, f.stem().string());
      r.kind = "preference";
      recs.push_back(std::move(r));
    }
  }
  REQUIRE(recs.size() == 517);
  auto store = mh::memory_store<>::from_records(recs);
  mh::pipeline p{mh::duplicate_detector<>{}};
  const auto r = p.run(store, mh::detect_options{});
  const auto exact = of_kind(r, mh::finding_kinds::exact_duplicate);
  std::size_t members = 0;
  for (const auto& f : exact) members += f.record_ids.size();
  CHECK(exact.size() == 4);
  CHECK(members == 9);
  CHECK(r.count(mh::finding_kinds::near_duplicate) == 0);  // no embeddings: exact path only
  CHECK(r.count(mh::finding_kinds::cross_scope_duplicate) == 3);
}

namespace {
struct sick_pair {
  std::string a, b;
  double relatedness;
  std::string label;
};
std::vector<sick_pair> load_sick(const std::filesystem::path& file) {
  std::vector<sick_pair> out;
  for (const auto& cols : memhealth::test::read_tsv_rows(file))
    if (cols.size() >= 5) out.push_back({cols[1], cols[2], std::stod(cols[3]), cols[4]});
  return out;
}
bool has_negation_word(const std::string& s) {  // the python count's definition
  static const std::set<std::string> neg{"not",     "no",      "never", "nobody", "none",
                                         "nothing", "neither", "nor",   "cannot"};
  std::string w;
  auto flush = [&] {
    const bool r = neg.contains(w) || (w.size() >= 3 && w.ends_with("n't"));
    w.clear();
    return r;
  };
  for (char c : s + " ") {
    const char l = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if ((l >= 'a' && l <= 'z') || l == '\'') {
      w.push_back(l);
    } else if (!w.empty() && flush()) {
      return true;
    }
  }
  return false;
}
}  // namespace

TEST_CASE("real data: SICK contradictions that differ by a negation word" *
          doctest::test_suite("real_data")) {
  MEMHEALTH_TEST_DATA(sick, "sick/SICK_train.txt");
  const auto pairs = load_sick(sick);
  REQUIRE(pairs.size() == 4500);
  // python3: 665 CONTRADICTION pairs, 605 of them with a negation word (not, no, never, nobody,
  // none, nothing, neither, nor, cannot, *n't) in exactly one sentence.
  const mh::default_conflict_judge judge;
  const mh::text_normalizer norm;
  const mh::lexical_embedder emb(384, 0);
  std::vector<float> ea(384), eb(384);
  std::size_t contradiction = 0, neg_diff = 0, caught = 0, caught_all = 0, entail = 0,
              entail_flagged = 0, neutral = 0, neutral_flagged = 0;
  for (const auto& p : pairs) {
    auto ra = rec("a", p.a, {}, "s"), rb = rec("b", p.b, {}, "s");
    emb.embed(p.a, ea);
    emb.embed(p.b, eb);
    const float cos = mh::cosine_kernel{}(ea, eb);
    const bool flagged = judge(ra, norm(p.a), rb, norm(p.b), cos).conflict;
    if (p.label == "CONTRADICTION") {
      ++contradiction;
      caught_all += flagged;
      if (has_negation_word(p.a) != has_negation_word(p.b)) {
        ++neg_diff;
        caught += flagged;
      }
    } else if (p.label == "ENTAILMENT") {
      ++entail;
      entail_flagged += flagged;
    } else {
      ++neutral;
      neutral_flagged += flagged;
    }
  }
  CHECK(contradiction == 665);
  CHECK(neg_diff == 605);
  const double recall = static_cast<double>(caught) / static_cast<double>(neg_diff);
  MESSAGE("SICK judge recall on negation contradictions: "
          << caught << "/" << neg_diff << " = " << recall << "; on all contradictions "
          << caught_all << "/" << contradiction << "; flagged ENTAILMENT " << entail_flagged << "/"
          << entail << ", NEUTRAL " << neutral_flagged << "/" << neutral);
  CHECK(recall >= 0.9);  // measured 570/605 = 0.942
}

TEST_CASE("real data: near-duplicate false positives on SICK contradictions with relatedness >= 4" *
          doctest::test_suite("real_data")) {
  MEMHEALTH_TEST_DATA(sick, "sick/SICK_train.txt");
  // python3: 141 CONTRADICTION pairs have relatedness >= 4. Each pair goes into its own scope,
  // embedded with lexical_embedder{384}; a near_duplicate finding on such a pair is a false
  // positive.
  const auto pairs = load_sick(sick);
  const mh::lexical_embedder emb(384, 0);
  std::vector<mh::memory_record> recs;
  std::size_t hi = 0, expected_flagged = 0, expected_unguarded_negation = 0;
  for (const auto& p : pairs) {
    if (p.label != "CONTRADICTION" || p.relatedness < 4.0) continue;
    std::vector<float> ea(384), eb(384);
    emb.embed(p.a, ea);
    emb.embed(p.b, eb);
    const bool close = mh::cosine_kernel::cosine_of(ea, eb) >= 0.92f;  // independent scalar path
    expected_flagged += close;
    expected_unguarded_negation += close && has_negation_word(p.a) == has_negation_word(p.b);
    const std::string scope = "pair" + std::to_string(hi++);
    recs.push_back(rec(scope + "a", p.a, ea, scope));
    recs.push_back(rec(scope + "b", p.b, eb, scope));
  }
  CHECK(hi == 141);
  auto store = mh::memory_store<>::from_records(recs);
  auto flagged_by = [&](bool skip, bool others) {
    mh::pipeline p{mh::duplicate_detector<>{.cross_scope_check = false,
                                            .skip_negation_mismatch = skip,
                                            .skip_guarded = others,
                                            .skip_judged_conflicts = others}};
    const auto r = p.run(store, mh::detect_options{});
    return r.count(mh::finding_kinds::near_duplicate) + r.count(mh::finding_kinds::exact_duplicate);
  };
  const std::size_t raw = flagged_by(false, false), guarded = flagged_by(true, false);
  const std::size_t all_guards = flagged_by(true, true);
  MESSAGE("with every guard (numbers, roles, polarity, judged conflicts): " << all_guards << "/"
                                                                            << hi);
  CHECK(all_guards <= guarded);
  MESSAGE(
      "near-duplicate false positives on SICK CONTRADICTION, relatedness >= 4 (lexical_embedder "
      "d=384, "
      "threshold 0.92): cosine only "
      << raw << "/" << hi << "; with the negation guard " << guarded << "/" << hi);
  CHECK(raw == expected_flagged);
  CHECK(guarded == expected_unguarded_negation);
  // and the conflict detector over the same store catches most of them
  mh::pipeline c{mh::conflict_detector<>{}};
  const auto rc = c.run(store, mh::detect_options{});
  MESSAGE("conflict detector on the same 141 pairs (candidate cos >= 0.6): "
          << rc.count(mh::finding_kinds::conflict));
}

// ------------------------------------------------------------------------------------ pair budget

TEST_CASE("threshold_join: max_pairs cuts the output, the same set for 1 and 2 threads") {
  // 300 copies of one unit vector: every pair qualifies, 300 * 299 / 2 = 44,850 pairs.
  mh::row_matrix X = mh::row_matrix::Zero(300, 16);
  X.col(0).setOnes();
  const float t = 0.9f;
  SUBCASE("a budget at or above the pair count cuts nothing") {
    for (std::size_t budget : {std::size_t{0}, std::size_t{44'850}, std::size_t{50'000}}) {
      std::size_t n = 0;
      const auto st = mh::threshold_join(X, t, [&](auto, auto, float) { ++n; },
                                         {.tile = 64, .threads = 2, .max_pairs = budget});
      CHECK(n == 44'850);
      CHECK(st.pairs == 44'850);
      CHECK_FALSE(st.truncated);
    }
    const auto st =
        mh::threshold_join(X, t, [](auto, auto, float) {}, {.tile = 64, .max_pairs = 44'849});
    CHECK(st.pairs == 44'849);
    CHECK(st.truncated);
  }
  SUBCASE("the first pairs in tile order") {
    // tile 64: band 0 x column tile 0 is scanned row by row; row r has j = r+1..63 (63 - r pairs).
    // Rows 0..17 give 18*63 - (0+..+17) = 1134 - 153 = 981 pairs; the next 19 come from row 18:
    // j = 19..37.
    pair_set want;
    for (std::uint32_t i = 0; i <= 17; ++i)
      for (std::uint32_t j = i + 1; j < 64; ++j) want.emplace(i, j);
    for (std::uint32_t j = 19; j <= 37; ++j) want.emplace(18, j);
    REQUIRE(want.size() == 1000);
    for (unsigned threads : {1u, 2u}) {
      CAPTURE(threads);
      std::vector<mh::scored_pair> got;
      const auto st = mh::threshold_join(X, t,
                                         [&](std::uint32_t i, std::uint32_t j, float s) {
                                           got.push_back({i, j, s});
                                         },
                                         {.tile = 64, .threads = threads, .max_pairs = 1000});
      CHECK(st.truncated);
      CHECK(st.pairs == 1000);
      CHECK(std::is_sorted(got.begin(), got.end(), [](auto& a, auto& b) {
        return std::pair(a.i, a.j) < std::pair(b.i, b.j);
      }));
      pair_set s;
      for (auto& p : got) s.emplace(p.i, p.j);
      CHECK(s == want);
    }
  }
  SUBCASE("a cut in a later band: bands of 100 rows, budget 5,000") {
    // tile 100: band 0 (rows 0..99) has pairs i < j over all 300 columns: sum_{i=0}^{99} (299 - i)
    // = 29,900 - 4,950 = 24,950 > 5,000, so the cut is in band 0 for both thread counts; the
    // 2-thread run also computes band 1 and must drop it.
    std::vector<mh::scored_pair> one, two;
    auto st1 = mh::threshold_join(X, t,
                                  [&](std::uint32_t i, std::uint32_t j, float s) {
                                    one.push_back({i, j, s});
                                  },
                                  {.tile = 100, .threads = 1, .max_pairs = 5000});
    auto st2 = mh::threshold_join(X, t,
                                  [&](std::uint32_t i, std::uint32_t j, float s) {
                                    two.push_back({i, j, s});
                                  },
                                  {.tile = 100, .threads = 2, .max_pairs = 5000});
    CHECK(st1.truncated);
    CHECK(st2.truncated);
    CHECK(one == two);
    REQUIRE(one.size() == 5000);
    CHECK(std::all_of(one.begin(), one.end(), [](auto& p) { return p.i < 100; }));
  }
}

namespace {
// Scope "big": 400 active records sharing one placeholder vector (distinct texts; "big-0" and
// "big-1" have the same text). Scope "ok": a genuine near-duplicate pair (cosine 1/sqrt(1.04)).
std::vector<mh::memory_record> placeholder_fixture() {
  const std::size_t d = 8;
  std::vector<mh::memory_record> v;
  for (int k = 0; k < 400; ++k)
    v.push_back(rec("big-" + std::to_string(k),
                    "placeholder memory " + tag(k < 2 ? 0 : static_cast<std::size_t>(k)),
                    basis(d, 7), "big"));
  v.push_back(rec("ok-1", "likes green tea", basis(d, 0), "ok"));
  v.push_back(rec("ok-2", "likes green tea a lot", basis(d, 0, 1.0f, 1, 0.2f), "ok"));
  return v;
}
}  // namespace

TEST_CASE_TEMPLATE("duplicates: a scope over the pair budget is skipped with a finding", Candidates,
                   mh::exact_all_pairs, mh::lsh_blocking, mh::key_blocking<>) {
  auto store = mh::memory_store<>::from_records(placeholder_fixture());
  // 400 identical vectors: 79,800 pairs > 1,000.
  mh::pipeline p{
      mh::duplicate_detector<Candidates>{.cross_scope_check = false, .max_pairs_per_scope = 1000}};
  const auto r = p.run(store, mh::detect_options{});
  const auto skipped = of_kind(r, mh::finding_kinds::check_skipped);
  REQUIRE(skipped.size() == 1);
  CHECK(skipped[0].severity == mh::severity::warning);
  CHECK(text(skipped[0], "check") == "near_duplicate");
  CHECK(text(skipped[0], "scope") == "big");
  CHECK(num(skipped[0], "group_size") == 400);
  CHECK(num(skipped[0], "pair_budget") == 1000);
  CHECK(num(skipped[0], "listed") == 20);
  REQUIRE(skipped[0].record_ids.size() == 20);
  CHECK(skipped[0].record_ids.front() == "big-0");
  // no partial cluster from the cut scope; the genuine pair elsewhere and the exact copy remain
  const auto near = of_kind(r, mh::finding_kinds::near_duplicate);
  REQUIRE(near.size() == 1);
  CHECK(text(near[0], "scope") == "ok");
  const auto exact = of_kind(r, mh::finding_kinds::exact_duplicate);
  REQUIRE(exact.size() == 1);
  CHECK(num(exact[0], "cluster_size") == 2);
  // without a budget the whole scope is one cluster of 400
  mh::pipeline q{
      mh::duplicate_detector<Candidates>{.cross_scope_check = false, .max_pairs_per_scope = 0}};
  const auto r2 = q.run(store, mh::detect_options{});
  CHECK(r2.count(mh::finding_kinds::check_skipped) == 0);
  const auto near2 = of_kind(r2, mh::finding_kinds::near_duplicate);
  REQUIRE(near2.size() == 2);
  CHECK(num(near2[0], "cluster_size") + num(near2[1], "cluster_size") == 402);
}

TEST_CASE("conflicts: pair budget for similar texts and for claim keys") {
  SUBCASE("400 records on one vector: candidates cut, one check_skipped") {
    auto store = mh::memory_store<>::from_records(placeholder_fixture());
    mh::pipeline p{mh::conflict_detector<>{.max_pairs_per_scope = 1000}};
    const auto r = p.run(store, mh::detect_options{});
    const auto skipped = of_kind(r, mh::finding_kinds::check_skipped);
    REQUIRE(skipped.size() == 1);
    CHECK(text(skipped[0], "check") == "conflict");
    CHECK(text(skipped[0], "scope") == "big");
    CHECK(num(skipped[0], "group_size") == 400);
  }
  SUBCASE("one claim key with values {a, a, b, c}: 6 pairs - 1 same-value pair = 5 conflicts") {
    std::vector<mh::memory_record> v;
    v.push_back(fact("c1", "x is a", "x", "y", "a", {}));
    v.push_back(fact("c2", "x is A", "x", "y", "A", {}));
    v.push_back(fact("c3", "x is b", "x", "y", "b", {}));
    v.push_back(fact("c4", "x is c", "x", "y", "c", {}));
    auto store = mh::memory_store<>::from_records(v);
    mh::pipeline p5{mh::conflict_detector<>{.max_pairs_per_scope = 5}};
    const auto r5 = p5.run(store, mh::detect_options{});
    std::vector<std::pair<std::string, std::string>> got;
    for (const auto& f : of_kind(r5, mh::finding_kinds::conflict))
      got.emplace_back(f.record_ids[0], f.record_ids[1]);
    const std::vector<std::pair<std::string, std::string>> want{
        {"c1", "c3"}, {"c1", "c4"}, {"c2", "c3"}, {"c2", "c4"}, {"c3", "c4"}};
    CHECK(got == want);
    CHECK(r5.count(mh::finding_kinds::check_skipped) == 0);
    mh::pipeline p4{mh::conflict_detector<>{.max_pairs_per_scope = 4}};
    const auto r4 = p4.run(store, mh::detect_options{});
    CHECK(r4.count(mh::finding_kinds::conflict) == 0);
    const auto skipped = of_kind(r4, mh::finding_kinds::check_skipped);
    REQUIRE(skipped.size() == 1);
    CHECK(skipped[0].record_ids == std::vector<std::string>{"c1", "c2", "c3", "c4"});
    CHECK(num(skipped[0], "group_size") == 4);
  }
}

// ------------------------------------------------------------------------------ duplicate guards

TEST_CASE("duplicate guards: numbers, roles and polarity keep look-alike texts apart") {
  const mh::text_normalizer norm;
  auto guard = [&](std::string_view a, std::string_view b) {
    return mh::near_duplicate_guard(norm(a), norm(b));
  };
  using G = mh::duplicate_guard;
  CHECK(guard("Dentist appointment on 3 May", "Dentist appointment on 5 May") == G::numbers_differ);
  CHECK(guard("Takes two spoons of sugar", "Takes three spoons of sugar") == G::numbers_differ);
  CHECK(guard("Yoga class every Tuesday", "Yoga class every Thursday") == G::numbers_differ);
  CHECK(guard("用户每周二去游泳", "用户每周四去游泳") == G::numbers_differ);
  CHECK(guard("Flight leaves at 9am", "Flight leaves at 10am") == G::numbers_differ);
  // "may" is a month only next to a number; the modal verb is no quantity
  CHECK(guard("User may visit Paris", "User might visit Paris") == G::none);
  CHECK(guard("Born on 3 May", "Born on 3 June") == G::numbers_differ);
  CHECK(guard("User prefers tea over coffee", "User prefers coffee over tea") == G::role_swap);
  CHECK(guard("Anna gave Ben a book", "Ben gave Anna a book") == G::role_swap);
  CHECK(guard("我喜欢茶胜过咖啡", "我喜欢咖啡胜过茶") == G::role_swap);
  // a phrase moved to the front with nothing kept between is no swap
  CHECK(guard("User drinks coffee in the morning", "In the morning user drinks coffee") == G::none);
  CHECK(guard("User loves jazz", "User hates jazz") == G::polarity);
  CHECK(guard("User loves jazz", "User can't stand jazz") == G::polarity);
  CHECK(guard("用户喜欢辣的", "用户讨厌辣的") == G::polarity);
  CHECK(guard("用户喜欢辣的", "用户不喜欢辣的") == G::polarity);
  CHECK(guard("User enjoys jazz", "User loves jazz") == G::none);
  CHECK(guard("User avoids pork", "User dislikes pork") == G::none);
  CHECK(guard("same", "same") == G::none);
  CHECK(mh::to_string(G::role_swap) == "role_swap");
  // a currency, a sign, '%' or a digit separator is part of the number
  CHECK(guard("User's budget is $5000",
              "User's budget is \xE2\x82\xAC"
              "5000") == G::numbers_differ);
  CHECK(guard("User's budget is \xE2\x82\xAC"
              "5000",
              "User's budget is \xC2\xA3"
              "5000") == G::numbers_differ);  // €5000 / £5000
  CHECK(guard("User's score is -5", "User's score is 5") == G::numbers_differ);
  CHECK(guard("User's loan rate is 5%", "User's loan rate is 5") == G::numbers_differ);
  CHECK(guard("User's budget is 5,000", "User's budget is 5.000") == G::numbers_differ);
  CHECK(guard("Thermostat at 20\xC2\xB0", "Thermostat at 20") == G::numbers_differ);  // 20°
  CHECK(guard("User's budget is $5000", "User's budget is $5000.") == G::none);
  // never throws on bytes that are not UTF-8
  CHECK(mh::near_duplicate_guard("\xff\xfe 3", "\xff\xfe 4") == G::numbers_differ);
}

namespace {
struct judge_pair {
  std::string id, lang, category, label, a, b;
};
std::vector<judge_pair> load_judge_pairs(const std::filesystem::path& p) {
  std::vector<judge_pair> out;
  for (const auto& f : memhealth::test::read_tsv_rows(p))
    if (f.size() >= 6) out.push_back({f[0], f[1], f[2], f[3], f[4], f[5]});
  return out;
}
}  // namespace

TEST_CASE("duplicate guards: holders, and pairs whose structured claims conflict, never merge") {
  const mh::default_claim_extractor ex;
  using G = mh::duplicate_guard;
  CHECK(mh::holder_guard(ex("User's son plays soccer every Saturday morning"),
                         ex("User plays soccer every Saturday morning")) == G::holder);
  CHECK(mh::holder_guard(ex("用户的儿子每周六踢足球"), ex("用户每周六踢足球")) == G::holder);
  CHECK(mh::holder_guard(ex("Priya likes tea"), ex("Raj likes tea")) == G::holder);
  CHECK(mh::holder_guard(ex("User plays soccer every Saturday"),
                         ex("User plays football every Saturday")) == G::none);
  CHECK(mh::holder_guard(ex("User plays soccer"), ex("")) == G::none);  // nothing read: no evidence
  // one person spoken of in two ways: the daughter holds one reading, the user the other
  CHECK(mh::holder_guard(ex("User's daughter is named Emma"),
                         ex("User has a daughter called Emma")) == G::none);
  CHECK(mh::holder_guard(ex("用户的女儿叫朵朵"), ex("用户有个女儿名叫朵朵")) == G::none);
  CHECK(mh::to_string(G::holder) == "holder");
  // the pipeline: each pair on one vector (cosine 1), its own scope
  const std::size_t d = 8;
  std::vector<mh::memory_record> v;
  v.push_back(rec("s1", "User's son plays soccer every Saturday morning", basis(d, 0), "A"));
  v.push_back(rec("s2", "User plays soccer every Saturday morning", basis(d, 0), "A"));
  // (texts that say nothing the claim judge reads: only the structured claims conflict)
  v.push_back(rec("b1", "User profile note", basis(d, 1), "B"));
  v.push_back(rec("b2", "User profile note kept", basis(d, 1), "B"));
  v[2].claim = mh::fact_claim{"user", "residence", "berlin"};
  v[3].claim = mh::fact_claim{"user", "residence", "munich"};
  v.push_back(rec("w1", "User loves sushi", basis(d, 2), "C"));
  v.push_back(rec("w2", "User loves sushi a lot", basis(d, 2), "C"));
  v[4].claim = mh::preference_claim{"", "sushi", "", mh::polarity::positive, "user"};
  v[5].claim = mh::preference_claim{"", "sushi", "", mh::polarity::positive};  // "" = the user
  auto store = mh::memory_store<>::from_records(v);
  mh::pipeline p{mh::duplicate_detector<>{}};
  const auto near = of_kind(p.run(store, mh::detect_options{}), mh::finding_kinds::near_duplicate);
  // only w1/w2 (one holder, agreeing claims) are near duplicates
  REQUIRE(near.size() == 1);
  CHECK(text(near[0], "scope") == "C");
  // with the guards off, the son's record and the user's are one cluster again
  mh::duplicate_detector<> off;
  off.skip_guarded = false;
  off.skip_judged_conflicts = false;
  mh::pipeline q{off};
  CHECK(of_kind(q.run(store, mh::detect_options{}), mh::finding_kinds::near_duplicate).size() == 3);
}

TEST_CASE("duplicate guards: labelled look-alike pairs (tests/data/judge_pairs)") {
  MEMHEALTH_TEST_DATA(path, "judge_pairs/pairs.tsv");
  const auto pairs = load_judge_pairs(path);
  REQUIRE(pairs.size() == 275);  // tests/data/judge_pairs/README.md
  // Every pair in its own scope, both records on one vector (cosine 1: the strongest candidate a
  // near-duplicate scan can see), so only the text guards decide.
  std::vector<mh::memory_record> recs;
  for (std::size_t k = 0; k < pairs.size(); ++k) {
    const std::string scope = "p" + std::to_string(k);
    recs.push_back(rec(pairs[k].id + "/a", pairs[k].a, {1, 0, 0, 0}, scope));
    recs.push_back(rec(pairs[k].id + "/b", pairs[k].b, {1, 0, 0, 0}, scope));
  }
  auto store = mh::memory_store<>::from_records(recs);
  auto merged_by_category = [&](bool guards) {
    mh::pipeline p{mh::duplicate_detector<>{
        .cross_scope_check = false, .skip_guarded = guards, .skip_judged_conflicts = guards}};
    const auto r = p.run(store, mh::detect_options{});
    std::set<std::string> merged;  // pair ids
    for (const auto& f : r.findings)
      if (f.kind == mh::finding_kinds::near_duplicate ||
          f.kind == mh::finding_kinds::exact_duplicate)
        merged.insert(f.record_ids.front().substr(0, f.record_ids.front().find('/')));
    std::map<std::string, std::pair<int, int>> by;  // category/label -> merged, total
    for (const auto& q : pairs) {
      auto& c = by[q.category + "/" + q.label];
      c.first += merged.count(q.id) ? 1 : 0;
      ++c.second;
    }
    return by;
  };
  const auto without = merged_by_category(false), with = merged_by_category(true);
  for (const auto& [c, n] : with)
    MESSAGE(c << ": merged " << without.at(c).first << " of " << n.second << " without guards, "
              << n.first << " with them");
  // Without guards a pair with no negation or change cue on either side is merged: one vector,
  // one scope (the date and time review items have none).
  CHECK(without.at("date_time_differs/review").first == 6);
  // Guards only ever keep pairs apart.
  for (const auto& kv : with) {
    CAPTURE(kv.first);
    CHECK(kv.second.first <= without.at(kv.first).first);
  }
  // The same single event at two dates or times (review items) is never merged.
  CHECK(with.at("date_time_differs/review").first == 0);
  // True paraphrases stay mergeable for the most part (the guards are one-sided on purpose).
  CHECK(with.at("paraphrase/no_conflict").first * 2 >= 15);
  // A role swap labelled a conflict is never merged (the guards are on by default, issue 18).
  CHECK(with.at("role_swap/conflict").first == 0);
  // The default detector applies exactly the guards: the pairs it merges are those merged without
  // them on which no text guard applies and which the claim judge, called directly, does not
  // call a conflict.
  const mh::duplicate_detector<> defaults{};
  CHECK(defaults.skip_guarded);
  CHECK(defaults.skip_judged_conflicts);
  auto merged_ids = [&](const mh::duplicate_detector<>& d) {
    mh::pipeline p{d};
    std::set<std::string> ids;
    for (const auto& f : p.run(store, mh::detect_options{}).findings)
      if (f.kind == mh::finding_kinds::near_duplicate)
        ids.insert(f.record_ids.front().substr(0, f.record_ids.front().find('/')));
    return ids;
  };
  const auto unguarded = merged_ids(mh::duplicate_detector<>{
      .cross_scope_check = false, .skip_guarded = false, .skip_judged_conflicts = false});
  const mh::text_normalizer norm;
  const mh::claim_conflict_judge<> judge;
  const mh::default_claim_extractor extract;
  std::set<std::string> expected;
  for (std::size_t k = 0; k < pairs.size(); ++k) {
    const std::string na = norm(pairs[k].a), nb = norm(pairs[k].b);
    if (unguarded.count(pairs[k].id) &&
        mh::near_duplicate_guard(na, nb) == mh::duplicate_guard::none &&
        mh::holder_guard(extract(pairs[k].a), extract(pairs[k].b)) == mh::duplicate_guard::none &&
        !judge(recs[2 * k], na, recs[2 * k + 1], nb, 1.0f).conflict)
      expected.insert(pairs[k].id);
  }
  CHECK(merged_ids(mh::duplicate_detector<>{.cross_scope_check = false}) == expected);
}
}  // namespace detect_semantic_test
