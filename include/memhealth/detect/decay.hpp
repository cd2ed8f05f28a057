#pragma once
/// @file decay.hpp
/// Decay curve policies (age -> weight in [0,1]) and the per-kind table the staleness detector
/// uses.
///
/// Each curve is a small aggregate functor with `double operator()(std::chrono::milliseconds age)
/// const`. Negative ages are treated as 0 (weight 1 for every curve); the result is always in
/// [0,1]. Non-positive parameters make a curve a step at age 0 (1 at age 0, 0 after).
///
/// Sources: the exponential curve is the classic form of Ebbinghaus' forgetting curve
/// (H. Ebbinghaus, *Über das Gedächtnis*, 1885) as a half-life model; the power law follows
/// J. T. Wixted and E. B. Ebbesen, "On the form of forgetting", *Psychological Science* 2(6),
/// 1991, who found retention falls as a power of time rather than exponentially; the
/// `(1 + t/scale)^-b` form keeps the weight at 1 for t = 0. Step TTL and linear decay are the
/// usual cache-expiry rules.

#include <boost/container/flat_map.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <string_view>
#include <variant>

#include "memhealth/record/memory_record.hpp"

namespace memhealth {

/// Days as a floating-point duration (ages in evidence are reported in these units).
using decay_days = std::chrono::duration<double, std::ratio<86400>>;

namespace detail {
inline double decay_age_ratio(std::chrono::milliseconds age,
                              std::chrono::milliseconds unit) noexcept {
  return static_cast<double>(age.count()) / static_cast<double>(unit.count());
}
inline std::string decay_days_text(std::chrono::milliseconds d) {
  const double days = decay_days(d).count();
  std::string s = std::to_string(days);
  s.erase(s.find_last_not_of('0') + 1);  // "30.000000" -> "30."
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s + "d";
}
}  // namespace detail

/// Exponential decay: w = 2^(-age / half_life) (Ebbinghaus-style forgetting).
/// Example: half_life 30 days, age 60 days -> 0.25.
struct exponential_decay {
  std::chrono::milliseconds half_life{std::chrono::days{30}};  ///< age at which w = 0.5; > 0
  static constexpr std::string_view name = "exponential";
  /// @return weight in [0,1] (1 for age <= 0).
  [[nodiscard]] double operator()(std::chrono::milliseconds age) const noexcept {
    if (age.count() <= 0) return 1.0;
    if (half_life.count() <= 0) return 0.0;
    return std::exp2(-detail::decay_age_ratio(age, half_life));
  }
};

/// Step TTL: w = 1 while age < ttl, 0 from age >= ttl on.
struct step_ttl {
  std::chrono::milliseconds ttl{std::chrono::days{3}};  ///< time to live; > 0
  static constexpr std::string_view name = "step_ttl";
  /// @return 1 or 0.
  [[nodiscard]] double operator()(std::chrono::milliseconds age) const noexcept {
    if (age.count() <= 0) return 1.0;
    return age < ttl ? 1.0 : 0.0;
  }
};

/// Linear decay: w = 1 - age / lifetime, clamped to [0,1].
struct linear_decay {
  std::chrono::milliseconds lifetime{std::chrono::days{365}};  ///< age at which w reaches 0; > 0
  static constexpr std::string_view name = "linear";
  /// @return weight in [0,1].
  [[nodiscard]] double operator()(std::chrono::milliseconds age) const noexcept {
    if (age.count() <= 0) return 1.0;
    if (lifetime.count() <= 0) return 0.0;
    return std::clamp(1.0 - detail::decay_age_ratio(age, lifetime), 0.0, 1.0);
  }
};

/// Power-law decay: w = (1 + age / scale)^(-exponent) (Wixted & Ebbesen 1991).
/// Example: scale 10 days, exponent 1, age 30 days -> 0.25.
struct power_law_decay {
  std::chrono::milliseconds scale{std::chrono::days{1}};  ///< time unit of the law; > 0
  double exponent = 0.5;                                  ///< decay exponent; >= 0
  static constexpr std::string_view name = "power_law";
  /// @return weight in [0,1].
  [[nodiscard]] double operator()(std::chrono::milliseconds age) const noexcept {
    if (age.count() <= 0) return 1.0;
    if (scale.count() <= 0) return 0.0;
    if (!(exponent > 0)) return 1.0;
    return std::clamp(std::pow(1.0 + detail::decay_age_ratio(age, scale), -exponent), 0.0, 1.0);
  }
};

/// Any of the four curves (the per-kind table holds these by value).
using decay_curve = std::variant<exponential_decay, step_ttl, linear_decay, power_law_decay>;

/// Weight of `curve` at `age`, in [0,1].
inline double evaluate(const decay_curve& curve, std::chrono::milliseconds age) noexcept {
  return std::visit([age](const auto& c) { return c(age); }, curve);
}

/// Human-readable description for evidence, e.g. "exponential(half_life=30d)",
/// "step_ttl(ttl=3d)", "linear(lifetime=365d)", "power_law(scale=1d,exponent=0.5)".
inline std::string describe(const decay_curve& curve) {
  struct visitor {
    std::string operator()(const exponential_decay& c) const {
      return "exponential(half_life=" + detail::decay_days_text(c.half_life) + ")";
    }
    std::string operator()(const step_ttl& c) const {
      return "step_ttl(ttl=" + detail::decay_days_text(c.ttl) + ")";
    }
    std::string operator()(const linear_decay& c) const {
      return "linear(lifetime=" + detail::decay_days_text(c.lifetime) + ")";
    }
    std::string operator()(const power_law_decay& c) const {
      std::string e = std::to_string(c.exponent);
      e.erase(e.find_last_not_of('0') + 1);
      if (!e.empty() && e.back() == '.') e.pop_back();
      return "power_law(scale=" + detail::decay_days_text(c.scale) + ",exponent=" + e + ")";
    }
  };
  return std::visit(visitor{}, curve);
}

static_assert(kinds::episodic < kinds::fact && kinds::fact < kinds::preference &&
                  kinds::preference < kinds::temporary,
              "kind_decay::by_kind is listed in this order");

/// Per-kind decay policy table: kind text -> curve, with a fallback for unknown kinds.
///
/// Defaults (SPEC section 2, staleness): temporary = step TTL 3 days; episodic = exponential,
/// half-life 30 days; preference = exponential, half-life 180 days; fact = exponential,
/// half-life 365 days; any other kind (or an empty kind) = the fallback, fact's curve.
struct kind_decay {
  /// Curves by kind (exact kind text).
  /// (Built from an already sorted list: the ordered_unique_range constructor does not
  /// instantiate boost's adaptive sort, a large share of the compile cost of every TU.)
  boost::container::flat_map<std::string, decay_curve, std::less<>> by_kind{
      boost::container::ordered_unique_range,
      {
          {std::string(kinds::episodic), exponential_decay{std::chrono::days{30}}},
          {std::string(kinds::fact), exponential_decay{std::chrono::days{365}}},
          {std::string(kinds::preference), exponential_decay{std::chrono::days{180}}},
          {std::string(kinds::temporary), step_ttl{std::chrono::days{3}}},
      }};
  /// Curve for kinds not in `by_kind`.
  decay_curve fallback = exponential_decay{std::chrono::days{365}};

  /// The curve for a kind. @complexity O(log k).
  [[nodiscard]] const decay_curve& curve_for(std::string_view kind) const noexcept {
    auto it = by_kind.find(kind);
    return it == by_kind.end() ? fallback : it->second;
  }
  /// Sets (or replaces) the curve of a kind; returns *this for chaining.
  kind_decay& set(std::string kind, decay_curve curve) {
    by_kind[std::move(kind)] = curve;
    return *this;
  }
};

}  // namespace memhealth
