#pragma once
/// @file scope.hpp
/// Hierarchical scopes ("tenant:1/user:7/project:alpha") and the cross-scope link detector.
///
/// A scope is a '/'-separated path of segments, outermost first. A scope is inside each of its
/// prefixes that end at a segment boundary: "user:7" contains "user:7/project:alpha" but not
/// "user:70". The empty scope means *missing* (the structural detector reports it), not the root:
/// it is nobody's ancestor. A trailing '/' is ignored ("user:7/" is "user:7").

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "memhealth/detect/finding.hpp"
#include "memhealth/record/traits.hpp"

namespace memhealth {

namespace detail {
constexpr std::string_view trim_scope(std::string_view s) noexcept {
  while (!s.empty() && s.back() == '/') s.remove_suffix(1);
  return s;
}
}  // namespace detail

/// True when `ancestor` is `scope` itself or one of its enclosing scopes (segment-wise prefix).
/// `scope_is_ancestor_or_self("user:7", "user:7/project:alpha")` is true;
/// `scope_is_ancestor_or_self("user:7", "user:70")` is false. An empty `ancestor` only matches
/// an empty `scope`. @complexity O(length); no allocation.
constexpr bool scope_is_ancestor_or_self(std::string_view ancestor,
                                         std::string_view scope) noexcept {
  ancestor = detail::trim_scope(ancestor);
  scope = detail::trim_scope(scope);
  if (ancestor.empty()) return scope.empty();
  if (scope.size() < ancestor.size() || scope.substr(0, ancestor.size()) != ancestor) return false;
  return scope.size() == ancestor.size() || scope[ancestor.size()] == '/';
}

/// The enclosing scope: "user:7/project:alpha" -> "user:7"; a top-level scope ("user:7") or
/// the empty scope -> "". The result views into `scope`.
constexpr std::string_view scope_parent(std::string_view scope) noexcept {
  scope = detail::trim_scope(scope);
  const auto slash = scope.rfind('/');
  return slash == std::string_view::npos ? std::string_view{}
                                         : detail::trim_scope(scope.substr(0, slash));
}

/// Number of segments: "" -> 0, "user:7" -> 1, "user:7/project:alpha" -> 2. Empty segments
/// ("a//b") are not counted.
constexpr std::size_t scope_depth(std::string_view scope) noexcept {
  std::size_t n = 0;
  bool in_segment = false;
  for (char c : scope) {
    if (c == '/') {
      in_segment = false;
    } else if (!in_segment) {
      in_segment = true;
      ++n;
    }
  }
  return n;
}

namespace detail {
/// Calls f(field_name, target_id) for every link of r whose field R maps: duplicate_of (when
/// non-empty), each related_ids entry, each supersedes entry.
template <class R, class F>
void for_each_link(const R& r, F&& f) {
  if constexpr (field_duplicate_of::available<const R>) {
    const std::string_view d = field::duplicate_of(r);
    if (!d.empty()) f(std::string_view("duplicate_of"), d);
  }
  if constexpr (field_related_ids::available<const R>)
    for (const auto& t : field::related_ids(r))
      f(std::string_view("related_ids"), std::string_view(t));
  if constexpr (field_supersedes::available<const R>)
    for (const auto& t : field::supersedes(r))
      f(std::string_view("supersedes"), std::string_view(t));
}

template <class R>
inline constexpr bool has_any_link_field =
    field_duplicate_of::available<const R> || field_related_ids::available<const R> ||
    field_supersedes::available<const R>;
}  // namespace detail

/// Detector "scope": links (duplicate_of, related_ids, supersedes) from a record to a record of
/// another scope. A merge or link across scopes is a possible leak (SPEC section 2, scope).
///
/// Emits `cross_scope_link` (severity error, repair "manual_review": a scope change is a tier-3
/// action) with record_ids {from, to} and evidence `field`, `target`, `from_scope`, `to_scope`.
/// Links to an ancestor scope (a project record pointing at its user's record) are allowed when
/// `allow_ancestor_links`. Links whose target is missing (dangling) or where either side has no
/// scope are skipped: the structural detector reports those.
///
/// Incremental runs check a link when its source or its target changed.
/// Needs: `scoped_record` and at least one link field (duplicate_of, related_ids, supersedes).
/// @complexity O(L log n) for L links in the store (one `find` per link).
struct scope_detector {
  static constexpr std::string_view name = "scope";
  bool allow_ancestor_links = true;  ///< a link into an enclosing scope is not a finding

  /// Appends cross_scope_link findings; never mutates the store.
  template <class Ctx>
  void run(Ctx& ctx, std::vector<finding>& out) const {
    using R = typename Ctx::record_type;
    MEMHEALTH_REQUIRE_CAPABILITY(scoped_record, R, "scope_detector", "scope");
    static_assert(detail::has_any_link_field<R>,
                  "memhealth: scope_detector needs at least one link field (duplicate_of, "
                  "related_ids or supersedes) on the record type. Map one with "
                  "memhealth::record_traits<R>, a data member of that name, or an ADL function "
                  "memhealth_<field>(r).");
    const auto& store = ctx.store();
    const std::size_t n = store.size();
    for (std::size_t i = 0; i < n; ++i) {
      const R& r = store.record(i);
      const std::string_view from_scope = field::scope(r);
      if (from_scope.empty()) continue;
      const bool from_changed = ctx.is_changed(i);
      detail::for_each_link(r, [&](std::string_view link_field, std::string_view target) {
        const auto j = store.find(target);
        if (!j || *j == i) return;
        if (!from_changed && !ctx.is_changed(*j)) return;
        const std::string_view to_scope = field::scope(store.record(*j));
        if (to_scope.empty() || detail::trim_scope(to_scope) == detail::trim_scope(from_scope))
          return;
        if (allow_ancestor_links && scope_is_ancestor_or_self(to_scope, from_scope)) return;
        finding f;
        f.kind = std::string(finding_kinds::cross_scope_link);
        f.severity = severity::error;
        f.detector = std::string(name);
        f.record_ids = {std::string(field::id(r)), std::string(target)};
        f.with(evidence_keys::field, std::string(link_field))
            .with(evidence_keys::target, std::string(target))
            .with("from_scope", std::string(from_scope))
            .with("to_scope", std::string(to_scope));
        f.suggested_repair = "manual_review";
        out.push_back(std::move(f));
      });
    }
  }
};

}  // namespace memhealth
