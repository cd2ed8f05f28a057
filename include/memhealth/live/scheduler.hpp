#pragma once
/// @file scheduler.hpp
/// `memhealth::scheduler`: which periodic checks are due, on a clock the caller passes in (so a
/// test drives it on a fake clock and nothing in it sleeps). Used by `memhealth watch`
/// (live/watch.hpp) with the reference cadence (`reference_cadence`), and usable on its own by a
/// host that runs checks from its own loop.
///
/// A task has a name and a period. It is due when its next run time has come, when it never ran,
/// or when something triggered it (a risk window: a burst of writes, a new ingest batch, a scope
/// change, a new embedding model). A task with period 0 runs only when triggered. After a run,
/// `completed(name, now)` sets its next run to `now + period` (a run that was late does not cause
/// a burst of catch-up runs: missed periods are skipped, as cron and systemd timers do with
/// `Persistent=` runs). Last and next runs are plain values the caller persists
/// (`sqlite_state::set_schedule`) and hands back after a restart (`restore`).
///
/// Not thread safe (one owner; the watch loop is single-threaded).

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "memhealth/config.hpp"
#include "memhealth/record/time.hpp"

namespace memhealth {

/// One periodic task of a scheduler.
struct scheduled_task {
  std::string name;                     ///< unique within the scheduler, e.g. "structural"
  std::chrono::milliseconds period{0};  ///< time between runs; 0 = only when triggered
};

/// The schedule of one task at a moment (`scheduler::state_of`).
struct task_schedule {
  std::optional<utc_time> last;       ///< when it last completed; nullopt = never
  std::optional<utc_time> next;       ///< when it is next due; nullopt = on a trigger only
  std::vector<std::string> triggers;  ///< pending triggers (reasons), oldest first
};

/// Decides which tasks are due (see the file comment).
class scheduler {
 public:
  /// A scheduler over these tasks (in the order `due` lists them). @throws error(invalid_argument)
  /// for an empty or repeated name or a negative period.
  explicit scheduler(std::vector<scheduled_task> tasks) : tasks_(std::move(tasks)) {
    for (std::size_t i = 0; i < tasks_.size(); ++i) {
      if (tasks_[i].name.empty())
        throw error(error_code::invalid_argument, "scheduler: a task without a name");
      if (tasks_[i].period.count() < 0)
        throw error(error_code::invalid_argument,
                    "scheduler: task '" + tasks_[i].name + "' has a negative period");
      for (std::size_t j = 0; j < i; ++j)
        if (tasks_[j].name == tasks_[i].name)
          throw error(error_code::invalid_argument,
                      "scheduler: task '" + tasks_[i].name + "' is named twice");
    }
    state_.resize(tasks_.size());
  }

  /// The tasks, in declaration order.
  [[nodiscard]] const std::vector<scheduled_task>& tasks() const noexcept { return tasks_; }

  /// Restores a task's last and next run (after a restart, from the state database). An unknown
  /// name is ignored (a task removed from the configuration). A `next` later than `last + period`
  /// (the period was shortened) is brought forward to `last + period`.
  void restore(std::string_view name, utc_time last, utc_time next) {
    const auto i = index_of(name);
    if (!i) return;
    state_[*i].last = last;
    const auto period = tasks_[*i].period;
    if (period.count() == 0)
      state_[*i].next.reset();
    else
      state_[*i].next = std::min(next, last + period);
  }

  /// Makes task `name` due at the next `due` call, whatever its period, for `reason` (kept for
  /// the log; a reason already pending is not added twice). @return false for an unknown name.
  bool trigger(std::string_view name, std::string reason) {
    const auto i = index_of(name);
    if (!i) return false;
    auto& t = state_[*i].triggers;
    if (std::find(t.begin(), t.end(), reason) == t.end()) t.push_back(std::move(reason));
    return true;
  }

  /// The tasks due at `now`, in declaration order: triggered ones, those whose next run is at or
  /// before `now`, and periodic ones that never ran.
  [[nodiscard]] std::vector<std::string> due(utc_time now) const {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < tasks_.size(); ++i)
      if (is_due(i, now)) out.push_back(tasks_[i].name);
    return out;
  }

  /// True when task `name` is due at `now` (false for an unknown name).
  [[nodiscard]] bool is_due(std::string_view name, utc_time now) const {
    const auto i = index_of(name);
    return i && is_due(*i, now);
  }

  /// Records that task `name` completed a run at `now`: last = now, next = now + period (none for
  /// period 0), pending triggers cleared. @return the new schedule; an unknown name gives an empty
  /// one.
  task_schedule completed(std::string_view name, utc_time now) {
    const auto i = index_of(name);
    if (!i) return {};
    auto& s = state_[*i];
    s.last = now;
    if (tasks_[*i].period.count() > 0)
      s.next = now + tasks_[*i].period;
    else
      s.next.reset();
    s.triggers.clear();
    return s;
  }

  /// The schedule of task `name` (empty for an unknown name).
  [[nodiscard]] task_schedule state_of(std::string_view name) const {
    const auto i = index_of(name);
    return i ? state_[*i] : task_schedule{};
  }

  /// The earliest time any task is due, for a loop's sleep: `now` itself when something is due
  /// already; nullopt when every task waits for a trigger.
  [[nodiscard]] std::optional<utc_time> next_due(utc_time now) const {
    std::optional<utc_time> best;
    for (std::size_t i = 0; i < tasks_.size(); ++i) {
      if (is_due(i, now)) return now;
      if (state_[i].next && (!best || *state_[i].next < *best)) best = state_[i].next;
    }
    return best;
  }

 private:
  [[nodiscard]] std::optional<std::size_t> index_of(std::string_view name) const {
    for (std::size_t i = 0; i < tasks_.size(); ++i)
      if (tasks_[i].name == name) return i;
    return std::nullopt;
  }
  [[nodiscard]] bool is_due(std::size_t i, utc_time now) const {
    const auto& s = state_[i];
    if (!s.triggers.empty()) return true;
    if (tasks_[i].period.count() == 0) return false;
    return !s.last || !s.next || *s.next <= now;
  }

  std::vector<scheduled_task> tasks_;
  std::vector<task_schedule> state_;
};

}  // namespace memhealth
