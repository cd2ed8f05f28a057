#pragma once
/// @file conflict_rules.hpp
/// Conflict-resolution rules: which of two contradicting records wins (SPEC section 3).
///
/// A **rule** is a small aggregate policy callable as
/// `rule_verdict operator()(const R& a, const R& b) const`: it returns `winner_a`, `winner_b`
/// or `undecided`. A rule that cannot read a field it needs (the record type does not map it, or
/// the record has no value) says `undecided`; rules never throw.
///
/// `conflict_rule_chain<Rules...>` holds rules in a `std::tuple` and tries them in order with a
/// short-circuiting fold (no virtual calls, no allocation): the first decisive rule wins; when
/// every rule is undecided the conflict goes to a person (the planner's `send_to_review`).
///
/// The SPEC order is `default_conflict_rules`:
/// 1. `more_specific_scope`: a record of a deeper scope inside the other's scope wins
///    ("user:7/project:a" over "user:7");
/// 2. `newer_updated_at`: the later updated_at *instant* wins (never compared as text);
/// 3. `more_trusted_source`: the higher `source_rank` wins (user_declared > system_config /
///    manual_entry > model_extracted > system_log > missing);
/// 4. `configured_over_extracted`: system_config / manual_entry beat model_extracted / system_log
///    (subsumed by rule 3 in the default order; useful alone or reordered).
///
/// Users add their own rule (any type with that call operator, optionally a
/// `static constexpr std::string_view name`) and reorder:
/// @code
/// struct pinned_wins {
///   static constexpr std::string_view name = "pinned_wins";
///   memhealth::rule_verdict operator()(const my_note& a, const my_note& b) const {
///     if (a.pinned != b.pinned) return a.pinned ? memhealth::rule_verdict::winner_a
///                                               : memhealth::rule_verdict::winner_b;
///     return memhealth::rule_verdict::undecided;
///   }
/// };
/// auto rules = memhealth::prepend_rule(pinned_wins{}, memhealth::default_conflict_rules{});
/// @endcode

#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <tuple>
#include <utility>

#include "memhealth/detect/scope.hpp"
#include "memhealth/record/memory_record.hpp"
#include "memhealth/record/traits.hpp"

namespace memhealth {

/// Outcome of one rule (or a chain) on a pair (a, b).
enum class rule_verdict : std::uint8_t {
  undecided,  ///< the rule has no opinion (equal or missing evidence)
  winner_a,   ///< a wins: a supersedes b, b is archived
  winner_b,   ///< b wins: b supersedes a, a is archived
};

/// Text of a verdict: "undecided", "winner_a", "winner_b".
constexpr std::string_view to_string(rule_verdict v) noexcept {
  return v == rule_verdict::winner_a   ? "winner_a"
         : v == rule_verdict::winner_b ? "winner_b"
                                       : "undecided";
}

/// A conflict rule for record type R: `rule(a, b)` returns a `rule_verdict`.
template <class Rule, class R>
concept conflict_rule = requires(const Rule& rule, const R& a, const R& b) {
  { rule(a, b) } -> std::same_as<rule_verdict>;
};

namespace detail {
template <class Rule>
concept named_rule = requires {
  { Rule::name } -> std::convertible_to<std::string_view>;
};
constexpr rule_verdict verdict_from_order(int a, int b) noexcept {
  return a > b ? rule_verdict::winner_a : b > a ? rule_verdict::winner_b : rule_verdict::undecided;
}
}  // namespace detail

/// Name of a rule type: its `static constexpr name` when it has one, else "user_rule".
template <class Rule>
constexpr std::string_view rule_name() noexcept {
  if constexpr (detail::named_rule<Rule>)
    return std::string_view(Rule::name);
  else
    return "user_rule";
}

// ---------------------------------------------------------------- the SPEC rules

/// Rule 1: the record of the more specific scope wins, but only when one scope is an ancestor of
/// the other (segment-wise, detect/scope.hpp): "user:7/project:a" beats "user:7"; sibling scopes
/// ("user:7/project:a" vs "user:7/project:b"), equal scopes and missing scopes are undecided.
/// Records without a scope field: always undecided. @complexity O(scope length).
struct more_specific_scope {
  static constexpr std::string_view name = "more_specific_scope";

  template <class R>
  constexpr rule_verdict operator()(const R& a, const R& b) const noexcept {
    if constexpr (scoped_record<R>) {
      const std::string_view sa = field::scope(a), sb = field::scope(b);
      if (sa.empty() || sb.empty()) return rule_verdict::undecided;
      const std::size_t da = scope_depth(sa), db = scope_depth(sb);
      if (da > db && scope_is_ancestor_or_self(sb, sa)) return rule_verdict::winner_a;
      if (db > da && scope_is_ancestor_or_self(sa, sb)) return rule_verdict::winner_b;
    }
    return rule_verdict::undecided;
  }
};

/// Rule 2: the record with the later `updated_at` wins. Compares parsed UTC instants
/// (`timestamp::instant`), never text: "2024-03-01T07:00:00+08:00" (23:00Z the day before) is
/// earlier than "2024-03-01T00:30:00Z". Undecided when either is missing or the two instants are
/// at most `min_gap` apart (default 0: only equal instants are undecided). Records without an
/// updated_at field: undecided.
struct newer_updated_at {
  static constexpr std::string_view name = "newer_updated_at";
  std::chrono::milliseconds min_gap{0};  ///< differences <= min_gap are undecided; >= 0

  template <class R>
  constexpr rule_verdict operator()(const R& a, const R& b) const noexcept {
    if constexpr (detail::field_updated_at::available<const R>) {
      const std::optional<timestamp> ta = field::updated_at(a), tb = field::updated_at(b);
      if (!ta || !tb) return rule_verdict::undecided;
      if (ta->instant > tb->instant + min_gap) return rule_verdict::winner_a;
      if (tb->instant > ta->instant + min_gap) return rule_verdict::winner_b;
    }
    return rule_verdict::undecided;
  }
};

/// Rule 3: the more credible source wins, by `source_rank` (memory_record.hpp): user_declared (4)
/// > system_config = manual_entry (3) > model_extracted (2, model inference) > system_log (1, log
/// statistics) > missing or unknown (0). Equal ranks: undecided. No source field: undecided.
struct more_trusted_source {
  static constexpr std::string_view name = "more_trusted_source";

  template <class R>
  constexpr rule_verdict operator()(const R& a, const R& b) const noexcept {
    if constexpr (sourced_record<R>)
      return detail::verdict_from_order(source_rank(field::source(a)),
                                        source_rank(field::source(b)));
    else
      return rule_verdict::undecided;
  }
};

/// Rule 4: a configured or hand-entered record (system_config, manual_entry) beats an
/// automatically extracted one (model_extracted, system_log). Every other pair (including
/// user_declared on either side) is undecided. No source field: undecided.
struct configured_over_extracted {
  static constexpr std::string_view name = "configured_over_extracted";

  template <class R>
  constexpr rule_verdict operator()(const R& a, const R& b) const noexcept {
    if constexpr (sourced_record<R>) {
      auto klass = [](std::string_view s) {
        const auto p = parse_source(s);
        if (p == record_source::system_config || p == record_source::manual_entry) return 2;
        if (p == record_source::model_extracted || p == record_source::system_log) return 1;
        return 0;
      };
      const int ka = klass(field::source(a)), kb = klass(field::source(b));
      if (ka == 0 || kb == 0) return rule_verdict::undecided;
      return detail::verdict_from_order(ka, kb);
    } else {
      return rule_verdict::undecided;
    }
  }
};

// ---------------------------------------------------------------- chains

/// What a chain decided and which rule decided it.
struct rule_decision {
  rule_verdict verdict = rule_verdict::undecided;  ///< the first decisive verdict, or undecided
  std::size_t rule_index = 0;  ///< index of the deciding rule in the chain (== size when undecided)
  std::string_view rule_name;  ///< its name (`rule_name<Rule>()`); empty when undecided
};

/// An ordered chain of rules, itself a rule. Rules are tried in order with a short-circuiting
/// fold; the first verdict other than `undecided` is the chain's verdict.
/// @complexity the sum of the rules' costs, at most; no allocation.
template <class... Rules>
struct conflict_rule_chain {
  std::tuple<Rules...> rules{};  ///< the rules, in the order they are tried

  /// A chain of default-constructed rules.
  constexpr conflict_rule_chain() = default;
  /// A chain of these rule values (e.g. `newer_updated_at{std::chrono::hours(1)}`).
  constexpr explicit conflict_rule_chain(Rules... rs) requires(sizeof...(Rules) > 0)
      : rules(std::move(rs)...) {}

  /// Number of rules.
  static constexpr std::size_t size() noexcept { return sizeof...(Rules); }

  /// The first decisive rule's verdict and which rule it was.
  template <class R>
  constexpr rule_decision decide(const R& a, const R& b) const {
    rule_decision d;
    d.rule_index = sizeof...(Rules);
    std::apply(
        [&](const Rules&... rs) {
          std::size_t k = 0;
          (void)((try_one(rs, a, b, k++, d)) || ...);
        },
        rules);
    return d;
  }

  /// The chain's verdict (a chain is a rule, so chains nest).
  template <class R>
  constexpr rule_verdict operator()(const R& a, const R& b) const {
    return decide(a, b).verdict;
  }

 private:
  template <class Rule, class R>
  static constexpr bool try_one(const Rule& rule, const R& a, const R& b, std::size_t k,
                                rule_decision& d) {
    static_assert(conflict_rule<Rule, R>,
                  "memhealth: every rule of a conflict_rule_chain must be callable as "
                  "`rule_verdict operator()(const R& a, const R& b) const` for the record type R.");
    const rule_verdict v = rule(a, b);
    if (v == rule_verdict::undecided) return false;
    d.verdict = v;
    d.rule_index = k;
    d.rule_name = rule_name<Rule>();
    return true;
  }
};

/// Deduces the rule types from values: `conflict_rule_chain{more_specific_scope{}, my_rule{}}`.
template <class... Rules>
conflict_rule_chain(Rules...) -> conflict_rule_chain<Rules...>;

/// The SPEC order: scope specificity, recency, source credibility, configured over extracted.
using default_conflict_rules = conflict_rule_chain<more_specific_scope, newer_updated_at,
                                                   more_trusted_source, configured_over_extracted>;

/// A new chain with `rule` tried first, then the rules of `chain` in their order.
template <class Rule, class... Rules>
constexpr conflict_rule_chain<Rule, Rules...> prepend_rule(
    Rule rule, const conflict_rule_chain<Rules...>& chain) {
  return std::apply(
      [&](const Rules&... rs) {
        return conflict_rule_chain<Rule, Rules...>(std::move(rule), rs...);
      },
      chain.rules);
}

/// A new chain with the rules of `chain`, then `rule` tried last.
template <class Rule, class... Rules>
constexpr conflict_rule_chain<Rules..., Rule> append_rule(
    const conflict_rule_chain<Rules...>& chain, Rule rule) {
  return std::apply(
      [&](const Rules&... rs) {
        return conflict_rule_chain<Rules..., Rule>(rs..., std::move(rule));
      },
      chain.rules);
}

}  // namespace memhealth
