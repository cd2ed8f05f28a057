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
#include "memhealth/similarity/lsh.hpp"
#include "memhealth/similarity/quantized_join.hpp"

namespace similarity_join_test {
namespace mh = memhealth;

namespace {

// n unit rows of dimension d, Gaussian, plus `planted` rows that are noisy copies of earlier rows
// (cosine ~0.93-0.99 to their source).
mh::row_matrix planted_rows(Eigen::Index n, Eigen::Index d, Eigen::Index planted,
                            std::uint32_t seed) {
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
    for (Eigen::Index k = 0; k < d; ++k)
      X(dst, k) = X(src, k) + noise * g(rng) / std::sqrt(static_cast<float>(d));
    X.row(dst).normalize();
  }
  return X;
}

using pair_set = std::set<std::pair<std::uint32_t, std::uint32_t>>;

// Brute force in double; also returns the smallest |score - t| so a test can require a gap.
pair_set brute(const mh::row_matrix& A, const mh::row_matrix& B, bool self, float t,
               double* gap = nullptr) {
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
void count_pair(std::uint32_t, std::uint32_t, float) {
  ++plain_function_calls;
}

}  // namespace

TEST_CASE(
    "threshold_join with the Eigen backend equals brute force, threads and tiles do not change the "
    "output") {
  const auto X = planted_rows(701, 100, 60, 7);  // n not a multiple of any tile, d not of 32
  const float t = 0.9f;
  double gap = 0;
  const auto truth = brute(X, X, true, t, &gap);
  REQUIRE(gap > 1e-4);          // no score so close to t that float rounding could decide
  REQUIRE(truth.size() >= 60);  // the planted pairs (cosine >= 0.92) are all there
  const auto ref = mh::threshold_join_pairs(X, t, {.tile = 701});
  CHECK(keys(ref) == truth);
  CHECK(sorted_ij(ref));
  for (const Eigen::Index tile : {1, 16, 100, 256, 1000}) {
    // the scores may differ in the last bits between tile shapes (GEMM blocking), never between
    // thread counts at one tile size
    const auto one = mh::threshold_join_pairs(X, t, {.tile = tile, .threads = 1},
                                              mh::cosine_kernel{}, mh::eigen_gemm{});
    const auto two = mh::threshold_join_pairs(X, t, {.tile = tile, .threads = 2},
                                              mh::cosine_kernel{}, mh::eigen_gemm{});
    CHECK(one == two);
    CHECK(keys(one) == truth);
    REQUIRE(one.size() == ref.size());
    for (std::size_t k = 0; k < one.size(); ++k)
      CHECK(one[k].score == doctest::Approx(ref[k].score).epsilon(1e-5));
  }
  // l2 kernel through the backend-aware tile form: same pairs for the equivalent threshold
  const auto l2 =
      mh::threshold_join_pairs(X, mh::l2_kernel::from_cosine(t), {.tile = 64, .threads = 2},
                               mh::l2_kernel{}, mh::eigen_gemm{});
  CHECK(keys(l2) == truth);
  // the default backend (Eigen when compiled for AVX-512F, else the widest own kernel the CPU
  // has) against the AVX2 kernel: same pairs, scores equal up to summation order
  for (const unsigned threads : {1u, 2u}) {
    const auto d = mh::threshold_join_pairs(X, t, {.tile = 96, .threads = threads});
    CHECK(keys(d) == truth);
    const auto a = mh::threshold_join_pairs(X, t, {.tile = 96, .threads = threads},
                                            mh::cosine_kernel{}, mh::avx2_gemm{});
    CHECK(keys(a) == keys(d));
    REQUIRE(a.size() == d.size());
    for (std::size_t k = 0; k < a.size(); ++k)
      CHECK(a[k].score == doctest::Approx(d[k].score).epsilon(1e-5));
    const auto p = mh::threshold_join_pairs(X, t, {.tile = 96, .threads = threads},
                                            mh::cosine_kernel{}, mh::portable_gemm{});
    CHECK(keys(p) == truth);
  }
  // a mutable callable and a const one both reach every pair through the type-erased sink
  std::size_t calls = 0;
  auto count = [&calls, previous = std::uint64_t{0}](std::uint32_t i, std::uint32_t j,
                                                     float) mutable {
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
  CHECK(two_set ==
        2 * truth.size() + static_cast<std::size_t>(X.rows()));  // both orders + the diagonal
  CHECK(plain_function_calls == truth.size() + two_set);
}

TEST_CASE(
    "avx2_gemm, avx512_gemm and portable_gemm equal a double-precision product for edge shapes and "
    "strided views") {
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  // (m, n, k): 1 x 1, partial 6 x 16 / 6 x 32 blocks, exactly one block of each, k just past
  // the 256-deep slice; each shape through the three kernels (avx512_gemm falls back to
  // avx2_gemm on a CPU without AVX-512F; portable_gemm, avx2_gemm's fallback, is called directly
  // so that it runs here too: 6 x 8 blocks, so 7 x 17 and 13 x 33 leave partial blocks)
  for (const int backend : {0, 1, 2})
    for (const auto& [m, n, k] : std::vector<std::tuple<int, int, int>>{{1, 1, 1},
                                                                        {7, 17, 3},
                                                                        {6, 16, 256},
                                                                        {6, 32, 256},
                                                                        {13, 33, 257},
                                                                        {50, 70, 600},
                                                                        {5, 3, 0}}) {
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
      const auto q =
          mh::quantized_join_pairs(A, B2, t, {.tile = tile / 4 * 4 + 4, .threads = threads});
      CHECK(keys(q) == truth);
      CHECK(sorted_ij(q));
    }
}

// Every pair whose double-precision score is at least `margin` above t is in `got`, and none at
// least `margin` below (pairs closer to t may fall either way by float rounding).
bool agrees_outside(const std::vector<mh::scored_pair>& got, const mh::row_matrix& X, float t,
                    double margin) {
  const pair_set have = keys(got);
  for (Eigen::Index i = 0; i < X.rows(); ++i)
    for (Eigen::Index j = i + 1; j < X.rows(); ++j) {
      const double s = X.row(i).cast<double>().dot(X.row(j).cast<double>());
      const bool in = have.contains({static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(j)});
      if ((s >= t + margin && !in) || (s < t - margin && in)) return false;
    }
  return true;
}

TEST_CASE("prefix bound: width, factors, and the same pairs as the full-width join") {
  // automatic width: d/4 rounded down to a multiple of 16 from d = 128; explicit values; off
  CHECK(mh::detail::prefix_width(384, 0) == 96);
  CHECK(mh::detail::prefix_width(200, 0) == 48);
  CHECK(mh::detail::prefix_width(128, 0) == 32);
  CHECK(mh::detail::prefix_width(127, 0) == 0);
  CHECK(mh::detail::prefix_width(384, 100) == 100);
  CHECK(mh::detail::prefix_width(384, 384) == 0);
  CHECK(mh::detail::prefix_width(384, -1) == 0);
  // the int8 form's automatic width: d/3 rounded down to a multiple of 32
  CHECK(mh::detail::int8_prefix_width(384, 0) == 128);
  CHECK(mh::detail::int8_prefix_width(200, 0) == 64);
  CHECK(mh::detail::int8_prefix_width(127, 0) == 0);
  CHECK(mh::detail::int8_prefix_width(384, 100) == 100);
  CHECK(mh::detail::int8_prefix_width(384, -1) == 0);
  // factor of x = (0.6, 0, ..., 0, 0.8), d = 128, p = 32: ‖x''‖ = 0.8, ‖x‖ = 1,
  // √ε = √(144 · 2^-23) = 12 · 2^-11.5 = 0.00414320
  mh::row_matrix x = mh::row_matrix::Zero(2, 128);
  x(0, 0) = 0.6f;
  x(0, 127) = 0.8f;
  x(1, 5) = std::numeric_limits<float>::quiet_NaN();
  const auto u = mh::detail::prefix_bound_factors(x, 32);
  CHECK(u[0] == doctest::Approx(0.80414320).epsilon(1e-6));
  CHECK(static_cast<double>(u[0]) >= 0.8 + std::sqrt(144.0 * std::ldexp(1.0, -23)));  // rounded up
  CHECK(std::isnan(u[1]));

  // The inequality itself, in float32 as the join computes it: prefix(i, j) + u_i·u_j >= the
  // full-width score for every pair, on rows chosen to make it tight: identical rows with all of
  // their mass after the prefix (prefix 0, score 1, u² = (1 + √ε)²), rows with all of it in the
  // prefix, and Gaussian rows; d = 384, p = 96.
  {
    mh::row_matrix R = planted_rows(40, 384, 10, 25);
    for (Eigen::Index i = 0; i < 10; ++i) {
      R.row(i).head(96).setZero();
      R.row(i).normalize();
    }
    for (Eigen::Index i = 1; i < 5; ++i) R.row(i) = R.row(0);  // identical suffix-only rows
    for (Eigen::Index i = 10; i < 15; ++i) {
      R.row(i).tail(288).setZero();
      R.row(i).normalize();
    }
    const auto ur = mh::detail::prefix_bound_factors(R, 96);
    const mh::row_matrix P = R.leftCols(96) * R.leftCols(96).transpose();
    const mh::row_matrix F = R * R.transpose();
    std::size_t violations = 0;
    for (Eigen::Index i = 0; i < R.rows(); ++i)
      for (Eigen::Index j = 0; j < R.rows(); ++j)
        if (!(P(i, j) + ur[static_cast<std::size_t>(i)] * ur[static_cast<std::size_t>(j)] >=
              F(i, j)))
          ++violations;
    CHECK(violations == 0);
    CHECK(F(0, 1) >= 0.99999f);  // the tight case is there
    CHECK(P(0, 1) == 0.0f);
  }
  // a finite row whose norm overflows float (u = +inf) against a zero row (u floored at FLT_MIN):
  // the full-width score 0 passes t = -1, so the bound must keep it (inf · 0 would be NaN)
  {
    mh::row_matrix H = mh::row_matrix::Zero(3, 384);
    H.row(0).setConstant(3e37f);  // ‖x‖ ≈ 5.9e38 > FLT_MAX
    H(2, 0) = 1.0f;
    const auto uh = mh::detail::prefix_bound_factors(H, 96);
    CHECK(std::isinf(uh[0]));
    CHECK(uh[1] == std::numeric_limits<float>::min());  // the floor
    CHECK(uh[0] * uh[1] > 0.0f);                        // +inf, not NaN
    // (this small join is one tile with more than 1/16 candidates, so it takes the dense path)
    const auto all = mh::threshold_join_pairs(H, -1.0f, {}, mh::inner_product_kernel{});
    CHECK(all.size() == 3);
    CHECK(keys(all) == keys(mh::threshold_join_pairs(H, -1.0f, {.prefix_dims = 384},
                                                     mh::inner_product_kernel{})));
  }

  // Gaussian rows with planted near-duplicates: nothing but them passes the bound
  const auto X = planted_rows(1200, 384, 40, 21);
  const float t = 0.9f;
  double gap = 0;
  const auto truth = brute(X, X, true, t, &gap);
  REQUIRE(gap > 1e-4);
  REQUIRE(truth.size() >= 40);
  const auto full = mh::threshold_join_pairs(X, t, {.tile = 500, .prefix_dims = 384});
  CHECK(keys(full) == truth);
  for (const Eigen::Index tile : {64, 500})
    for (const unsigned threads : {1u, 2u}) {
      std::vector<mh::scored_pair> got;
      const auto st = mh::threshold_join(X, t,
                                         [&](std::uint32_t i, std::uint32_t j, float sc) {
                                           got.push_back({i, j, sc});
                                         },
                                         {.tile = tile, .threads = threads});
      CHECK(keys(got) == truth);
      CHECK(sorted_ij(got));
      CHECK(st.pairs == truth.size());
      CHECK(st.dense_tiles == 0);
      CHECK(st.candidates >= truth.size());  // every pair reported was a candidate first
      CHECK(st.candidates <= truth.size() + 10);
      REQUIRE(got.size() == full.size());
      for (std::size_t k = 0; k < got.size(); ++k)
        CHECK(got[k].score == doctest::Approx(full[k].score).epsilon(1e-5));
    }
  // the full-width join counts nothing
  const auto st_full =
      mh::threshold_join(X, t, [](auto, auto, float) {}, {.tile = 500, .prefix_dims = 384});
  CHECK(st_full.candidates == 0);
  CHECK(st_full.dense_tiles == 0);
  // another width, not a multiple of 16, and a tiny one (most pairs pass: dense tiles)
  CHECK(keys(mh::threshold_join_pairs(X, t, {.tile = 128, .threads = 2, .prefix_dims = 100})) ==
        truth);
  const auto st4 =
      mh::threshold_join(X, t, [](auto, auto, float) {}, {.tile = 128, .prefix_dims = 4});
  CHECK(st4.pairs == truth.size());
  CHECK(st4.dense_tiles > 0);

  // two-set join, d = 256 (p = 64), with cross near-duplicates
  const auto A = planted_rows(300, 256, 0, 22);
  mh::row_matrix B = planted_rows(450, 256, 0, 23);
  B.row(10) = (A.row(7) + 0.1f * B.row(10)).normalized();
  B.row(400) = (A.row(299) + 0.2f * B.row(400)).normalized();
  const auto cross = brute(A, B, false, t, &gap);
  REQUIRE(gap > 1e-4);
  REQUIRE(cross.size() == 2);
  for (const unsigned threads : {1u, 2u}) {
    std::vector<mh::scored_pair> got;
    const auto st = mh::join(A, B, t,
                             [&](std::uint32_t i, std::uint32_t j, float sc) {
                               got.push_back({i, j, sc});
                             },
                             {.tile = 96, .threads = threads});
    CHECK(keys(got) == cross);
    // the two cross pairs, plus a few chance pairs whose prefix score and suffix norms are both
    // high (p = 64: prefix scores have a standard deviation of 1/16 · 1/2, suffix norms vary)
    CHECK(st.candidates >= 2);
    CHECK(st.candidates <= 20);
  }

  // two-set inner product with different scales on the two sides (A x 3, B x 0.4: products are
  // 1.2 cos), so mixing up the two sides' factors or their column offsets would show
  {
    const mh::row_matrix A3 = 3.0f * A, B04 = 0.4f * B;
    const auto scaled = brute(A3, B04, false, 1.2f * t, &gap);
    REQUIRE(gap > 1e-4);
    CHECK(scaled == cross);
    CHECK(keys(mh::join_pairs(A3, B04, 1.2f * t, {.tile = 64, .threads = 2},
                              mh::inner_product_kernel{})) == cross);
    CHECK(
        keys(mh::join_pairs(B04, A3, 1.2f * t, {.tile = 64}, mh::inner_product_kernel{})).size() ==
        2);
  }

  // inner product of unnormalised rows (norms 0.5 to 2): the bound scales with the norms
  mh::row_matrix Y = X;
  std::mt19937 rng(24);
  std::uniform_real_distribution<float> scale(0.5f, 2.0f);
  for (Eigen::Index i = 0; i < Y.rows(); ++i) Y.row(i) *= scale(rng);
  const auto ip_truth = brute(Y, Y, true, 1.5f, &gap);
  REQUIRE(gap > 1e-4);
  REQUIRE(!ip_truth.empty());
  CHECK(keys(mh::threshold_join_pairs(Y, 1.5f, {.tile = 200, .threads = 2},
                                      mh::inner_product_kernel{})) == ip_truth);
  // l2 is not a dot-product kernel: no bound, same pairs for the equivalent threshold
  const auto l2 = mh::threshold_join(
      X, mh::l2_kernel::from_cosine(t), [](auto, auto, float) {}, {.tile = 128}, mh::l2_kernel{});
  CHECK(l2.pairs == truth.size());
  CHECK(l2.candidates == 0);
}

TEST_CASE("prefix bound on rows that are all alike: dense tiles, budgets, non-finite rows") {
  // 300 rows around one direction: cosines spread around 0.93, so about half of all pairs pass
  std::mt19937 rng(31);
  std::normal_distribution<float> g(0.0f, 1.0f);
  mh::row_matrix X(300, 384);
  for (Eigen::Index i = 0; i < X.rows(); ++i) {
    for (Eigen::Index k = 0; k < X.cols(); ++k) X(i, k) = 1.0f + 0.27f * g(rng);
    X.row(i).normalize();
  }
  const float t = 0.93f;
  const auto full = mh::threshold_join_pairs(X, t, {.tile = 64, .prefix_dims = 384});
  REQUIRE(full.size() > 5000);
  REQUIRE(full.size() < 40000);
  CHECK(agrees_outside(full, X, t, 1e-5));
  for (const unsigned threads : {1u, 2u}) {
    std::vector<mh::scored_pair> got;
    const auto st = mh::threshold_join(X, t,
                                       [&](std::uint32_t i, std::uint32_t j, float sc) {
                                         got.push_back({i, j, sc});
                                       },
                                       {.tile = 64, .threads = threads});
    CHECK(st.dense_tiles == 15);  // 5 x 5 tiles, upper triangle with the diagonal: every one dense
    CHECK(agrees_outside(got, X, t, 1e-5));
    CHECK(sorted_ij(got));
  }
  // a pair budget cuts both paths at the same pairs for every thread count
  const auto cut1 = mh::threshold_join_pairs(X, t, {.tile = 64, .threads = 1, .max_pairs = 1000});
  const auto cut2 = mh::threshold_join_pairs(X, t, {.tile = 64, .threads = 2, .max_pairs = 1000});
  CHECK(cut1.size() == 1000);
  CHECK(cut1 == cut2);
  const auto P = planted_rows(600, 384, 30, 32);
  const auto p1 = mh::threshold_join_pairs(P, 0.9f, {.tile = 100, .threads = 1, .max_pairs = 7});
  const auto p2 = mh::threshold_join_pairs(P, 0.9f, {.tile = 100, .threads = 2, .max_pairs = 7});
  CHECK(p1.size() == 7);
  CHECK(p1 == p2);
  // non-finite rows: the bound reports what the full-width join reports (NaN never passes, a
  // +inf score does)
  mh::row_matrix Q = planted_rows(200, 384, 10, 33);
  Q(3, 10) = std::numeric_limits<float>::quiet_NaN();   // prefix
  Q(4, 300) = std::numeric_limits<float>::quiet_NaN();  // suffix
  Q(5, 200) = std::numeric_limits<float>::infinity();   // suffix: +inf or NaN against each row
  Q(6, 20) = std::numeric_limits<float>::infinity();    // prefix
  const auto q_full = mh::threshold_join_pairs(Q, 0.9f, {.tile = 64, .prefix_dims = 384});
  const auto q_bound = mh::threshold_join_pairs(Q, 0.9f, {.tile = 64});
  CHECK(keys(q_bound) == keys(q_full));
  CHECK(keys(mh::quantized_threshold_join_pairs(Q, 0.9f, {.tile = 64, .threads = 2})) ==
        keys(q_full));  // int8, p = 128
  // a row that is zero in the prefix and one +inf in the suffix: the float32 join reports +inf
  // against every row with a positive entry there; so must the int8 prefix form (the zero-prefix
  // row's terms are floored, so inf · 0 = NaN cannot drop the pair)
  mh::row_matrix Z = planted_rows(50, 384, 0, 34);
  Z.row(0).setZero();
  Z(0, 200) = std::numeric_limits<float>::infinity();
  Z.row(1).setZero();
  Z(1, 200) = 1.0f;
  const auto z_full = mh::threshold_join_pairs(Z, 0.9f, {.prefix_dims = 384});
  REQUIRE(keys(z_full).contains({0u, 1u}));
  CHECK(keys(mh::threshold_join_pairs(Z, 0.9f)) == keys(z_full));
  CHECK(keys(mh::quantized_threshold_join_pairs(Z, 0.9f)) == keys(z_full));
  CHECK(q_full.size() > 10);  // the inf rows reach some rows with +inf
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
  CHECK(q.right_err[0] ==
        doctest::Approx(0.00354931 + 24.0 * std::ldexp(1.0, -23) * std::sqrt(1.25)).epsilon(1e-4));
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
        X(i, k) = kind == 0   ? g(rng)
                  : kind == 1 ? u(rng)
                  : kind == 2 ? (k == 0 ? 50.0f : 1e-3f * g(rng))
                              : 1e-30f * g(rng);
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

TEST_CASE(
    "quantized join: candidates are a superset of the exact pairs, the output equals the exact "
    "join") {
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
  for (const auto& [i, j] : truth)
    CHECK(mh::int8_approx_dot(q, i, q, j) + mh::int8_error_bound(q, i, q, j) >= t);
  const auto exact = mh::threshold_join_pairs(X, t, {.tile = 128, .threads = 2});
  REQUIRE(keys(exact) == truth);
  for (const unsigned threads : {1u, 2u})
    for (const Eigen::Index tile : {4, 100, 256, 2000}) {
      std::vector<mh::scored_pair> got;
      const auto st = mh::quantized_threshold_join(X, q, t,
                                                   [&](std::uint32_t i, std::uint32_t j, float s) {
                                                     got.push_back({i, j, s});
                                                   },
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
  // the portable, AVX2, AVX-VNNI and AVX-512 VNNI kernels find the same candidates (those the CPU
  // has)
  const mh::detail::int8_test_ctx ctx{&q, &q, t, true, q.norm.data(), q.right_err.data()};
  std::vector<std::vector<std::uint64_t>> by_level(4);
  for (int level = 0; level <= 3; ++level) {
    if (!mh::detail::int8_level_available(level)) continue;  // the levels do not nest
    for (Eigen::Index r0 = 0; r0 < X.rows(); r0 += 256)
      mh::detail::int8_band_candidates(ctx, r0, std::min<Eigen::Index>(X.rows(), r0 + 256), level,
                                       by_level[static_cast<std::size_t>(level)]);
    std::sort(by_level[static_cast<std::size_t>(level)].begin(),
              by_level[static_cast<std::size_t>(level)].end());
    CHECK(by_level[static_cast<std::size_t>(level)] == by_level[0]);
  }
  CHECK(by_level[0].size() >= truth.size());
  // the two-set form (no triangle) over the full square, bands of 100 rows: the kernels agree,
  // and every upper-triangle candidate is among them
  const mh::detail::int8_test_ctx square{&q, &q, t, false, q.norm.data(), q.right_err.data()};
  std::vector<std::uint64_t> base;
  for (int level = 0; level <= 3; ++level) {
    if (!mh::detail::int8_level_available(level)) continue;
    std::vector<std::uint64_t> got;
    for (Eigen::Index r0 = 0; r0 < X.rows(); r0 += 100)
      mh::detail::int8_band_candidates(square, r0, std::min<Eigen::Index>(X.rows(), r0 + 100),
                                       level, got);
    std::sort(got.begin(), got.end());
    if (level == 0)
      base = got;
    else
      CHECK(got == base);
  }
  CHECK(std::includes(base.begin(), base.end(), by_level[0].begin(), by_level[0].end()));
  CHECK(base.size() >=
        2 * truth.size() + static_cast<std::size_t>(X.rows()));  // (i, j), (j, i), (i, i)
  // the prefix form (p = 128, test (3)): the kernels agree, the candidates include every exact
  // pair and few others, and the joins (own quantisation, or a given int8_rows) equal the exact
  // join
  const auto qp = mh::quantize_rows(X, 2, 0);
  REQUIRE(qp.cols == 128);
  REQUIRE(qp.stride == 128);
  REQUIRE(qp.suffix.size() == static_cast<std::size_t>(qp.rows_padded()));
  CHECK(q.suffix.empty());
  std::vector<float> fold_a, fold_b;
  mh::detail::int8_fold_prefix(qp, qp, fold_a, fold_b);
  const mh::detail::int8_test_ctx pctx{&qp, &qp, t, true, fold_a.data(), fold_b.data()};
  std::vector<std::vector<std::uint64_t>> p_level(4);
  for (int level = 0; level <= 3; ++level) {
    if (!mh::detail::int8_level_available(level)) continue;
    auto& v = p_level[static_cast<std::size_t>(level)];
    for (Eigen::Index r0 = 0; r0 < X.rows(); r0 += 128)
      mh::detail::int8_band_candidates(pctx, r0, std::min<Eigen::Index>(X.rows(), r0 + 128), level,
                                       v);
    std::sort(v.begin(), v.end());
    CHECK(v == p_level[0]);
  }
  pair_set p_cand;
  for (const std::uint64_t key : p_level[0])
    p_cand.emplace(static_cast<std::uint32_t>(key >> 32),
                   static_cast<std::uint32_t>(key & 0xffffffffu));
  CHECK(std::includes(p_cand.begin(), p_cand.end(), truth.begin(), truth.end()));
  CHECK(p_cand.size() < 2 * truth.size());
  for (const unsigned threads : {1u, 2u}) {
    std::vector<mh::scored_pair> got;
    const auto st = mh::quantized_threshold_join(
        X, t,
        [&](std::uint32_t i, std::uint32_t j, float s) {
          got.push_back({i, j, s});
        },
        {.tile = 100, .threads = threads});  // default options: prefix form
    CHECK(keys(got) == truth);
    CHECK(sorted_ij(got));
    CHECK(st.candidates == p_cand.size());
    CHECK(keys(mh::quantized_threshold_join_pairs(
              X, t, {.tile = 100, .threads = threads, .prefix_dims = -1})) == truth);
  }
  std::size_t given = 0;
  mh::quantized_threshold_join(X, qp, t, [&](auto, auto, float) { ++given; }, {.tile = 256});
  CHECK(given == truth.size());
  // two-set join, both sides in the prefix form with one λ; A x 10 and B x 0.1 (same products)
  // make the two sides' error-to-norm ratios 100 apart, so a λ per side would lose pairs
  const mh::row_matrix A = X.topRows(500), B = X.bottomRows(530);
  const auto cross = brute(A, B, false, t);
  REQUIRE(!cross.empty());
  CHECK(keys(mh::quantized_join_pairs(A, B, t, {.tile = 64, .threads = 2})) == cross);
  const mh::row_matrix A10 = 10.0f * A, B01 = 0.1f * B;
  CHECK(keys(mh::quantized_join_pairs(A10, B01, t, {.tile = 64, .threads = 2})) == cross);
  // pair budget: the first 50 pairs in (i, j) order
  const auto cut =
      mh::quantized_threshold_join_pairs(X, t, {.tile = 64, .threads = 2, .max_pairs = 50});
  REQUIRE(cut.size() == 50);
  CHECK(std::equal(cut.begin(), cut.end(), exact.begin(),
                   [](const auto& a, const auto& b) { return a.i == b.i && a.j == b.j; }));
}

TEST_CASE("int8 prefix form: the folded factors of test (3), by hand") {
  // one row each: ‖x'‖ = 0.5, u_a = 0.8; e'_b = 0.01, u_b = 0.6. λ = 0.01 / 0.5 = 0.02;
  // √(0.02·0.25 + 0.64) = √0.645 = 0.8031189, √(0.0001/0.02 + 0.36) = √0.365 = 0.6041523; their
  // product 0.4852 bounds 0.5·0.01 + 0.8·0.6 = 0.485 from above
  mh::int8_rows a, b;
  a.rows = b.rows = 1;
  a.dim = b.dim = 128;
  a.cols = b.cols = 32;
  a.norm = {0.5f};
  a.suffix = {0.8f};
  a.right_err = {0.0f};
  b.norm = {0.0f};
  b.right_err = {0.01f};
  b.suffix = {0.6f};
  std::vector<float> fa, fb;
  mh::detail::int8_fold_prefix(a, b, fa, fb);
  REQUIRE(fa.size() == 1);
  REQUIRE(fb.size() == 1);
  CHECK(fa[0] == doctest::Approx(0.8031189).epsilon(1e-6));
  CHECK(fb[0] == doctest::Approx(0.6041523).epsilon(1e-6));
  CHECK(static_cast<double>(fa[0]) * fb[0] >= 0.485);
  // a zero row stays 0, a non-finite one +inf
  a.norm = {0.0f};
  a.suffix = {0.0f};
  b.right_err = {std::numeric_limits<float>::infinity()};
  mh::detail::int8_fold_prefix(a, b, fa, fb);
  CHECK(fa[0] == 0.0f);
  CHECK(std::isinf(fb[0]));
}

TEST_CASE("edge cases: empty, one row, zero rows, NaN and inf rows agree with the float32 join") {
  CHECK(mh::quantized_threshold_join_pairs(mh::row_matrix(0, 8), 0.5f).empty());
  CHECK(mh::quantized_threshold_join_pairs(mh::row_matrix::Ones(1, 8), 0.0f).empty());
  CHECK(mh::quantized_join_pairs(mh::row_matrix(0, 3), mh::row_matrix::Ones(2, 3), 0.0f).empty());
  CHECK_THROWS_AS(
      (void)mh::quantized_threshold_join_pairs(mh::row_matrix::Ones(3, 3), 0.5f, {.tile = 2}),
      mh::error);

  // rows: 0 = (inf, 0, 0), 1 = (1, 0, 0), 2 = (0, 1, 0), 3 = (1, 1, 0)/√2, 4 = (NaN, 0, 0), 5 = 0
  // float32 dots: 0.1 = inf, 0.2 = inf·0 = NaN, 0.3 = inf, 0.4 = NaN, 0.5 = NaN, 1.3 = 2.3 =
  // 0.7071, everything with row 4 is NaN, 1.2 = 0, anything with row 5 is 0 (or NaN with rows 0 and
  // 4).
  const float inf = std::numeric_limits<float>::infinity(),
              nan = std::numeric_limits<float>::quiet_NaN();
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

TEST_CASE(
    "empty inputs are empty results: every join, full and prefix forms, one or both sides empty") {
  // d = 384 takes the int8 prefix form by default (d/3 rounded down to 128 columns): an empty
  // side has no suffix factors, which the form check once read as "another prefix width"
  const mh::row_matrix none(0, 384), two = mh::row_matrix::Ones(2, 384) / std::sqrt(384.0f);
  CHECK(mh::threshold_join_pairs(none, 0.5f).empty());
  CHECK(mh::join_pairs(none, none, 0.5f).empty());
  CHECK(mh::join_pairs(none, two, 0.5f).empty());
  CHECK(mh::join_pairs(two, none, 0.5f).empty());
  for (const Eigen::Index prefix : {Eigen::Index{0}, Eigen::Index{-1}, Eigen::Index{96}}) {
    CAPTURE(prefix);
    const mh::quantized_join_options o{.prefix_dims = prefix};
    const auto q = mh::quantize_rows(none, 1, prefix);
    CHECK(q.rows == 0);
    CHECK(q.dim == 384);
    mh::quantized_join_stats st;
    std::size_t emitted = 0;
    CHECK_NOTHROW(st = mh::quantized_threshold_join(
                      none, 0.5f, [&](std::uint32_t, std::uint32_t, float) { ++emitted; }, o));
    CHECK(emitted == 0);
    CHECK(st.pairs == 0);
    CHECK(st.candidates == 0);
    CHECK_NOTHROW(st = mh::quantized_threshold_join(
                      none, q, 0.5f, [&](std::uint32_t, std::uint32_t, float) { ++emitted; }, o));
    CHECK(emitted == 0);
    CHECK(mh::quantized_threshold_join_pairs(none, 0.5f, o).empty());
    CHECK(mh::quantized_join_pairs(none, none, 0.5f, o).empty());
    CHECK(mh::quantized_join_pairs(none, two, 0.5f, o).empty());
    CHECK(mh::quantized_join_pairs(two, none, 0.5f, o).empty());
    // a non-empty self join still finds the one pair (cosine 1 of two equal unit rows)
    CHECK(mh::quantized_threshold_join_pairs(two, 0.5f, o).size() == 1);
  }
  // no columns at all
  CHECK(mh::threshold_join_pairs(mh::row_matrix(0, 0), 0.5f).empty());
  CHECK(mh::quantized_threshold_join_pairs(mh::row_matrix(0, 0), 0.5f).empty());
  // LSH: no rows, no candidate
  CHECK(mh::lsh_candidates(none).empty());
  std::size_t lsh_emitted = 0;
  mh::lsh_join(none, 0.5f, [&](std::uint32_t, std::uint32_t, float) { ++lsh_emitted; });
  CHECK(lsh_emitted == 0);
}
}  // namespace similarity_join_test
