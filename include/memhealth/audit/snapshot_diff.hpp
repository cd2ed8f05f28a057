#pragma once
/// @file snapshot_diff.hpp
/// Snapshot diff: the changes between two snapshots of a store that the write-ahead log of the
/// operations between them does not explain (what `memhealth diff BEFORE AFTER --wal LOG` prints).
///
/// memhealth never deletes and never writes a record without logging its before- and after-image,
/// so after a repair run every difference between the snapshot before and the one after must be
/// one of the log's committed image pairs. Anything else was done by someone else:
///
/// | kind (`diff_kinds`)  | when                                                         | severity
/// |
/// |----------------------|--------------------------------------------------------------|----------|
/// | `unlogged_removal`   | an id of BEFORE is not in AFTER                              | error;
/// critical when the log touched scopes and this record's scope is none of them | |
/// `unlogged_overwrite` | an id's image differs and the log has no committed intent with BEFORE's
/// image as a before-image and AFTER's as an after-image of that id | error | | `unlogged_addition`
/// | an id of AFTER is not in BEFORE                              | warning | | `unlogged_addition`
/// | AFTER holds more records with an id than BEFORE (at least one) | error | | `bulk_removal` |
/// two or more removals from one scope (after the per-record entries) | critical |
///
/// Records are compared by their image (`encode_image`, repair/record_image.hpp), byte for byte;
/// when an id occurs more than once in a snapshot, its first occurrence is the one compared. The
/// log's images are compared as the exact bytes it holds, so a log written for another record type
/// explains nothing. Without a log every difference is unexplained. Only committed intents explain
/// changes (aborted and open ones do not).
///
/// Order of the entries: removals and overwrites by id (byte order), then additions of new ids by
/// id, then extra copies by id, then bulk removals by scope.

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "memhealth/detect/finding.hpp"
#include "memhealth/detect/vocabulary.hpp"
#include "memhealth/record/memory_record.hpp"
#include "memhealth/record/traits.hpp"
#include "memhealth/repair/record_image.hpp"
#include "memhealth/repair/rollback.hpp"
#include "memhealth/repair/wal.hpp"

namespace memhealth {

/// One change the log does not explain.
struct snapshot_change {
  /// `index` of an entry that names no record (`bulk_removal`).
  static constexpr std::size_t no_index = static_cast<std::size_t>(-1);
  std::string_view kind;  ///< one of `diff_kinds` (static storage)
  memhealth::severity severity = memhealth::severity::error;  ///< see the table in the file comment
  std::string id;  ///< the record's id; empty for `bulk_removal`
  /// Position of the record: in BEFORE for removals and overwrites (its first occurrence), in
  /// AFTER for additions (the first new copy); `no_index` for `bulk_removal`.
  std::size_t index = no_index;
  std::string scope;   ///< the record's scope (BEFORE's when it is there); a bulk removal's scope
  std::string detail;  ///< one sentence saying why; empty for `bulk_removal`
  /// Records covered: removals from `scope` for `bulk_removal`, extra copies for an
  /// `unlogged_addition` of an existing id, else 1.
  std::size_t count = 1;
};

/// The result of `diff_snapshots`: the unexplained changes, in the order of the file comment.
struct snapshot_diff_result {
  std::vector<snapshot_change> changes;  ///< every unexplained change
  /// True when the log explains every difference (or there is none).
  [[nodiscard]] bool clean() const noexcept { return changes.empty(); }
  /// Number of entries of one kind.
  [[nodiscard]] std::size_t count(std::string_view kind) const noexcept {
    std::size_t n = 0;
    for (const auto& c : changes) n += c.kind == kind;
    return n;
  }
};

namespace detail::sdiff {

template <class R>
std::string scope_text(const R& r) {
  if constexpr (scoped_record<R>)
    return std::string(field::scope(r));
  else
    return {};
}

// The scope of a logged after-image: memory_record logs are decoded by read_wal already.
template <class R>
std::string logged_scope(const wal_record_image& img) {
  if constexpr (std::is_same_v<R, memory_record>)
    return img.after.scope;
  else if constexpr (scoped_record<R>)
    return scope_text(decode_image<R>(img.after_json));
  else
    return {};
}

}  // namespace detail::sdiff

/// Compares two snapshots of a store of records `R` and returns the changes that `log` does not
/// explain (see the file comment). `log` may be nullptr (no log: every difference is
/// unexplained); it is typically `read_wal_file(path)`. R needs an id and content
/// (`basic_record`) and an image (`imaged_record`); scopes are used when R has them
/// (`scoped_record`), else every scope is empty and no removal is critical.
/// @throws whatever `encode_image` throws, and for a record type other than `memory_record` with
///         a scope, whatever `decode_image<R>` throws for a logged after-image it cannot decode
///         (error(parse) for the default decoder).
/// @complexity O((n_before + n_after + logged records) x (record size + log n)).
template <class R>
requires basic_record<R> && imaged_record<R> snapshot_diff_result diff_snapshots(
    std::span<const R> before, std::span<const R> after, const wal_contents* log = nullptr) {
  struct seen {
    std::string image;
    std::size_t index;
  };
  std::map<std::string, seen, std::less<>> bj, aj;  // id -> image and index of the first occurrence
  std::map<std::string, std::string, std::less<>> scope_of;
  std::map<std::string, std::size_t, std::less<>> nb;
  std::map<std::string, std::vector<std::size_t>, std::less<>> na;  // id -> indices in after
  for (std::size_t i = 0; i < before.size(); ++i) {
    const std::string id(field::id(before[i]));
    if (!bj.count(id)) bj.emplace(id, seen{encode_image(before[i]), i});
    scope_of.emplace(id, detail::sdiff::scope_text(before[i]));
    ++nb[id];
  }
  for (std::size_t i = 0; i < after.size(); ++i) {
    const std::string id(field::id(after[i]));
    if (!aj.count(id)) aj.emplace(id, seen{encode_image(after[i]), i});
    scope_of.emplace(id, detail::sdiff::scope_text(after[i]));
    na[id].push_back(i);
  }
  // What the log explains: per id, the images of committed intents (befores, afters).
  std::map<std::string, std::pair<std::set<std::string>, std::set<std::string>>, std::less<>>
      logged;
  std::set<std::string> logged_scopes;
  if (log) {
    for (const auto& act : logged_actions(*log)) {
      if (act.state != logged_state::committed) continue;
      for (const auto& rec : act.intent->records) {
        logged[rec.id].first.insert(rec.before_json);
        logged[rec.id].second.insert(rec.after_json);
        logged_scopes.insert(detail::sdiff::logged_scope<R>(rec));
      }
    }
  }
  snapshot_diff_result out;
  auto add = [&](std::string_view kind, memhealth::severity sev, const std::string& id,
                 std::size_t index, std::string why, std::size_t count = 1) {
    out.changes.push_back({kind, sev, id, index, scope_of[id], std::move(why), count});
  };
  std::map<std::string, std::size_t> removed_by_scope;
  for (const auto& [id, b] : bj) {
    auto it = aj.find(id);
    if (it == aj.end()) {  // memhealth never deletes: every removal is unexplained by its log
      const bool outside = !logged_scopes.empty() && !logged_scopes.count(scope_of[id]);
      add(diff_kinds::unlogged_removal, outside ? severity::critical : severity::error, id, b.index,
          outside ? "record removed, outside every scope the logged operation touched"
                  : "record removed without a log entry");
      ++removed_by_scope[scope_of[id]];
    } else if (it->second.image != b.image) {
      const auto l = logged.find(id);
      const bool explained = l != logged.end() && l->second.first.count(b.image) &&
                             l->second.second.count(it->second.image);
      if (!explained)
        add(diff_kinds::unlogged_overwrite, severity::error, id, b.index,
            "record changed in place without a matching log entry");
    }
  }
  for (const auto& [id, a] : aj)
    if (!bj.count(id))
      add(diff_kinds::unlogged_addition, severity::warning, id, a.index,
          "record added without a log entry");
  for (const auto& [id, idx] : na) {  // a record copied in again under an existing id
    const auto b = nb.find(id);
    if (b == nb.end() || idx.size() <= b->second) continue;
    const std::size_t extra = idx.size() - b->second;
    add(diff_kinds::unlogged_addition, severity::error, id, idx[b->second],
        std::to_string(extra) + " more record(s) with this id than before", extra);
  }
  for (const auto& [sc, n] : removed_by_scope)
    if (n >= 2)
      out.changes.push_back(
          {diff_kinds::bulk_removal, severity::critical, {}, snapshot_change::no_index, sc, {}, n});
  return out;
}

/// `diff_snapshots` over two vectors (R deduced).
template <class R>
requires basic_record<R> && imaged_record<R> snapshot_diff_result diff_snapshots(
    const std::vector<R>& before, const std::vector<R>& after, const wal_contents* log = nullptr) {
  return diff_snapshots<R>(std::span<const R>(before), std::span<const R>(after), log);
}

/// The changes as findings of detector "diff": kind and severity as in the change, `record_ids`
/// {id} (none for `bulk_removal`), evidence `scope` and `reason` (the detail), or `scope` and
/// `count` (integer) for `bulk_removal`.
inline std::vector<finding> to_findings(const snapshot_diff_result& d) {
  std::vector<finding> out;
  out.reserve(d.changes.size());
  for (const auto& c : d.changes) {
    finding f;
    f.kind = std::string(c.kind);
    f.severity = c.severity;
    f.detector = "diff";
    f.with(evidence_keys::scope, c.scope);
    if (c.kind == diff_kinds::bulk_removal) {
      f.with(evidence_keys::count, static_cast<std::int64_t>(c.count));
    } else {
      f.record_ids = {c.id};
      f.with(evidence_keys::reason, c.detail);
    }
    out.push_back(std::move(f));
  }
  return out;
}

/// The JSON of `memhealth diff --format json` (docs/cli.md): `schema_version` 1, `before`,
/// `after`, `wal` (the names given, "" for no log) and `findings`, each with `kind`, `severity`,
/// `record_ids` and `evidence` (an object; see `to_findings`), in the order of the changes.
template <class = void>  // deferred instantiation, see memhealth.hpp
nlohmann::ordered_json snapshot_diff_json(const snapshot_diff_result& d, std::string_view before,
                                          std::string_view after, std::string_view wal) {
  nlohmann::ordered_json j;
  j["schema_version"] = 1;
  j["before"] = before;
  j["after"] = after;
  j["wal"] = wal;
  j["findings"] = nlohmann::ordered_json::array();
  for (const auto& f : to_findings(d)) {
    nlohmann::ordered_json e{{"kind", f.kind},
                             {"severity", std::string(to_string(f.severity))},
                             {"record_ids", f.record_ids}};
    for (const auto& [k, v] : f.evidence)
      e["evidence"][k] = std::visit([](const auto& x) { return nlohmann::ordered_json(x); }, v);
    j["findings"].push_back(std::move(e));
  }
  return j;
}

}  // namespace memhealth
