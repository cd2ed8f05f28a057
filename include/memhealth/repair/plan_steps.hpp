#pragma once
/// @file plan_steps.hpp
/// The steps of `make_plan` (planner.hpp): one member function per `plan_step` of the
/// finding-kind table (plan_table.hpp), then the finishing steps (tier-1 actions and
/// re-embedding batches, sort and de-duplication, the records-per-run budget, the blast-radius
/// suspension), and the helpers they share. Internal: include planner.hpp and call `make_plan`.

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "memhealth/detect/finding.hpp"
#include "memhealth/detect/scope.hpp"
#include "memhealth/detect/secrets.hpp"
#include "memhealth/detect/vocabulary.hpp"
#include "memhealth/record/memory_record.hpp"
#include "memhealth/record/time.hpp"
#include "memhealth/record/traits.hpp"
#include "memhealth/repair/action.hpp"
#include "memhealth/repair/conflict_rules.hpp"
#include "memhealth/repair/idempotency.hpp"
#include "memhealth/repair/index_policy.hpp"
#include "memhealth/repair/plan_order.hpp"
#include "memhealth/repair/plan_table.hpp"
#include "memhealth/repair/store_identity.hpp"
#include "memhealth/store/store.hpp"
#include "memhealth/text/normalize.hpp"

namespace memhealth {

// ---------------------------------------------------------------- planner internals

namespace detail {

inline const std::string* evidence_text(const finding& f, std::string_view key) {
  const auto* v = f.evidence_of(key);
  return v ? std::get_if<std::string>(v) : nullptr;
}
inline std::optional<double> evidence_number(const finding& f, std::string_view key) {
  const auto* v = f.evidence_of(key);
  if (!v) return std::nullopt;
  if (const auto* d = std::get_if<double>(v)) return *d;
  if (const auto* i = std::get_if<std::int64_t>(v)) return static_cast<double>(*i);
  return std::nullopt;
}
inline bool evidence_flag(const finding& f, std::string_view key) {
  const auto* v = f.evidence_of(key);
  const bool* b = v ? std::get_if<bool>(v) : nullptr;
  return b && *b;
}
inline std::vector<std::string> evidence_texts(const finding& f, std::string_view key) {
  std::vector<std::string> out;
  for (const auto& [k, v] : f.evidence)
    if (k == key)
      if (const auto* s = std::get_if<std::string>(&v)) out.push_back(*s);
  return out;
}

inline std::string reason_of(const finding& f) {
  std::string s = f.kind + ": " + join_ids(f.record_ids);
  if (!f.detector.empty()) s += " (" + f.detector + ")";
  return s;
}

inline std::string metadata_text(const metadata_value& v) {
  return std::visit(
      [](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          return "null";
        } else if constexpr (std::is_same_v<T, bool>) {
          return x ? "true" : "false";
        } else if constexpr (std::is_same_v<T, std::int64_t>) {
          return std::to_string(x);
        } else if constexpr (std::is_same_v<T, double>) {
          char buf[32];
          auto r = std::to_chars(buf, buf + sizeof buf, x);
          return std::string(buf, r.ptr);
        } else if constexpr (std::is_same_v<T, std::string>) {
          return x;
        } else {
          return x.text;
        }
      },
      v);
}

template <class R>
bool has_local_timestamp(const R& r) {
  bool local = false;
  auto check = [&](const std::optional<timestamp>& t) { local = local || (t && t->is_local()); };
  if constexpr (field_created_at::available<const R>) check(field::created_at(r));
  if constexpr (field_updated_at::available<const R>) check(field::updated_at(r));
  if constexpr (field_last_accessed_at::available<const R>) check(field::last_accessed_at(r));
  return local;
}

inline repair_action new_action(std::string_view type, int tier, automation who, int priority) {
  repair_action a;
  a.type = std::string(type);
  a.tier = tier;
  a.automation = who;
  a.priority = priority;
  a.rollback_method = "restore_before_images";
  return a;
}

template <class Op>
void add_edit(repair_action& a, std::string_view id, Op op) {
  record_edit e{std::string(id), record_edit_op(std::move(op))};
  if (std::find(a.edits.begin(), a.edits.end(), e) == a.edits.end())
    a.edits.push_back(std::move(e));
}

}  // namespace detail

namespace detail {

inline repair_action new_action(const kind_plan_entry& e) {
  return new_action(e.action, e.tier, e.automation, e.priority);
}

}  // namespace detail

namespace detail {

// One planning pass over a report: the state the steps share (`make_plan` builds one, feeds it
// every finding with `add`, then calls `finish`), and one member function per step.
// Finished actions go to the action store `A` (plan_order.hpp: in memory for make_plan, a
// temporary file for make_plan_file) and are ordered, de-duplicated and budgeted over a compact
// index, so the builder itself holds one open tier-1 action at a time.
template <class S, class Rules, class A = memory_actions>
class plan_builder {
 public:
  using R = typename S::record_type;
  plan_builder(const S& s, const planner_options& o, const Rules& r, A& actions)
      : store(s), opt(o), rules(r), actions(actions), index(s) {}

  // Routes one finding to the step of its table row (`row`; nullptr: a kind with no row).
  void add(const finding& f, const kind_plan_entry* row) {
    if (row && row->step == plan_step::skip) return;
    // retrieval alarms that need no record ids (a metric alarm has none; an empty result's
    // version mismatch has none)
    if (row && row->step == plan_step::index_check) return step_index_check(f, row);
    if (row && row->step == plan_step::migration) return step_migration(f, row);
    if (f.record_ids.empty()) {
      deferred.push_back(f.kind + ": finding without record ids; not planned");
      return;
    }
    if (!row) {
      deferred.push_back("no repair planned for finding kind '" + f.kind +
                         "': " + join_ids(f.record_ids));
      return;
    }
    switch (row->step) {
      case plan_step::skip:
        return;
      case plan_step::merge:
        return step_merge(f, row);
      case plan_step::conflict:
        return step_conflict(f, row);
      case plan_step::downweight:
        return step_downweight(f, row);
      case plan_step::fill_metadata:
        return step_fill_metadata(f, row);
      case plan_step::set_pending:
        return step_set_pending(f, row);
      case plan_step::normalize_times:
        return step_normalize_times(f, row);
      case plan_step::drop_links:
        return step_drop_links(f, row);
      case plan_step::archive:
        return step_archive(f, row);
      case plan_step::reembed:
        return step_reembed(f, row);
      case plan_step::review:
        return step_review(f, row);
      case plan_step::quarantine:
        return step_quarantine(f, row);
      case plan_step::index_cleanup:
        return step_index_cleanup(f, row);
      case plan_step::index_check:
        return step_index_check(f, row);
      case plan_step::critical_review:
        return step_critical_review(f, row);
      case plan_step::migration:
        return step_migration(f, row);
    }
  }

  // The steps after every finding was added, in order: the plan without its actions, and the
  // handles of its actions in the action store, in execution order.
  std::pair<repair_plan, std::vector<std::size_t>> finish() && {
    collect_actions();
    index.merge_tier1(actions, [&](repair_action& a) { finalize_action(store, a); });
    std::vector<std::size_t> kept = index.finish(opt, plan);
    // one note per distinct text, in the order they came, with how often it came when more
    // than once (several findings, e.g. one per monitor window, can give one note)
    std::map<std::string_view, std::size_t> seen;
    std::vector<std::string> notes;
    std::vector<std::size_t> times;
    notes.reserve(deferred.size());
    for (const auto& n : deferred) {
      const auto [it, fresh] = seen.try_emplace(n, notes.size());
      if (fresh) {
        notes.push_back(n);
        times.push_back(1);
      } else {
        ++times[it->second];
      }
    }
    for (std::size_t k = 0; k < notes.size(); ++k)
      if (times[k] > 1) notes[k] += " (" + std::to_string(times[k]) + " times)";
    deferred = std::move(notes);
    plan.store = plan_store_of(store);
    plan.blast_radius_threshold = opt.blast_radius_threshold;
    return {std::move(plan), std::move(kept)};
  }

  // The index keeps its bulk in a temporary file until `finish` (make_plan_file).
  void spill_index() { index.spill(); }

  // Distinct records the plan's actions edit (its blast radius); valid after `finish`.
  [[nodiscard]] std::size_t blast_records() const noexcept { return index.records_used(); }
  // Index entries the plan's index actions remove or rewrite (counted by the suspension too).
  [[nodiscard]] std::size_t blast_index_entries() const noexcept { return index.index_entries(); }

 private:
  // Merges a duplicate cluster into its first record (same scope only; a cross-scope cluster is
  // refused with a note).
  void step_merge(const finding& f, [[maybe_unused]] const kind_plan_entry* row) {
    if (f.record_ids.size() < 2 || !locate(f, idx)) return;
    const std::string_view scope0 = detail::scope_at(store, idx[0]);
    bool same_scope = true;
    for (std::size_t i : idx) same_scope = same_scope && detail::scope_at(store, i) == scope0;
    if (!same_scope) {
      std::string scopes;
      for (std::size_t i : idx)
        scopes += (scopes.empty() ? "" : ", ") + std::string(detail::scope_at(store, i));
      deferred.push_back("refused merge across scopes: " + detail::join_ids(f.record_ids) +
                         " (scopes " + scopes + ")");
      return;
    }
    const std::string& primary = f.record_ids[0];
    const R& p = store.record(idx[0]);
    const std::string p_norm = opt.normalizer(field::content(p));
    repair_action a = detail::new_action(*row);
    a.targets = f.record_ids;
    a.reasons.push_back(detail::reason_of(f));
    std::vector<std::string> notes;
    for (std::size_t k = 1; k < idx.size(); ++k) {
      const R& s = store.record(idx[k]);
      const std::string& sid = f.record_ids[k];
      if (sid == primary) continue;
      if (opt.normalizer(field::content(s)) != p_norm)
        notes.push_back("merged from " + sid + ": " + mask_secrets(field::content(s)));
      if constexpr (metadata_record<R>) {
        using map_t = std::remove_cvref_t<decltype(field::metadata(p))>;
        if constexpr (std::is_same_v<map_t, metadata_map>) {
          if (opt.note_metadata_on_merge) {
            const auto& pm = field::metadata(p);
            for (const auto& [key, value] : field::metadata(s)) {
              if (std::holds_alternative<std::monostate>(value) || pm.find(key) != pm.end())
                continue;
              notes.push_back("merged from " + sid + ": metadata " + key + "=" +
                              detail::metadata_text(value));
            }
          }
        }
      }
    }
    if (!notes.empty()) detail::add_edit(a, primary, edit_append_notes{std::move(notes)});
    for (std::size_t k = 1; k < idx.size(); ++k) {
      const std::string& sid = f.record_ids[k];
      if (sid == primary) continue;
      detail::add_edit(a, sid, edit_set_duplicate_of{primary});
      detail::add_edit(a, sid, edit_set_status{std::string(to_string(record_status::archived))});
    }
    emit(std::move(a));
  }

  // Decides a conflict pair by the rule chain; an undecided or needs_human pair goes to a person.
  void step_conflict(const finding& f, [[maybe_unused]] const kind_plan_entry* row) {
    if (f.record_ids.size() != 2 || !locate(f, idx)) {
      if (f.record_ids.size() != 2)
        deferred.push_back("conflict: expected two record ids: " + detail::join_ids(f.record_ids));
      return;
    }
    const bool needs_human = detail::evidence_flag(f, evidence_keys::needs_human);
    rule_decision d;
    d.rule_index = 0;
    if (!needs_human) {
      if constexpr (requires { rules.decide(store.record(idx[0]), store.record(idx[1])); })
        d = rules.decide(store.record(idx[0]), store.record(idx[1]));
      else
        d.verdict = rules(store.record(idx[0]), store.record(idx[1]));
    }
    std::string reason = detail::reason_of(f);
    if (const auto* why = detail::evidence_text(f, evidence_keys::reason))
      reason += " reason=" + *why;
    if (d.verdict == rule_verdict::undecided) {
      repair_action a = detail::new_action(review_action);
      a.targets = f.record_ids;
      a.reasons.push_back(std::move(reason));
      a.reasons.push_back(needs_human ? "needs a person (needs_human)"
                                      : "undecided by the conflict rules");
      if (opt.review_sets_pending)
        for (const auto& id : f.record_ids)
          detail::add_edit(a, id,
                           edit_set_status{std::string(to_string(record_status::pending_review))});
      emit(std::move(a));
    } else {
      const bool a_wins = d.verdict == rule_verdict::winner_a;
      const std::string& winner = f.record_ids[a_wins ? 0 : 1];
      const std::string& loser = f.record_ids[a_wins ? 1 : 0];
      repair_action a = detail::new_action(*row);
      a.targets = {winner, loser};
      a.reasons.push_back(std::move(reason));
      std::string by = d.rule_name.empty() ? std::string("rule") : std::string(d.rule_name);
      a.reasons.push_back("decided by " + by + ": " + winner + " wins");
      detail::add_edit(a, winner, edit_add_supersedes{{loser}});
      detail::add_edit(a, loser, edit_set_status{std::string(to_string(record_status::archived))});
      emit(std::move(a));
    }
  }

  // Down-weights stale records (never raises a weight).
  void step_downweight(const finding& f, [[maybe_unused]] const kind_plan_entry* row) {
    if (!locate(f, idx)) return;
    double target = opt.weight_floor;
    if (opt.stale_weight == stale_weight_mode::detector_weight) {
      auto w = detail::evidence_number(f, evidence_keys::curve_weight);
      if (!w) w = detail::evidence_number(f, evidence_keys::weight);
      if (w && std::isfinite(*w)) target = std::max(*w, opt.weight_floor);
    }
    target = std::isfinite(target) ? std::clamp(target, 0.0, 1.0) : 0.0;
    for (std::size_t k = 0; k < idx.size(); ++k) {
      double current = 1.0;
      if constexpr (weighted_record<R>)
        if (auto w = field::effective_weight(store.record(idx[k]))) current = *w;
      if (std::isfinite(current) && current <= target) continue;  // never raise a weight
      repair_action a = detail::new_action(*row);
      a.targets = {f.record_ids[k]};
      a.reasons.push_back(detail::reason_of(f));
      detail::add_edit(a, f.record_ids[k], edit_set_weight{target});
      emit(std::move(a));
    }
  }

  // Fills the configured defaults of missing metadata keys (one tier-1 action per record).
  void step_fill_metadata(const finding& f, [[maybe_unused]] const kind_plan_entry* row) {
    if (!locate(f, idx)) return;
    const std::string& id = f.record_ids[0];
    std::vector<std::pair<std::string, metadata_value>> fills;
    for (const auto& key : detail::evidence_texts(f, evidence_keys::missing)) {
      auto it = opt.metadata_defaults.find(key);
      if (it == opt.metadata_defaults.end())
        deferred.push_back("metadata_schema_violation " + id +
                           ": no default configured for missing key '" + key + "'");
      else
        fills.emplace_back(key, it->second);
    }
    for (const auto& key : detail::evidence_texts(f, evidence_keys::wrong_type))
      deferred.push_back("metadata_schema_violation " + id + ": key '" + key +
                         "' has the wrong type; needs a person");
    if (fills.empty()) return;
    auto& a = tier1(row->action, id);
    a.reasons.push_back(detail::reason_of(f));
    for (auto& [key, value] : fills) detail::add_edit(a, id, edit_fill_metadata{key, value});
  }

  // Sets an illegal status to pending_review.
  void step_set_pending(const finding& f, [[maybe_unused]] const kind_plan_entry* row) {
    if (!locate(f, idx)) return;
    auto& a = tier1(row->action, f.record_ids[0]);
    a.reasons.push_back(detail::reason_of(f));
    detail::add_edit(a, f.record_ids[0],
                     edit_set_status{std::string(to_string(record_status::pending_review))});
  }

  // Normalises local timestamp offsets to UTC (the instants themselves need a person).
  void step_normalize_times(const finding& f, [[maybe_unused]] const kind_plan_entry* row) {
    if (!locate(f, idx)) return;
    const std::string& id = f.record_ids[0];
    const auto* problem = detail::evidence_text(f, evidence_keys::problem);
    const std::string what = problem ? *problem : std::string("unknown problem");
    if (detail::has_local_timestamp(store.record(idx[0]))) {
      auto& a = tier1(row->action, id);
      a.reasons.push_back(detail::reason_of(f) + " problem=" + what);
      detail::add_edit(a, id, edit_normalize_timestamps{});
      deferred.push_back(
          "timestamp_inconsistent " + id + " (" + what +
          "): local offsets normalised to UTC, but the instants themselves need a person");
    } else {
      deferred.push_back("timestamp_inconsistent " + id + " (" + what +
                         "): all timestamps are UTC; needs a person");
    }
  }

  // Drops a dangling link, noting it in related_notes.
  void step_drop_links(const finding& f, [[maybe_unused]] const kind_plan_entry* row) {
    const std::string& id = f.record_ids[0];
    if (!store.find(id)) {
      deferred.push_back(f.kind + ": record '" + id + "' not found in the store; not planned");
      return;
    }
    const auto* target = detail::evidence_text(f, evidence_keys::target);
    if (!target) {
      deferred.push_back("dangling_reference " + id + ": no target in evidence; not planned");
      return;
    }
    const auto* fld = detail::evidence_text(f, evidence_keys::field);
    auto& a = tier1(row->action, id);
    a.reasons.push_back(detail::reason_of(f) + " -> " + *target);
    detail::add_edit(a, id,
                     edit_append_notes{{"dropped dangling link " +
                                        (fld ? *fld : std::string("link")) + " -> " + *target}});
    detail::add_edit(a, id, edit_drop_links{{*target}});
  }

  // Archives a record merged into another but still active.
  void step_archive(const finding& f, [[maybe_unused]] const kind_plan_entry* row) {
    if (!locate(f, idx)) return;
    auto& a = tier1(row->action, f.record_ids[0]);
    a.reasons.push_back(detail::reason_of(f));
    detail::add_edit(a, f.record_ids[0],
                     edit_set_status{std::string(to_string(record_status::archived))});
  }

  // Queues records for the re-embedding batches (planned together by `collect_actions`).
  void step_reembed(const finding& f, [[maybe_unused]] const kind_plan_entry* row) {
    if (f.kind == finding_kinds::mixed_embedding_version) return step_mixed_versions(f);
    for (const auto& id : f.record_ids) {
      if (!store.find(id)) {
        deferred.push_back(f.kind + ": record '" + id + "' not found in the store; not planned");
        continue;
      }
      reembed[id].push_back(f.kind);
    }
  }

  // Mixed versions: every record with a vector off the target version is queued, found in the
  // store (the finding lists at most `max_listed_ids`). The target is `opt.reembed_version` when
  // set (re-embedding the minority alone onto another version would leave the store mixed),
  // else the finding's majority version. During a declared migration (evidence `migration_to`)
  // nothing is planned: `migrate run` re-embeds them, with the previous vectors kept.
  void step_mixed_versions(const finding& f) {
    if (const auto* to = detail::evidence_text(f, "migration_to")) {
      deferred.push_back("mixed_embedding_version: migration to " + *to +
                         " in progress; its records are re-embedded by `memhealth migrate run`");
      return;
    }
    std::string target = opt.reembed_version;
    if (target.empty())
      if (const auto* maj = detail::evidence_text(f, "majority_version")) target = *maj;
    if constexpr (versioned_embedding_record<typename S::record_type>) {
      for (std::size_t i = 0; i < store.size(); ++i)
        if (has_vector(store, i) && field::embedding_version(store.record(i)) != target)
          reembed[std::string(field::id(store.record(i)))].push_back(f.kind);
    } else {
      for (const auto& id : f.record_ids)
        if (store.find(id)) reembed[id].push_back(f.kind);
    }
  }

  // Sends the finding's records to a person (tier 3).
  void step_review(const finding& f, [[maybe_unused]] const kind_plan_entry* row) {
    repair_action a = detail::new_action(*row);
    a.targets = f.record_ids;
    a.reasons.push_back(detail::reason_of(f));
    if (!f.suggested_repair.empty()) a.reasons.push_back("suggested: " + f.suggested_repair);
    emit(std::move(a));
  }

  // Quarantines a record for a person (a secret in its content): the review action carries
  // edit_set_status("pending_review") for each record, so approving it takes the record out of
  // retrieval until the person decides (edits or deletes it outside memhealth). Tier 3: never
  // run without a person; nothing is deleted.
  void step_quarantine(const finding& f, const kind_plan_entry* row) {
    repair_action a = detail::new_action(*row);
    a.targets = f.record_ids;
    a.reasons.push_back(detail::reason_of(f));
    a.reasons.push_back("quarantine: pending_review until a person removes the secret");
    for (const auto& id : f.record_ids)
      detail::add_edit(a, id,
                       edit_set_status{std::string(to_string(record_status::pending_review))});
    emit(std::move(a));
  }

  // ---- retrieval alarms (retrieval_plan_table)

  // "kind partition [start, end) reason": where and when a retrieval alarm was raised.
  static std::string alarm_where(const finding& f) {
    std::string s = f.kind;
    if (const auto* p = detail::evidence_text(f, "partition")) s += " in " + *p;
    const auto* ws = detail::evidence_text(f, "window_start");
    const auto* we = detail::evidence_text(f, "window_end");
    if (ws && we) s += " [" + *ws + ", " + *we + ")";
    if (const auto* r = detail::evidence_text(f, evidence_keys::reason)) s += " (" + *r + ")";
    return s;
  }
  static std::string number_text(double x) {
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, x);
    return std::string(buf, r.ptr);
  }
  // Adds `reason` to `list` once, keeping at most `max_alarm_reasons` lines (then a count).
  static void add_reason(std::vector<std::string>& list, std::size_t& more, std::string reason) {
    if (std::find(list.begin(), list.end(), reason) != list.end()) return;
    if (list.size() < max_alarm_reasons)
      list.push_back(std::move(reason));
    else
      ++more;
  }
  static void close_reasons(std::vector<std::string>& list, std::size_t more) {
    if (more) list.push_back("... and " + std::to_string(more) + " more alarms");
  }

  // Ghost results: the served ids without a live record are queued for one clean_index action
  // (`collect_actions`). An id whose record is live now stays in the index (a note says so).
  void step_index_cleanup(const finding& f, [[maybe_unused]] const kind_plan_entry* row) {
    for (const auto& id : f.record_ids) {
      if (auto i = store.find(id); i && index_live(store, *i)) {
        if (live_ghosts_.insert(id).second)
          deferred.push_back(f.kind + ": '" + id +
                             "' is a live record of the store now; not removed from the index");
        continue;
      }
      ghosts_.insert(id);
    }
    if (auto n = detail::evidence_number(f, "distinct_ids");
        n && *n > static_cast<double>(f.record_ids.size()))
      deferred.push_back(alarm_where(f) + ": " + number_text(*n) + " distinct ids served, " +
                         std::to_string(f.record_ids.size()) +
                         " listed (monitor_options::max_listed_ids); the rest are cleaned up "
                         "once a later run lists them");
    add_reason(ghost_reasons_, ghost_more_, alarm_where(f) + ": " + detail::join_ids(f.record_ids));
  }

  // A latency regression or a similarity drop: one check_rebuild_index action per plan, whose
  // reasons name each alarm with its figure and the baseline's.
  void step_index_check(const finding& f, [[maybe_unused]] const kind_plan_entry* row) {
    std::string s = alarm_where(f);
    for (std::string_view key : {"p95_latency_ms", "baseline_p95_latency_ms",
                                 "mean_top1_similarity", "baseline_median_top1_similarity"})
      if (auto v = detail::evidence_number(f, key))
        s += " " + std::string(key) + "=" + number_text(*v);
    add_reason(check_reasons_, check_more_, std::move(s));
  }

  // A scope leak: a critical review item for a person (the records were served outside the
  // scopes the caller may read: a retrieval filter or a record's scope is wrong). Never repaired
  // automatically; the action carries no edit.
  void step_critical_review(const finding& f, const kind_plan_entry* row) {
    repair_action a = detail::new_action(*row);
    a.targets = f.record_ids;
    std::string s = "critical: " + alarm_where(f) + ": " + detail::join_ids(f.record_ids);
    if (const auto* rs = detail::evidence_text(f, "record_scope"); rs && !rs->empty())
      s += " (record scope " + *rs + ")";
    a.reasons.push_back(std::move(s));
    a.reasons.push_back(
        "a person decides: check the retrieval's scope filter and these records' scopes "
        "(never repaired automatically)");
    emit(std::move(a));
  }

  // Queries embedded by another model than the records served: grouped by the query's version
  // for one start_migration proposal each (`collect_actions`).
  void step_migration(const finding& f, [[maybe_unused]] const kind_plan_entry* row) {
    const auto* q = detail::evidence_text(f, "query_embedding_version");
    if (!q || q->empty()) {
      deferred.push_back(alarm_where(f) + ": no query_embedding_version in evidence; not planned");
      return;
    }
    auto& m = migrations_[*q];
    m.ids.insert(f.record_ids.begin(), f.record_ids.end());
    add_reason(m.reasons, m.more, alarm_where(f) + ": " + detail::join_ids(f.record_ids));
  }

  // The store's most common embedding version among records with a vector ("" = none).
  std::pair<std::string, std::size_t> majority_version() const {
    std::map<std::string, std::size_t, std::less<>> counts;
    if constexpr (versioned_embedding_record<R>)
      for (std::size_t i = 0; i < store.size(); ++i)
        if (has_vector(store, i)) ++counts[std::string(field::embedding_version(store.record(i)))];
    std::pair<std::string, std::size_t> best{std::string(), 0};
    for (const auto& [v, n] : counts)
      if (n > best.second) best = {v, n};
    return best;
  }

  // The actions of the retrieval alarms, once every finding was added.
  void collect_alarm_actions() {
    if (!ghosts_.empty()) {
      repair_action a = detail::new_action(action_types::clean_index, 1, automation::automatic,
                                           action_priority::index_cleanup);
      a.rollback_method = "rebuild_index_again";
      a.targets.assign(ghosts_.begin(), ghosts_.end());
      a.reasons = std::move(ghost_reasons_);
      close_reasons(a.reasons, ghost_more_);
      a.reasons.push_back("remove " + std::to_string(ghosts_.size()) +
                          " served ids without a live record from the vector index");
      // its blast radius: the index entries it removes (at most its targets), counted with the
      // records by the suspension (set after `finalize_action`, which counts edited records)
      finalize_action(store, a);
      a.blast.index_entries = ghosts_.size();
      index.add_index_entries(ghosts_.size());
      index.add(a);
      index.set_handle(actions.put(std::move(a)));
    }
    if (!check_reasons_.empty()) {
      repair_action a = detail::new_action(action_types::check_rebuild_index, 1,
                                           automation::automatic, action_priority::index_check);
      a.rollback_method = "rebuild_index_again";
      a.reasons = std::move(check_reasons_);
      close_reasons(a.reasons, check_more_);
      a.reasons.push_back(
          "check the vector index against the store (ids, vectors, dimension, model version); "
          "rebuild it when inconsistent");
      emit(std::move(a));
    }
    if (migrations_.empty()) return;
    const auto [majority, held] = majority_version();
    for (auto& [q, m] : migrations_) {
      if (!opt.migration_to.empty() && q == opt.migration_to) {
        deferred.push_back("query_version_mismatch: queries on " + q +
                           ", the target of the declared migration: its progress (memhealth "
                           "migrate run, gate, switch)");
        continue;
      }
      if (q == majority) {
        deferred.push_back("query_version_mismatch: queries on " + q +
                           ", which most records already hold; the records on other versions are "
                           "re-embedded by the mixed_embedding_version repair");
        continue;
      }
      repair_action a = detail::new_action(action_types::start_migration, 3, automation::manual,
                                           action_priority::review);
      a.rollback_method = "migrate_rollback";
      a.targets.assign(m.ids.begin(), m.ids.end());
      a.reasons = std::move(m.reasons);
      close_reasons(a.reasons, m.more);
      a.reasons.push_back(
          "queries are embedded by " + q + "; the store holds " +
          (majority.empty() ? std::string("no versioned vectors")
                            : majority + " (" + std::to_string(held) + " records with a vector)"));
      a.reasons.push_back("proposed: memhealth migrate start STORE --to " + q +
                          " --embedder EMBEDDER (an embedder whose version is " + q +
                          "), then migrate run, gate and switch; or, if " + q +
                          " is not the intended model, embed the queries with " +
                          (majority.empty() ? std::string("the store's model") : majority) +
                          " again");
      a.reasons.push_back(
          "a person starts it: apply never starts a migration (the host must tag new writes "
          "with the new version)");
      emit(std::move(a));
    }
  }

  // Tier-1 actions (one per type and record) and the re-embedding batches with their index rebuild.
  void collect_actions() {
    close_tier1();
    collect_alarm_actions();
    {
      const std::size_t batch = std::max<std::size_t>(1, opt.reembed_batch_size);
      auto it = reembed.begin();
      while (it != reembed.end()) {
        repair_action a = detail::new_action(action_types::reembed, 3, automation::manual,
                                             action_priority::reembed);
        for (std::size_t k = 0; k < batch && it != reembed.end(); ++k, ++it) {
          a.targets.push_back(it->first);
          auto& kinds_of = it->second;  // sorted and unique: independent of finding order
          std::sort(kinds_of.begin(), kinds_of.end());
          kinds_of.erase(std::unique(kinds_of.begin(), kinds_of.end()), kinds_of.end());
          std::string why;
          for (const auto& kd : kinds_of) why += (why.empty() ? "" : ", ") + kd;
          a.reasons.push_back(it->first + ": " + why);
          detail::add_edit(a, it->first, edit_replace_embedding{{}, opt.reembed_version});
        }
        emit(std::move(a));
      }
      if (!reembed.empty()) {  // the index holds the old vectors until it is rebuilt
        repair_action a = detail::new_action(action_types::rebuild_index, 1, automation::automatic,
                                             action_priority::index_rebuild);
        a.rollback_method = "rebuild_index_again";
        for (const auto& [id, kinds_of] : reembed) a.targets.push_back(id);
        a.reasons.push_back(
            "re-embedding " + std::to_string(reembed.size()) +
            " records leaves the vector index inconsistent with the store until it is rebuilt");
        emit(std::move(a));
      }
    }
  }

  // A finished action: blast radius and key set, put into the action store and indexed.
  void emit(repair_action&& a) {
    finalize_action(store, a);
    index.add(a);
    index.set_handle(actions.put(std::move(a)));
  }

  // The per-record tier-1 action of this type and record: several findings of one record and
  // type become one action. The open one is put away when another is asked for; parts of one
  // record and type that come apart are merged when the plan is finished.
  repair_action& tier1(std::string_view type, const std::string& id) {
    if (open_ && open_->type == type && open_->targets.front() == id) return *open_;
    close_tier1();
    open_ = detail::new_action(type, 1, automation::automatic, action_priority::tier1);
    open_->targets = {id};
    return *open_;
  }
  void close_tier1() {
    if (!open_) return;
    repair_action a = std::move(*open_);
    open_.reset();
    finalize_action(store, a);
    index.add(a, true);
    index.set_handle(actions.put(std::move(a)));
  }

  // The records of `f`, by id; false (and a note) when one is not in the store.
  bool locate(const finding& f, std::vector<std::size_t>& out) {
    out.clear();
    for (const auto& id : f.record_ids) {
      auto i = store.find(id);
      if (!i) {
        deferred.push_back(f.kind + ": record '" + id + "' not found in the store; not planned");
        return false;
      }
      out.push_back(*i);
    }
    return true;
  }

  const S& store;
  const planner_options& opt;
  const Rules& rules;
  repair_plan plan;
  std::vector<std::string>& deferred = plan.deferred;
  A& actions;
  plan_index<S> index;
  std::optional<repair_action> open_;  // the tier-1 action findings are being added to
  std::map<std::string, std::vector<std::string>>
      reembed;  // id -> the kinds asking for it (ids sorted)
  std::vector<std::size_t> idx;
  // retrieval alarms
  static constexpr std::size_t max_alarm_reasons = 20;  // reason lines per alarm action
  std::set<std::string> ghosts_, live_ghosts_;          // served ids without / with a live record
  std::vector<std::string> ghost_reasons_, check_reasons_;
  std::size_t ghost_more_ = 0, check_more_ = 0;
  struct migration_alarm {
    std::set<std::string> ids;
    std::vector<std::string> reasons;
    std::size_t more = 0;
  };
  std::map<std::string, migration_alarm> migrations_;  // query version -> its alarms
};

}  // namespace detail

}  // namespace memhealth
