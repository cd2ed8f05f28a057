#pragma once
/// @file guardrails.hpp
/// Guardrails against repair storms and repair loops (SPEC section 3, "Safety"): a token-bucket
/// rate limiter, a rate-limited priority queue of actions with a concurrency cap and bounded
/// retries, a runs-per-day budget, and a loop detector.
///
/// Every guardrail is a plain value with no clock of its own: callers pass the time (`utc_time`,
/// milliseconds since the epoch, UTC), so behaviour is deterministic and testable. None is
/// thread-safe; the executor owns one instance per run. Their state is small and public so a CLI
/// can persist it between runs (e.g. `run_budget_state` in a JSON file, see run_ledger.hpp).
///
/// `apply_plan` (executor.hpp) uses `execution_order` (the priority queue), `action_rate_gate`
/// (token bucket with a bounded wait) and `execution_limits` (the concurrency cap); the
/// runs-per-day budget is kept by the caller (the `apply` command keeps a ledger file,
/// run_ledger.hpp).

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <numeric>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "memhealth/config.hpp"
#include "memhealth/record/time.hpp"
#include "memhealth/repair/action.hpp"

namespace memhealth {

// ---------------------------------------------------------------- token bucket

/// Token-bucket rate limiter (the classic traffic-shaping algorithm, e.g. RFC 2697's meter; see
/// also Tanenbaum, "Computer Networks"). The bucket holds up to `capacity` tokens and gains
/// `refill_per_second` tokens per second of elapsed time; each acquisition takes tokens.
/// Starts full. Time going backwards adds nothing (the last time seen is kept).
/// Example: capacity 10, refill 5/s: 10 acquisitions pass at t = 0, the 11th fails, and 5 more
/// pass at t = 1 s.
class token_bucket {
 public:
  /// @param capacity maximum tokens (burst size), > 0. @param refill_per_second tokens per
  /// second, >= 0. @param start time of the first observation. @throws error(invalid_argument)
  /// for a non-positive capacity or a negative rate.
  token_bucket(double capacity, double refill_per_second, utc_time start = utc_time{})
      : capacity_(capacity), rate_(refill_per_second), tokens_(capacity), last_(start) {
    if (!(capacity > 0) || !(refill_per_second >= 0))
      throw error(error_code::invalid_argument,
                  "token_bucket: capacity must be > 0 and refill rate >= 0");
  }

  /// Refills for the time elapsed since the last call, then takes `n` tokens if available.
  /// @return true when the tokens were taken. @complexity O(1).
  bool try_acquire(utc_time now, double n = 1.0) {
    refill(now);
    if (tokens_ + 1e-9 < n) return false;  // tolerance for accumulated rounding of refills
    tokens_ = std::max(0.0, tokens_ - n);
    return true;
  }
  /// Tokens available at `now` (refills first).
  [[nodiscard]] double available(utc_time now) {
    refill(now);
    return tokens_;
  }
  /// Maximum tokens.
  [[nodiscard]] double capacity() const noexcept { return capacity_; }
  /// Refill rate, tokens per second.
  [[nodiscard]] double refill_per_second() const noexcept { return rate_; }

 private:
  void refill(utc_time now) {
    if (now <= last_) return;
    const auto ms = (now - last_).count();
    tokens_ = std::min(capacity_, tokens_ + rate_ * static_cast<double>(ms) / 1000.0);
    last_ = now;
  }

  double capacity_;
  double rate_;
  double tokens_;
  utc_time last_;
};

// ---------------------------------------------------------------- retry policy

/// Bounded retries: a failed action is retried at most `max_retries` times (so it runs at most
/// `max_retries + 1` times); after that it goes to the manual queue for a person.
struct retry_policy {
  int max_retries = 3;  ///< retries after the first failure; >= 0

  /// True when an action that has failed `failures` times (>= 1) may run again.
  [[nodiscard]] constexpr bool may_retry(int failures) const noexcept {
    return failures <= max_retries;
  }
};

// ---------------------------------------------------------------- the queue

/// Options of a `repair_queue` (named option pack).
struct repair_queue_options {
  double burst = 10;                ///< token-bucket capacity: actions that may start at once
  double per_second = 5;            ///< token refill: sustained actions started per second
  std::size_t max_in_flight = 2;    ///< concurrency cap: started and not yet completed/failed
  memhealth::retry_policy retry{};  ///< retries before the manual queue
};

/// A rate-limited priority queue of repair actions with a concurrency cap and bounded retries.
///
/// `pop_ready(now)` hands out the highest-priority action (higher `priority` first; equal
/// priorities first in, first out) only when fewer than `max_in_flight` actions are running and
/// the token bucket grants a token; the caller then reports `complete(key)` or `fail(key)`.
/// A failed action is queued again (behind its equals) until it has failed
/// `retry.max_retries + 1` times, then moved to `manual()`. Actions are identified by their
/// `idempotency_key`; pushing a key that is queued or running is ignored (no double scheduling).
/// @complexity push / pop O(log q); complete / fail O(log q).
class repair_queue {
 public:
  /// @param opt limits; @param start time of the first observation (for the token bucket).
  explicit repair_queue(const repair_queue_options& opt = {}, utc_time start = utc_time{})
      : opt_(opt), bucket_(opt.burst, opt.per_second, start) {}

  /// Queues an action. @return false when an action with the same idempotency key is already
  /// queued or running (it is not queued twice).
  bool push(repair_action a) {
    const std::string key = a.idempotency_key;
    if (queued_or_running_.count(key)) return false;
    queued_or_running_.emplace(key, 0);
    const int pri = a.priority;
    heap_.emplace(order_key{-pri, seq_++}, std::move(a));
    return true;
  }

  /// The next action allowed to start at `now`, or nullopt when the queue is empty, the
  /// concurrency cap is reached or the rate limiter has no token (no token is spent then).
  std::optional<repair_action> pop_ready(utc_time now) {
    if (heap_.empty() || in_flight_.size() >= opt_.max_in_flight) return std::nullopt;
    if (!bucket_.try_acquire(now)) return std::nullopt;
    auto it = heap_.begin();
    repair_action a = std::move(it->second);
    heap_.erase(it);
    in_flight_.emplace(a.idempotency_key, a);
    return a;
  }

  /// Marks a running action done. @throws error(not_found) when `key` is not running.
  void complete(std::string_view key) {
    auto it = find_running(key);
    queued_or_running_.erase(queued_or_running_.find(std::string(key)));
    in_flight_.erase(it);
  }

  /// Marks a running action failed: it is queued again while it may retry, else moved to the
  /// manual queue. @return true when it was queued again. @throws error(not_found) when `key` is
  /// not running.
  bool fail(std::string_view key) {
    auto it = find_running(key);
    repair_action a = std::move(it->second);
    in_flight_.erase(it);
    auto q = queued_or_running_.find(std::string(key));
    const int failures = ++q->second;
    if (opt_.retry.may_retry(failures)) {
      const int pri = a.priority;
      heap_.emplace(order_key{-pri, seq_++}, std::move(a));
      return true;
    }
    queued_or_running_.erase(q);
    manual_.push_back(std::move(a));
    return false;
  }

  /// Actions waiting to start.
  [[nodiscard]] std::size_t queued() const noexcept { return heap_.size(); }
  /// Actions started and not yet completed or failed.
  [[nodiscard]] std::size_t in_flight() const noexcept { return in_flight_.size(); }
  /// Actions that exhausted their retries, in the order they gave up: a person must look.
  [[nodiscard]] const std::vector<repair_action>& manual() const noexcept { return manual_; }
  /// Failures so far of a queued or running action (0 when unknown).
  [[nodiscard]] int failures(std::string_view key) const {
    auto it = queued_or_running_.find(std::string(key));
    return it == queued_or_running_.end() ? 0 : it->second;
  }

 private:
  using order_key = std::pair<int, std::uint64_t>;  // (-priority, arrival)

  std::map<std::string, repair_action>::iterator find_running(std::string_view key) {
    auto it = in_flight_.find(std::string(key));
    if (it == in_flight_.end())
      throw error(error_code::not_found,
                  "repair_queue: no running action with key '" + std::string(key) + "'");
    return it;
  }

  repair_queue_options opt_;
  token_bucket bucket_;
  std::map<order_key, repair_action> heap_;         // ordered: begin() is the next to run
  std::map<std::string, repair_action> in_flight_;  // key -> running action
  std::map<std::string, int> queued_or_running_;    // key -> failures so far
  std::vector<repair_action> manual_;
  std::uint64_t seq_ = 0;
};

// ---------------------------------------------------------------- runs per day

/// Persistable state of a `run_budget`: the UTC day of the last counted run and the runs counted
/// on that day.
struct run_budget_state {
  std::int64_t day = 0;     ///< days since 1970-01-01, UTC
  std::uint32_t count = 0;  ///< runs allowed on `day`
  friend bool operator==(const run_budget_state&, const run_budget_state&) = default;
};

/// At most `max_runs_per_day` repair runs per UTC calendar day. `allow(now)` counts a run when
/// it is allowed; the count starts again at 0 on a new day. Persist `state` between processes.
struct run_budget {
  std::uint32_t max_runs_per_day = 4;  ///< runs allowed per UTC day; 0 = none
  run_budget_state state{};            ///< persisted between runs

  /// Day number of a UTC instant (floor division: instants before 1970 give negative days).
  static std::int64_t day_of(utc_time t) noexcept {
    return std::chrono::floor<std::chrono::days>(t).time_since_epoch().count();
  }
  /// True (and the run is counted) when fewer than `max_runs_per_day` runs were counted on the
  /// UTC day of `now`. A `now` on an earlier day than the state's (clock moved back) is refused.
  bool allow(utc_time now) noexcept {
    const std::int64_t d = day_of(now);
    if (d < state.day) return false;
    if (d > state.day) state = run_budget_state{d, 0};
    if (state.count >= max_runs_per_day) return false;
    ++state.count;
    return true;
  }
  /// Runs still allowed on the day of `now` (does not count a run).
  [[nodiscard]] std::uint32_t remaining(utc_time now) const noexcept {
    const std::int64_t d = day_of(now);
    if (d < state.day) return 0;
    const std::uint32_t used = d > state.day ? 0 : state.count;
    return used >= max_runs_per_day ? 0 : max_runs_per_day - used;
  }
};

// ---------------------------------------------------------------- loop detector

/// A record changed back to a state it had before: evidence of a repair loop (two rules undoing
/// each other, or a repair that a later detection run reverses).
struct repair_loop {
  std::string record_id;             ///< the record
  std::uint64_t state_hash = 0;      ///< the state it returned to
  std::uint64_t first_seen_run = 0;  ///< run in which that state was first seen
  std::uint64_t run = 0;             ///< run in which it came back
};

/// Remembers, per record, the states (hashes of complete record images, computed by the caller,
/// e.g. FNV-1a of the serialised before/after images the WAL writes) that repairs moved it
/// between, across runs. `observe(id, before, after)` reports a loop when `after` is any state
/// the record was already seen in (as a before- or an after-state of an earlier change): A -> B
/// then B -> A is a loop, and so is A -> B, B -> C, C -> A. A change to the state it already has
/// (before == after) is not a change and is ignored.
/// Memory: O(number of distinct (record, state) pairs observed); `forget(id)` drops a record.
class loop_detector {
 public:
  /// Starts a new run; later observations are tagged with it. @return the run number (1, 2, ...).
  std::uint64_t begin_run() noexcept { return ++run_; }
  /// Current run number (0 before the first `begin_run`).
  [[nodiscard]] std::uint64_t run() const noexcept { return run_; }

  /// Records that `record_id` went from state `before` to state `after` in the current run.
  /// @return the loop when `after` is an earlier state of this record, else nullopt.
  std::optional<repair_loop> observe(std::string_view record_id, std::uint64_t before,
                                     std::uint64_t after) {
    if (before == after) return std::nullopt;
    auto& states = seen_[std::string(record_id)];
    std::optional<repair_loop> loop;
    if (auto it = states.find(after); it != states.end())
      loop = repair_loop{std::string(record_id), after, it->second, run_};
    states.try_emplace(before, run_);
    states.try_emplace(after, run_);
    return loop;
  }
  /// Forgets a record's history (e.g. after a person resolved the loop).
  void forget(std::string_view record_id) { seen_.erase(std::string(record_id)); }

 private:
  std::uint64_t run_ = 0;
  std::map<std::string, std::map<std::uint64_t, std::uint64_t>> seen_;  // id -> state -> first run
};

// ---------------------------------------------------------------- executor limits

/// Execution order of a plan's actions, the executor's priority queue: higher `priority` first,
/// then plan order (stable; a plan's author orders equals). The planner's priorities (planner.hpp,
/// `action_priority`) are tier 1 = 400, conflicts 300, merges 200, down-weights 100, re-embedding
/// 10, index rebuild 5, review 0, so structural fixes run before judgement calls and an index is
/// rebuilt after the re-embedding batches. A plan made by `make_plan` is already in this order.
/// @return plan indices. @complexity O(n log n).
inline std::vector<std::size_t> execution_order(const repair_plan& p) {
  std::vector<std::size_t> order(p.actions.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
    return p.actions[x].priority > p.actions[y].priority;
  });
  return order;
}

/// Rate limit and concurrency cap of one `apply_plan` run (named option pack).
///
/// - **Rate limit**: a `token_bucket` of `burst` tokens refilled at `per_second`; every action
///   that is about to write records takes one token per attempt (already-applied, no-op and
///   unapproved actions take none). When the bucket is empty the executor first makes the
///   actions it already holds durable (closes the group-commit batch), then **waits** for the next
///   token through `sleep`, as long as the run's total waiting stays within `max_wait`. An action
///   that would need more waiting is **deferred** (status `deferred`, reason "rate limit ..."),
///   and so is every action after it in execution order: nothing is dropped, the next run plans
///   them again. So one run applies at most `burst + per_second x max_wait` actions.
/// - **Concurrency cap**: this executor is one process, so "in flight" means *intents logged and
///   not yet committed*: the work a crash would leave for `recover` to undo. A group-commit batch
///   holds at most `max_in_flight` actions (the effective batch size is
///   `min(apply_options::batch_size, max_in_flight)`) and at most `max_records_in_flight` records;
///   an action that would take a non-empty batch past either cap starts the next batch. A single
///   action larger than `max_records_in_flight` still runs, alone (an action is all or nothing and
///   cannot be split; its size is bounded by the planner's blast-radius threshold).
/// - `clock` and `sleep` are injectable so tests run on a fake clock and never sleep; unset they
///   are the system clock and `std::this_thread::sleep_for`.
struct execution_limits {
  bool rate_limited = true;  ///< false: no token bucket (a dry run never waits either)
  double burst = 100;        ///< token-bucket capacity (actions that may start at once), > 0
  double per_second = 20;    ///< sustained actions started per second, >= 0
  std::chrono::milliseconds max_wait{
      std::chrono::minutes{10}};             ///< total waiting for tokens per run
  std::size_t max_in_flight = 64;            ///< actions with open intents at once, >= 1
  std::size_t max_records_in_flight = 1000;  ///< records in open intents at once, >= 1
  std::function<utc_time()> clock;           ///< current UTC time; unset = system clock
  std::function<void(std::chrono::milliseconds)>
      sleep;  ///< waits; unset = std::this_thread::sleep_for
};

/// The rate limiter of one executor run: a `token_bucket` plus a bounded total wait (see
/// `execution_limits`). Not thread-safe.
class action_rate_gate {
 public:
  /// Starts full at `limits.clock()`. @throws error(invalid_argument) for a bad burst or rate.
  explicit action_rate_gate(const execution_limits& limits)
      : lim_(limits), bucket_(limits.burst, limits.per_second, now()) {}

  /// True when a token is available now (none is taken).
  [[nodiscard]] bool ready() {
    if (!lim_.rate_limited) return true;
    return bucket_.available(now()) + 1e-9 >= 1.0;
  }

  /// Takes one token, waiting for it through `sleep` when the bucket is empty and the run's
  /// total wait stays within `max_wait`. @return true when a token was taken; false (nothing
  /// taken, nothing waited) when the wait needed would exceed the budget or the refill rate is 0.
  /// @complexity O(1) calls of clock/sleep in the usual case (a sleep that returns early loops).
  bool admit() {
    if (!lim_.rate_limited) return true;
    for (;;) {
      const utc_time t = now();
      if (bucket_.try_acquire(t)) return true;
      if (!(lim_.per_second > 0)) return false;
      const double missing = 1.0 - bucket_.available(t);
      auto need = std::chrono::milliseconds{
          static_cast<std::int64_t>(std::ceil(missing * 1000.0 / lim_.per_second))};
      if (need.count() < 1) need = std::chrono::milliseconds{1};
      if (waited_ + need > lim_.max_wait) return false;
      if (lim_.sleep)
        lim_.sleep(need);
      else
        std::this_thread::sleep_for(need);
      waited_ += need;
      ++waits_;
    }
  }
  /// Total time waited for tokens so far.
  [[nodiscard]] std::chrono::milliseconds waited() const noexcept { return waited_; }
  /// Number of waits so far.
  [[nodiscard]] std::size_t waits() const noexcept { return waits_; }

 private:
  utc_time now() const {
    if (lim_.clock) return lim_.clock();
    return std::chrono::time_point_cast<std::chrono::milliseconds>(
        std::chrono::system_clock::now());
  }
  execution_limits lim_;
  token_bucket bucket_;
  std::chrono::milliseconds waited_{0};
  std::size_t waits_ = 0;
};

}  // namespace memhealth
