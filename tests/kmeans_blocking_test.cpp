// Tests for similarity/kmeans_blocking.hpp: spherical k-means, the partitioned multi-probe join
// and the kmeans_blocking candidate policy. The oracle is the exact join (threshold_join /
// exact_all_pairs) or a value worked out by hand in the comments.
#include "memhealth/similarity/kmeans_blocking.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <numbers>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "memhealth/detect/default_pipeline.hpp"
#include "memhealth/detect/duplicates.hpp"
#include "memhealth/detect/pipeline.hpp"
#include "memhealth/similarity/blocking.hpp"
#include "memhealth/similarity/join.hpp"
#include "memhealth/store/memory_store.hpp"

namespace kmeans_blocking_test {
namespace mh = memhealth;

namespace {

// Portable deterministic Gaussian stream (splitmix64 + Box-Muller).
struct gauss_stream {
  std::uint64_t state;
  double next() {
    auto u = [&] {
      std::uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
      z ^= z >> 31;
      return (static_cast<double>(z >> 11) + 0.5) * 0x1.0p-53;
    };
    const double u1 = u(), u2 = u();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  }
};

mh::row_matrix random_unit(Eigen::Index n, Eigen::Index d, std::uint64_t seed) {
  gauss_stream g{seed};
  mh::row_matrix x(n, d);
  for (Eigen::Index i = 0; i < n; ++i) {
    for (Eigen::Index c = 0; c < d; ++c) x(i, c) = static_cast<float>(g.next());
    x.row(i).normalize();
  }
  return x;
}

using pair_set = std::set<std::pair<std::uint32_t, std::uint32_t>>;

pair_set kmeans_pairs(const mh::row_matrix& x, float t, const mh::kmeans_blocking_options& o,
                      mh::kmeans_join_stats* stats = nullptr) {
  pair_set out;
  std::pair<std::uint32_t, std::uint32_t> last{0, 0};
  bool first = true;
  const auto st = mh::kmeans_threshold_join(
      x, t,
      [&](std::uint32_t i, std::uint32_t j, float s) {
        CHECK(i < j);
        CHECK(s >= t);
        CHECK(s == doctest::Approx(x.row(i).dot(x.row(j))).epsilon(1e-4));
        if (!first) CHECK(last < std::make_pair(i, j));  // increasing (i, j), no repeats
        last = {i, j};
        first = false;
        out.insert({i, j});
      },
      o);
  if (stats) *stats = st;
  return out;
}

pair_set exact_pairs(const mh::row_matrix& x, float t) {
  pair_set out;
  for (const auto& p : mh::threshold_join_pairs(x, t)) out.insert({p.i, p.j});
  return out;
}

mh::kmeans_blocking_options partitioned(std::size_t k, unsigned probes) {
  mh::kmeans_blocking_options o;
  o.partitions = k;
  o.probes = probes;
  o.min_partitioned = 0;  // partition even tiny inputs
  o.probe_margin = 2.0f;  // always probe `probes` partitions
  return o;
}

}  // namespace

TEST_CASE("spherical_kmeans: deterministic for a seed, independent of threads, unit centroids") {
  const auto x = random_unit(2000, 16, 7);
  mh::kmeans_blocking_options o;
  const auto a = mh::spherical_kmeans(x, 20, o);
  const auto b = mh::spherical_kmeans(x, 20, o);
  o.threads = 2;
  const auto c = mh::spherical_kmeans(x, 20, o);
  REQUIRE(a.rows() == 20);
  REQUIRE(a.cols() == 16);
  CHECK(a == b);
  CHECK(a == c);
  for (Eigen::Index k = 0; k < a.rows(); ++k)
    CHECK(a.row(k).norm() == doctest::Approx(1.0).epsilon(1e-5));
  o.seed = 12345;
  CHECK(mh::spherical_kmeans(x, 20, o) != a);
}

TEST_CASE("spherical_kmeans: three separated clusters give the three directions") {
  // 10 points around each axis of R^3: (1, +-0.1, 0), (0, 1, +-0.1), (+-0.1, 0, 1) (normalised);
  // each cluster's +-0.1 cancels, so its normalised mean is exactly the axis.
  mh::row_matrix x(30, 3);
  for (int i = 0; i < 30; ++i) {
    const int axis = i / 10;
    const float side = (i % 2 == 0) ? 0.1f : -0.1f;
    Eigen::RowVector3f v = Eigen::RowVector3f::Zero();
    v(axis) = 1.0f;
    v((axis + 1) % 3) = side;
    x.row(i) = v.normalized();
  }
  mh::kmeans_blocking_options o;
  o.iterations = 10;
  o.sample_per_partition = 100;  // the whole input
  const auto c = mh::spherical_kmeans(x, 3, o);
  REQUIRE(c.rows() == 3);
  std::set<int> axes;
  for (Eigen::Index k = 0; k < 3; ++k) {
    Eigen::Index axis = 0;
    c.row(k).maxCoeff(&axis);
    axes.insert(static_cast<int>(axis));
    CHECK(c(k, axis) == doctest::Approx(1.0f).epsilon(1e-5));
  }
  CHECK(axes.size() == 3);
}

TEST_CASE("kmeans_threshold_join: every planted pair of clustered data is found, no false pair") {
  // 20 random centres in 32-d, 3000 points at cosine ~0.7 to their centre, 40 planted copies
  // at cosine >= 0.97 (noise 0.2 on a unit vector: cos ~ 1 / sqrt(1 + 0.04) = 0.98).
  const Eigen::Index d = 32;
  const auto centres = random_unit(20, d, 11);
  gauss_stream g{99};
  mh::row_matrix x(3000, d);
  for (Eigen::Index i = 0; i < x.rows(); ++i) {
    for (Eigen::Index c = 0; c < d; ++c)
      x(i, c) = centres(i % 20, c) + static_cast<float>(g.next() / std::sqrt(double(d)));
    x.row(i).normalize();
  }
  pair_set planted;
  for (std::uint32_t q = 0; q < 40; ++q) {
    const std::uint32_t a = q * 70, b = a + 35;  // distinct rows, b is another cluster's row before
    for (Eigen::Index c = 0; c < d; ++c)
      x(b, c) = x(a, c) + static_cast<float>(0.2 * g.next() / std::sqrt(double(d)));
    x.row(b).normalize();
    REQUIRE(x.row(a).dot(x.row(b)) >= 0.95f);
    planted.insert({a, b});
  }
  mh::kmeans_blocking_options o;
  o.partition_size = 150;
  o.min_partitioned = 0;
  mh::kmeans_join_stats st;
  const auto found = kmeans_pairs(x, 0.95f, o, &st);
  CHECK(st.partitions == 20);  // ceil(3000 / 150)
  for (const auto& p : planted) CHECK(found.count(p) == 1);
  // every found pair is a true pair (checked in kmeans_pairs) and a pair of the exact join
  const auto exact = exact_pairs(x, 0.95f);
  for (const auto& p : found) CHECK(exact.count(p) == 1);
}

TEST_CASE("kmeans_threshold_join: multi-probe finds a border pair that single assignment misses") {
  // Two clusters of 20 points around e1 and e2 (perturbed by +-0.05 along e3), and the pair
  // a = (1, 0.9, 0) / |.|, b = (0.9, 1, 0) / |.|: cos(a, b) = 1.8 / 1.81 = 0.99448.
  // The centroids are e1 and e2 (the +-0.05 cancel; a and b pull them symmetrically by the same
  // small amount), so a is owned by e1's partition (0.743 vs 0.669) and b by e2's: with one
  // probe the pair is missed, with two it is found. The gap a.c1 - a.c2 is about 0.074, so a
  // probe margin of 0.05 still misses it and 0.1 finds it.
  mh::row_matrix x(42, 3);
  for (int i = 0; i < 40; ++i) {
    Eigen::RowVector3f v = Eigen::RowVector3f::Zero();
    v(i < 20 ? 0 : 1) = 1.0f;
    v(2) = (i % 2 == 0) ? 0.05f : -0.05f;
    x.row(i) = v.normalized();
  }
  x.row(40) = Eigen::RowVector3f(1.0f, 0.9f, 0.0f).normalized();
  x.row(41) = Eigen::RowVector3f(0.9f, 1.0f, 0.0f).normalized();
  auto o = partitioned(2, 1);
  o.iterations = 10;
  o.sample_per_partition = 100;
  const float t = 0.99f;
  CHECK(exact_pairs(x, t).count({40, 41}) == 1);
  CHECK(kmeans_pairs(x, t, o).count({40, 41}) == 0);
  o.probes = 2;
  mh::kmeans_join_stats st;
  CHECK(kmeans_pairs(x, t, o, &st).count({40, 41}) == 1);
  CHECK(st.max_partition == 21);
  o.probe_margin = 0.05f;
  CHECK(kmeans_pairs(x, t, o).count({40, 41}) == 0);
  o.probe_margin = 0.1f;
  CHECK(kmeans_pairs(x, t, o).count({40, 41}) == 1);
}

TEST_CASE(
    "kmeans_threshold_join: probing every partition equals the exact join, for any thread count") {
  const auto x = random_unit(3000, 16, 3);
  const float t = 0.8f;
  const auto exact = exact_pairs(x, t);
  REQUIRE(exact.size() > 50);  // random 16-d unit vectors: enough pairs above 0.8 to compare
  auto o = partitioned(12, 12);
  CHECK(kmeans_pairs(x, t, o) == exact);
  o.threads = 2;
  CHECK(kmeans_pairs(x, t, o) == exact);
  // fewer probes: a subset
  o.probes = 2;
  const auto some = kmeans_pairs(x, t, o);
  for (const auto& p : some) CHECK(exact.count(p) == 1);
  o.threads = 1;
  CHECK(kmeans_pairs(x, t, o) == some);
}

TEST_CASE("kmeans_threshold_join: empty input, one row, fewer rows than partitions") {
  mh::row_matrix empty(0, 8);
  mh::kmeans_join_stats st;
  CHECK(kmeans_pairs(empty, 0.5f, partitioned(4, 2), &st).empty());
  CHECK(st.pairs == 0);
  CHECK(mh::spherical_kmeans(empty, 3).rows() == 0);
  const auto one = random_unit(1, 8, 5);
  CHECK(kmeans_pairs(one, -1.0f, partitioned(4, 2)).empty());
  // 10 rows, 50 partitions asked: clamped to 10 (one row each)
  const auto x = random_unit(10, 4, 8);
  CHECK(mh::spherical_kmeans(x, 50).rows() == 10);
  const auto all = kmeans_pairs(x, 0.0f, partitioned(50, 50), &st);
  CHECK(st.partitions == 10);
  CHECK(all == exact_pairs(x, 0.0f));
}

TEST_CASE(
    "kmeans_threshold_join: duplicate vectors all pair up, and the pair budget cuts a group") {
  auto x = random_unit(200, 16, 21);
  for (Eigen::Index i = 1; i < 10; ++i) x.row(i * 20) = x.row(0);  // rows 0, 20, ..., 180 identical
  auto o = partitioned(10, 1);
  mh::kmeans_join_stats st;
  const auto found = kmeans_pairs(x, 0.99f, o, &st);
  // identical rows have identical similarities, so one owner: all C(10, 2) = 45 pairs
  CHECK(found.size() == 45);
  CHECK(found.count({0, 180}) == 1);
  CHECK_FALSE(st.truncated);
  std::size_t emitted = 0;
  st = mh::kmeans_threshold_join(
      x, 0.99f, [&](auto, auto, float) { ++emitted; }, o, 20);
  CHECK(st.truncated);
  CHECK(emitted == 0);
  st = mh::kmeans_threshold_join(
      x, 0.99f, [&](auto, auto, float) { ++emitted; }, o, 45);
  CHECK_FALSE(st.truncated);
  CHECK(emitted == 45);
}

TEST_CASE("kmeans_threshold_join: NaN rows are never paired, as in the exact join") {
  auto x = random_unit(400, 8, 4);
  x(3, 2) = std::numeric_limits<float>::quiet_NaN();
  x.row(7).setConstant(std::numeric_limits<float>::infinity());
  x.row(9) = x.row(3);  // a NaN copy: still never paired
  const float t = 0.7f;
  // The exact join pairs an all-+inf row with any all-positive row (its dot product is +inf);
  // k-means blocking leaves every non-finite row out, like the detection context does.
  auto exact = exact_pairs(x, t);
  std::erase_if(exact, [](const auto& p) { return p.first == 7 || p.second == 7; });
  const auto found = kmeans_pairs(x, t, partitioned(8, 8));
  CHECK(found == exact);
  for (const auto& [i, j] : found) {
    CHECK(i != 3);
    CHECK(j != 3);
    CHECK(i != 7);
    CHECK(j != 7);
  }
}

namespace {
mh::memory_record make_rec(std::string id, std::string scope, std::vector<float> e) {
  mh::memory_record r;
  r.id = std::move(id);
  // the id with its digits as letters ("r12" -> "rbc"): texts that differ by a number would be
  // kept apart by the duplicate guards, and these tests are about candidates, not texts
  r.content = "memory " + r.id;
  for (char& c : r.content)
    if (c >= '0' && c <= '9') c = static_cast<char>('a' + (c - '0'));
  r.scope = std::move(scope);
  r.status = "active";
  r.embedding = std::move(e);
  return r;
}

template <class Policy>
std::vector<std::tuple<std::size_t, std::size_t>> policy_pairs(
    const mh::memory_store<>& store, const Policy& policy, float t, std::size_t budget = 0,
    std::vector<std::vector<std::size_t>>* cut = nullptr) {
  mh::detection_context ctx(store);
  mh::candidate_request req{t, {}, budget, cut};
  std::vector<std::tuple<std::size_t, std::size_t>> out;
  policy(ctx, req, mh::cosine_kernel{},
         [&](std::size_t i, std::size_t j, float) { out.emplace_back(i, j); });
  std::sort(out.begin(), out.end());
  return out;
}
}  // namespace

TEST_CASE(
    "kmeans_blocking policy: equals exact_all_pairs with every partition probed, never crosses "
    "scopes") {
  // scope A: 700 records, scope B: 500 (8-d random), plus a NaN and a zero vector in A, and a
  // copy of A's first vector in B (a cross-scope pair that must not appear).
  const auto x = random_unit(1200, 8, 17);
  std::vector<mh::memory_record> recs;
  for (Eigen::Index i = 0; i < 1200; ++i)
    recs.push_back(make_rec("r" + std::to_string(i), i < 700 ? "A" : "B",
                            std::vector<float>(x.row(i).data(), x.row(i).data() + 8)));
  recs[5].embedding[1] = std::numeric_limits<float>::quiet_NaN();
  recs[6].embedding.assign(8, 0.0f);
  recs[900].embedding = recs[0].embedding;
  const auto store = mh::memory_store<>::from_records(recs);
  mh::kmeans_blocking policy;
  policy.kmeans.partition_size = 50;
  policy.kmeans.probes = 64;  // >= k of both scopes (14 and 10)
  policy.kmeans.probe_margin = 2.0f;
  policy.kmeans.min_partitioned = 100;
  const float t = 0.9f;
  const auto exact = policy_pairs(store, mh::exact_all_pairs{}, t);
  REQUIRE(exact.size() > 20);
  CHECK(policy_pairs(store, policy, t) == exact);
  policy.kmeans.threads = 2;
  CHECK(policy_pairs(store, policy, t) == exact);
  for (const auto& [i, j] : exact) {
    CHECK((i < 700) == (j < 700));
    CHECK(i != 5);
    CHECK(i != 6);
    CHECK(j != 5);
    CHECK(j != 6);
  }
  // a budget below scope A's pair count cuts A (listed in `truncated`) and keeps B
  std::size_t in_b = 0;
  for (const auto& [i, j] : exact) in_b += i >= 700;
  REQUIRE(in_b > 0);
  REQUIRE(in_b < exact.size() - in_b);
  std::vector<std::vector<std::size_t>> cut;
  const auto limited = policy_pairs(store, policy, t, in_b, &cut);
  CHECK(limited.size() == in_b);
  REQUIRE(cut.size() == 1);
  CHECK(cut[0].size() == 698);  // A's 700 records less the NaN and the zero vector
  CHECK(cut[0].front() == 0);
}

TEST_CASE("kmeans_blocking policy: plugs into duplicate_detector like lsh_blocking") {
  const auto x = random_unit(300, 8, 23);
  std::vector<mh::memory_record> recs;
  for (Eigen::Index i = 0; i < 300; ++i)
    recs.push_back(make_rec("r" + std::to_string(i), "S",
                            std::vector<float>(x.row(i).data(), x.row(i).data() + 8)));
  // two near copies: r1 ~ r0 and r3 ~ r2 (cos ~0.999)
  for (int k = 0; k < 8; ++k) {
    recs[1].embedding[k] = recs[0].embedding[k] + (k == 0 ? 0.03f : 0.0f);
    recs[3].embedding[k] = recs[2].embedding[k] + (k == 1 ? 0.03f : 0.0f);
  }
  const auto store = mh::memory_store<>::from_records(recs);
  mh::duplicate_detector<mh::kmeans_blocking> det;
  det.threshold = 0.995f;
  det.candidates.kmeans.min_partitioned = 0;
  det.candidates.kmeans.partition_size = 30;
  det.candidates.kmeans.probes = 4;
  det.candidates.kmeans.probe_margin = 2.0f;
  mh::pipeline p{det};
  const auto report = p.run(store, mh::detect_options{});
  mh::pipeline q{mh::duplicate_detector<>{.threshold = 0.995f}};
  const auto expected = q.run(store, mh::detect_options{});
  std::vector<std::vector<std::string>> got, want;
  for (const auto& f : report.findings) got.push_back(f.record_ids);
  for (const auto& f : expected.findings) want.push_back(f.record_ids);
  CHECK(got == want);
  std::size_t near = 0;
  for (const auto& f : report.findings) near += f.kind == mh::finding_kinds::near_duplicate;
  CHECK(near == 2);
}

TEST_CASE(
    "default pipeline: a scope above block_scopes_above is blocked by k-means, same "
    "duplicate and conflict findings as the exact join") {
  // One scope of 3,000 records (threshold 500: partitioned, k = ceil(3000 / 512) = 6) of random
  // unit vectors in 128 dimensions (random pairs have cosine ~ N(0, 1/128): none reaches the
  // conflict candidate threshold 0.6, 6.8 sigma), with 25 planted near-duplicate pairs (cosine
  // ~0.97) and one planted conflict pair ("I am vegetarian" / "I am not vegetarian", cosine
  // ~0.97: a negation, so a conflict and never a near duplicate).
  constexpr Eigen::Index n = 3000, d = 128;
  const auto x = random_unit(n, d, 2020);
  const auto noise = random_unit(64, d, 2021);
  std::vector<mh::memory_record> recs;
  for (Eigen::Index i = 0; i < n; ++i)
    recs.push_back(make_rec("r" + std::to_string(i), "S",
                            std::vector<float>(x.row(i).data(), x.row(i).data() + d)));
  auto near_copy = [&](Eigen::Index from, Eigen::Index to, Eigen::Index k) {
    Eigen::RowVectorXf v = x.row(from) + 0.25f * noise.row(k);
    v.normalize();
    recs[static_cast<std::size_t>(to)].embedding.assign(v.data(), v.data() + d);
  };
  std::set<std::pair<std::string, std::string>> planted;
  for (Eigen::Index k = 0; k < 25; ++k) {
    const Eigen::Index a = 100 * k + 7, b = 100 * k + 57;  // far apart in the store
    near_copy(a, b, k);
    const auto& ia = recs[static_cast<std::size_t>(a)].id;
    const auto& ib = recs[static_cast<std::size_t>(b)].id;
    planted.emplace(std::min(ia, ib), std::max(ia, ib));
  }
  recs[2990].content = "I am vegetarian";
  recs[2995].content = "I am not vegetarian";
  near_copy(2990, 2995, 40);
  const auto store = mh::memory_store<>::from_records(recs);

  auto run = [&](std::size_t block_above, unsigned threads) {
    mh::default_check_settings s;
    s.block_scopes_above = block_above;
    s.threads = threads;
    const auto report = mh::make_default_pipeline(s).run(store, mh::detect_options{});
    std::set<std::pair<std::string, std::string>> dups, conflicts;
    std::size_t skipped = 0;
    for (const auto& f : report.findings) {
      skipped += f.kind == mh::finding_kinds::check_skipped;
      if (f.kind == mh::finding_kinds::near_duplicate) {
        REQUIRE(f.record_ids.size() == 2);
        dups.emplace(std::min(f.record_ids[0], f.record_ids[1]),
                     std::max(f.record_ids[0], f.record_ids[1]));
      } else if (f.kind == mh::finding_kinds::conflict) {
        REQUIRE(f.record_ids.size() == 2);
        conflicts.emplace(f.record_ids[0], f.record_ids[1]);
      }
    }
    CHECK(skipped == 0);
    return std::pair(dups, conflicts);
  };
  const std::set<std::pair<std::string, std::string>> conflict{{"r2990", "r2995"}};
  const auto exact = run(0, 1);
  CHECK(exact.first == planted);
  CHECK(exact.second == conflict);
  const auto blocked = run(500, 1);
  CHECK(blocked.first == planted);
  CHECK(blocked.second == conflict);
  CHECK(run(500, 2) == blocked);  // threads do not change the findings
  CHECK(run(3000, 1) == exact);   // at the threshold itself: still the exact join

  // the switch is per scope size: invalid k-means settings are only reached above the threshold
  auto p = mh::make_default_pipeline(mh::default_check_settings{.block_scopes_above = 500});
  std::get<1>(p.detectors()).candidates.kmeans.probes = 0;
  CHECK_THROWS_AS((void)p.run(store, mh::detect_options{}), mh::error);
  std::get<1>(p.detectors()).candidates.block_above = 3000;
  CHECK_NOTHROW((void)p.run(store, mh::detect_options{}));
  // the shared pair cache: a request at 0.6 keeps its pairs, a later one at 0.92 on the same rows
  // takes them (filtered) and empties the cache; the pairs are those of an uncached policy (the
  // scores may differ in the last bits: the join's tiles round differently at other thresholds)
  mh::scope_size_blocking plain{.block_above = 500};
  mh::scope_size_blocking shared = plain;
  shared.share = std::make_shared<mh::detail::kmeans_scope_cache>();
  shared.share_threshold = 0.6f;
  mh::detection_context ctx(store);
  auto pairs_of = [&](const mh::scope_size_blocking& policy, float t) {
    std::set<std::pair<std::size_t, std::size_t>> out;
    policy(ctx, mh::candidate_request{t, {}, 0, nullptr}, mh::cosine_kernel{},
           [&](std::size_t i, std::size_t j, float sim) {
             CHECK(sim >= t);
             out.emplace(i, j);
           });
    return out;
  };
  const auto high = pairs_of(plain, 0.92f);
  CHECK(high.size() == 26);                // the 25 planted pairs and the conflict pair
  CHECK(pairs_of(shared, 0.92f) == high);  // computed down to 0.6 and kept
  REQUIRE(shared.share->kept);
  CHECK(shared.share->kept->threshold == 0.6f);
  const auto want = pairs_of(plain, 0.95f);
  CHECK(pairs_of(shared, 0.95f) == want);  // taken from the cache
  CHECK_FALSE(shared.share->kept);
  CHECK(pairs_of(shared, 0.6f) == pairs_of(plain, 0.6f));

  CHECK(mh::scope_size_blocking{.block_above = 500}.partitions(501));
  CHECK_FALSE(mh::scope_size_blocking{.block_above = 500}.partitions(500));
  CHECK_FALSE(mh::scope_size_blocking{.block_above = 0}.partitions(1'000'000));
}
}  // namespace kmeans_blocking_test
