#pragma once
/// @file repair_history.hpp
/// The repair history that spans runs (issue 20): what earlier runs of the executor did with an
/// action (by idempotency key, idempotency.hpp) and which images they replaced, so that a later
/// run (executor.hpp, `apply_options::history`)
/// - sends an action that failed `retry_limit + 1` times in earlier runs, or that an earlier run
///   held for review (a repair loop), straight to the manual queue without trying it again, and
///   gives an action that failed fewer times only the attempts left of `retry_limit + 1`;
/// - does not apply again an action an earlier run completed ("done"): when the store still holds
///   its after-images it is *already applied* as without a history; when the record has changed
///   since (another writer undid it), it is reported *already applied* with a note, not re-applied
///   (the executor does not fight the writer);
/// - sends to the manual queue an action that would put a record back into an image an earlier
///   run's action replaced (a loop across runs: run 1 sets X, run 2 sets it back);
/// - sends to the manual queue (the watch: the review queue) an action proposed a third time
///   over the same before-images: actions of one type were applied twice to exactly these
///   records in exactly these states, and they came back each time (another writer, or a rule,
///   undoes the repair). The count is per `repair_proposal_key` (type, record ids and
///   before-image checksums), so it holds even when the action's own key changes between runs
///   (edits that carry a time, such as a down-weight computed from the clock).
///
/// Images are identified by `repair_image_checksum`, FNV-1a 64 of the record's canonical image
/// (`encode_image`, record_image.hpp): stable across builds and machines.
///
/// `repair_history` is an interface (virtual functions: one call per action, not per record of
/// the store). `memory_repair_history` keeps it in memory (runs in one process);
/// `sqlite_repair_history` (live/sqlite_repair_history.hpp) keeps it in the state database.
/// Without a history (`apply_options::history == nullptr`) every run starts from nothing, as
/// before.

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "memhealth/repair/idempotency.hpp"

namespace memhealth {

/// What earlier runs did with one action.
struct repair_history_entry {
  std::int64_t attempts = 0;  ///< attempts made (and actions held for review)
  std::int64_t failures = 0;  ///< failed attempts
  std::string last_error;     ///< the last failure's message ("" when none)
  bool done = false;          ///< an attempt succeeded
  bool manual = false;        ///< held in the manual queue
};

/// One image an applied action replaced: the record's id and the checksum of its before-image.
struct repair_image_note {
  std::string record_id;       ///< the record's id
  std::uint64_t checksum = 0;  ///< `repair_image_checksum` of its before-image
};

/// Checksum of a canonical record image (FNV-1a 64; stable across builds).
inline std::uint64_t repair_image_checksum(std::string_view image) noexcept {
  return fnv1a_64(image);
}

/// Applications over the same before-images after which the next proposal is held (the third
/// proposal goes to a person).
inline constexpr std::int64_t repair_proposal_limit = 2;

/// The identity of "an action of type `type` over these records in these states": 16 hex
/// digits of FNV-1a 64 over the type and the (record id, before-image checksum) pairs sorted by
/// id (length-prefixed, so no two inputs share a text).
inline std::string repair_proposal_key(std::string_view type,
                                       std::span<const repair_image_note> before) {
  std::vector<std::pair<std::string_view, std::uint64_t>> v;
  v.reserve(before.size());
  for (const auto& b : before) v.emplace_back(b.record_id, b.checksum);
  std::sort(v.begin(), v.end());
  std::string text;
  detail::put_field(text, type);
  for (const auto& [id, sum] : v) {
    detail::put_field(text, id);
    text += detail::hex64(sum);
  }
  return detail::hex64(fnv1a_64(text));
}

/// The history policy of the executor (see the file comment). Implementations may throw
/// `memhealth::error` (the run then stops; what was committed stays committed and logged).
class repair_history {
 public:
  virtual ~repair_history() = default;
  /// What earlier runs did with the action of idempotency key `key` (nullopt: never tried).
  [[nodiscard]] virtual std::optional<repair_history_entry> attempts(std::string_view key) = 0;
  /// One attempt of action `key` ended: `ok` marks it done; a failure is counted with `error`.
  virtual void note_attempt(std::string_view key, bool ok, std::string_view error) = 0;
  /// Holds action `key` in the manual queue (a repair loop), with `reason`.
  virtual void hold_for_review(std::string_view key, std::string_view reason) = 0;
  /// Whether an earlier applied action replaced image `checksum` of record `record_id`.
  [[nodiscard]] virtual bool replaced_image(std::string_view record_id, std::uint64_t checksum) = 0;
  /// Action `key` was applied and replaced these before-images.
  virtual void note_images(std::string_view key, std::span<const repair_image_note> images) = 0;
  /// Times an action was applied over the before-images of `proposal_key`
  /// (`repair_proposal_key`) in earlier runs. The default keeps no count (0).
  [[nodiscard]] virtual std::int64_t proposals(std::string_view /*proposal_key*/) { return 0; }
  /// Action `key` over `proposal_key`: `applied` counts one application; false tags the count
  /// with `key` only (a held proposal, so releasing `key` resets it). The default does nothing.
  virtual void note_proposal(std::string_view /*proposal_key*/, std::string_view /*key*/,
                             bool /*applied*/) {}

 protected:
  repair_history() = default;
  repair_history(const repair_history&) = default;
  repair_history& operator=(const repair_history&) = default;
};

/// The history in memory: spans the runs that share this object (one process). An action is
/// marked manual once it failed `max_failures` times (give `retry_limit + 1`) or was held.
class memory_repair_history final : public repair_history {
 public:
  explicit memory_repair_history(std::int64_t max_failures = 4) : max_failures_(max_failures) {}
  [[nodiscard]] std::optional<repair_history_entry> attempts(std::string_view key) override {
    const auto it = entries_.find(key);
    if (it == entries_.end()) return std::nullopt;
    return it->second;
  }
  void note_attempt(std::string_view key, bool ok, std::string_view error) override {
    repair_history_entry& e = entry(key);
    ++e.attempts;
    if (ok) {
      e.done = true;
      e.last_error.clear();
    } else {
      ++e.failures;
      e.last_error = std::string(error);
      e.manual = e.manual || e.failures >= max_failures_;
    }
  }
  void hold_for_review(std::string_view key, std::string_view reason) override {
    repair_history_entry& e = entry(key);
    ++e.attempts;
    ++e.failures;
    e.manual = true;
    e.last_error = std::string(reason);
  }
  [[nodiscard]] bool replaced_image(std::string_view record_id, std::uint64_t checksum) override {
    return images_.count(std::pair{std::string(record_id), checksum}) > 0;
  }
  void note_images(std::string_view, std::span<const repair_image_note> images) override {
    for (const auto& im : images) images_.emplace(im.record_id, im.checksum);
  }
  [[nodiscard]] std::int64_t proposals(std::string_view proposal_key) override {
    const auto it = proposals_.find(proposal_key);
    return it == proposals_.end() ? 0 : it->second;
  }
  void note_proposal(std::string_view proposal_key, std::string_view, bool applied) override {
    auto it = proposals_.find(proposal_key);
    if (it == proposals_.end()) it = proposals_.emplace(std::string(proposal_key), 0).first;
    it->second += applied ? 1 : 0;
  }
  /// The keys held in the manual queue, sorted.
  [[nodiscard]] std::set<std::string> manual_queue() const {
    std::set<std::string> out;
    for (const auto& [k, e] : entries_)
      if (e.manual) out.insert(k);
    return out;
  }

 private:
  repair_history_entry& entry(std::string_view key) {
    auto it = entries_.find(key);
    if (it == entries_.end()) it = entries_.emplace(std::string(key), repair_history_entry{}).first;
    return it->second;
  }
  std::int64_t max_failures_;
  std::map<std::string, repair_history_entry, std::less<>> entries_;
  std::set<std::pair<std::string, std::uint64_t>> images_;
  std::map<std::string, std::int64_t, std::less<>> proposals_;
};

}  // namespace memhealth
