#pragma once
/// @file rollback.hpp
/// The two ways back from a repair run, both driven by its write-ahead log (wal.hpp):
/// `rollback` undoes committed (and open) actions record by record, newest first; `recover`
/// brings a store from any moment of a crashed run to a state where every action is whole.
///
/// **Identity, not position.** Every image in the log names its record by id (and by the store's
/// own key where it has one, `keyed_record_store`); the index it had when the action ran is only
/// a hint. Both functions find records by id in the store as it is now, so records inserted,
/// deleted or re-sorted since the run do not matter, and they never write an image onto a record
/// with another id, `force` included. A record the run changed that is now missing (deleted, or
/// its id changed), ambiguous (several records now carry its id and none or several hold an image
/// the log knows) or edited since is a `record_conflict` naming its id, and is left alone (an
/// edited record is overwritten under `force`; a missing or ambiguous one never is). An image the
/// log holds that does not decode as a record (`decode_image` fails: a damaged or foreign log
/// whose frames still check out) is never written: that record is a `bad_image` conflict, left
/// alone, and the rest goes on.
///
/// **One store.** A log made by a writer that knew its store (`wal_writer_options::store`)
/// records the store's identity (store_identity.hpp). `check_log_store` compares it with the store
/// given: the same fingerprint, or a changed store that still holds at least half of the records
/// the log changed, is accepted; anything else is another store, and `rollback`/`recover` refuse
/// it (error precondition) unless `check_store` is turned off.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "memhealth/config.hpp"
#include "memhealth/record/traits.hpp"
#include "memhealth/repair/executor.hpp"
#include "memhealth/repair/record_image.hpp"
#include "memhealth/repair/store_identity.hpp"
#include "memhealth/repair/wal.hpp"
#include "memhealth/store/store.hpp"

namespace memhealth {

// ---------------------------------------------------------------- log analysis

/// State of a logged action (an intent and what closed it).
enum class logged_state : std::uint8_t {
  committed,  ///< a commit frame closes the intent
  aborted,    ///< an abort frame closes it
  open,       ///< neither: the run stopped between intent and commit (or the commit was lost)
};

/// Text of a logged state ("committed", "aborted", "open").
constexpr std::string_view to_string(logged_state s) noexcept {
  return s == logged_state::committed ? "committed"
         : s == logged_state::aborted ? "aborted"
                                      : "open";
}

/// One intent of a log with its state.
struct logged_action {
  const wal_entry* intent = nullptr;        ///< the intent frame (points into the `wal_contents`)
  logged_state state = logged_state::open;  ///< how it was closed
};

/// The intents of a log in file order, each with its state. Commit/abort frames that name no
/// known intent are ignored. The result points into `log`, which must outlive it (calling this on
/// a temporary does not compile). @complexity O(frames log frames).
inline std::vector<logged_action> logged_actions(const wal_contents& log) {
  std::vector<logged_action> out;
  std::map<std::uint64_t, std::size_t> by_seq;
  for (const auto& e : log.entries) {
    if (e.type == wal_frame_type::intent) {
      by_seq[e.seq] = out.size();
      out.push_back({&e, logged_state::open});
    } else if (e.type == wal_frame_type::commit || e.type == wal_frame_type::abort) {
      if (auto it = by_seq.find(e.intent);
          it != by_seq.end() && out[it->second].state == logged_state::open)
        out[it->second].state =
            e.type == wal_frame_type::commit ? logged_state::committed : logged_state::aborted;
    }
  }
  return out;
}
/// Deleted: the result would point into a destroyed `wal_contents`.
std::vector<logged_action> logged_actions(const wal_contents&&) = delete;

/// Index value of a `record_conflict` whose record is not in the store.
inline constexpr std::size_t no_index = std::numeric_limits<std::size_t>::max();

/// Why rollback or recovery left a logged record alone (or, under force, overwrote it).
enum class conflict_kind : std::uint8_t {
  changed,    ///< the record holds an image the log does not expect (edited since the action)
  missing,    ///< no record in the store carries the id (deleted, or its id changed, since the run)
  ambiguous,  ///< several records carry the id and the log cannot tell which one it changed
  bad_image,  ///< the log's image to restore does not decode as a record (`decode_image` fails): a
              ///< damaged or foreign log
  unwritable,  ///< the store may not write the record: it was read with a load issue (a store's
               ///< `read_with_issue(i)`, e.g. pg_store: rows sharing a key, a malformed vector), or
               ///< the write was refused (error(busy) or error(precondition) from `restore`: a
               ///< row another writer changed since it was read); never overwritten, even under
               ///< `force`
};

/// Text of a conflict kind ("changed", "missing", "ambiguous", "bad_image", "unwritable").
constexpr std::string_view to_string(conflict_kind k) noexcept {
  constexpr std::string_view names[] = {"changed", "missing", "ambiguous", "bad_image",
                                        "unwritable"};
  return names[static_cast<int>(k)];
}

/// A record that rollback or recovery left alone because it is not as the log expects.
struct record_conflict {
  std::size_t index = no_index;  ///< its store index now (`no_index` when missing or ambiguous)
  std::string id;                ///< record id
  std::string idempotency_key;   ///< the action (rollback) or the last action (recovery) on it
  std::string reason;            ///< what was found
  conflict_kind kind = conflict_kind::changed;  ///< see `conflict_kind`
  bool overwritten = false;  ///< `force` restored it anyway (changed records only)
};

/// Result of `check_log_store`.
struct log_store_check {
  bool same_store =
      true;  ///< false: the log was made for another store (rollback/recover refuse it)
  bool store_changed =
      false;  ///< the store's record ids differ from the log's (records inserted or deleted since)
  bool recorded =
      false;  ///< the log records its store at all (logs made before store identities do not)
  std::size_t logged_ids = 0;  ///< distinct ids of records the log changed
  std::size_t found_ids = 0;   ///< of those, ids present in the store
  std::string reason;          ///< a sentence for people
};

namespace detail::undo {

// Record ids -> store indices, for finding logged records by identity.
template <class S>
class locator {
 public:
  explicit locator(const S& store) : store_(store) {
    for (std::size_t i = 0; i < store.size(); ++i)
      by_id_[std::string(field::id(store.record(i)))].push_back(i);
  }
  [[nodiscard]] bool has(const std::string& id) const { return by_id_.count(id) > 0; }

  struct found {
    std::optional<std::size_t> index;
    conflict_kind kind = conflict_kind::missing;
    std::string reason;
  };
  // The record `img` names: by id; among several with that id, the one with the logged store
  // key, else the only one holding an image in `known` (several: ambiguous, never guessed by
  // position).
  template <class Known>
  found locate(const wal_record_image& img, const Known& known) const {
    auto it = by_id_.find(img.id);
    if (it == by_id_.end())
      return {std::nullopt, conflict_kind::missing,
              "not in the store (deleted, or its id changed, since the run); left alone"};
    const std::vector<std::size_t>& c = it->second;
    if (c.size() == 1) return {c.front(), conflict_kind::changed, {}};
    if constexpr (keyed_record_store<S>) {
      if (!img.key.empty()) {
        std::optional<std::size_t> hit;
        std::size_t n = 0;
        for (std::size_t i : c)
          if (std::string(store_.store_key(i)) == img.key) hit = i, ++n;
        if (n == 1) return {hit, conflict_kind::changed, {}};
      }
    }
    std::vector<std::size_t> holding;
    for (std::size_t i : c) {
      const std::string cur = encode_image(store_.extract(i));
      for (const std::string* k : known)
        if (*k == cur) {
          holding.push_back(i);
          break;
        }
    }
    if (holding.size() == 1) return {holding.front(), conflict_kind::changed, {}};
    return {
        std::nullopt, conflict_kind::ambiguous,
        std::to_string(c.size()) + " records carry this id and " + std::to_string(holding.size()) +
            " of them hold an image the log knows; left alone (resolve the duplicate id first)"};
  }

 private:
  const S& store_;
  std::unordered_map<std::string, std::vector<std::size_t>> by_id_;
};

// The record an image of the log holds, or nullopt when it does not decode (decode_image throws
// error(parse) for bytes that are not one record: a CRC-valid frame can still hold a damaged or
// foreign image).
template <class R>
std::optional<R> try_decode(std::string_view image) {
  try {
    return decode_image<R>(image);
  } catch (const error& e) {
    if (e.code() != error_code::parse) throw;
    return std::nullopt;
  }
}

// True when the record whose image is `cur` (its canonical encoding) holds what the log's image
// `logged` says: the same bytes, or, for a log whose image is not in canonical form (written by
// hand or by another writer), the same record once `logged` is decoded and encoded again.
// Found by fuzz/fuzz_wal.cpp: a recovery that redid an open action with an after-image of
// "2024-06-09T12:00Z" timestamps restored it again on every later run (never idempotent).
template <class R>
bool same_image(const std::string& cur, const std::string& logged) {
  if (cur == logged) return true;
  const std::optional<R> r = try_decode<R>(logged);
  return r && encode_image(*r) == cur;
}

}  // namespace detail::undo

/// Compares the store a log was made for with `store` (see the file comment): same fingerprint:
/// the same store; else the share of the records the log changed that `store` still holds (by
/// id) decides: at least half, the same store with records inserted or deleted since; less,
/// another store. A log without a recorded store is accepted (`recorded == false`).
/// @complexity O(n log n + logged records).
template <record_store S>
[[nodiscard]] log_store_check check_log_store(const wal_contents& log, const S& store);

namespace detail::undo {

// True when `store` says record i was read with a load issue (a store offering
// `read_with_issue(i)`, such as pg_store): such a record is never written.
template <class S>
bool read_with_issue(const S& store, std::size_t i) {
  if constexpr (requires {
                  { store.read_with_issue(i) } -> std::convertible_to<bool>;
                })
    return store.read_with_issue(i);
  else
    return false;
}

inline constexpr std::string_view load_issue_reason =
    "read with a load issue (the store never writes such a record); left alone";

// `check_log_store` with the id lookup the caller already built (rollback and recover reuse it).
template <class S>
log_store_check check_log_store(const wal_contents& log, const S& store, const locator<S>& loc,
                                const std::string& database_id = {}) {
  log_store_check r;
  if (!log.store) {
    r.reason =
        "the log does not record its store (made before store identities); records are matched by "
        "id";
    return r;
  }
  r.recorded = true;
  store_identity now = identify_store(store);
  if (now.database_id.empty()) now.database_id = database_id;
  std::set<std::string> ids;
  for (const auto& e : log.entries)
    for (const auto& img : e.records) ids.insert(img.id);
  r.logged_ids = ids.size();
  if (!now.database_id.empty() && !log.store->database_id.empty()) {  // the store's own id decides
    for (const auto& id : ids) r.found_ids += loc.has(id);
    r.store_changed = now.fingerprint != log.store->fingerprint;
    if (now.database_id == log.store->database_id) {
      r.reason = "the store the log was made for (database id " + now.database_id + ")" +
                 (r.store_changed ? "; records were inserted or deleted since, matched by id"
                                  : std::string());
    } else {
      r.same_store = false;
      r.reason = "the log was made for another database (" +
                 (log.store->path.empty() ? std::string() : log.store->path + ", ") +
                 "database id " + log.store->database_id + "); this store has database id " +
                 now.database_id;
    }
    return r;
  }
  if (now.fingerprint == log.store->fingerprint) {
    r.found_ids = ids.size();
    r.reason = "the store the log was made for";
    return r;
  }
  r.store_changed = true;
  for (const auto& id : ids) r.found_ids += loc.has(id);
  const std::string what = (log.store->path.empty() ? std::string() : log.store->path + ", ") +
                           "fingerprint " + log.store->fingerprint + ", " +
                           std::to_string(log.store->records) + " records";
  if (r.found_ids * 2 < r.logged_ids) {
    r.same_store = false;
    r.reason = "the log was made for another store (" + what + "): of the " +
               std::to_string(r.logged_ids) + " records it changed, " +
               std::to_string(r.found_ids) + " are in this store (" + std::to_string(now.records) +
               " records, fingerprint " + now.fingerprint + ")";
  } else {
    r.reason = "the store changed since the log was made (" + what + "; now " +
               std::to_string(now.records) + " records, fingerprint " + now.fingerprint + "); " +
               std::to_string(r.found_ids) + " of the " + std::to_string(r.logged_ids) +
               " records it changed are still there, matched by id";
  }
  return r;
}

}  // namespace detail::undo

template <record_store S>
log_store_check check_log_store(const wal_contents& log, const S& store) {
  return detail::undo::check_log_store(log, store, detail::undo::locator<S>(store));
}

// ---------------------------------------------------------------- rollback

/// Knobs of `rollback`.
struct rollback_options {
  bool force = false;  ///< restore before-images even over records changed since (never over
                       ///< missing or ambiguous ones)
  wal_writer* log_to = nullptr;  ///< when set, the rollback logs itself (intent, commit) here
  bool check_store = true;       ///< refuse a log made for another store (`check_log_store`)
  /// The database id of the store when the store object has none of its own (a `memory_store`
  /// read from an SQLite store: `sqlite_store::database_id()`); empty = none.
  std::string database_id{};
};

/// Result of `rollback`.
struct rollback_result {
  std::vector<std::string>
      rolled_back;  ///< keys of actions with at least one record restored, in undo order
  std::size_t records_restored = 0;   ///< record writes made
  std::size_t already_restored = 0;   ///< records already holding their before-image
  std::size_t records_relocated = 0;  ///< records found by id at another index than the log's
  std::vector<record_conflict>
      conflicts;  ///< records not as the log expects (left alone unless `force` and changed)
  std::optional<wal_problem>
      log_problem;              ///< the log's torn or damaged tail: frames after it were not undone
  log_store_check store_check;  ///< how the log's store compares with this one
  /// True when everything the log holds was undone: no conflict and a clean log.
  [[nodiscard]] bool complete() const noexcept { return conflicts.empty() && !log_problem; }
};

/// Undoes the committed (and open) actions of `log`, newest first, record by record. Each logged
/// record is found by id (file comment); one holding the logged after-image gets its before-image
/// back with `store.restore`; one already holding that before-image (or the before-image of an
/// older logged action on it: it was rolled back already) is counted and left; a changed one is a
/// conflict, left alone unless `opt.force`; a missing or ambiguous one is a conflict, always left
/// alone. Never restores a whole store; appends nothing to the old log. With `opt.log_to`, each
/// undone action is logged there as an intent (current -> before) made durable before the store
/// is touched, then a commit, so a rollback can itself be rolled back.
/// @throws memhealth::error(precondition) when `opt.check_store` and the log was made for another
///         store (nothing changed); error(io) when `log_to` cannot be written (nothing of that
///         action changed).
/// @complexity O(n + logged records x record size), n = store size (the id lookup).
template <mutable_record_store S>
rollback_result rollback(S& store, const wal_contents& log, const rollback_options& opt = {}) {
  using R = typename S::record_type;
  MEMHEALTH_REQUIRE_IMAGE(R, "rollback");
  if constexpr (!imaged_record<R>) {
    return {};
  } else {
    rollback_result res;
    res.log_problem = log.problem;
    const detail::undo::locator<S> loc(store);
    res.store_check = detail::undo::check_log_store(log, store, loc, opt.database_id);
    if (opt.check_store && !res.store_check.same_store)
      throw error(error_code::precondition,
                  "rollback: " + res.store_check.reason + "; nothing was changed");
    const auto acts = logged_actions(log);
    // id -> the images the log holds for it (any action), and the before-images of the actions
    // undone here in log order (a record already at the before-image of an older action on it
    // is further back, not changed since).
    std::unordered_map<std::string, std::vector<const std::string*>> known;
    std::unordered_map<std::string, std::vector<std::pair<std::size_t, const std::string*>>>
        befores;
    for (std::size_t k = 0; k < acts.size(); ++k)
      for (const auto& r : acts[k].intent->records) {
        known[r.id].push_back(&r.before_json);
        known[r.id].push_back(&r.after_json);
        if (acts[k].state != logged_state::aborted) befores[r.id].push_back({k, &r.before_json});
      }
    if (opt.log_to) opt.log_to->append_run_begin(acts.size());
    std::size_t undone = 0;
    for (auto a = acts.rbegin(); a != acts.rend(); ++a) {
      if (a->state == logged_state::aborted) continue;
      const std::size_t pos = static_cast<std::size_t>(acts.rend() - a) - 1;
      const wal_entry& in = *a->intent;
      std::vector<detail::exec::image<R>> todo;
      for (auto r = in.records.rbegin(); r != in.records.rend(); ++r) {
        const auto where = loc.locate(*r, known[r->id]);
        if (!where.index) {
          res.conflicts.push_back(
              {no_index, r->id, in.idempotency_key, where.reason, where.kind, false});
          continue;
        }
        const std::size_t i = *where.index;
        if (i != r->index) ++res.records_relocated;
        R cur = store.extract(i);
        std::string cur_json = encode_image(cur);
        bool already = false;
        for (const auto& [k, b] : befores[r->id])
          already = already || (k <= pos && detail::undo::same_image<R>(cur_json, *b));
        if (already) {
          ++res.already_restored;
          continue;
        }
        if (detail::undo::read_with_issue(store, i)) {
          res.conflicts.push_back({i, r->id, in.idempotency_key,
                                   std::string(detail::undo::load_issue_reason),
                                   conflict_kind::unwritable, false});
          continue;
        }
        if (!detail::undo::same_image<R>(cur_json, r->after_json)) {
          res.conflicts.push_back({i, r->id, in.idempotency_key,
                                   opt.force ? "changed since the action; restored anyway (force)"
                                             : "changed since the action; left alone",
                                   conflict_kind::changed, opt.force});
          if (!opt.force) continue;
        }
        std::optional<R> back = detail::undo::try_decode<R>(r->before_json);
        if (!back) {  // never write what the log cannot give back whole
          res.conflicts.push_back({i, r->id, in.idempotency_key,
                                   "the log's before-image does not decode; left alone",
                                   conflict_kind::bad_image, false});
          continue;
        }
        detail::exec::image<R> m;
        m.index = i;
        m.id = r->id;
        m.key = r->key;
        m.before = std::move(cur);
        m.after = std::move(*back);
        m.before_json = std::move(cur_json);
        m.after_json = r->before_json;
        todo.push_back(std::move(m));
      }
      if (todo.empty()) continue;
      std::uint64_t seq = 0;
      if (opt.log_to) seq = opt.log_to->append_intent(in.action, in.idempotency_key, 1, todo);
      try {
        detail::exec::action_tx<S> tx{store};
        tx.begin();
        for (const auto& m : todo) store.restore(m.index, m.after);
        tx.commit();
      } catch (const error& e) {
        // the store refused the write (a row changed or shared since it was read): the action's
        // transaction is rolled back whole, its records are conflicts, the rollback goes on
        if (e.code() != error_code::busy && e.code() != error_code::precondition) throw;
        if constexpr (!transactional_record_store<S>) {
          if (todo.size() > 1) throw;  // earlier records of the action may be written: stop
        }
        if (opt.log_to) opt.log_to->append_abort(seq, in.action, in.idempotency_key, e.what());
        for (const auto& m : todo)
          res.conflicts.push_back({m.index, m.id, in.idempotency_key,
                                   std::string("the store refused the write: ") + e.what() +
                                       "; the action's records left alone",
                                   conflict_kind::unwritable, false});
        continue;
      }
      if (opt.log_to) opt.log_to->append_commit(seq, in.action, in.idempotency_key);
      res.records_restored += todo.size();
      res.rolled_back.push_back(in.idempotency_key);
      ++undone;
    }
    if (opt.log_to) opt.log_to->append_run_end(undone, 0, 0, acts.size() - undone);
    return res;
  }
}

// ---------------------------------------------------------------- recovery

/// What recovery does with an open action (intent without commit or abort).
enum class open_action_policy : std::uint8_t {
  undo,  ///< (default) put its records back to their before-images: the run is cut at the last
         ///< commit
  redo,  ///< finish it: its records get their after-images
};

/// Knobs of `recover`.
struct recover_options {
  open_action_policy open_actions = open_action_policy::undo;  ///< see `open_action_policy`
  bool force = false;  ///< overwrite records whose image is none the log knows (never missing or
                       ///< ambiguous ones)
  bool check_store = true;  ///< refuse a log made for another store (`check_log_store`)
  /// As `rollback_options::database_id`.
  std::string database_id{};
  /// The store commits each action before the log's commit frame (a `transactional_record_store`
  /// written in place, such as `pg_store`): a committed or aborted action is already whole in
  /// the store, so a record whose last logged action is not open is left as it is (one holding
  /// its before-image was rolled back on purpose, and recovering must not re-apply it); only open
  /// actions are undone or finished: a record of one is brought from the open action's after-image
  /// to its before-image (undo) or the other way (redo), and one holding an older image the log
  /// knows (rolled back since) is left as it is. false (files, a store read into memory and written
  /// back whole): every record is brought to the log's target image.
  bool committed_in_store = false;
};

/// Outcome of one logged action after recovery.
enum class recovery_status : std::uint8_t {
  committed,  ///< committed; its records hold their after-images (or later logged images)
  undone,     ///< was open; rolled back to before-images
  redone,     ///< was open; completed (policy redo)
  aborted,    ///< was aborted; before-images hold
};

/// Text of a recovery status.
constexpr std::string_view to_string(recovery_status s) noexcept {
  constexpr std::string_view names[] = {"committed", "undone", "redone", "aborted"};
  return names[static_cast<int>(s)];
}

/// Per-action line of a recovery report.
struct recovered_action {
  std::uint64_t intent_seq = 0;                         ///< seq of the intent frame
  std::int64_t action = -1;                             ///< plan index
  std::string idempotency_key;                          ///< key
  recovery_status status = recovery_status::committed;  ///< outcome
  bool conflict = false;  ///< one of its records was left alone as a conflict
};

/// Result of `recover`.
struct recover_result {
  std::vector<recovered_action> actions;   ///< every logged intent, in log order
  std::size_t records_restored = 0;        ///< record writes made
  std::size_t records_relocated = 0;       ///< records found by id at another index than the log's
  std::vector<record_conflict> conflicts;  ///< records left alone (or, under force, overwritten)
  std::optional<wal_problem>
      log_problem;  ///< the log's torn/corrupt tail, if any (frames after it were not used)
  log_store_check store_check;  ///< how the log's store compares with this one
  /// True when the store now holds what the whole log commits to: no conflict, and a log that
  /// is clean or ends in a torn tail (an append never acknowledged, so nothing acted on it).
  [[nodiscard]] bool complete() const noexcept {
    return conflicts.empty() &&
           (!log_problem || (log_problem->kind == wal_problem_kind::truncated &&
                             !log_problem->valid_frames_follow));
  }
};

/// Brings `store` to the state the log commits to after a crash at any point: for every record
/// any intent touches (found by id, file comment), the target image is the after-image of its
/// last committed action (open actions: before-image under `undo`, after-image under `redo`;
/// aborted: before-image), or its first logged before-image when no action on it counts. A record
/// holding any image the log knows for it (so: a store from any moment of the run, or an older
/// snapshot from before it) is set to the target with `store.restore`; a record holding an
/// unknown image is a conflict, left alone unless `opt.force`; a missing or ambiguous one is a
/// conflict, always left alone. Idempotent: recovering twice changes nothing the second time.
///
/// Result: every action is all or nothing, and the store equals the starting state plus the
/// committed actions (plus, under `redo`, the open ones) in log order. Frames after a torn or
/// corrupt tail are ignored (an intent there cannot have been acted on: intents are durable
/// before the store is touched).
/// @throws memhealth::error(precondition) when `opt.check_store` and the log was made for another
///         store (nothing changed).
/// @complexity O(n + logged records x record size), n = store size.
template <mutable_record_store S>
recover_result recover(S& store, const wal_contents& log, const recover_options& opt = {}) {
  using R = typename S::record_type;
  MEMHEALTH_REQUIRE_IMAGE(R, "recover");
  if constexpr (!imaged_record<R>) {
    return {};
  } else {
    recover_result res;
    res.log_problem = log.problem;
    const detail::undo::locator<S> loc(store);
    res.store_check = detail::undo::check_log_store(log, store, loc, opt.database_id);
    if (opt.check_store && !res.store_check.same_store)
      throw error(error_code::precondition,
                  "recover: " + res.store_check.reason + "; nothing was changed");
    const auto acts = logged_actions(log);
    struct step {
      std::size_t act;
      const wal_record_image* img;
    };
    std::map<std::string, std::vector<step>> chains;  // record id -> steps in log order
    for (std::size_t k = 0; k < acts.size(); ++k)
      for (const auto& r : acts[k].intent->records) chains[r.id].push_back({k, &r});
    auto counts = [&](const logged_action& a) {
      return a.state == logged_state::committed ||
             (a.state == logged_state::open && opt.open_actions == open_action_policy::redo);
    };
    std::vector<bool> conflicted(acts.size(), false);
    detail::exec::action_tx<S> tx{store};  // the whole recovery is one store transaction
    tx.begin();
    for (const auto& [id, chain] : chains) {
      if (opt.committed_in_store && acts[chain.back().act].state != logged_state::open) continue;
      const wal_record_image* target = chain.front().img;
      bool target_after = false;
      for (const auto& s : chain)
        if (counts(acts[s.act])) target = s.img, target_after = true;
      if (opt.committed_in_store) {  // the open action alone: its before- or after-image
        target = chain.back().img;
        target_after = opt.open_actions == open_action_policy::redo;
      }
      const std::string& want = target_after ? target->after_json : target->before_json;
      const std::string& key = acts[chain.back().act].intent->idempotency_key;
      std::vector<const std::string*> known;
      for (const auto& s : chain)
        known.push_back(&s.img->before_json), known.push_back(&s.img->after_json);
      const auto where = loc.locate(*chain.back().img, known);
      if (!where.index) {
        res.conflicts.push_back({no_index, id, key, where.reason, where.kind, false});
        for (const auto& s : chain) conflicted[s.act] = true;
        continue;
      }
      const std::size_t index = *where.index;
      if (index != chain.back().img->index) ++res.records_relocated;
      const std::string cur = encode_image(store.extract(index));
      if (detail::undo::same_image<R>(cur, want)) continue;
      if (detail::undo::read_with_issue(store, index)) {
        res.conflicts.push_back({index, id, key, std::string(detail::undo::load_issue_reason),
                                 conflict_kind::unwritable, false});
        for (const auto& s : chain) conflicted[s.act] = true;
        continue;
      }
      bool is_known = false;
      for (const std::string* k : known)
        is_known = is_known || detail::undo::same_image<R>(cur, *k);
      if (opt.committed_in_store && is_known &&
          !detail::undo::same_image<R>(cur,
                                       target_after ? target->before_json : target->after_json))
        continue;  // an older image: rolled back since (the open action is undone with it)
      if (!is_known) {
        res.conflicts.push_back({index, id, key,
                                 opt.force ? "image unknown to the log; overwritten (force)"
                                           : "image unknown to the log; left alone",
                                 conflict_kind::changed, opt.force});
        if (!opt.force) {
          for (const auto& s : chain) conflicted[s.act] = true;
          continue;
        }
      }
      std::optional<R> image = detail::undo::try_decode<R>(want);
      if (!image) {  // never write what the log cannot give back whole
        res.conflicts.push_back({index, id, key,
                                 "the log's target image does not decode; left alone",
                                 conflict_kind::bad_image, false});
        for (const auto& s : chain) conflicted[s.act] = true;
        continue;
      }
      store.restore(index, *image);
      ++res.records_restored;
    }
    tx.commit();
    for (std::size_t k = 0; k < acts.size(); ++k) {
      recovered_action ra;
      ra.intent_seq = acts[k].intent->seq;
      ra.action = acts[k].intent->action;
      ra.idempotency_key = acts[k].intent->idempotency_key;
      ra.conflict = conflicted[k];
      switch (acts[k].state) {
        case logged_state::committed:
          ra.status = recovery_status::committed;
          break;
        case logged_state::aborted:
          ra.status = recovery_status::aborted;
          break;
        case logged_state::open:
          ra.status = opt.open_actions == open_action_policy::redo ? recovery_status::redone
                                                                   : recovery_status::undone;
          break;
      }
      res.actions.push_back(std::move(ra));
    }
    return res;
  }
}

}  // namespace memhealth
