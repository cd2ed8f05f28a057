#pragma once
/// @file run_ledger.hpp
/// The runs-per-day budget kept between processes: a small JSON ledger file holding a
/// `run_budget_state` (guardrails.hpp). The `apply` command keeps it next to the write-ahead log
/// (`<WAL directory>/memhealth-runs.json` unless `--ledger` names another file) and counts a run
/// once its log is open; a run beyond `max_runs_per_day` in the same UTC day is refused, and a
/// run that changed nothing (it failed, or nothing in it was approved) is given back
/// (`give_back_run`), so failures do not lock the user out.
///
/// Format (schema_version 1): `{"schema_version":1,"day":19919,"day_utc":"2024-07-15","count":2}`
/// where `day` is days since 1970-01-01 UTC and `count` the runs counted on that day
/// (`day_utc` is for people; readers use `day`). Written atomically (`atomic_write`: temporary
/// file, fsync, rename, directory fsync). Locked: `take_run` and `give_back_run` hold an exclusive
/// `flock` on `<ledger>.lock` (a file beside the ledger, never removed) from the read to the
/// rename, so two processes never count from the same state.

#include <nlohmann/json.hpp>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#include "memhealth/config.hpp"
#include "memhealth/io/atomic_write.hpp"
#include "memhealth/record/time.hpp"
#include "memhealth/repair/guardrails.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

namespace memhealth {

/// File name of the ledger the `apply` command keeps in the WAL's directory.
inline constexpr std::string_view run_ledger_file_name = "memhealth-runs.json";

/// Reads a ledger. A missing file is a fresh state (no runs counted).
/// @throws error(io) when the file exists but cannot be read; error(parse) when it is not a
/// ledger (the caller should refuse to run rather than reset the budget silently).
template <class = void>  // deferred instantiation, see memhealth.hpp
run_budget_state load_run_ledger(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return {};
  std::ifstream in(path, std::ios::binary);
  if (!in) throw error(error_code::io, "run ledger: cannot open '" + path.string() + "'");
  std::stringstream buf;
  buf << in.rdbuf();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(buf.str());
  } catch (
      const nlohmann::json::exception&) {  // parse_error, and out_of_range for a number like 1e999
    throw error(error_code::parse,
                "run ledger '" + path.string() + "' is not JSON; fix or remove it");
  }
  if (!j.is_object() || !j.contains("day") || !j["day"].is_number_integer() ||
      !j.contains("count") || !j["count"].is_number_unsigned())
    throw error(error_code::parse, "run ledger '" + path.string() +
                                       "' lacks integer \"day\" and \"count\"; fix or remove it");
  return run_budget_state{j["day"].get<std::int64_t>(),
                          static_cast<std::uint32_t>(j["count"].get<std::uint64_t>())};
}

/// Writes a ledger atomically and durably (`atomic_write`: temporary file in the same directory,
/// fsync, rename, directory fsync). @throws error(io) naming the path; the old ledger is then kept.
template <class = void>  // deferred instantiation, see memhealth.hpp
void save_run_ledger(const std::filesystem::path& path, const run_budget_state& s) {
  nlohmann::ordered_json j;
  j["schema_version"] = 1;
  j["day"] = s.day;
  j["day_utc"] = format_timestamp(timestamp{utc_time{std::chrono::days{s.day}}, 0}).substr(0, 10);
  j["count"] = s.count;
  atomic_write(path, j.dump() + '\n');
}

namespace detail::ledger {
// Exclusive flock on `<ledger>.lock` for the lifetime of the object (blocking: the critical
// section is one small read and one atomic write).
class lock {
 public:
  explicit lock(const std::filesystem::path& ledger) {
    const std::string p = ledger.string() + ".lock";
    fd_ = ::open(p.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0)
      throw error(error_code::io,
                  "run ledger: cannot open the lock file '" + p + "': " + std::strerror(errno));
    while (::flock(fd_, LOCK_EX) != 0) {
      if (errno == EINTR) continue;
      ::close(fd_);
      throw error(error_code::io, "run ledger: cannot lock '" + p + "': " + std::strerror(errno));
    }
  }
  lock(const lock&) = delete;
  lock& operator=(const lock&) = delete;
  ~lock() { ::close(fd_); }

 private:
  int fd_ = -1;
};
}  // namespace detail::ledger

/// Result of `take_run`.
struct run_ledger_decision {
  bool allowed = false;                ///< true: the run was counted and may go ahead
  run_budget_state state{};            ///< the ledger's state after the decision
  std::uint32_t max_runs_per_day = 0;  ///< the budget applied
};

/// Counts a run in the ledger at `path` when the budget allows it at `now` (loads, applies
/// `run_budget::allow`, saves only when allowed). @throws what load/save throw.
template <class = void>  // deferred instantiation, see memhealth.hpp
run_ledger_decision take_run(const std::filesystem::path& path, std::uint32_t max_runs_per_day,
                             utc_time now) {
  const detail::ledger::lock held(path);
  run_budget b{max_runs_per_day, load_run_ledger(path)};
  run_ledger_decision d;
  d.max_runs_per_day = max_runs_per_day;
  d.allowed = b.allow(now);
  if (d.allowed) save_run_ledger(path, b.state);
  d.state = b.state;
  return d;
}

/// Gives back a run counted by `take_run` at `started` (one run that changed nothing). A no-op
/// when the ledger has moved on to another UTC day or counts no run. Locked like `take_run`.
/// @return true when a run was given back. @throws what load/save throw.
template <class = void>  // deferred instantiation, see memhealth.hpp
bool give_back_run(const std::filesystem::path& path, utc_time started) {
  const detail::ledger::lock held(path);
  run_budget_state s = load_run_ledger(path);
  const std::int64_t day = run_budget::day_of(started);
  if (s.day != day || s.count == 0) return false;
  --s.count;
  save_run_ledger(path, s);
  return true;
}

}  // namespace memhealth
