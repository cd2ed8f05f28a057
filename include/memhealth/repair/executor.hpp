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
///    the manual queue (*failed*) with the store untouched;
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
/// 5. the intent (before + after images of the changed records) is appended and made durable
///    (group commit: `batch_size` actions per `fdatasync`), then each record is written with
///    `store.restore(i, after)`, then a commit frame is appended; a `transactional_record_store`
///    (store.hpp) gets the action's writes as one transaction, committed before the commit frame
///    (`rollback` and `recover` use one transaction per undone action / per recovery too);
/// 6. an exception while computing or applying undoes the action (before-images restored, abort
///    frame) and the action is retried, at most `retry_limit` (3) times, then goes to the manual
///    queue. Other actions of the same group-commit batch are aborted and re-run (not counted as
///    attempts).
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
  /// for the record's current image. Unset: such edits fail (manual queue after retries).
  std::function<std::vector<float>(const memory_record&)> embed;
  /// embedding_version written by an `edit_replace_embedding` whose plan left the version empty.
  /// A re-embedding is never written untagged: with both empty the action fails (manual queue).
  std::string embed_version;
  /// Rate limit (token bucket, bounded wait, then deferral) and concurrency cap: guardrails.hpp.
  execution_limits limits{};
  /// The user's index policy for `rebuild_index` actions (index_policy.hpp,
  /// `make_index_rebuilder`); unset: such actions go to the manual queue.
  index_rebuilder rebuild_index;
};

/// What happened to one action.
enum class action_status : std::uint8_t {
  applied,          ///< logged, applied, committed (or, in a dry run, would be)
  already_applied,  ///< the store already holds every after-image: nothing written
  noop,             ///< the action has no record edits
  unapproved,       ///< its automation level (or a suspended plan) was not approved
  deferred,  ///< over the per-run record budget or the rate limit's wait budget (the next run plans
             ///< it again)
  failed,    ///< missing id, repair loop, or attempts exhausted: manual queue
};

/// Text of an action status ("applied", "already_applied", ...).
constexpr std::string_view to_string(action_status s) noexcept {
  constexpr std::string_view names[] = {"applied",    "already_applied", "noop",
                                        "unapproved", "deferred",        "failed"};
  return names[static_cast<int>(s)];
}

/// Outcome of one plan action.
struct action_outcome {
  std::size_t action = 0;                          ///< index in the plan
  std::string idempotency_key;                     ///< the action's key
  action_status status = action_status::deferred;  ///< what happened
  int attempts = 0;                                ///< attempts made (0 when never tried)
  std::size_t records_changed = 0;                 ///< records written (applied only)
  std::string reason;                              ///< why it was skipped or failed, or a note
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

// One run of apply_plan, cut into the steps of the file comment. Holds the run's state: the
// outcomes, the priority queue of pending actions, the record budget, the rate gate, the first
// before-image of every re-embedded record (for rebuild_index) and the loop guard.
template <class S>
class plan_run {
 public:
  using R = typename S::record_type;

  plan_run(S& store, const repair_plan& plan, wal_writer& wal, const apply_options& opt)
      : store_(store), plan_(plan), wal_(wal), opt_(opt), gate_(opt.limits) {}

  apply_result run() {
    const std::size_t n = plan_.actions.size();
    for (std::size_t i = 0; i < store_.size(); ++i)
      ++id_count_[std::string(field::id(store_.record(i)))];
    res_.dry_run = opt_.dry_run;
    res_.outcomes.resize(n);
    for (std::size_t a = 0; a < n; ++a) {
      res_.outcomes[a].action = a;
      res_.outcomes[a].idempotency_key = plan_.actions[a].idempotency_key;
    }
    if (plan_.suspended && !opt_.approve_suspended) {
      for (std::size_t a = 0; a < n; ++a)
        set(a, action_status::unapproved, "plan suspended: " + plan_.suspend_reason);
    } else {
      if (!opt_.dry_run) {
        wal_.append_run_begin(n);
        hook(opt_, "run_begin");
      }
      for (std::size_t a : execution_order(plan_))
        pending_.push_back(a);  // the priority queue (guardrails.hpp)
      while (!pending_.empty()) {
        std::vector<prepared<R>> batch = collect_batch();
        if (batch.empty()) continue;
        if (opt_.dry_run) {
          for (const auto& p : batch) {
            set(p.action, action_status::applied, "dry run");
            res_.outcomes[p.action].records_changed = p.records.size();
            res_.records_changed += p.records.size();
          }
          continue;
        }
        log_intents(batch);
        write_batch(batch);
      }
      if (!opt_.dry_run) end_run();
    }
    list_keys();
    return std::move(res_);
  }

 private:
  void set(std::size_t a, action_status s, std::string reason) {
    res_.outcomes[a].status = s;
    res_.outcomes[a].reason = std::move(reason);
  }

  // Steps 1-4b for the next actions of the queue: a batch of prepared actions (images computed,
  // admitted by the guards), at most `max_in_flight` of them.
  std::vector<prepared<R>> collect_batch() {
    std::vector<prepared<R>> batch;
    std::map<std::size_t, std::pair<R, std::string>> overlay;  // state after earlier batch members
    std::size_t batch_records = 0;  // records in the batch's intents (concurrency cap)
    const std::size_t max_batch =
        std::min(opt_.batch_size, std::max<std::size_t>(1, opt_.limits.max_in_flight));
    while (!pending_.empty() && batch.size() < max_batch) {
      const std::size_t a = pending_.front();
      pending_.pop_front();
      const repair_action& act = plan_.actions[a];
      if (!approved(a, act)) continue;
      if (act.type == action_types::rebuild_index) {  // index_policy.hpp
        if (!batch.empty()) {  // the re-embeddings before it are committed first
          pending_.push_front(a);
          break;
        }
        rebuild_index(a, act);
        continue;
      }
      if (!runnable(a, act)) continue;
      if (std::string refusal = refusal_of(act); !refusal.empty()) {
        set(a, action_status::failed, refusal);
        continue;
      }
      ++res_.outcomes[a].attempts;
      std::optional<prepared<R>> p = prepare(a, act, overlay);
      if (!p) continue;
      if (!guarded(a, *p)) continue;
      // Concurrency cap, then rate limit (guardrails.hpp, execution_limits): an action that does
      // not fit is taken back (its attempt uncounted) after the batch held so far is durable.
      const bool over_cap =
          !batch.empty() && batch_records + p->records.size() > opt_.limits.max_records_in_flight;
      if (over_cap || (!opt_.dry_run && !batch.empty() && !gate_.ready())) {
        --res_.outcomes[a].attempts;
        pending_.push_front(a);
        break;
      }
      if (!opt_.dry_run && !gate_.admit()) {
        --res_.outcomes[a].attempts;
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
        earlier_before_[m.index].push_back(m.before_json);
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
    } else if (!opt_.rebuild_index) {
      set(a, action_status::failed,
          "no index policy (apply_options::rebuild_index): rebuild the index by hand for " +
              std::to_string(ids.size()) + " re-embedded records");
    } else if (opt_.dry_run) {
      set(a, action_status::applied,
          "dry run: would rebuild the index for " + std::to_string(ids.size()) + " records");
    } else {
      ++res_.outcomes[a].attempts;
      try {
        opt_.rebuild_index(ids);
        set(a, action_status::applied,
            "index rebuilt for " + std::to_string(ids.size()) + " records");
      } catch (const std::exception& ex) {
        if (res_.outcomes[a].attempts <= opt_.retry_limit)
          pending_.push_front(a);
        else
          set(a, action_status::failed, std::string("attempts exhausted: ") + ex.what());
      }
    }
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
      else if (!store_.find(id))
        refusal = "target id not found: " + id;
      else if (id_count_.at(id) > 1)
        refusal = "ambiguous target id (" + std::to_string(id_count_.at(id)) + " records): " + id;
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
          const std::string_view sc = field::scope(store_.record(*store_.find(e.record_id)));
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
          std::vector<float> vec = re->embedding;
          if constexpr (std::is_same_v<R, memory_record>)
            if (vec.empty() && opt_.embed) vec = opt_.embed(it->after);
          edit_replace_embedding filled{std::move(vec),
                                        re->version.empty() ? opt_.embed_version : re->version};
          apply_edit(it->after, record_edit_op(std::move(filled)));
        } else {
          apply_edit(it->after, e.op);
        }
      }
      for (auto& m : touched) {
        m.after_json = encode_image(m.after);
        if (m.after_json != m.before_json) p.records.push_back(std::move(m));
      }
    } catch (const std::exception& ex) {
      if (res_.outcomes[a].attempts <= opt_.retry_limit) {
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

  // Step 4: loop guard, then the run's record budget.
  bool guarded(std::size_t a, const prepared<R>& p) {
    std::string loop;
    for (const auto& m : p.records) {
      auto it = earlier_before_.find(m.index);
      if (it != earlier_before_.end() &&
          std::find(it->second.begin(), it->second.end(), m.after_json) != it->second.end())
        loop = m.id;
    }
    if (!loop.empty()) {
      set(a, action_status::failed,
          "repair loop: record " + loop + " would return to an earlier image of this run");
      return false;
    }
    if (used_ + p.records.size() > opt_.max_records) {
      over_budget_ = true;
      set(a, action_status::deferred, "record budget of the run (max_records) reached");
      return false;
    }
    return true;
  }

  // Step 5a: the batch's intents, durable with one fdatasync (group commit).
  void log_intents(std::vector<prepared<R>>& batch) {
    wal_.begin_batch();
    for (auto& p : batch) {
      const repair_action& act = plan_.actions[p.action];
      p.intent_seq = wal_.append_intent(static_cast<std::int64_t>(p.action), act.idempotency_key,
                                        res_.outcomes[p.action].attempts, p.records);
    }
    wal_.commit_batch();
    hook(opt_, "after_intent");
  }

  // Step 5b-6: each action's records written (one store transaction when the store has them),
  // then its commit frame; on an exception the action is undone and the rest of the batch re-run.
  void write_batch(std::vector<prepared<R>>& batch) {
    for (std::size_t k = 0; k < batch.size(); ++k) {
      prepared<R>& p = batch[k];
      const repair_action& act = plan_.actions[p.action];
      std::size_t written = 0;
      try {
        if constexpr (transactional_record_store<S>)
          store_.begin_action();  // one transaction per action
        for (const auto& m : p.records) {
          ++written;  // counted before the call: a throwing restore may have half-written
          store_.restore(m.index, m.after);
          hook(opt_, "after_apply_record");
        }
        if constexpr (transactional_record_store<S>) store_.commit_action();
        hook(opt_, "before_commit");
        wal_.append_commit(p.intent_seq, static_cast<std::int64_t>(p.action), act.idempotency_key);
        hook(opt_, "after_commit");
        set(p.action, action_status::applied, {});
        res_.outcomes[p.action].records_changed = p.records.size();
        res_.records_changed += p.records.size();
      } catch (const std::exception& ex) {
        undo_failed(batch, k, written, ex.what());
        break;
      }
    }
  }

  // Step 6: undoes batch[k] (its first `written` records, newest first; a record already holding
  // its before-image is left alone), aborts it and the batch members after it, and requeues them.
  void undo_failed(std::vector<prepared<R>>& batch, std::size_t k, std::size_t written,
                   const char* what) {
    prepared<R>& p = batch[k];
    const repair_action& act = plan_.actions[p.action];
    if constexpr (transactional_record_store<S>) store_.rollback_action();  // no-op once committed
    for (std::size_t j = written; j-- > 0;)
      if (encode_image(store_.extract(p.records[j].index)) != p.records[j].before_json)
        store_.restore(p.records[j].index, p.records[j].before);
    wal_.append_abort(p.intent_seq, static_cast<std::int64_t>(p.action), act.idempotency_key, what);
    hook(opt_, "after_abort");
    // The rest of the batch was prepared on top of this action: abort and re-run it.
    std::vector<std::size_t> requeue;
    for (std::size_t r = k; r < batch.size(); ++r) {
      prepared<R>& q = batch[r];
      used_ -= q.records.size();
      for (const auto& m : q.records) {
        auto& v = earlier_before_[m.index];
        if (auto f = std::find(v.rbegin(), v.rend(), m.before_json); f != v.rend())
          v.erase(std::next(f).base());
      }
      if (r > k) {
        wal_.append_abort(q.intent_seq, static_cast<std::int64_t>(q.action),
                          plan_.actions[q.action].idempotency_key,
                          "batch stopped by a failed action; re-run");
        --res_.outcomes[q.action].attempts;
        requeue.push_back(q.action);
      }
    }
    for (auto r = requeue.rbegin(); r != requeue.rend(); ++r) pending_.push_front(*r);
    if (res_.outcomes[p.action].attempts <= opt_.retry_limit)
      pending_.push_front(p.action);
    else
      set(p.action, action_status::failed, std::string("attempts exhausted: ") + what);
  }

  // The run_end frame with the counts, and the rate limiter's totals.
  void end_run() {
    std::size_t applied = 0, failed = 0, deferred = 0, skipped = 0;
    for (const auto& o : res_.outcomes) {
      applied += o.status == action_status::applied;
      failed += o.status == action_status::failed;
      deferred += o.status == action_status::deferred;
      skipped += o.status != action_status::applied && o.status != action_status::failed &&
                 o.status != action_status::deferred;
    }
    wal_.append_run_end(applied, failed, deferred, skipped);
    res_.rate_limit_waited = gate_.waited();
    res_.rate_limit_waits = gate_.waits();
    hook(opt_, "run_end");
  }

  // The key lists of apply_result, by outcome.
  void list_keys() {
    for (const auto& o : res_.outcomes) {
      switch (o.status) {
        case action_status::applied:
          res_.applied.push_back(o.idempotency_key);
          break;
        case action_status::already_applied:
          res_.skipped_already_applied.push_back(o.idempotency_key);
          break;
        case action_status::noop:
          res_.skipped_noop.push_back(o.idempotency_key);
          break;
        case action_status::unapproved:
          res_.skipped_unapproved.push_back(o.idempotency_key);
          break;
        case action_status::deferred:
          res_.deferred.push_back(o.idempotency_key);
          break;
        case action_status::failed:
          res_.failed.push_back(o.idempotency_key);
          break;
      }
    }
  }

  S& store_;
  const repair_plan& plan_;
  wal_writer& wal_;
  const apply_options& opt_;
  apply_result res_;
  std::unordered_map<std::string, std::size_t>
      id_count_;  // ids occurring more than once are ambiguous
  std::deque<std::size_t> pending_;
  std::size_t used_ = 0;  // records changed by the run so far (record budget)
  bool over_budget_ = false;
  action_rate_gate gate_;
  std::string rate_stop_;  // set once the rate limit's wait budget is spent: the rest is deferred
  std::map<std::size_t, R>
      vector_before_;  // records whose vector a prepared action changes: first before-image
  std::unordered_map<std::size_t, std::vector<std::string>> earlier_before_;  // loop guard
};

}  // namespace detail::exec

/// Applies `plan` to `store`, logging to `wal` (see the file comment for the exact sequence).
/// @return per-action outcomes and key lists; the store holds exactly the committed actions.
/// @throws memhealth::error(io) when the log cannot be written or synced (the current batch's
///         actions are then not applied); memhealth::error(precondition) for `batch_size == 0`.
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
    return detail::exec::plan_run<S>(store, plan, wal, opt).run();
  } else {
    return {};
  }
}

}  // namespace memhealth
