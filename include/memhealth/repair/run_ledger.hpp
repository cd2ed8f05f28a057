#pragma once
/// @file run_ledger.hpp
/// The runs-per-day budget kept between processes: a small JSON ledger file holding a
/// `run_budget_state` (guardrails.hpp). The `apply` command keeps it next to the write-ahead log
/// (`<WAL directory>/memhealth-runs.json` unless `--ledger` names another file) and counts a run
/// just before it writes anything to the log; a run beyond `max_runs_per_day` in the same UTC day
/// is refused.
///
/// Format (schema_version 1): `{"schema_version":1,"day":19919,"day_utc":"2024-07-15","count":2}`
/// where `day` is days since 1970-01-01 UTC and `count` the runs counted on that day
/// (`day_utc` is for people; readers use `day`). Written atomically (`atomic_write`: temporary file, fsync, rename, directory fsync).
/// Not locked: two `apply` processes started at the same instant may both read the same count.

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#include "memhealth/config.hpp"
#include "memhealth/io/atomic_write.hpp"
#include "memhealth/record/time.hpp"
#include "memhealth/repair/guardrails.hpp"

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
  } catch (const nlohmann::json::parse_error&) {
    throw error(error_code::parse, "run ledger '" + path.string() + "' is not JSON; fix or remove it");
  }
  if (!j.is_object() || !j.contains("day") || !j["day"].is_number_integer() || !j.contains("count") ||
      !j["count"].is_number_unsigned())
    throw error(error_code::parse, "run ledger '" + path.string() + "' lacks integer \"day\" and \"count\"; fix or remove it");
  return run_budget_state{j["day"].get<std::int64_t>(), static_cast<std::uint32_t>(j["count"].get<std::uint64_t>())};
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

/// Result of `take_run`.
struct run_ledger_decision {
  bool allowed = false;      ///< true: the run was counted and may go ahead
  run_budget_state state{};  ///< the ledger's state after the decision
  std::uint32_t max_runs_per_day = 0;  ///< the budget applied
};

/// Counts a run in the ledger at `path` when the budget allows it at `now` (loads, applies
/// `run_budget::allow`, saves only when allowed). @throws what load/save throw.
template <class = void>  // deferred instantiation, see memhealth.hpp
run_ledger_decision take_run(const std::filesystem::path& path, std::uint32_t max_runs_per_day, utc_time now) {
  run_budget b{max_runs_per_day, load_run_ledger(path)};
  run_ledger_decision d;
  d.max_runs_per_day = max_runs_per_day;
  d.allowed = b.allow(now);
  if (d.allowed) save_run_ledger(path, b.state);
  d.state = b.state;
  return d;
}

}  // namespace memhealth
