#pragma once
/// @file plan_order.hpp
/// The finishing steps of `make_plan` (planner.hpp) over a compact index of the planned actions,
/// so that the actions themselves can live elsewhere (in memory for `make_plan`, in a temporary
/// file for `make_plan_file`, repair/plan_stream.hpp): merging the tier-1 parts of one record
/// and type, execution order, de-duplication, the records-per-run budget and the blast-radius
/// suspension. Internal: include planner.hpp.
///
/// Each action put into an action store gets an entry of 24 bytes plus its targets, idempotency
/// key and the store indices of the records it edits in a byte arena of 4 MiB chunks: a million
/// one-record actions take about 70 MB here, whatever their edits and reasons hold. With
/// `spill()`, full chunks wait in an anonymous temporary file until the plan is finished (while
/// detection's own working set is alive), leaving 24 bytes per action in memory.
///
/// An action store `A` provides `std::size_t put(repair_action&&)` (a handle) and
/// `repair_action take(std::size_t handle)` (the action back; each handle is taken once).

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "memhealth/config.hpp"
#include "memhealth/detect/scope.hpp"
#include "memhealth/record/traits.hpp"
#include "memhealth/repair/action.hpp"
#include "memhealth/repair/idempotency.hpp"
#include "memhealth/repair/plan_table.hpp"
#include "memhealth/repair/store_identity.hpp"
#include "memhealth/store/store.hpp"

namespace memhealth {

namespace detail {

inline std::string join_ids(const std::vector<std::string>& ids, std::size_t max_listed = 16) {
  std::string s;
  for (std::size_t i = 0; i < ids.size() && i < max_listed; ++i) {
    if (i) s += ' ';
    s += ids[i];
  }
  if (ids.size() > max_listed) s += " ... (" + std::to_string(ids.size()) + " ids)";
  return s;
}

// The trimmed scope of record i ("" for a record type without scopes).
template <class S>
std::string_view scope_at(const S& store, std::size_t i) {
  using R = typename S::record_type;
  if constexpr (scoped_record<R>)
    return trim_scope(field::scope(store.record(i)));
  else
    return {};
}

// Blast radius and idempotency key of a planned action (its edits' records and their scopes).
template <class S>
void finalize_action(const S& store, repair_action& a) {
  std::set<std::string_view> ids;
  for (const auto& e : a.edits) ids.insert(e.record_id);
  std::set<std::string_view> scopes;
  for (auto id : ids)
    if (auto i = store.find(id)) {
      const auto sc = scope_at(store, *i);
      if (!sc.empty()) scopes.insert(sc);
    }
  a.blast.records = ids.size();
  a.blast.scopes.assign(scopes.begin(), scopes.end());
  a.idempotency_key = compute_idempotency_key(a);
  note_seen_records(store, a);  // what apply checks the records against (store_identity.hpp)
}

// The compact index of a plan's actions and the finishing steps over it (see the file comment).
template <class S>
class plan_index {
 public:
  explicit plan_index(const S& s) : store_(s) {}
  plan_index(const plan_index&) = delete;
  plan_index& operator=(const plan_index&) = delete;
  ~plan_index() {
    if (spill_) std::fclose(spill_);
  }

  // Keeps full arena chunks in an anonymous temporary file until the plan is finished (memory
  // while findings arrive: the entries and one chunk). @throws error(io) when the file cannot be
  // made.
  void spill() {
    spill_ = std::tmpfile();
    if (!spill_)
      throw error(error_code::io, std::string("make_plan: cannot create a temporary file: ") +
                                      std::strerror(errno));
  }

  // Indexes a finished action (blast radius and key set); `set_handle` then names where the
  // action store keeps it. `tier1`: a part of a per-record tier-1 action (targets = its record;
  // parts of one type and record are merged).
  void add(const repair_action& a, bool tier1 = false) {
    if (entries_.size() >= std::numeric_limits<std::uint32_t>::max() || types_.size() > 65535)
      throw error(error_code::invalid_argument,
                  "make_plan: more than 2^32 actions or 65,536 types");
    entry e;
    e.seq = static_cast<std::uint32_t>(entries_.size());
    e.priority = a.priority;
    e.type = intern(a.type);
    e.tier1 = tier1;
    std::vector<std::size_t> edited;
    for (const auto& ed : a.edits) {
      const std::size_t r = record_of(ed.record_id);
      if (std::find(edited.begin(), edited.end(), r) == edited.end()) edited.push_back(r);
    }
    std::size_t bytes = 4 + 4 + a.idempotency_key.size() + 4 + 8 * edited.size();
    for (const auto& t : a.targets) bytes += 4 + t.size();
    std::string& c = chunk_for(bytes);
    e.keys = (static_cast<std::uint64_t>(chunks_.size() - 1) << 32) | c.size();
    put_u32(c, a.targets.size());
    for (const auto& t : a.targets) put_text(c, t);
    put_text(c, a.idempotency_key);
    put_u32(c, edited.size());
    for (std::size_t r : edited) put_u64(c, r);
    entries_.push_back(e);
  }
  // The action store's handle of the action indexed last.
  void set_handle(std::size_t handle) {
    entries_.back().handle = static_cast<std::uint32_t>(handle);
  }

  // Merges the tier-1 parts of each (type, record) into one action, in the order they came
  // (reasons appended, edits added once): what one action collecting every finding would be.
  template <class A, class Finalize>
  void merge_tier1(A& actions, Finalize&& finalize) {
    reload();
    rank_types();
    std::vector<std::size_t> parts;
    for (std::size_t k = 0; k < entries_.size(); ++k)
      if (entries_[k].tier1) parts.push_back(k);
    std::sort(parts.begin(), parts.end(), [&](std::size_t x, std::size_t y) {
      const entry &a = entries_[x], &b = entries_[y];
      if (a.type != b.type) return rank_[a.type] < rank_[b.type];
      if (const auto ia = first_target(a), ib = first_target(b); ia != ib) return ia < ib;
      return a.seq < b.seq;
    });
    for (std::size_t g = 0; g < parts.size();) {
      std::size_t h = g + 1;
      while (h < parts.size() && entries_[parts[h]].type == entries_[parts[g]].type &&
             first_target(entries_[parts[h]]) == first_target(entries_[parts[g]]))
        ++h;
      if (h - g > 1) {
        repair_action merged = actions.take(entries_[parts[g]].handle);
        for (std::size_t k = g + 1; k < h; ++k) {
          repair_action more = actions.take(entries_[parts[k]].handle);
          for (auto& r : more.reasons) merged.reasons.push_back(std::move(r));
          for (auto& e : more.edits)
            if (std::find(merged.edits.begin(), merged.edits.end(), e) == merged.edits.end())
              merged.edits.push_back(std::move(e));
          entries_[parts[k]].dead = true;
        }
        finalize(merged);
        const std::uint32_t seq = entries_[parts[g]].seq;
        entries_[parts[g]].dead = true;
        add(merged);
        entries_.back().seq = seq;
        set_handle(actions.put(std::move(merged)));
      }
      g = h;
    }
  }

  // Execution order (priority, higher first; then type, targets, idempotency key, and the order
  // the actions came in), equal actions (type, targets and key) kept once, the records-per-run
  // budget and the blast-radius suspension. Notes go to `plan.deferred`, the suspension to
  // `plan.suspended` / `suspend_reason`. @return the handles of the kept actions, in order.
  std::vector<std::size_t> finish(const planner_options& opt, repair_plan& plan) {
    rank_types();
    std::vector<std::size_t> order;
    for (std::size_t k = 0; k < entries_.size(); ++k)
      if (!entries_[k].dead) order.push_back(k);
    std::sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
      const entry &a = entries_[x], &b = entries_[y];
      if (a.priority != b.priority) return a.priority > b.priority;
      if (a.type != b.type) return rank_[a.type] < rank_[b.type];
      if (const int c = compare_targets(a, b); c != 0) return c < 0;
      if (const auto ka = key_of(a), kb = key_of(b); ka != kb) return ka < kb;
      return a.seq < b.seq;
    });
    order.erase(std::unique(order.begin(), order.end(),
                            [&](std::size_t x, std::size_t y) {
                              const entry &a = entries_[x], &b = entries_[y];
                              return key_of(a) == key_of(b) && a.type == b.type &&
                                     compare_targets(a, b) == 0;
                            }),
                order.end());
    return apply_record_budget(opt, plan, order);
  }

  // Distinct records the kept actions edit (the plan's blast radius); valid after `finish`.
  [[nodiscard]] std::size_t records_used() const noexcept { return used_count_; }

  // Index entries the plan's index actions remove or rewrite (`blast_radius::index_entries`):
  // counted with the records by the blast-radius suspension. Set before `finish`.
  void add_index_entries(std::size_t n) noexcept { index_entries_ += n; }
  [[nodiscard]] std::size_t index_entries() const noexcept { return index_entries_; }

 private:
  struct entry {               // 24 bytes
    std::uint64_t keys = 0;    // arena position (chunk << 32 | offset): targets, key, records
    std::uint32_t handle = 0;  // in the action store
    std::uint32_t seq = 0;     // the order actions came in (ties keep the first)
    std::int32_t priority = 0;
    std::uint16_t type = 0;  // index in types_
    bool tier1 = false;      // a part of a per-record tier-1 action (its record: targets[0])
    bool dead = false;       // merged into another entry, or a duplicate
  };

  std::uint32_t intern(const std::string& type) {
    auto [it, fresh] = type_ids_.try_emplace(type, static_cast<std::uint32_t>(types_.size()));
    if (fresh) types_.push_back(type);
    return it->second;
  }
  void rank_types() {
    std::vector<std::uint32_t> by_name(types_.size());
    std::iota(by_name.begin(), by_name.end(), 0u);
    std::sort(by_name.begin(), by_name.end(),
              [&](std::uint32_t x, std::uint32_t y) { return types_[x] < types_[y]; });
    rank_.assign(types_.size(), 0);
    for (std::uint32_t r = 0; r < by_name.size(); ++r) rank_[by_name[r]] = r;
  }

  // A record's index in the store; ids the store does not hold get indices from size() on.
  std::size_t record_of(std::string_view id) {
    if (auto i = store_.find(id)) return *i;
    auto [it, fresh] = unknown_.try_emplace(std::string(id), store_.size() + unknown_.size());
    return it->second;
  }

  // The arena: chunks of 4 MiB (no reallocation of what is stored, no doubling slack); an
  // entry's bytes lie in one chunk.
  std::string& chunk_for(std::size_t bytes) {
    constexpr std::size_t chunk = std::size_t{4} << 20;
    if (chunks_.empty() || chunks_.back().size() + bytes > chunks_.back().capacity()) {
      if (spill_ && !chunks_.empty()) {  // the full chunk waits in the file
        std::string& full = chunks_.back();
        if (std::fwrite(full.data(), 1, full.size(), spill_) != full.size())
          throw error(error_code::io, "make_plan: cannot write the temporary file");
        spilled_.push_back(full.size());
        std::string().swap(full);
      }
      chunks_.emplace_back();
      chunks_.back().reserve(std::max(chunk, bytes));
    }
    return chunks_.back();
  }
  static void put_u32(std::string& c, std::size_t v) {
    const auto x = static_cast<std::uint32_t>(v);
    c.append(reinterpret_cast<const char*>(&x), sizeof x);
  }
  static void put_u64(std::string& c, std::size_t v) {
    const auto x = static_cast<std::uint64_t>(v);
    c.append(reinterpret_cast<const char*>(&x), sizeof x);
  }
  static void put_text(std::string& c, std::string_view t) {
    put_u32(c, t.size());
    c.append(t);
  }
  // Reads the spilled chunks back (the finishing steps need every entry's bytes).
  void reload() {
    if (!spill_ || spilled_.empty()) return;
    if (std::fflush(spill_) != 0 || std::fseek(spill_, 0, SEEK_SET) != 0)
      throw error(error_code::io, "make_plan: cannot read the temporary file");
    for (std::size_t k = 0; k < spilled_.size(); ++k) {
      chunks_[k].resize(spilled_[k]);
      if (std::fread(chunks_[k].data(), 1, spilled_[k], spill_) != spilled_[k])
        throw error(error_code::io, "make_plan: cannot read the temporary file");
    }
    spilled_.clear();
    std::fclose(std::exchange(spill_, nullptr));
  }

  const char* at(std::uint64_t pos) const {
    return chunks_[static_cast<std::size_t>(pos >> 32)].data() + (pos & 0xffffffffu);
  }
  std::uint32_t u32_at(std::uint64_t pos) const {
    std::uint32_t x = 0;
    std::memcpy(&x, at(pos), sizeof x);
    return x;
  }
  std::string_view text_at(std::uint64_t pos) const { return {at(pos) + 4, u32_at(pos)}; }
  std::string_view first_target(const entry& e) const {
    return u32_at(e.keys) ? text_at(e.keys + 4) : std::string_view();
  }

  // -1, 0, 1: the targets of a and b compared as vectors of strings.
  int compare_targets(const entry& a, const entry& b) const {
    const std::uint32_t na = u32_at(a.keys), nb = u32_at(b.keys);
    std::uint64_t pa = a.keys + 4, pb = b.keys + 4;
    for (std::uint32_t k = 0; k < na && k < nb; ++k) {
      const auto ta = text_at(pa), tb = text_at(pb);
      if (const int c = ta.compare(tb); c != 0) return c < 0 ? -1 : 1;
      pa += 4 + ta.size();
      pb += 4 + tb.size();
    }
    return na == nb ? 0 : na < nb ? -1 : 1;
  }
  std::uint64_t after_targets(const entry& e) const {
    std::uint64_t p = e.keys + 4;
    for (std::uint32_t k = 0, n = u32_at(e.keys); k < n; ++k) p += 4 + u32_at(p);
    return p;
  }
  std::string_view key_of(const entry& e) const { return text_at(after_targets(e)); }
  std::vector<std::string> targets_of(const entry& e) const {
    std::vector<std::string> t;
    std::uint64_t p = e.keys + 4;
    for (std::uint32_t k = 0, n = u32_at(e.keys); k < n; ++k) {
      t.emplace_back(text_at(p));
      p += 4 + t.back().size();
    }
    return t;
  }

  // max_records_per_run: actions are taken in order while their new records fit; then the
  // whole plan is suspended when it edits more records than the blast-radius threshold.
  std::vector<std::size_t> apply_record_budget(const planner_options& opt, repair_plan& plan,
                                               const std::vector<std::size_t>& order) {
    std::vector<char> used(store_.size() + unknown_.size(), 0);
    std::vector<std::size_t> kept;
    std::size_t left_out = 0;
    std::map<std::string, std::size_t> left_out_by_type;
    constexpr std::size_t listed_limit = 100;
    std::vector<std::size_t> fresh;
    for (std::size_t k : order) {
      const entry& a = entries_[k];
      std::uint64_t p = after_targets(a);
      p += 4 + u32_at(p);  // the idempotency key
      const std::uint32_t n = u32_at(p);
      p += 4;
      fresh.clear();
      for (std::uint32_t j = 0; j < n; ++j) {
        std::uint64_t r = 0;
        std::memcpy(&r, at(p + 8 * j), sizeof r);
        if (!used[r]) fresh.push_back(static_cast<std::size_t>(r));
      }
      if (used_count_ + fresh.size() > opt.max_records_per_run) {
        const std::string& type = types_[a.type];
        if (left_out < listed_limit)
          plan.deferred.push_back("max_records_per_run " + std::to_string(opt.max_records_per_run) +
                                  ": deferred " + type + " " + join_ids(targets_of(a), 4) + " [" +
                                  std::string(key_of(a)) + "]");
        ++left_out;
        ++left_out_by_type[type];
        continue;
      }
      for (std::size_t r : fresh) used[r] = 1;
      used_count_ += fresh.size();
      kept.push_back(a.handle);
    }
    if (left_out > 0) {
      std::string by;
      for (const auto& [t, c] : left_out_by_type)
        by += (by.empty() ? "" : ", ") + t + " " + std::to_string(c);
      plan.deferred.push_back("max_records_per_run " + std::to_string(opt.max_records_per_run) +
                              ": " + std::to_string(left_out) + " actions deferred in total (" +
                              by + ")");
    }
    if (used_count_ + index_entries_ > opt.blast_radius_threshold) {
      std::set<std::string_view> scopes;  // the kept actions' blast scopes: their records' scopes
      for (std::size_t r = 0; r < store_.size(); ++r)
        if (used[r])
          if (const auto sc = scope_at(store_, r); !sc.empty()) scopes.insert(sc);
      plan.suspended = true;
      plan.suspend_reason =
          "blast radius " + std::to_string(used_count_) + " records in " +
          std::to_string(scopes.size()) + " scopes" +
          (index_entries_ ? " and " + std::to_string(index_entries_) + " index entries" : "") +
          " exceeds the threshold of " + std::to_string(opt.blast_radius_threshold) +
          (index_entries_ ? " (records and index entries together)" : " records") +
          "; approve the plan to run it";
    }
    return kept;
  }

  const S& store_;
  std::deque<entry> entries_;  // a deque: no doubling slack, no copy when it grows
  std::vector<std::string> chunks_;
  std::FILE* spill_ = nullptr;        // full chunks wait here while findings arrive (spill())
  std::vector<std::size_t> spilled_;  // sizes of the chunks in the file, in order
  std::vector<std::string> types_;
  std::map<std::string, std::uint32_t, std::less<>> type_ids_;
  std::vector<std::uint32_t> rank_;
  std::map<std::string, std::size_t, std::less<>> unknown_;
  std::size_t used_count_ = 0;
  std::size_t index_entries_ = 0;  // index entries the index actions remove or rewrite
};

// Finished actions kept in memory (make_plan).
struct memory_actions {
  std::vector<repair_action> v;
  std::size_t put(repair_action&& a) {
    v.push_back(std::move(a));
    return v.size() - 1;
  }
  repair_action take(std::size_t h) { return std::move(v[h]); }
};

}  // namespace detail

}  // namespace memhealth
