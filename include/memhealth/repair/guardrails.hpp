#pragma once
/// @file guardrails.hpp
/// Guardrails against repair storms and repair loops (SPEC section 3, "Safety"): a token-bucket
/// rate limiter, a rate-limited priority queue of actions with a concurrency cap and bounded
/// retries, a runs-per-day budget, and a loop detector.
///
/// Every guardrail is a plain value with no clock of its own: callers pass the time (`utc_time`,
/// milliseconds since the epoch, UTC), so behaviour is deterministic and testable. None is
/// thread-safe; the executor owns one instance per run. Their state is small and public so a CLI
/// can persist it between runs (e.g. `run_budget_state` in a JSON file).

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
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
      throw error(error_code::invalid_argument, "token_bucket: capacity must be > 0 and refill rate >= 0");
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
  [[nodiscard]] constexpr bool may_retry(int failures) const noexcept { return failures <= max_retries; }
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
      throw error(error_code::not_found, "repair_queue: no running action with key '" + std::string(key) + "'");
    return it;
  }

  repair_queue_options opt_;
  token_bucket bucket_;
  std::map<order_key, repair_action> heap_;            // ordered: begin() is the next to run
  std::map<std::string, repair_action> in_flight_;     // key -> running action
  std::map<std::string, int> queued_or_running_;       // key -> failures so far
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
  std::string record_id;           ///< the record
  std::uint64_t state_hash = 0;    ///< the state it returned to
  std::uint64_t first_seen_run = 0;  ///< run in which that state was first seen
  std::uint64_t run = 0;           ///< run in which it came back
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
  std::optional<repair_loop> observe(std::string_view record_id, std::uint64_t before, std::uint64_t after) {
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

}  // namespace memhealth
