// Exact tiled join with GEMM backends, and the int8 prefilter (similarity/join.hpp,
// gemm_backend.hpp, quantized_join.hpp). Only similarity headers, so this file compiles fast.
// The CBLAS backend is checked against Eigen in bench/bench_join.cpp (the test target links no
// BLAS).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "memhealth/similarity/gemm_backend.hpp"
#include "memhealth/similarity/join.hpp"
#include "memhealth/similarity/kernels.hpp"
#include "memhealth/similarity/quantized_join.hpp"

namespace mh = memhealth;

namespace {

// n unit rows of dimension d, Gaussian, plus `planted` rows that are noisy copies of earlier rows
// (cosine ~0.93-0.99 to their source).
mh::row_matrix planted_rows(Eigen::Index n, Eigen::Index d, Eigen::Index planted, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::uniform_real_distribution<float> u(0.08f, 0.4f);
  mh::row_matrix X(n, d);
  for (Eigen::Index i = 0; i < n; ++i) {
    for (Eigen::Index k = 0; k < d; ++k) X(i, k) = g(rng);
    X.row(i).normalize();
  }
  for (Eigen::Index p = 0; p < planted && 2 * p + 1 < n; ++p) {
    const Eigen::Index src = 2 * p, dst = n - 1 - 2 * p;  // pairs spread over the whole range
    const float noise = u(rng);
    for (Eigen::Index k = 0; k < d; ++k) X(dst, k) = X(src, k) + noise * g(rng) / std::sqrt(static_cast<float>(d));
    X.row(dst).normalize();
  }
  return X;
}

using pair_set = std::set<std::pair<std::uint32_t, std::uint32_t>>;

// Brute force in double; also returns the smallest |score - t| so a test can require a gap.
pair_set brute(const mh::row_matrix& A, const mh::row_matrix& B, bool self, float t, double* gap = nullptr) {
  pair_set out;
  double g = 1e9;
  for (Eigen::Index i = 0; i < A.rows(); ++i)
    for (Eigen::Index j = self ? i + 1 : 0; j < B.rows(); ++j) {
      const double s = A.row(i).cast<double>().dot(B.row(j).cast<double>());
      g = std::min(g, std::abs(s - t));
      if (s >= t) out.emplace(static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(j));
    }
  if (gap != nullptr) *gap = g;
  return out;
}

pair_set keys(const std::vector<mh::scored_pair>& v) {
  pair_set s;
  for (const auto& p : v) s.emplace(p.i, p.j);
  return s;
}

bool sorted_ij(const std::vector<mh::scored_pair>& v) {
  for (std::size_t k = 1; k < v.size(); ++k)
    if (std::tie(v[k - 1].i, v[k - 1].j) >= std::tie(v[k].i, v[k].j)) return false;
  return true;
}

std::size_t plain_function_calls = 0;
void count_pair(std::uint32_t, std::uint32_t, float) { ++plain_function_calls; }

}  // namespace

TEST_CASE("threshold_join with the Eigen backend equals brute force; threads and tiles do not change the output") {
  const auto X = planted_rows(701, 100, 60, 7);  // n not a multiple of any tile, d not of 32
  const float t = 0.9f;
  double gap = 0;
  const auto truth = brute(X, X, true, t, &gap);
  REQUIRE(gap > 1e-4);         // no score so close to t that float rounding could decide
  REQUIRE(truth.size() >= 60);  // the planted pairs (cosine >= 0.92) are all there
  const auto ref = mh::threshold_join_pairs(X, t, {.tile = 701});
  CHECK(keys(ref) == truth);
  CHECK(sorted_ij(ref));
  for (const Eigen::Index tile : {1, 16, 100, 256, 1000})
  {
    // the scores may differ in the last bits between tile shapes (GEMM blocking), never between
    // thread counts at one tile size
    const auto one = mh::threshold_join_pairs(X, t, {.tile = tile, .threads = 1}, mh::cosine_kernel{}, mh::eigen_gemm{});
    const auto two = mh::threshold_join_pairs(X, t, {.tile = tile, .threads = 2}, mh::cosine_kernel{}, mh::eigen_gemm{});
    CHECK(one == two);
    CHECK(keys(one) == truth);
    REQUIRE(one.size() == ref.size());
    for (std::size_t k = 0; k < one.size(); ++k) CHECK(one[k].score == doctest::Approx(ref[k].score).epsilon(1e-5));
  }
  // l2 kernel through the backend-aware tile form: same pairs for the equivalent threshold
  const auto l2 = mh::threshold_join_pairs(X, mh::l2_kernel::from_cosine(t), {.tile = 64, .threads = 2},
                                           mh::l2_kernel{}, mh::eigen_gemm{});
  CHECK(keys(l2) == truth);
  // the default backend (Eigen when compiled for AVX-512F, else the widest own kernel the CPU
  // has) against the AVX2 kernel: same pairs, scores equal up to summation order
  for (const unsigned threads : {1u, 2u}) {
    const auto d = mh::threshold_join_pairs(X, t, {.tile = 96, .threads = threads});
    CHECK(keys(d) == truth);
    const auto a = mh::threshold_join_pairs(X, t, {.tile = 96, .threads = threads}, mh::cosine_kernel{}, mh::avx2_gemm{});
    CHECK(keys(a) == keys(d));
    REQUIRE(a.size() == d.size());
    for (std::size_t k = 0; k < a.size(); ++k) CHECK(a[k].score == doctest::Approx(d[k].score).epsilon(1e-5));
    const auto p = mh::threshold_join_pairs(X, t, {.tile = 96, .threads = threads}, mh::cosine_kernel{},
                                            mh::portable_gemm{});
    CHECK(keys(p) == truth);
  }
  // a mutable callable and a const one both reach every pair through the type-erased sink
  std::size_t calls = 0;
  auto count = [&calls, previous = std::uint64_t{0}](std::uint32_t i, std::uint32_t j, float) mutable {
    const std::uint64_t key = (std::uint64_t{i} << 32) | j;
    CHECK((calls == 0 || key > previous));  // increasing (i, j) order
    previous = key;
    ++calls;
  };
  CHECK(mh::threshold_join(X, t, count, {.tile = 64, .threads = 2}).pairs == truth.size());
  CHECK(calls == truth.size());
  pair_set seen;
  const auto collect = [&seen](std::uint32_t i, std::uint32_t j, float) { seen.emplace(i, j); };
  CHECK(mh::threshold_join(X, t, collect, {.tile = 64}).pairs == truth.size());
  CHECK(seen == truth);
  // a plain function, and a pointer to it
  plain_function_calls = 0;
  CHECK(mh::threshold_join(X, t, count_pair, {.tile = 64}).pairs == truth.size());
  const std::size_t two_set = mh::join(X, X, t, &count_pair, {.tile = 64}).pairs;
  CHECK(two_set == 2 * truth.size() + static_cast<std::size_t>(X.rows()));  // both orders + the diagonal
  CHECK(plain_function_calls == truth.size() + two_set);
}

TEST_CASE("avx2_gemm, avx512_gemm and portable_gemm equal a double-precision product for edge shapes and strided views") {
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  // (m, n, k): 1 x 1, partial 6 x 16 / 6 x 32 blocks, exactly one block of each, k just past
  // the 256-deep slice; each shape through the three kernels (avx512_gemm falls back to
  // avx2_gemm on a CPU without AVX-512F; portable_gemm, avx2_gemm's fallback, is called directly
  // so that it runs here too: 6 x 8 blocks, so 7 x 17 and 13 x 33 leave partial blocks)
  for (const int backend : {0, 1, 2})
  for (const auto& [m, n, k] : std::vector<std::tuple<int, int, int>>{
           {1, 1, 1}, {7, 17, 3}, {6, 16, 256}, {6, 32, 256}, {13, 33, 257}, {50, 70, 600}, {5, 3, 0}}) {
    mh::row_matrix big_a(m + 2, k + 5), big_b(n + 1, k + 5);
    for (auto* x : {&big_a, &big_b})
      for (Eigen::Index i = 0; i < x->size(); ++i) x->data()[i] = u(rng);
    const mh::rows_cref A = big_a.block(1, 2, m, k);  // outer stride k + 5
    const mh::rows_cref B = big_b.block(1, 2, n, k);
    mh::row_matrix S_big = mh::row_matrix::Constant(m + 1, n + 3, 7.0f);
    mh::tile_ref S = S_big.block(0, 1, m, n);
    if (backend == 0)
      mh::avx2_gemm{}.gemm_nt(A, B, S);
    else if (backend == 1)
      mh::avx512_gemm{}.gemm_nt(A, B, S);
    else
      mh::portable_gemm{}.gemm_nt(A, B, S);
    for (Eigen::Index i = 0; i < m; ++i)
      for (Eigen::Index j = 0; j < n; ++j) {
        const double ref = A.row(i).cast<double>().dot(B.row(j).cast<double>());
        CHECK(std::abs(S(i, j) - ref) <= 1e-5 * (k + 1));
      }
    std::size_t outside_changed = 0;  // nothing written outside the view
    for (Eigen::Index i = 0; i < S_big.rows(); ++i)
      for (Eigen::Index j = 0; j < S_big.cols(); ++j)
        if ((i >= m || j < 1 || j > n) && S_big(i, j) != 7.0f) ++outside_changed;
    CHECK(outside_changed == 0);
  }
}

TEST_CASE("join (A vs B) equals brute force for several shapes") {
  const auto A = planted_rows(133, 33, 0, 11);
  const auto B = planted_rows(257, 33, 0, 12);
  // cross pairs: make rows 5 and 77 of B near copies of rows 3 and 130 of A
  mh::row_matrix B2 = B;
  B2.row(5) = (A.row(3) + 0.05f * B.row(5)).normalized();
  B2.row(77) = (A.row(130) + 0.05f * B.row(77)).normalized();
  const float t = 0.6f;
  double gap = 0;
  const auto truth = brute(A, B2, false, t, &gap);
  REQUIRE(gap > 1e-4);
  REQUIRE(truth.contains({3u, 5u}));
  REQUIRE(truth.contains({130u, 77u}));
  for (const Eigen::Index tile : {7, 64, 300})
    for (const unsigned threads : {1u, 2u}) {
      const auto p = mh::join_pairs(A, B2, t, {.tile = tile, .threads = threads});
      CHECK(keys(p) == truth);
      CHECK(sorted_ij(p));
      const auto q = mh::quantized_join_pairs(A, B2, t, {.tile = tile / 4 * 4 + 4, .threads = threads});
      CHECK(keys(q) == truth);
      CHECK(sorted_ij(q));
    }
}

TEST_CASE("quantize_rows: a hand-computed row") {
  // x = (1, 0.4, -0.3, 0): m = 1; left q = round(127 x) = (127, 51, -38, 0) (50.8, -38.1), stored
  // +128 = (255, 179, 90, 128); right p = round(63 x) = (63, 25, -19, 0) (25.2, -18.9).
  mh::row_matrix X(1, 4);
  X << 1.0f, 0.4f, -0.3f, 0.0f;
  const auto q = mh::quantize_rows(X);
  CHECK(q.stride == 32);
  CHECK(q.rows_padded() == 4);
  CHECK(q.left[0] == 255);
  CHECK(q.left[1] == 179);
  CHECK(q.left[2] == 90);
  CHECK(q.left[3] == 128);
  CHECK(q.left[4] == 128);  // padding is q = 0
  CHECK(q.right[0] == 63);
  CHECK(q.right[1] == 25);
  CHECK(q.right[2] == -19);
  CHECK(q.right[3] == 0);
  CHECK(q.right_sum128[0] == 128 * 69);
  // q . p = 127·63 + 51·25 + 38·19 = 8001 + 1275 + 722 = 9998; approx = 9998 / 8001 = 1.2495938
  // against x.x = 1.25
  CHECK(mh::int8_dot(q, 0, q, 0) == 9998);
  CHECK(mh::int8_approx_dot(q, 0, q, 0) == doctest::Approx(1.2495938).epsilon(1e-6));
  CHECK(q.norm[0] == doctest::Approx(std::sqrt(1.25)).epsilon(1e-6));
  // ‖x - q/127‖ = 0.00176068; ‖x - p/63‖ = 0.00354931, plus γ'·‖x‖ = 24·2^-23·1.118034 = 3.2e-6;
  // ‖p/63‖ = 1.1173295
  CHECK(q.left_err[0] == doctest::Approx(0.00176068).epsilon(1e-4));
  CHECK(q.right_err[0] == doctest::Approx(0.00354931 + 24.0 * std::ldexp(1.0, -23) * std::sqrt(1.25)).epsilon(1e-4));
  CHECK(q.right_hat[0] == doctest::Approx(1.1173295).epsilon(1e-6));
}

TEST_CASE("int8 error bound holds for every pair of a small set of varied rows") {
  std::mt19937 rng(3);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (const Eigen::Index d : {1, 31, 32, 65, 384}) {
    mh::row_matrix X(48, d);
    for (Eigen::Index i = 0; i < X.rows(); ++i)
      for (Eigen::Index k = 0; k < d; ++k) {
        const int kind = static_cast<int>(i % 4);
        X(i, k) = kind == 0 ? g(rng) : kind == 1 ? u(rng) : kind == 2 ? (k == 0 ? 50.0f : 1e-3f * g(rng)) : 1e-30f * g(rng);
      }
    const auto q = mh::quantize_rows(X);
    int checked = 0;
    for (Eigen::Index i = 0; i < X.rows(); ++i)
      for (Eigen::Index j = 0; j < X.rows(); ++j) {
        const double exact = X.row(i).cast<double>().dot(X.row(j).cast<double>());
        const double err = std::abs(exact - static_cast<double>(mh::int8_approx_dot(q, i, q, j)));
        // float underflow of s_i·r_j·dot and of the bound itself: at most a few 2^-149 (rows of
        // magnitude 1e-30 have products near 1e-60, which float32 cannot hold either)
        CHECK(err <= static_cast<double>(mh::int8_error_bound(q, i, q, j)) + 1e-44);
        ++checked;
      }
    CHECK(checked == 48 * 48);
  }
}

TEST_CASE("quantized join: candidates are a superset of the exact pairs; the output equals the exact join") {
  const auto X = planted_rows(1030, 384, 120, 5);
  const float t = 0.92f;
  double gap = 0;
  const auto truth = brute(X, X, true, t, &gap);
  REQUIRE(gap > 1e-4);
  REQUIRE(truth.size() >= 100);
  const auto q = mh::quantize_rows(X);
  const auto q2 = mh::quantize_rows(X, 2);  // threads do not change the result
  CHECK(q2.left == q.left);
  CHECK(q2.right == q.right);
  CHECK(q2.right_err == q.right_err);
  CHECK(q2.left_err == q.left_err);
  for (const auto& [i, j] : truth) CHECK(mh::int8_approx_dot(q, i, q, j) + mh::int8_error_bound(q, i, q, j) >= t);
  const auto exact = mh::threshold_join_pairs(X, t, {.tile = 128, .threads = 2});
  REQUIRE(keys(exact) == truth);
  for (const unsigned threads : {1u, 2u})
    for (const Eigen::Index tile : {4, 100, 256, 2000}) {
      std::vector<mh::scored_pair> got;
      const auto st = mh::quantized_threshold_join(
          X, q, t, [&](std::uint32_t i, std::uint32_t j, float s) { got.push_back({i, j, s}); },
          {.tile = tile, .threads = threads});
      CHECK(keys(got) == truth);
      CHECK(sorted_ij(got));
      CHECK(st.pairs == truth.size());
      CHECK(!st.truncated);
      CHECK(st.candidates >= truth.size());
      CHECK(st.candidates < 5 * truth.size());  // a filter, not all n²/2 = 530,000 pairs
      for (std::size_t k = 0; k < got.size() && k < exact.size(); ++k)
        CHECK(got[k].score == doctest::Approx(exact[k].score).epsilon(1e-5));
    }
  // the portable, AVX2, AVX-VNNI and AVX-512 VNNI kernels find the same candidates (those the CPU has)
  const mh::detail::int8_test_ctx ctx{&q, &q, t, true};
  std::vector<std::vector<std::uint64_t>> by_level(4);
  for (int level = 0; level <= 3; ++level) {
    if (!mh::detail::int8_level_available(level)) continue;  // the levels do not nest
    for (Eigen::Index r0 = 0; r0 < X.rows(); r0 += 256)
      mh::detail::int8_band_candidates(ctx, r0, std::min<Eigen::Index>(X.rows(), r0 + 256), level,
                                       by_level[static_cast<std::size_t>(level)]);
    std::sort(by_level[static_cast<std::size_t>(level)].begin(), by_level[static_cast<std::size_t>(level)].end());
    CHECK(by_level[static_cast<std::size_t>(level)] == by_level[0]);
  }
  CHECK(by_level[0].size() >= truth.size());
  // the two-set form (no triangle) over the full square, bands of 100 rows: the kernels agree,
  // and every upper-triangle candidate is among them
  const mh::detail::int8_test_ctx square{&q, &q, t, false};
  std::vector<std::uint64_t> base;
  for (int level = 0; level <= 3; ++level) {
    if (!mh::detail::int8_level_available(level)) continue;
    std::vector<std::uint64_t> got;
    for (Eigen::Index r0 = 0; r0 < X.rows(); r0 += 100)
      mh::detail::int8_band_candidates(square, r0, std::min<Eigen::Index>(X.rows(), r0 + 100), level, got);
    std::sort(got.begin(), got.end());
    if (level == 0)
      base = got;
    else
      CHECK(got == base);
  }
  CHECK(std::includes(base.begin(), base.end(), by_level[0].begin(), by_level[0].end()));
  CHECK(base.size() >= 2 * truth.size() + static_cast<std::size_t>(X.rows()));  // (i, j), (j, i), (i, i)
  // pair budget: the first 50 pairs in (i, j) order
  const auto cut = mh::quantized_threshold_join_pairs(X, t, {.tile = 64, .threads = 2, .max_pairs = 50});
  REQUIRE(cut.size() == 50);
  CHECK(std::equal(cut.begin(), cut.end(), exact.begin(),
                   [](const auto& a, const auto& b) { return a.i == b.i && a.j == b.j; }));
}

TEST_CASE("edge cases: empty, one row, zero rows, NaN and inf rows agree with the float32 join") {
  CHECK(mh::quantized_threshold_join_pairs(mh::row_matrix(0, 8), 0.5f).empty());
  CHECK(mh::quantized_threshold_join_pairs(mh::row_matrix::Ones(1, 8), 0.0f).empty());
  CHECK(mh::quantized_join_pairs(mh::row_matrix(0, 3), mh::row_matrix::Ones(2, 3), 0.0f).empty());
  CHECK_THROWS_AS((void)mh::quantized_threshold_join_pairs(mh::row_matrix::Ones(3, 3), 0.5f, {.tile = 2}), mh::error);

  // rows: 0 = (inf, 0, 0), 1 = (1, 0, 0), 2 = (0, 1, 0), 3 = (1, 1, 0)/√2, 4 = (NaN, 0, 0), 5 = 0
  // float32 dots: 0.1 = inf, 0.2 = inf·0 = NaN, 0.3 = inf, 0.4 = NaN, 0.5 = NaN, 1.3 = 2.3 = 0.7071,
  // everything with row 4 is NaN, 1.2 = 0, anything with row 5 is 0 (or NaN with rows 0 and 4).
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const float h = 1.0f / std::sqrt(2.0f);
  mh::row_matrix X(6, 3);
  X << inf, 0, 0, 1, 0, 0, 0, 1, 0, h, h, 0, nan, 0, 0, 0, 0, 0;
  const pair_set expected{{0, 1}, {0, 3}, {1, 3}, {2, 3}};
  CHECK(keys(mh::threshold_join_pairs(X, 0.5f)) == expected);
  const auto q = mh::quantized_threshold_join_pairs(X, 0.5f);
  CHECK(keys(q) == expected);
  REQUIRE(q.size() == 4);
  CHECK(q[0].score == inf);
  CHECK(q[2].score == doctest::Approx(h));
  // t <= 0 keeps the zero row's 0 scores, as the float32 join does: 1.2, 1.5, 2.5, 3.5 and 1.3, 2.3
  const pair_set at_zero{{0, 1}, {0, 3}, {1, 2}, {1, 3}, {1, 5}, {2, 3}, {2, 5}, {3, 5}};
  CHECK(keys(mh::threshold_join_pairs(X, 0.0f)) == at_zero);
  CHECK(keys(mh::quantized_threshold_join_pairs(X, 0.0f)) == at_zero);
}
