#pragma once
/// @file executor.hpp
/// The guarded executor of repair plans, and the two ways back: `rollback` (undo committed
/// repairs record by record) and `recover` (finish a run that crashed).
///
/// **apply_plan** runs a `repair_plan` against a `mutable_record_store` under the write-ahead
/// discipline of wal.hpp. For each action, in execution order (`execution_order`, guardrails.hpp:
/// higher priority first, then plan order):
/// 1. guardrails: a suspended plan runs nothing without `approve_suspended`; a `confirm` action
///    needs `approve_tier2`, a `manual` one `approve_tier3` (else *unapproved*); an action that
///    would take the run past `max_records` changed records is *deferred*, and so is every
///    action after it (later actions may build on it);
/// 2. every target and edit id is resolved with `store.find`; a missing, empty or ambiguous
///    (duplicate) id, an illegal status in an edit, or a merge whose records are in different
///    scopes (a plan made for another store) sends the action to
///    the manual queue (*failed*) with the store untouched (a missing id the action's `seen`
///    names is gone since the plan: step 2b);
/// 2b. stale records: an action whose `seen` digests (`record_decision_digest`, store_identity.hpp:
///    id, content, scope, created_at, updated_at) differ from its records now, or one of whose
///    seen records is gone, is *deferred* with
///    a reason starting with `stale_reason_prefix` (`action_outcome::stale()`), not run: the plan
///    decided on other records. A plan without digests (made before them) is not checked. So is
///    (deferred, stale) an action whose `edit_drop_links` would remove a link whose target a
///    record of the store carries now (no longer dangling), and one whose kept record (a merge's
///    primary, a conflict's winner) is archived now: retiring the others would leave no active
///    record of the fact (status is not in the digest, since the plan's own actions write it);
/// 3. before-images come from `store.extract(i)`; after-images are computed by `apply_edit` on
///    copies (no store change yet). If no record changes, the action is *already applied*: edits
///    are applied to the current state, so "already done" and "nothing to do" are the same
///    observable state (idempotency); an action with no edits is a *no-op*;
/// 4. loop guard: an after-image equal to a before-image the same record had earlier in this
///    run (a change back and forth) sends the action to the manual queue;
/// 4b. rate limit and concurrency cap (`apply_options::limits`, see `execution_limits`): one token
///    per attempt that writes; an empty bucket closes the batch, then waits within `max_wait`,
///    else the action and every later one are *deferred*; a batch holds at most `max_in_flight`
///    actions and `max_records_in_flight` records. A `rebuild_index` action calls
///    `apply_options::rebuild_index` after the batches before it are committed (index_policy.hpp);
///    so do `clean_index` and `check_rebuild_index` through `apply_options::index`, and a
///    `start_migration` proposal (approved) is a no-op naming the command a person runs: none of
///    them changes a record or writes to the log. An index action goes to the manual queue
///    without touching the index when `apply_options::index_refused` says why (a store emptied
///    or cut since the plan, `check_plan_store`), and is held (*unapproved*) when it would
///    remove or rewrite more index entries than `index_blast_limit` (its blast radius) without
///    `approve_suspended`. For a `rebuild_index` that is the records re-embedded before it: a
///    `reembed` action whose changed vectors would take the run's re-embedded records past
///    `index_blast_limit` is held itself (*unapproved*, the next run plans it again) when
///    `apply_options::rebuild_index` is set (without a policy apply rewrites no index entry), so
///    the rebuild never has to be held after the store changed; a `rebuild_index` over more
///    changed records than the limit (vectors changed by other actions) is held;
/// 5. the intent (before + after images of the changed records) is appended and made durable
///    (group commit: `batch_size` actions per `fdatasync`), then each record is written with
///    `store.restore(i, after)`, then a commit frame is appended; a `transactional_record_store`
///    (store.hpp) gets the action's writes as one transaction, committed before the commit frame
///    (`rollback` and `recover` use one transaction per undone action / per recovery too); in a
///    `verifiable_record_store` the records the action names but does not write are first
///    checked, inside that transaction, to be as the store read them (a merge's primary the
///    agent rewrote or deleted meanwhile: error(busy), and the retry finds the action stale);
///    a store whose write finds its row changed since the read (busy) reads it again in the
///    action's rollback, so the retry works from the row as it is (stale, or applied over it);
/// 6. an exception while computing or applying undoes the action (before-images restored, abort
///    frame) and the action is retried, at most `retry_limit` (3) times, then goes to the manual
///    queue. Other actions of the same group-commit batch are aborted and re-run (not counted as
///    attempts).
///
/// **History across runs** (`apply_options::history`, repair_history.hpp; unset: each run starts
/// from nothing). Before step 3, an action the history holds in the manual queue, or that failed
/// `retry_limit + 1` times in earlier runs, is *failed* at once (no attempt); one that failed
/// fewer times gets the attempts left. After step 3, an action done in an earlier run whose
/// records changed since is *already applied* (not re-applied), and an after-image equal to an
/// image an earlier run's action replaced is a loop across runs (manual queue), and so is an
/// action proposed a third time over the same before-images (`repair_proposal_key`: two earlier
/// applications of its type to these records in these states were undone each time). Every
/// attempt's end, every loop, the before-images of every committed action and its proposal key
/// are written to the history (not in a dry run).
///
/// **The store a plan was made for.** Before anything is written, `apply_plan` and
/// `apply_plan_stream` compare the plan's store fingerprint (`repair_plan::store`; a plan file's
/// header) with `store` (`check_plan_store`, store_identity.hpp), unless
/// `apply_options::skip_store_check`: another store (verdict `other`) throws
/// error(precondition) naming why, with nothing written to the log or the store (a dry run
/// too); a store with no live record or that lost most of the plan's records (`shrunk`) runs the
/// record actions (each checked against its records as they are) and sends every index action
/// that would act to the manual queue with the reason "index actions refused: ..." (as
/// `apply_options::index_refused`; a reason the caller set there wins). A plan without a
/// fingerprint (made before them) is not checked.
///
/// Record images are compared as canonical JSON (`append_json`), so timestamp offsets, NaN
/// embeddings and unknown fields count as differences exactly as they are written.
///
/// **Record types.** `apply_plan`, `rollback` and `recover` work on a store of any record type
/// with an image (`imaged_record`, record_image.hpp: `memory_record` logs its canonical JSON, the
/// bytes written before record images existed). Each edit needs only the capability it writes
/// (`edit_supported`, apply_edit.hpp); an edit whose capability the record type lacks sends its
/// action to the manual queue in step 2 (failed, store untouched, no attempt counted). A store
/// without an image fails to compile with one message naming the function and how to provide one.
/// `apply_options::embed` and the cross-scope merge check apply to record types that have the
/// fields (embedding, scope).

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "memhealth/config.hpp"
#include "memhealth/io/jsonl.hpp"
#include "memhealth/record/memory_record.hpp"
#include "memhealth/repair/action.hpp"
#include "memhealth/repair/apply_edit.hpp"
#include "memhealth/repair/guardrails.hpp"
#include "memhealth/repair/index_policy.hpp"
#include "memhealth/repair/record_image.hpp"
#include "memhealth/repair/repair_history.hpp"
#include "memhealth/repair/store_identity.hpp"
#include "memhealth/repair/wal.hpp"
#include "memhealth/store/store.hpp"

namespace memhealth {

/// Knobs of `apply_plan`. Defaults are the safe ones: only tier-1 actions, 1000 records per run.
struct apply_options {
  bool approve_tier2 = false;      ///< run `automation::confirm` actions
  bool approve_tier3 = false;      ///< run `automation::manual` actions
  bool approve_suspended = false;  ///< run a plan whose blast radius suspended it
  std::size_t max_records = 1000;  ///< changed records per run; actions beyond are deferred
  bool dry_run = false;            ///< compute outcomes only: no log, no store change
  std::size_t batch_size = 1;      ///< actions per group commit (one fdatasync per batch), >= 1
  int retry_limit = 3;  ///< retries after a failed attempt (so at most 1 + retry_limit attempts)
  /// Test hook called at named points: "run_begin", "after_intent" (intents durable, store
  /// untouched), "after_apply_record" (after each record write), "before_commit",
  /// "after_commit", "after_abort", "run_end". A test may `_exit` here to simulate a crash.
  std::function<void(std::string_view point)> crash_hook;
  /// Embedder for `edit_replace_embedding` edits whose vector is empty: returns the new vector
  /// for the record's image after every edit of the action (so a new text, `edit_set_content`,
  /// is what gets embedded). Unset: such edits fail (manual queue after retries).
  std::function<std::vector<float>(const memory_record&)> embed;
  /// embedding_version written by an `edit_replace_embedding` whose plan left the version empty.
  /// A re-embedding is never written untagged: with both empty the action fails (manual queue).
  std::string embed_version;
  /// Rate limit (token bucket, bounded wait, then deferral) and concurrency cap: guardrails.hpp.
  execution_limits limits{};
  /// The user's index policy for `rebuild_index` actions (index_policy.hpp,
  /// `make_index_rebuilder`); unset: such actions go to the manual queue.
  index_rebuilder rebuild_index;
  /// The user's index policy for the actions of retrieval alarms, `clean_index` and
  /// `check_rebuild_index` (index_policy.hpp, `make_index_hooks`); an unset operation sends such
  /// an action to the manual queue (a policy without `check` is rebuilt without one).
  index_hooks index;
  /// Why index actions must not run against this store (empty: they may). Set it from
  /// `check_plan_store` (store_identity.hpp) when the store has no live record or lost most of
  /// the records of the store the plan was made from: a clean-up or a rebuild from what is left
  /// would empty the index. Set: a `rebuild_index`, `clean_index` or `check_rebuild_index` that
  /// would act goes to the manual queue (failed) with this reason; the index is not touched.
  std::string index_refused;
  /// Skip the check of the plan's store (`repair_plan::store`, a plan file's header `store`)
  /// that `apply_plan` and `apply_plan_stream` make before anything is written (see "The store
  /// a plan was made for" in the file comment). Set it only when the caller made the same check
  /// itself (`check_plan_store`, store_identity.hpp) and set `index_refused` from it.
  bool skip_store_check = false;
  /// The most index entries one index action may remove or rewrite without `approve_suspended`
  /// (its blast radius; the plan's `blast_radius_threshold`, the planner's default 500 unset):
  /// a `clean_index` with more ids to remove, or a `check_rebuild_index` whose rebuild would
  /// remove or rewrite more entries (the check's extra and stale entries; every entry when the
  /// dimension or model version differs), is held (unapproved), not run. A policy without
  /// `check` cannot say what a rebuild changes: its rebuild is not held. A `rebuild_index`
  /// rewrites the entries of the records the run re-embedded: with `rebuild_index` set, a
  /// `reembed` action that would take them past the limit is held (unapproved) before it changes
  /// anything, and a `rebuild_index` over more changed records than the limit is held.
  std::size_t index_blast_limit = 500;
  /// The repair history that spans runs (repair_history.hpp; not owned, must outlive the run):
  /// attempts, the manual queue, done actions and replaced images of earlier runs. nullptr: none.
  repair_history* history = nullptr;
};

/// What happened to one action.
enum class action_status : std::uint8_t {
  applied,          ///< logged, applied, committed (or, in a dry run, would be)
  already_applied,  ///< the store already holds every after-image: nothing written
  noop,             ///< the action has no record edits
  unapproved,       ///< its automation level (or a suspended plan) was not approved
  deferred,  ///< over the per-run record budget or the rate limit's wait budget (the next run plans
             ///< it again)
  failed,    ///< missing id, repair loop, attempts exhausted, or held by the history: manual
             ///< queue
};

/// Text of an action status ("applied", "already_applied", ...).
constexpr std::string_view to_string(action_status s) noexcept {
  constexpr std::string_view names[] = {"applied",    "already_applied", "noop",
                                        "unapproved", "deferred",        "failed"};
  return names[static_cast<int>(s)];
}

/// The start of the reason of an action `apply_plan` skipped because a record it names changed
/// since the plan was made (its `record_decision_digest` differs from `repair_action::seen`):
/// such an action is *deferred* and not run; a new plan decides it from the records as they are.
inline constexpr std::string_view stale_reason_prefix = "stale:";

/// Outcome of one plan action.
struct action_outcome {
  std::size_t action = 0;                          ///< index in the plan
  std::string idempotency_key;                     ///< the action's key
  action_status status = action_status::deferred;  ///< what happened
  int attempts = 0;                                ///< attempts made (0 when never tried)
  std::size_t records_changed = 0;                 ///< records written (applied only)
  std::string reason;                              ///< why it was skipped or failed, or a note
  /// True when the action was skipped because its records changed since the plan (deferred,
  /// reason starting with `stale_reason_prefix`).
  [[nodiscard]] bool stale() const noexcept {
    return status == action_status::deferred && reason.starts_with(stale_reason_prefix);
  }
};

/// Result of `apply_plan`. The key lists hold idempotency keys in plan order; their sizes are
/// the counts. `outcomes` has one entry per plan action, in plan order.
struct apply_result {
  std::vector<std::string> applied;                  ///< committed (would be, in a dry run)
  std::vector<std::string> skipped_already_applied;  ///< state already reached
  std::vector<std::string> skipped_noop;             ///< no edits
  std::vector<std::string> skipped_unapproved;       ///< not approved
  std::vector<std::string> deferred;                 ///< over the record budget
  std::vector<std::string> failed;                   ///< manual queue
  std::vector<action_outcome> outcomes;              ///< per action, plan order
  std::size_t records_changed = 0;                   ///< record writes committed
  bool dry_run = false;                              ///< nothing was written
  std::chrono::milliseconds rate_limit_waited{0};    ///< total time waited for rate-limit tokens
  std::size_t rate_limit_waits = 0;                  ///< number of such waits
};

/// Counts of an apply run by outcome: what `apply_plan_stream` keeps (it hands each action's
/// outcome to a callback instead of listing it).
struct apply_counts {
  std::size_t actions = 0;          ///< actions read from the plan
  std::size_t applied = 0;          ///< committed (would be, in a dry run)
  std::size_t already_applied = 0;  ///< state already reached
  std::size_t noop = 0;             ///< no edits
  std::size_t unapproved = 0;       ///< not approved
  std::size_t deferred = 0;         ///< over the record budget or the rate limit's wait
  std::size_t failed = 0;           ///< manual queue
  std::size_t records_changed = 0;  ///< record writes committed
  bool dry_run = false;             ///< nothing was written
  std::chrono::milliseconds rate_limit_waited{0};  ///< total time waited for rate-limit tokens
  std::size_t rate_limit_waits = 0;                ///< number of such waits
};

namespace detail::exec {

template <class R>
struct image {
  std::size_t index = 0;
  std::string id;
  std::string key;  // the store's own key (keyed_record_store), else empty
  R before, after;
  std::string before_json, after_json;  // encode_image of before / after
};

template <class R>
struct prepared {
  std::size_t action = 0;
  std::vector<image<R>> records;  // changed records, in first-touch order
  std::uint64_t intent_seq = 0;
};

// Same vector and version, bitwise (NaN equals NaN); records without an embedding: always.
template <class R>
bool same_vector(const R& x, const R& y) {
  if constexpr (versioned_embedding_record<R>) {
    const auto a = field::embedding(x), b = field::embedding(y);
    return field::embedding_version(x) == field::embedding_version(y) && a.size() == b.size() &&
           std::equal(a.begin(), a.end(), b.begin(), [](float u, float v) {
             return std::bit_cast<std::uint32_t>(u) == std::bit_cast<std::uint32_t>(v);
           });
  } else {
    return true;
  }
}

inline void hook(const apply_options& o, std::string_view point) {
  if (o.crash_hook) o.crash_hook(point);
}

// One store transaction around an action's record writes when the store has the
// `transactional_record_store` capability (else nothing); rolled back unless committed.
template <class S>
struct action_tx {
  S& store;
  bool open = false;
  void begin() {
    if constexpr (transactional_record_store<S>) store.begin_action(), open = true;
  }
  void commit() {
    if constexpr (transactional_record_store<S>) store.commit_action(), open = false;
  }
  ~action_tx() {
    if constexpr (transactional_record_store<S>)
      if (open) store.rollback_action();
  }
};

}  // namespace detail::exec

namespace detail::exec {

// The actions of an in-memory plan in execution order (guardrails.hpp), each with its plan index.
struct plan_source {
  const repair_plan& plan;
  std::vector<std::size_t> order = execution_order(plan);
  std::size_t next_ = 0;
  [[nodiscard]] bool suspended() const { return plan.suspended; }
  [[nodiscard]] const std::string& suspend_reason() const { return plan.suspend_reason; }
  [[nodiscard]] std::size_t size() const { return plan.actions.size(); }
  bool next(std::size_t& index, repair_action& out) {
    if (next_ == order.size()) return false;
    index = order[next_++];
    out = plan.actions[index];
    return true;
  }
};

// The actions of a plan file as a `plan_reader` yields them, which must be execution order (no
// action of a higher priority after a lower one: what make_plan and make_plan_file write).
template <class Reader>
struct reader_source {
  Reader& reader;
  std::size_t n = 0;
  int last_priority = 0;
  [[nodiscard]] bool suspended() const { return reader.header().suspended; }
  [[nodiscard]] const std::string& suspend_reason() const { return reader.header().suspend_reason; }
  [[nodiscard]] std::size_t size() const { return reader.header().actions; }
  bool next(std::size_t& index, repair_action& out) {
    if (!reader.next(out)) return false;
    if (n > 0 && out.priority > last_priority)
      throw error(error_code::precondition,
                  "apply: plan action " + std::to_string(n) + " has priority " +
                      std::to_string(out.priority) + " after " + std::to_string(last_priority) +
                      ": the plan is not in execution order (apply it whole with apply_plan)");
    last_priority = out.priority;
    index = n++;
    return true;
  }
};

// Before-images a record had earlier in the run (the loop guard), as 64-bit hashes: one slot per
// record and a map for records changed more than once. A multiset per record.
struct image_history {
  std::vector<std::uint64_t> first;
  std::vector<std::uint8_t> has;
  std::unordered_map<std::size_t, std::vector<std::uint64_t>> more;
  void push(std::size_t i, std::uint64_t h) {
    if (i >= has.size()) first.resize(i + 1), has.resize(i + 1, 0);
    if (!has[i])
      first[i] = h, has[i] = 1;
    else
      more[i].push_back(h);
  }
  [[nodiscard]] bool contains(std::size_t i, std::uint64_t h) const {
    if (i >= has.size() || !has[i]) return false;
    if (first[i] == h) return true;
    const auto it = more.find(i);
    return it != more.end() &&
           std::find(it->second.begin(), it->second.end(), h) != it->second.end();
  }
  void pop(std::size_t i, std::uint64_t h) {  // one occurrence of h, if any
    if (i >= has.size() || !has[i]) return;
    auto it = more.find(i);
    if (it != more.end()) {
      auto& v = it->second;
      if (auto f = std::find(v.rbegin(), v.rend(), h); f != v.rend()) {
        v.erase(std::next(f).base());
      } else if (first[i] == h) {
        first[i] = v.front();
        v.erase(v.begin());
      }
      if (v.empty()) more.erase(it);
    } else if (first[i] == h) {
      has[i] = 0;
    }
  }
};

inline std::uint64_t image_hash(std::string_view json) {
  return std::hash<std::string_view>{}(json);
}

// One run of apply_plan, cut into the steps of the file comment, over the actions `Source`
// yields in execution order. Holds the run's state: the outcomes of the actions in flight (each
// handed to `on_outcome` once settled), the priority queue of pending actions, the record budget,
// the rate gate, the first before-image of every re-embedded record (for rebuild_index) and the
// loop guard. Memory is bounded by the batch and the actions in flight, not by the plan.
template <class S, class Source, class OnOutcome>
class plan_run {
 public:
  using R = typename S::record_type;

  plan_run(S& store, Source& src, wal_writer& wal, const apply_options& opt, OnOutcome& on)
      : store_(store), src_(src), wal_(wal), opt_(opt), on_(on), gate_(opt.limits) {}

  apply_counts run() {
    find_ambiguous_ids();
    res_.dry_run = opt_.dry_run;
    if (src_.suspended() && !opt_.approve_suspended) {
      while (pull()) {
        const std::size_t a = pending_.front();
        pending_.pop_front();
        set(a, action_status::unapproved, "plan suspended: " + src_.suspend_reason());
      }
    } else {
      if (!opt_.dry_run) {
        wal_.append_run_begin(src_.size());
        hook(opt_, "run_begin");
      }
      while (!pending_.empty() || pull()) {
        std::vector<prepared<R>> batch = collect_batch();
        if (batch.empty()) continue;
        if (opt_.dry_run) {
          for (const auto& p : batch)
            set(p.action, action_status::applied, "dry run", p.records.size());
          continue;
        }
        log_intents(batch);
        write_batch(batch);
      }
      if (!opt_.dry_run) end_run();
    }
    return res_;
  }

 private:
  // Takes the next action of the plan into the queue (false at the end of the plan).
  bool pull() {
    std::size_t index = 0;
    repair_action act;
    if (!src_.next(index, act)) return false;
    ++res_.actions;
    live& l = live_[index];
    l.out.action = index;
    l.out.idempotency_key = act.idempotency_key;
    l.act = std::move(act);
    pending_.push_back(index);
    return true;
  }
  const repair_action& action_of(std::size_t a) const { return live_.at(a).act; }
  int& attempts(std::size_t a) { return live_.at(a).out.attempts; }

  // Settles action `a`: its outcome is final, counted and handed on; the action leaves the run.
  void set(std::size_t a, action_status s, std::string reason, std::size_t records = 0) {
    auto it = live_.find(a);
    action_outcome& o = it->second.out;
    o.status = s;
    o.reason = std::move(reason);
    o.records_changed = records;
    res_.records_changed += records;
    switch (s) {
      case action_status::applied:
        ++res_.applied;
        break;
      case action_status::already_applied:
        ++res_.already_applied;
        break;
      case action_status::noop:
        ++res_.noop;
        break;
      case action_status::unapproved:
        ++res_.unapproved;
        break;
      case action_status::deferred:
        ++res_.deferred;
        break;
      case action_status::failed:
        ++res_.failed;
        break;
    }
    on_(static_cast<const action_outcome&>(o), static_cast<const repair_action&>(it->second.act));
    live_.erase(it);
  }

  // The ids held by more than one record (an action naming one is refused as ambiguous), found
  // by sorting 64-bit hashes of every id rather than keeping every id in a map.
  void find_ambiguous_ids() {
    std::vector<std::pair<std::uint64_t, std::size_t>> h;
    h.reserve(store_.size());
    for (std::size_t i = 0; i < store_.size(); ++i)
      h.emplace_back(std::hash<std::string_view>{}(field::id(store_.record(i))), i);
    std::sort(h.begin(), h.end());
    for (std::size_t k = 0; k + 1 < h.size(); ++k)
      if (h[k].first == h[k + 1].first) {
        std::map<std::string, std::size_t> same;  // ids of this hash and their counts
        std::size_t j = k;
        for (; j < h.size() && h[j].first == h[k].first; ++j)
          ++same[std::string(field::id(store_.record(h[j].second)))];
        for (auto& [id, c] : same)
          if (c > 1) ambiguous_[id] = c;
        k = j - 1;
      }
  }

  // Steps 1-4b for the next actions of the queue: a batch of prepared actions (images computed,
  // admitted by the guards), at most `max_in_flight` of them.
  std::vector<prepared<R>> collect_batch() {
    std::vector<prepared<R>> batch;
    std::map<std::size_t, std::pair<R, std::string>> overlay;  // state after earlier batch members
    std::size_t batch_records = 0;  // records in the batch's intents (concurrency cap)
    const std::size_t max_batch =
        std::min(opt_.batch_size, std::max<std::size_t>(1, opt_.limits.max_in_flight));
    while (batch.size() < max_batch && (!pending_.empty() || pull())) {
      const std::size_t a = pending_.front();
      pending_.pop_front();
      const repair_action& act = action_of(a);
      if (!approved(a, act)) continue;
      if (is_index_action(act.type)) {  // index_policy.hpp
        if (!batch.empty()) {           // the record changes before it are committed first
          pending_.push_front(a);
          break;
        }
        if (act.type == action_types::rebuild_index)
          rebuild_index(a, act);
        else
          alarm_index_action(a, act);
        continue;
      }
      if (act.type == action_types::start_migration) {
        set(a, action_status::noop,
            "a migration is started by a person (memhealth migrate start --to VERSION), never by "
            "apply: see the action's reasons");
        continue;
      }
      if (!runnable(a, act)) continue;
      if (std::string refusal = refusal_of(act); !refusal.empty()) {
        set(a, action_status::failed, refusal);
        continue;
      }
      if (std::string changed = stale_of(act); !changed.empty()) {
        set(a, action_status::deferred,
            std::string(stale_reason_prefix) + " its records changed since the plan (" + changed +
                "): not run; make a new plan");
        continue;
      }
      if (std::string retired = kept_retired(act); !retired.empty()) {
        set(a, action_status::deferred,
            std::string(stale_reason_prefix) + " the record it keeps is archived now (" + retired +
                "): retiring the other would leave none active; not run; make a new plan");
        continue;
      }
      if (std::string found = links_found(act); !found.empty()) {
        set(a, action_status::deferred,
            std::string(stale_reason_prefix) + " the links it drops are no longer dangling (" +
                found + " in the store now): not run; make a new plan");
        continue;
      }
      if (!from_history(a, act)) continue;
      ++attempts(a);
      std::optional<prepared<R>> p = prepare(a, act, overlay);
      if (!p) continue;
      if (!guarded(a, *p)) continue;
      // Concurrency cap, then rate limit (guardrails.hpp, execution_limits): an action that does
      // not fit is taken back (its attempt uncounted) after the batch held so far is durable.
      const bool over_cap =
          !batch.empty() && batch_records + p->records.size() > opt_.limits.max_records_in_flight;
      if (over_cap || (!opt_.dry_run && !batch.empty() && !gate_.ready())) {
        --attempts(a);
        pending_.push_front(a);
        break;
      }
      if (!opt_.dry_run && !gate_.admit()) {
        --attempts(a);
        rate_stop_ = "rate limit: waiting for the next token would exceed the run's max_wait of " +
                     std::to_string(opt_.limits.max_wait.count()) + " ms";
        set(a, action_status::deferred, rate_stop_);
        continue;
      }
      batch_records += p->records.size();
      used_ += p->records.size();
      for (const auto& m : p->records)
        if (!vector_before_.count(m.index) && !same_vector(m.before, m.after))
          vector_before_.emplace(m.index, m.before);
      for (const auto& m : p->records) {
        earlier_before_.push(m.index, image_hash(m.before_json));
        overlay[m.index] = {m.after, m.after_json};
      }
      batch.push_back(std::move(*p));
    }
    return batch;
  }

  // Step 1, approvals: a confirm action needs approve_tier2, a manual one approve_tier3.
  bool approved(std::size_t a, const repair_action& act) {
    if ((act.automation == automation::confirm && !opt_.approve_tier2) ||
        (act.automation == automation::manual && !opt_.approve_tier3)) {
      set(a, action_status::unapproved,
          "automation level '" + std::string(to_string(act.automation)) + "' not approved");
      return false;
    }
    return true;
  }

  // A rebuild_index action: calls the index policy for the targets whose vector this run changed.
  void rebuild_index(std::size_t a, const repair_action& act) {
    std::vector<std::string>
        ids;  // targets whose vector this run changed (committed, or would be in a dry run)
    for (const auto& id : act.targets)
      if (auto i = store_.find(id);
          i && vector_before_.count(*i) &&
          (opt_.dry_run || !same_vector(store_.extract(*i), vector_before_.at(*i))))
        ids.push_back(id);
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    if (ids.empty()) {
      set(a, action_status::noop, "no target record changed in this run: nothing to re-index");
    } else if (!opt_.index_refused.empty()) {
      set(a, action_status::failed, "index actions refused: " + opt_.index_refused);
    } else if (!opt_.rebuild_index) {
      set(a, action_status::failed,
          "no index policy (apply_options::rebuild_index): rebuild the index by hand for " +
              std::to_string(ids.size()) + " re-embedded records");
    } else if (ids.size() > opt_.index_blast_limit && !opt_.approve_suspended) {
      set(a, action_status::unapproved,
          held_text("rewrite the index entries of " + std::to_string(ids.size()) +
                        " re-embedded records (they stay stale in the index until it is rebuilt)",
                    ids.size()));
    } else if (opt_.dry_run) {
      set(a, action_status::applied,
          "dry run: would rebuild the index for " + std::to_string(ids.size()) + " records");
    } else {
      ++attempts(a);
      try {
        opt_.rebuild_index(ids);
        set(a, action_status::applied,
            "index rebuilt for " + std::to_string(ids.size()) + " records");
      } catch (const std::exception& ex) {
        if (attempts(a) <= opt_.retry_limit)  // index rebuilds are not in the history
          pending_.push_front(a);
        else
          set(a, action_status::failed, std::string("attempts exhausted: ") + ex.what());
      }
    }
  }

  // clean_index / check_rebuild_index (index_policy.hpp, "Retrieval alarms"): through
  // `apply_options::index`, never logged (no record changes); an exception is retried like a
  // failed action (index actions are not in the history), then the manual queue.
  void alarm_index_action(std::size_t a, const repair_action& act) {
    const bool clean = act.type == action_types::clean_index;
    std::vector<std::string> ghosts;  // targets without a live record now
    std::size_t live_now = 0;
    if (clean) {
      for (const auto& id : act.targets) {
        if (auto i = store_.find(id); i && index_live(store_, *i))
          ++live_now;
        else
          ghosts.push_back(id);
      }
      std::sort(ghosts.begin(), ghosts.end());
      ghosts.erase(std::unique(ghosts.begin(), ghosts.end()), ghosts.end());
    }
    const std::string kept =
        live_now ? " (" + std::to_string(live_now) + " ids are live records now: kept)" : "";
    if (clean && ghosts.empty()) {
      set(a, action_status::noop, "every target is a live record now: nothing removed" + kept);
      return;
    }
    if (!opt_.index_refused.empty()) {
      set(a, action_status::failed, "index actions refused: " + opt_.index_refused);
      return;
    }
    if (clean && ghosts.size() > opt_.index_blast_limit && !opt_.approve_suspended) {
      set(a, action_status::unapproved,
          held_text("remove " + std::to_string(ghosts.size()) + " ids from the index",
                    ghosts.size()));
      return;
    }
    if (clean ? !opt_.index.remove : !opt_.index.rebuild) {
      set(a, action_status::failed,
          clean ? "no index clean-up (apply_options::index.remove): remove " +
                      std::to_string(ghosts.size()) + " ids from the index by hand"
                : std::string("no index policy (apply_options::index.rebuild): check and rebuild "
                              "the index by hand"));
      return;
    }
    if (opt_.dry_run) {
      set(a, action_status::applied,
          clean ? "dry run: would remove " + std::to_string(ghosts.size()) + " ids from the index"
                : std::string("dry run: would check the index and rebuild it when inconsistent"));
      return;
    }
    ++attempts(a);
    try {
      if (clean) {
        const std::size_t removed = opt_.index.remove(ghosts);
        set(a, action_status::applied,
            "removed " + std::to_string(removed) + " of " + std::to_string(ghosts.size()) +
                " ids from the index" +
                (removed < ghosts.size()
                     ? " (" + std::to_string(ghosts.size() - removed) + " were not in it)"
                     : std::string()) +
                kept);
        return;
      }
      if (!opt_.index.check) {
        opt_.index.rebuild();
        set(a, action_status::applied, "index rebuilt (the index policy has no check)");
        return;
      }
      const index_expectation expected = expected_index(store_);
      const index_check first = opt_.index.check(expected);
      if (first.consistent) {
        set(a, action_status::noop,
            "index consistent with the store (" + std::to_string(first.entries) +
                " entries, dimension " + std::to_string(first.dimension) +
                "): nothing rebuilt; the alarm's cause is elsewhere");
        return;
      }
      // what a rebuild would remove or rewrite: the extra and stale entries, every entry when
      // the dimension or model version is not the store's
      const bool other_space =
          first.entries > 0 && (first.dimension != expected.dimension ||
                                first.embedding_version != expected.embedding_version);
      const std::size_t changes = other_space ? first.entries : first.extra + first.stale;
      if (changes > opt_.index_blast_limit && !opt_.approve_suspended) {
        set(a, action_status::unapproved,
            held_text("rebuild the index, removing or rewriting " + std::to_string(changes) +
                          " of its " + std::to_string(first.entries) + " entries",
                      changes));
        return;
      }
      opt_.index.rebuild();
      const index_check second = opt_.index.check(expected);
      std::string found;
      for (const auto& p : first.problems) found += (found.empty() ? "" : "; ") + p;
      if (!second.consistent) {
        std::string still;
        for (const auto& p : second.problems) still += (still.empty() ? "" : "; ") + p;
        set(a, action_status::failed,
            "index inconsistent (" + found + "), still inconsistent after a rebuild: " + still);
        return;
      }
      set(a, action_status::applied,
          "index inconsistent (" + found + "); rebuilt: " + std::to_string(second.entries) +
              " entries");
    } catch (const std::exception& ex) {
      if (attempts(a) <= opt_.retry_limit)
        pending_.push_front(a);
      else
        set(a, action_status::failed, std::string("attempts exhausted: ") + ex.what());
    }
  }

  // The reason of an index action held by its blast radius (`entries` over the limit).
  std::string held_text(const std::string& what, std::size_t entries) const {
    return "held for review: it would " + what + " (" + std::to_string(entries) +
           " index entries, more than the blast-radius threshold of " +
           std::to_string(opt_.index_blast_limit) + "); approve suspended work to run it";
  }

  // Step 1, budgets: an action without edits is a no-op; past the record budget or a spent
  // rate-limit wait it is deferred.
  bool runnable(std::size_t a, const repair_action& act) {
    if (act.edits.empty()) {
      set(a, action_status::noop, "no record edits");
      return false;
    }
    if (over_budget_) {
      set(a, action_status::deferred, "record budget of the run (max_records) reached");
      return false;
    }
    if (!rate_stop_.empty()) {
      set(a, action_status::deferred, rate_stop_);
      return false;
    }
    return true;
  }

  // Step 2: every id must name exactly one record of *this* store (a plan made for another store,
  // an empty id or a duplicate id must not edit an arbitrary record), the record type must have
  // the capability of every edit, merges must stay in one scope, and statuses must be legal.
  // @return why not (empty = fine).
  std::string refusal_of(const repair_action& act) const {
    std::string refusal;
    auto check_id = [&](const std::string& id) {
      if (!refusal.empty()) return;
      if (id.empty())
        refusal = "empty record id";
      else if (!store_.find(id) && !act.seen.contains(id))  // a seen one gone since: stale_of
        refusal = "target id not found: " + id;
      else if (const auto amb = ambiguous_.find(id); amb != ambiguous_.end())
        refusal = "ambiguous target id (" + std::to_string(amb->second) + " records): " + id;
    };
    for (const auto& id : act.targets) check_id(id);
    for (const auto& e : act.edits) {
      check_id(e.record_id);
      if (refusal.empty())
        std::visit(
            [&](const auto& op) {
              using E = std::remove_cvref_t<decltype(op)>;
              if constexpr (!edit_supported<R, E>)
                refusal = std::string("the record type has no writable ") + edit_capability<E> +
                          " for this edit";
            },
            e.op);
      if (const auto* st = std::get_if<edit_set_status>(&e.op);
          st && refusal.empty() && !parse_status(st->status))
        refusal = "illegal status in edit: " + st->status;
      if (const auto* re = std::get_if<edit_replace_embedding>(&e.op);
          re && refusal.empty() && re->version.empty() && opt_.embed_version.empty())
        refusal =
            "re-embedding without an embedding_version tag (set planner_options::reembed_version "
            "or apply_options::embed_version)";
    }
    if constexpr (scoped_record<R>) {
      if (refusal.empty() && act.type == action_types::merge_duplicates) {
        std::string_view first_scope;
        bool have = false;
        for (const auto& e : act.edits) {
          const auto i = store_.find(e.record_id);
          if (!i) continue;  // gone since the plan (seen): stale, step 2b
          const std::string_view sc = field::scope(store_.record(*i));
          if (have && sc != first_scope) {
            refusal = "merge across scopes refused: " + std::string(first_scope) + " vs " +
                      std::string(sc);
            break;
          }
          first_scope = sc;
          have = true;
        }
      }
    }
    return refusal;
  }

  // Step 2b: the records the plan decided on (`repair_action::seen`) whose decision digest
  // differs now, comma-separated (empty: none, or a plan without digests).
  std::string stale_of(const repair_action& act) const {
    std::string changed;
    for (const auto& [id, digest] : act.seen) {
      const auto i = store_.find(id);
      if (i && record_decision_digest(store_.record(*i)) == digest) continue;
      changed += (changed.empty() ? "" : ", ") + id;
    }
    return changed;
  }

  // Step 2b too: the records an action keeps in favour of which it retires others (a merge's
  // primary, `edit_set_duplicate_of`; a conflict's winner, the record given
  // `edit_add_supersedes`) that are archived now (the agent, or another run, retired them since
  // the plan; status is not in the decision digest, since the plan's own actions write it),
  // comma-separated (empty: none).
  std::string kept_retired(const repair_action& act) const {
    std::string retired;
    if constexpr (status_record<R>) {
      std::set<std::string> kept;
      for (const auto& e : act.edits) {
        if (const auto* d = std::get_if<edit_set_duplicate_of>(&e.op)) kept.insert(d->primary_id);
        if (std::holds_alternative<edit_add_supersedes>(e.op)) kept.insert(e.record_id);
      }
      for (const auto& e : act.edits)  // the action sets its status itself (a person's revival)
        if (std::holds_alternative<edit_set_status>(e.op)) kept.erase(e.record_id);
      for (const auto& id : kept)
        if (const auto i = store_.find(id); i && field::status(store_.record(*i)) == "archived")
          retired += (retired.empty() ? "" : ", ") + id;
    }
    return retired;
  }

  // Step 2b too: the ids an `edit_drop_links` would remove that a record of the store carries
  // now (the agent added the link's target since the plan), comma-separated (empty: none).
  std::string links_found(const repair_action& act) const {
    std::string found;
    for (const auto& e : act.edits)
      if (const auto* d = std::get_if<edit_drop_links>(&e.op))
        for (const auto& id : d->ids)
          if (store_.find(id)) found += (found.empty() ? "" : ", ") + id;
    return found;
  }

  // Step 3: before-images (from the store, or from earlier members of the batch), after-images
  // by apply_edit on copies. nullopt when the action is settled here (failed attempt requeued or
  // exhausted, or already applied).
  std::optional<prepared<R>> prepare(
      std::size_t a, const repair_action& act,
      const std::map<std::size_t, std::pair<R, std::string>>& overlay) {
    prepared<R> p;
    p.action = a;
    try {
      std::vector<image<R>> touched;
      std::vector<std::pair<std::size_t, std::string>> embed_later;  // (touched index, version)
      for (const auto& e : act.edits) {
        const std::size_t i = *store_.find(e.record_id);
        auto it = std::find_if(touched.begin(), touched.end(),
                               [&](const image<R>& m) { return m.index == i; });
        if (it == touched.end()) {
          image<R> m;
          m.index = i;
          m.id = e.record_id;
          if constexpr (keyed_record_store<S>) m.key = std::string(store_.store_key(i));
          if (auto o = overlay.find(i); o != overlay.end()) {
            m.before = o->second.first;
            m.before_json = o->second.second;
          } else {
            m.before = store_.extract(i);
            m.before_json = encode_image(m.before);
          }
          m.after = m.before;
          touched.push_back(std::move(m));
          it = std::prev(touched.end());
        }
        const auto* re = std::get_if<edit_replace_embedding>(&e.op);
        if (re && ((re->embedding.empty() && opt_.embed) || re->version.empty())) {
          std::string version = re->version.empty() ? opt_.embed_version : re->version;
          bool later = false;
          if constexpr (std::is_same_v<R, memory_record>)
            later = re->embedding.empty() && opt_.embed;
          if (later)  // embedded from the record's final text, once every edit is applied
            embed_later.emplace_back(static_cast<std::size_t>(it - touched.begin()),
                                     std::move(version));
          else
            apply_edit(it->after,
                       record_edit_op(edit_replace_embedding{re->embedding, std::move(version)}));
        } else {
          apply_edit(it->after, e.op);
        }
      }
      // An empty re-embedding vector is computed from the after-image of the whole action (so
      // an edit_set_content anywhere in the action is what gets embedded, never the old text).
      if constexpr (std::is_same_v<R, memory_record>)
        for (auto& [k, version] : embed_later) {
          // no text, no vector: an embedder gives blank text a zero (or meaningless) vector,
          // which is worse than the missing one it would replace
          const std::string& text = touched[k].after.content;
          if (text.find_first_not_of(" \t\r\n") == std::string::npos)
            throw error(error_code::precondition,
                        "record '" + touched[k].after.id +
                            "' has no text to embed (empty content); not re-embedded");
          apply_edit(touched[k].after, record_edit_op(edit_replace_embedding{
                                           opt_.embed(touched[k].after), std::move(version)}));
        }
      for (auto& m : touched) {
        m.after_json = encode_image(m.after);
        if (m.after_json != m.before_json) p.records.push_back(std::move(m));
      }
    } catch (const std::exception& ex) {
      note(a, false, ex.what());
      if (may_retry(a)) {
        pending_.push_front(a);
      } else {
        set(a, action_status::failed, std::string("attempts exhausted: ") + ex.what());
      }
      return std::nullopt;
    }
    if (p.records.empty()) {
      set(a, action_status::already_applied, "every record already holds its after-image");
      return std::nullopt;
    }
    return p;
  }

  // Step 4: done in an earlier run, loop guard (this run, then earlier runs), then the run's
  // record budget.
  bool guarded(std::size_t a, const prepared<R>& p) {
    if (live_.at(a).done_before) {
      // Its result is gone (a rollback, or another writer changed the records): applying it again
      // could fight that writer, and calling it already applied would be untrue. A person decides.
      --attempts(a);  // nothing was tried
      set(a, action_status::failed,
          "done in an earlier run (repair history), and its records changed since (a rollback or "
          "another writer): not applied again; manual queue");
      return false;
    }
    std::string loop;
    for (const auto& m : p.records)
      if (earlier_before_.contains(m.index, image_hash(m.after_json))) loop = m.id;
    if (!loop.empty()) {
      hold(a, "repair loop: record " + loop + " would return to an earlier image of this run");
      return false;
    }
    if (opt_.history) {
      for (const auto& m : p.records)
        if (opt_.history->replaced_image(m.id, repair_image_checksum(m.after_json))) {
          loop = m.id;
          break;
        }
      if (!loop.empty()) {
        hold(a, "repair loop across runs: record " + loop +
                    " would return to an image an earlier run's repair replaced");
        return false;
      }
      // the third proposal over the same before-images: its records came back twice
      const std::string pk = proposal_key(a, p);
      if (const std::int64_t n = opt_.history->proposals(pk); n >= repair_proposal_limit) {
        if (!opt_.dry_run) opt_.history->note_proposal(pk, action_of(a).idempotency_key, false);
        hold(a, "proposed again over the same before-images, after " + std::to_string(n) +
                    " applications whose records came back each time: a person decides");
        return false;
      }
    }
    if (used_ + p.records.size() > opt_.max_records) {
      over_budget_ = true;
      set(a, action_status::deferred, "record budget of the run (max_records) reached");
      return false;
    }
    // a re-embedding batch whose vectors would take the index rebuild after it (rebuild_index)
    // past the blast-radius limit is held: holding only the rebuild would leave those records
    // re-embedded in the store and stale in the index
    // (with an index policy only: without one apply rewrites no index entry, and a run that
    // re-embeds many records on purpose, such as a migration's, sets none)
    if (action_of(a).type == action_types::reembed && opt_.rebuild_index &&
        !opt_.approve_suspended) {
      std::size_t fresh = 0;  // records whose vector this action changes for the first time
      for (const auto& m : p.records)
        fresh += !vector_before_.count(m.index) && !same_vector(m.before, m.after);
      if (fresh > 0 && reembedded_ + fresh > opt_.index_blast_limit) {
        --attempts(a);  // nothing was tried
        set(a, action_status::unapproved,
            held_text("re-embed " + std::to_string(fresh) +
                          " records, and the index rebuild after the re-embedding would then "
                          "rewrite the entries of " +
                          std::to_string(reembedded_ + fresh) + " records",
                      reembedded_ + fresh));
        return false;
      }
      reembedded_ += fresh;
    }
    return true;
  }

  // Step 5a: the batch's intents, durable with one fdatasync (group commit).
  void log_intents(std::vector<prepared<R>>& batch) {
    wal_.begin_batch();
    for (auto& p : batch) {
      const repair_action& act = action_of(p.action);
      p.intent_seq = wal_.append_intent(static_cast<std::int64_t>(p.action), act.idempotency_key,
                                        attempts(p.action), p.records);
    }
    wal_.commit_batch();
    hook(opt_, "after_intent");
  }

  // Step 5b-6: each action's records written (one store transaction when the store has them),
  // then its commit frame; on an exception the action is undone and the rest of the batch re-run.
  void write_batch(std::vector<prepared<R>>& batch) {
    for (std::size_t k = 0; k < batch.size(); ++k) {
      prepared<R>& p = batch[k];
      const repair_action& act = action_of(p.action);
      std::size_t written = 0;
      std::vector<repair_image_note> replaced;  // for the history, once committed
      if (opt_.history)
        for (const auto& m : p.records)
          replaced.push_back({m.id, repair_image_checksum(m.before_json)});
      const std::string key = act.idempotency_key;  // `act` leaves the run when settled
      const std::string type = opt_.history ? act.type : std::string();
      try {
        if constexpr (transactional_record_store<S>)
          store_.begin_action();  // one transaction per action
        if constexpr (verifiable_record_store<S>) verify_unwritten(act, p);
        for (const auto& m : p.records) {
          ++written;  // counted before the call: a throwing restore may have half-written
          store_.restore(m.index, m.after);
          hook(opt_, "after_apply_record");
        }
        if constexpr (transactional_record_store<S>) store_.commit_action();
        hook(opt_, "before_commit");
        wal_.append_commit(p.intent_seq, static_cast<std::int64_t>(p.action), act.idempotency_key);
        hook(opt_, "after_commit");
        set(p.action, action_status::applied, {}, p.records.size());
      } catch (const std::exception& ex) {
        undo_failed(batch, k, written, ex.what());
        break;
      }
      if (opt_.history) {  // committed: outside the try (a history error must not undo it)
        opt_.history->note_attempt(key, true, {});
        opt_.history->note_images(key, replaced);
        opt_.history->note_proposal(repair_proposal_key(type, replaced), key, true);
      }
    }
  }

  // Step 5b, in the action's transaction: the records the action names (targets, edited ids,
  // `seen`) that it does not write are checked (and held) as the store read them
  // (`verifiable_record_store`); another writer's change since throws error(busy), and the
  // retry after the rollback's re-read finds the action stale.
  void verify_unwritten(const repair_action& act, const prepared<R>& p) {
    std::set<std::size_t> named;
    const auto add = [&](const std::string& id) {
      if (const auto i = store_.find(id)) named.insert(*i);
    };
    for (const auto& id : act.targets) add(id);
    for (const auto& e : act.edits) add(e.record_id);
    for (const auto& [id, digest] : act.seen) add(id);
    for (const auto& m : p.records) named.erase(m.index);
    for (const std::size_t i : named) store_.verify_unchanged(i);
  }

  // Step 6: undoes batch[k] (its first `written` records, newest first; a record already holding
  // its before-image is left alone), aborts it and the batch members after it, and requeues them.
  void undo_failed(std::vector<prepared<R>>& batch, std::size_t k, std::size_t written,
                   const char* what) {
    prepared<R>& p = batch[k];
    const repair_action& act = action_of(p.action);
    // An action still open in a transactional store is dropped whole: nothing of it stays, and
    // restoring before-images would overwrite what another writer put there (the reason a
    // compare-and-swap write fails). Once committed (the log's commit frame failed), or in a
    // store without actions, the written records get their before-images back.
    bool dropped = false;
    if constexpr (transactional_record_store<S>) {
      if constexpr (requires { store_.in_action(); }) dropped = store_.in_action();
      store_.rollback_action();  // no-op once committed
    }
    if (!dropped)
      for (std::size_t j = written; j-- > 0;)
        if (encode_image(store_.extract(p.records[j].index)) != p.records[j].before_json)
          store_.restore(p.records[j].index, p.records[j].before);
    note(p.action, false, what);  // before the abort frame: a run that dies here still counts it
    wal_.append_abort(p.intent_seq, static_cast<std::int64_t>(p.action), act.idempotency_key, what);
    hook(opt_, "after_abort");
    // The rest of the batch was prepared on top of this action: abort and re-run it.
    std::vector<std::size_t> requeue;
    for (std::size_t r = k; r < batch.size(); ++r) {
      prepared<R>& q = batch[r];
      used_ -= q.records.size();
      for (const auto& m : q.records) earlier_before_.pop(m.index, image_hash(m.before_json));
      if (r > k) {
        wal_.append_abort(q.intent_seq, static_cast<std::int64_t>(q.action),
                          action_of(q.action).idempotency_key,
                          "batch stopped by a failed action; re-run");
        --attempts(q.action);
        requeue.push_back(q.action);
      }
    }
    for (auto r = requeue.rbegin(); r != requeue.rend(); ++r) pending_.push_front(*r);
    if (may_retry(p.action))
      pending_.push_front(p.action);
    else
      set(p.action, action_status::failed, std::string("attempts exhausted: ") + what);
  }

  // The run_end frame with the counts, and the rate limiter's totals.
  void end_run() {
    wal_.append_run_end(res_.applied, res_.failed, res_.deferred,
                        res_.already_applied + res_.noop + res_.unapproved);
    res_.rate_limit_waited = gate_.waited();
    res_.rate_limit_waits = gate_.waits();
    hook(opt_, "run_end");
  }

  // History across runs, before the first attempt of this run: an action held in the manual
  // queue or out of attempts is failed at once; else it keeps its earlier failures (they count
  // against retry_limit) and whether it is done. @return false when settled here.
  bool from_history(std::size_t a, const repair_action& act) {
    live& l = live_.at(a);
    if (!opt_.history || l.history_read) return true;
    l.history_read = true;
    const std::optional<repair_history_entry> h = opt_.history->attempts(act.idempotency_key);
    if (!h) return true;
    if (h->manual || h->failures > opt_.retry_limit) {
      set(a, action_status::failed,
          "manual queue since an earlier run (" + std::to_string(h->failures) + " failures" +
              (h->last_error.empty() ? std::string() : "; last: " + h->last_error) +
              "): not tried again");
      return false;
    }
    l.prior_failures = static_cast<int>(h->failures);
    l.done_before = h->done;
    return true;
  }
  // `repair_proposal_key` of action `a` over the before-images of its prepared records.
  std::string proposal_key(std::size_t a, const prepared<R>& p) {
    std::vector<repair_image_note> before;
    before.reserve(p.records.size());
    for (const auto& m : p.records) before.push_back({m.id, repair_image_checksum(m.before_json)});
    return repair_proposal_key(action_of(a).type, before);
  }
  // Whether action `a` has attempts left (this run's plus earlier runs' failures).
  bool may_retry(std::size_t a) {
    return attempts(a) + live_.at(a).prior_failures <= opt_.retry_limit;
  }
  // The end of one attempt, to the history (not in a dry run).
  void note(std::size_t a, bool ok, std::string_view what) {
    if (opt_.history && !opt_.dry_run)
      opt_.history->note_attempt(action_of(a).idempotency_key, ok, what);
  }
  // A repair loop: the manual queue, held there in the history too.
  void hold(std::size_t a, std::string reason) {
    if (opt_.history && !opt_.dry_run)
      opt_.history->hold_for_review(action_of(a).idempotency_key, reason);
    set(a, action_status::failed, std::move(reason));
  }

  struct live {  // an action taken from the plan and not settled yet
    repair_action act;
    action_outcome out;
    int prior_failures = 0;     // failed attempts in earlier runs (history)
    bool done_before = false;   // done in an earlier run (history)
    bool history_read = false;  // the history was asked (once per action and run)
  };

  S& store_;
  Source& src_;
  wal_writer& wal_;
  const apply_options& opt_;
  OnOutcome& on_;
  apply_counts res_;
  std::unordered_map<std::size_t, live> live_;
  std::unordered_map<std::string, std::size_t> ambiguous_;  // ids of several records: count
  std::deque<std::size_t> pending_;
  std::size_t used_ = 0;  // records changed by the run so far (record budget)
  bool over_budget_ = false;
  action_rate_gate gate_;
  std::string rate_stop_;  // set once the rate limit's wait budget is spent: the rest is deferred
  std::map<std::size_t, R>
      vector_before_;  // records whose vector a prepared action changes: first before-image
  std::size_t reembedded_ = 0;    // records whose vector the run's reembed actions change
  image_history earlier_before_;  // loop guard
};

}  // namespace detail::exec

namespace detail::exec {

// The check of the plan's store (file comment, "The store a plan was made for"): throws for
// another store; for a store emptied or cut since the plan, the options with `index_refused`
// set (a reason the caller set stays); else nullopt (run with the caller's options).
template <record_store S>
std::optional<apply_options> checked_store_options(
    const S& store, const std::optional<plan_store_fingerprint>& planned, const apply_options& opt,
    std::string_view fn) {
  if (opt.skip_store_check || !planned) return std::nullopt;
  const plan_store_check c = check_plan_store(*planned, store);
  if (c.verdict == plan_store_verdict::other)
    throw error(error_code::precondition,
                std::string(fn) + ": the plan was made for another store: " + c.reason +
                    "; nothing was written (make a plan from this store)");
  if (c.verdict != plan_store_verdict::shrunk || !opt.index_refused.empty()) return std::nullopt;
  apply_options out = opt;
  out.index_refused = c.reason;
  return out;
}

}  // namespace detail::exec

/// Applies `plan` to `store`, logging to `wal` (see the file comment for the exact sequence).
/// @return per-action outcomes and key lists; the store holds exactly the committed actions.
/// @throws memhealth::error(io) when the log cannot be written or synced (the current batch's
///         actions are then not applied); memhealth::error(precondition) for `batch_size == 0`,
///         and for a plan made for another store (nothing written; see "The store a plan was
///         made for").
///         If undoing a failed action itself throws, that exception propagates and the action's
///         intent stays open in the log: run `recover` before using the store.
/// @complexity O(total edited records x record size) plus one fdatasync per batch.
template <mutable_record_store S>
apply_result apply_plan(S& store, const repair_plan& plan, wal_writer& wal,
                        const apply_options& opt = {}) {
  using R = typename S::record_type;
  MEMHEALTH_REQUIRE_IMAGE(R, "apply_plan");
  if constexpr (imaged_record<R>) {
    MEMHEALTH_ASSERT(opt.batch_size >= 1, "apply_plan: batch_size must be >= 1");
    const std::optional<apply_options> checked =
        detail::exec::checked_store_options(store, plan.store, opt, "apply_plan");
    const apply_options& run_opt = checked ? *checked : opt;
    apply_result res;
    res.outcomes.resize(plan.actions.size());
    for (std::size_t a = 0; a < plan.actions.size(); ++a) {
      res.outcomes[a].action = a;
      res.outcomes[a].idempotency_key = plan.actions[a].idempotency_key;
    }
    auto keep = [&](const action_outcome& o, const repair_action&) { res.outcomes[o.action] = o; };
    detail::exec::plan_source src{plan};
    const apply_counts c = detail::exec::plan_run<S, detail::exec::plan_source, decltype(keep)>(
                               store, src, wal, run_opt, keep)
                               .run();
    res.records_changed = c.records_changed;
    res.dry_run = c.dry_run;
    res.rate_limit_waited = c.rate_limit_waited;
    res.rate_limit_waits = c.rate_limit_waits;
    for (const auto& o : res.outcomes) {
      switch (o.status) {
        case action_status::applied:
          res.applied.push_back(o.idempotency_key);
          break;
        case action_status::already_applied:
          res.skipped_already_applied.push_back(o.idempotency_key);
          break;
        case action_status::noop:
          res.skipped_noop.push_back(o.idempotency_key);
          break;
        case action_status::unapproved:
          res.skipped_unapproved.push_back(o.idempotency_key);
          break;
        case action_status::deferred:
          res.deferred.push_back(o.idempotency_key);
          break;
        case action_status::failed:
          res.failed.push_back(o.idempotency_key);
          break;
      }
    }
    return res;
  } else {
    return {};
  }
}

/// Applies the plan a `plan_reader` reads, action by action, to `store` (what `apply_plan` does,
/// in bounded memory): actions are taken from `reader` as the run needs them, and each action's
/// outcome is handed to `on_outcome(const action_outcome&, const repair_action&)` once it is
/// final (`action_outcome::action` is the action's position in the file) instead of being kept.
/// Memory: the current batch, the actions in flight, and 9 bytes per store record for the loop
/// guard (plus the records changed more than once); none of it grows with the plan.
/// @pre the file lists its actions in execution order (priority never rises), as `make_plan`,
///      `make_plan_file` and `write_plan` of a `make_plan` result write them.
/// @return the counts of the run.
/// The plan's store check is the header's (`plan_header::store`), as `apply_plan`'s.
/// @throws as `apply_plan`; what `reader.next` throws (a damaged line: the run stops there, with
///         what was committed before it in the log); error(precondition) when an action of a
///         higher priority follows a lower one (the actions before it have run: check the order
///         first, e.g. with a pass of `plan_reader`, or use `apply_plan`).
template <mutable_record_store S, class Reader, class OnOutcome>
apply_counts apply_plan_stream(S& store, Reader& reader, wal_writer& wal, const apply_options& opt,
                               OnOutcome&& on_outcome) {
  using R = typename S::record_type;
  MEMHEALTH_REQUIRE_IMAGE(R, "apply_plan_stream");
  if constexpr (imaged_record<R>) {
    MEMHEALTH_ASSERT(opt.batch_size >= 1, "apply_plan_stream: batch_size must be >= 1");
    std::optional<apply_options> checked;
    if constexpr (requires { reader.header().store; })
      checked = detail::exec::checked_store_options(store, reader.header().store, opt,
                                                    "apply_plan_stream");
    const apply_options& run_opt = checked ? *checked : opt;
    detail::exec::reader_source<Reader> src{reader};
    using On = std::remove_reference_t<OnOutcome>;
    return detail::exec::plan_run<S, detail::exec::reader_source<Reader>, On>(store, src, wal,
                                                                              run_opt, on_outcome)
        .run();
  } else {
    return {};
  }
}

}  // namespace memhealth
