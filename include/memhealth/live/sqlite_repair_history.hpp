#pragma once
/// @file sqlite_repair_history.hpp
/// `memhealth::sqlite_repair_history`: the executor's repair history across runs
/// (repair_history.hpp) kept in the state database (sqlite_state.hpp): attempts, failures, done
/// and the manual queue in table `repair_attempts`, replaced images in `repair_images`.
///
/// **Scopes.** One state database may serve several stores (by default it lies next to the log),
/// so keys and record ids are stored under a scope, the store's name: `read_scope` is the store
/// the run reads (its earlier attempts, done actions and replaced images are looked up there),
/// `write_scope` the store the run's repairs end up in (done actions and replaced images are
/// noted there; failures and holds under `read_scope`, the data they failed on). Repairing in
/// place, both are the same; repairing into a copy, a later run on the copy sees what this run
/// did to it, and a run again from the same original starts over (it is not the repaired copy).
/// With both scopes empty, keys are stored as they are (`sqlite_state::manual_queue` lists them).
/// Proposals over the same before-images (`repair_proposal_key`) are counted in table
/// `repair_proposals` under the same scopes as replaced images.
///
/// Not thread-safe (one `sqlite_state` connection); processes may share the database.

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "memhealth/record/time.hpp"
#include "memhealth/repair/repair_history.hpp"
#include "memhealth/store/sqlite_state.hpp"

namespace memhealth {

/// The repair history in a `sqlite_state` (see the file comment). Holds a reference: the state
/// must outlive it.
class sqlite_repair_history final : public repair_history {
 public:
  /// @param max_failures failures that put an action in the manual queue (`retry_limit + 1`).
  explicit sqlite_repair_history(sqlite_state& state, std::int64_t max_failures = 4,
                                 std::string read_scope = {}, std::string write_scope = {})
      : state_(state),
        max_failures_(max_failures),
        read_(std::move(read_scope)),
        write_(std::move(write_scope)) {}

  [[nodiscard]] std::optional<repair_history_entry> attempts(std::string_view key) override {
    const auto a = state_.attempt(scoped(read_, key));
    if (!a) return std::nullopt;
    repair_history_entry e;
    e.attempts = a->attempts;
    e.failures = a->failures;
    e.last_error = a->last_error;
    e.done = a->state == "done";
    e.manual = a->state == "manual";
    return e;
  }
  void note_attempt(std::string_view key, bool ok, std::string_view error) override {
    (void)state_.note_attempt(scoped(ok ? write_ : read_, key), ok, error, now(), max_failures_);
  }
  void hold_for_review(std::string_view key, std::string_view reason) override {
    (void)state_.note_attempt(scoped(read_, key), false, reason, now(), 1);  // manual at once
  }
  [[nodiscard]] bool replaced_image(std::string_view record_id, std::uint64_t checksum) override {
    return state_.replaced_image(scoped(read_, record_id), checksum);
  }
  void note_images(std::string_view key, std::span<const repair_image_note> images) override {
    std::vector<std::pair<std::string, std::uint64_t>> rows;
    rows.reserve(images.size());
    for (const auto& im : images) rows.emplace_back(scoped(write_, im.record_id), im.checksum);
    state_.note_replaced_images(scoped(write_, key), rows, now());
  }
  /// Applications over `proposal_key` noted under the read scope (`sqlite_state::proposals`).
  [[nodiscard]] std::int64_t proposals(std::string_view proposal_key) override {
    return state_.proposals(scoped(read_, proposal_key));
  }
  /// An application is noted under the write scope (where the repaired records now are); a held
  /// proposal tags the read scope's count with the held key (what `release_action` is given).
  void note_proposal(std::string_view proposal_key, std::string_view key, bool applied) override {
    const std::string& scope = applied ? write_ : read_;
    state_.note_proposal(scoped(scope, proposal_key), scoped(scope, key), applied, now());
  }

  /// The scoped form of a key or record id as stored: `scope + '\x1f' + name` (or the name).
  [[nodiscard]] static std::string scoped(std::string_view scope, std::string_view name) {
    if (scope.empty()) return std::string(name);
    std::string s(scope);
    s += '\x1f';
    s += name;
    return s;
  }

 private:
  static utc_time now() {
    return std::chrono::floor<std::chrono::milliseconds>(std::chrono::system_clock::now());
  }
  sqlite_state& state_;
  std::int64_t max_failures_;
  std::string read_, write_;
};

}  // namespace memhealth
