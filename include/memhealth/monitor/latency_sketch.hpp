#pragma once
/// @file latency_sketch.hpp
/// `latency_sketch`: quantiles (P50/P95/P99) of latencies with a guaranteed relative error, in
/// bounded memory, mergeable across windows.
///
/// Algorithm: DDSketch (C. Masson, J. E. Rim, H. K. Lee, "DDSketch: A Fast and Fully-Mergeable
/// Quantile Sketch with Relative-Error Guarantees", VLDB 2019), i.e. a log-bucketed histogram
/// like HdrHistogram's. With gamma = (1 + a) / (1 - a), a value x > 0 goes to bucket
/// i = ceil(log_gamma(x)), which covers (gamma^(i-1), gamma^i]; the bucket is reported as
/// 2 gamma^i / (gamma + 1). Every reported quantile q' of a true quantile q > min_value then
/// satisfies |q' - q| <= a * q. Values <= `min_value` (default 1 microsecond) share a zero bucket
/// reported as 0.
///
/// Quantile definition (the "true" quantile the guarantee refers to): for n values sorted
/// ascending x_0 <= ... <= x_{n-1}, quantile(q) = x_r with r = floor(q * (n - 1)) (the lower
/// nearest rank). Memory: one counter per occupied bucket; latencies from 1 us to 1 hour at
/// a = 1% need at most about 1,100 buckets.

#include <boost/container/flat_map.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "memhealth/config.hpp"

namespace memhealth {

/// Relative-error quantile sketch over non-negative values (latencies in milliseconds).
class latency_sketch {
 public:
  /// @param relative_error a in (0, 1): every quantile is within a factor (1 +- a) of the true
  ///        one. @param min_value values <= it count as 0 (ms).
  /// @throws memhealth::error(invalid_argument) when a is not in (0, 1) or min_value <= 0.
  explicit latency_sketch(double relative_error = 0.01, double min_value = 1e-3)
      : alpha_(relative_error), min_value_(min_value) {
    if (!(relative_error > 0 && relative_error < 1) || !(min_value > 0))
      throw error(error_code::invalid_argument,
                  "latency_sketch: relative error must be in (0, 1), min_value > 0");
    gamma_ = (1 + alpha_) / (1 - alpha_);
    log_gamma_ = std::log(gamma_);
  }

  /// Adds one value (ms). Negative or NaN values count as 0. @complexity O(log buckets).
  void add(double x) {
    ++count_;
    if (!(x > min_value_)) {
      ++zero_count_;
      return;
    }
    ++buckets_[static_cast<std::int32_t>(std::ceil(std::log(x) / log_gamma_))];
  }

  /// Adds every value of another sketch with the same relative error (exact merge: the result
  /// is the sketch of the union). @pre same relative_error (MEMHEALTH_ASSERT).
  void merge(const latency_sketch& other) {
    MEMHEALTH_ASSERT(other.alpha_ == alpha_, "latency_sketch::merge: different relative errors");
    count_ += other.count_;
    zero_count_ += other.zero_count_;
    for (const auto& [k, c] : other.buckets_) buckets_[k] += c;
  }

  /// The q-quantile (q in [0, 1], clamped), within relative error a of x_floor(q(n-1)).
  /// @return 0 for an empty sketch. @complexity O(buckets).
  [[nodiscard]] double quantile(double q) const {
    if (count_ == 0) return 0;
    q = q < 0 ? 0 : (q > 1 ? 1 : q);
    const auto rank = static_cast<std::uint64_t>(std::floor(q * static_cast<double>(count_ - 1)));
    std::uint64_t seen = zero_count_;
    if (rank < seen) return 0;
    for (const auto& [k, c] : buckets_) {
      seen += c;
      if (rank < seen) return 2 * std::pow(gamma_, k) / (gamma_ + 1);
    }
    return 2 * std::pow(gamma_, buckets_.rbegin()->first) / (gamma_ + 1);
  }

  /// Number of values added.
  [[nodiscard]] std::uint64_t count() const noexcept { return count_; }
  /// The relative error a the sketch guarantees.
  [[nodiscard]] double relative_error() const noexcept { return alpha_; }
  /// Occupied buckets (memory use is proportional to it).
  [[nodiscard]] std::size_t bucket_count() const noexcept {
    return buckets_.size() + (zero_count_ > 0);
  }

 private:
  double alpha_, min_value_, gamma_ = 0, log_gamma_ = 0;
  std::uint64_t count_ = 0, zero_count_ = 0;
  boost::container::flat_map<std::int32_t, std::uint64_t> buckets_;
};

}  // namespace memhealth
