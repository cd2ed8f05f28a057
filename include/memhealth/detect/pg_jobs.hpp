#pragma once
/// @file pg_jobs.hpp
/// The job protocol of a check spread across workers (detect/pg_workers.hpp): the run's tables in
/// the database, claiming a job with a lease, handing in a result once, renewing a lease, and
/// findings as the result table holds them. Link libpq (`memhealth::pg`).
///
/// **Tables** (RUN = the run id, 1 to 32 characters of [a-z0-9]; created by the coordinator in
/// the first schema of its connection's search_path, so workers must use the same search_path):
/// - `memhealth_run_RUN (key text PRIMARY KEY, value text)`: `snapshot` (pg_export_snapshot),
///   `now_ms` (the run's clock, ms since 1970 UTC), `dimension` (store-wide), `settings`
///   (`pg_settings_fingerprint`), `mapping_kind` ("memhealth" or "json"), `mapping` (the table, or
///   the mapping file's JSON, `pg_mapping_json`), `mapping_name`, `lease_ms`, `jobs`;
/// - `memhealth_jobs_RUN (job int PRIMARY KEY, scopes jsonb (an array of scope texts; NULL =
///   every row), records int, state text ('pending', 'claimed', 'done', 'failed'), worker text,
///   token text, attempts int, claimed_at, expires_at, finished_at timestamptz, error text,
///   parent int, block int, blocks int)`: `parent`/`block` NULL and `blocks` 0 for an ordinary
///   job; a large scope split into blocks (detect/pg_workers.hpp, "Blocks") has `blocks` block
///   jobs (`parent` = the scope's job, `block` = 0 .. blocks-1) and its own job, with `blocks`
///   set, which is claimable only once every one of its block jobs is done;
/// - `memhealth_results_RUN (job int PRIMARY KEY REFERENCES memhealth_jobs_RUN, worker text,
///   token text, records int, findings text, accepted_at timestamptz)`: one row per job (the
///   primary key accepts one result per job). `findings` is a JSON array, one object per
///   finding: `p` (the detector's position in the pipeline), `kind`, `severity`, `detector`,
///   `record_ids`, `evidence` (an array of [key, value] pairs; a double as {"d": number} or
///   {"d": "nan" | "inf" | "-inf"}, so that integers, doubles and non-finite values come back
///   exactly), `suggested_repair`, and `rows` (the store keys, `pg_store::store_key`, of the
///   records it names). A block job's `findings` is instead `{"pieces": [...]}`, one object per
///   partitioned join it took part in: `key` (rows, checksum of their vectors, threshold, pair
///   budget), `truncated`, and `pairs`, a flat array i, j, score, ... (positions in the scope's
///   rows; the score as its float32 bit pattern, so it comes back exactly).
///
/// **Claims and leases.** `pg_claim_job` takes the lowest pending job, or one whose lease expired,
/// with `UPDATE ... WHERE job = (SELECT job ... ORDER BY job LIMIT 1 FOR UPDATE SKIP LOCKED)`
/// (PostgreSQL docs, SELECT, "The Locking Clause": concurrent claimers skip each other's rows
/// instead of waiting, and never take the same job) and gives it a new random token and
/// `expires_at` = now + the lease; a job with blocks waits until they are all done.
/// `pg_finish_job` marks the job done and stores the result in
/// one transaction, only while the token still holds the job and the lease has not expired: a
/// worker that was killed, or stalled past its lease while another took the job, has its result
/// refused. A working worker renews its lease (`detail::pgw::lease_keeper`) every third of it.

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include "memhealth/config.hpp"
#include "memhealth/detect/default_pipeline.hpp"
#include "memhealth/detect/finding.hpp"
#include "memhealth/store/pg_conn.hpp"
#include "memhealth/store/pg_mapping.hpp"

#include <libpq-fe.h>
#include <unistd.h>

namespace memhealth {

/// The detection settings a worker must share with its coordinator, as JSON text (the
/// thresholds, window, pair budget, blocking size, guards, the content checks' switches and
/// limits, the metadata schema, unit-norm expectation, decay curves and stale threshold, what the
/// jobs run (`jobs`: 2), and whether a custom lexicon or a conflict model is set: those two
/// cannot be compared, so give workers the same ones).
[[nodiscard]] inline std::string pg_settings_fingerprint(const default_check_settings& s) {
  nlohmann::json j;
  j["near_duplicate_threshold"] = s.near_duplicate_threshold;
  j["near_duplicate_window_ms"] =
      s.near_duplicate_window ? nlohmann::json(s.near_duplicate_window->count()) : nlohmann::json();
  j["conflict_candidate_threshold"] = s.conflict_candidate_threshold;
  j["max_pairs_per_scope"] = s.max_pairs_per_scope;
  j["block_scopes_above"] = s.block_scopes_above;
  j["duplicate_guards"] = s.duplicate_guards;
  j["custom_lexicon"] = s.lexicon != nullptr;
  j["conflict_model"] = s.conflict_model != nullptr;
  j["secrets"] = s.secrets.enabled;
  j["mojibake"] = s.mojibake.enabled;
  j["content_size"] = s.content_size.enabled;
  j["content_size_max_bytes"] = s.content_size.max_bytes;
  j["content_time"] = s.content_time.enabled;
  // what the jobs run besides the scope-local detectors: structural's per-record checks and
  // staleness (version 2; a worker of version 1 ran neither and is refused), with their settings
  j["jobs"] = 2;
  j["expect_unit_norm"] = s.expect_unit_norm;
  nlohmann::json schema = nlohmann::json::object();
  for (const auto& [k, t] : s.schema.required) schema["required"][k] = to_string_types(t);
  for (const auto& [k, t] : s.schema.types) schema["types"][k] = to_string_types(t);
  j["schema"] = std::move(schema);
  nlohmann::json decay = nlohmann::json::object();
  for (const auto& [k, c] : s.decay.by_kind) decay[k] = describe(c);
  decay[""] = describe(s.decay.fallback);
  j["decay"] = std::move(decay);
  j["stale_threshold"] = s.stale_threshold;
  return j.dump();
}

namespace detail::pgw {

using pg::cell;
using pg::exec;

// @throws error(precondition) for a run id that is not 1-32 of [a-z0-9].
inline void check_run_id(const std::string& id) {
  bool ok = !id.empty() && id.size() <= 32;
  for (char ch : id) ok = ok && ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9'));
  if (!ok)
    throw error(error_code::precondition,
                "run id '" + id + "': expected 1 to 32 characters of a-z and 0-9");
}
inline std::string run_table(const std::string& id) {
  return "memhealth_run_" + id;
}
inline std::string jobs_table(const std::string& id) {
  return "memhealth_jobs_" + id;
}
inline std::string results_table(const std::string& id) {
  return "memhealth_results_" + id;
}

inline std::string random_hex(std::size_t n) {
  std::random_device rd;
  std::mt19937_64 rng((static_cast<std::uint64_t>(rd()) << 32) ^ rd());
  static constexpr char digits[] = "0123456789abcdef";
  std::string s;
  for (std::size_t k = 0; k < n; ++k) s += digits[rng() % 16];
  return s;
}

inline std::string host_pid() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  return std::string(host[0] ? host : "host") + ":" + std::to_string(::getpid());
}

// A finding as the result table holds it (see the file comment), `rows` given.
inline nlohmann::json encode_finding(const finding& f, std::size_t position,
                                     const std::vector<std::string>& rows) {
  nlohmann::json ev = nlohmann::json::array();
  for (const auto& [k, v] : f.evidence) {
    nlohmann::json value;
    if (const auto* d = std::get_if<double>(&v)) {
      if (std::isnan(*d))
        value = {{"d", "nan"}};
      else if (std::isinf(*d))
        value = {{"d", *d > 0 ? "inf" : "-inf"}};
      else
        value = {{"d", *d}};
    } else if (const auto* i = std::get_if<std::int64_t>(&v)) {
      value = *i;
    } else if (const auto* s = std::get_if<std::string>(&v)) {
      value = *s;
    } else {
      value = std::get<bool>(v);
    }
    ev.push_back(nlohmann::json::array({k, std::move(value)}));
  }
  return {{"p", position},
          {"kind", f.kind},
          {"severity", std::string(to_string(f.severity))},
          {"detector", f.detector},
          {"record_ids", f.record_ids},
          {"evidence", std::move(ev)},
          {"suggested_repair", f.suggested_repair},
          {"rows", rows}};
}

// The inverse of encode_finding. @throws error(parse) for another shape.
inline finding decode_finding(const nlohmann::json& j, std::size_t& position,
                              std::vector<std::string>& rows) {
  try {
    finding f;
    position = j.at("p").get<std::size_t>();
    f.kind = j.at("kind").get<std::string>();
    const auto sev = parse_severity(j.at("severity").get<std::string>());
    if (!sev) throw error(error_code::parse, "unknown severity");
    f.severity = *sev;
    f.detector = j.at("detector").get<std::string>();
    f.record_ids = j.at("record_ids").get<std::vector<std::string>>();
    for (const auto& e : j.at("evidence")) {
      const auto key = e.at(0).get<std::string>();
      const auto& v = e.at(1);
      if (v.is_object()) {
        const auto& d = v.at("d");
        double x = 0;
        if (d.is_string()) {
          const auto t = d.get<std::string>();
          x = t == "nan"   ? std::numeric_limits<double>::quiet_NaN()
              : t == "inf" ? std::numeric_limits<double>::infinity()
                           : -std::numeric_limits<double>::infinity();
        } else {
          x = d.get<double>();
        }
        f.evidence.emplace_back(key, x);
      } else if (v.is_boolean()) {
        f.evidence.emplace_back(key, v.get<bool>());
      } else if (v.is_number_integer()) {
        f.evidence.emplace_back(key, v.get<std::int64_t>());
      } else {
        f.evidence.emplace_back(key, v.get<std::string>());
      }
    }
    f.suggested_repair = j.at("suggested_repair").get<std::string>();
    rows = j.at("rows").get<std::vector<std::string>>();
    return f;
  } catch (const nlohmann::json::exception& ex) {
    throw error(error_code::parse, std::string("a worker's result is not a finding: ") + ex.what());
  }
}

// The run's key/value table as a map. @throws error(precondition) when there is no such run.
inline std::map<std::string, std::string> read_run(PGconn* c, const std::string& run,
                                                   const std::string& where) {
  auto r = exec(c, "SELECT to_regclass($1) IS NOT NULL", {run_table(run)}, where,
                "cannot look up the run");
  if (cell(r.get(), 0, 0) != "t")
    throw error(error_code::precondition,
                where + ": there is no run '" + run + "' (no table " + run_table(run) +
                    " in the search_path: finished, never started, or another schema)");
  auto kv = exec(c, "SELECT key, value FROM " + pg::ident(c, run_table(run)), {}, where,
                 "cannot read the run");
  std::map<std::string, std::string> out;
  for (int i = 0; i < PQntuples(kv.get()); ++i) out[cell(kv.get(), i, 0)] = cell(kv.get(), i, 1);
  return out;
}

// Renews a claim's lease every third of its length on a connection of its own, until stopped.
class lease_keeper {
 public:
  lease_keeper(const std::string& conninfo, std::string sql,
               std::vector<std::optional<std::string>> params, std::chrono::milliseconds lease)
      : conn_(pg::connect(conninfo)), sql_(std::move(sql)), params_(std::move(params)) {
    const auto every = std::max(std::chrono::milliseconds(10), lease / 3);
    thread_ = std::thread([this, every] {
      std::unique_lock lock(m_);
      while (!cv_.wait_for(lock, every, [this] { return stop_; })) {
        PGresult* r = nullptr;
        std::vector<const char*> v;
        for (const auto& p : params_) v.push_back(p ? p->c_str() : nullptr);
        r = PQexecParams(conn_.get(), sql_.c_str(), static_cast<int>(v.size()), nullptr, v.data(),
                         nullptr, nullptr, 0);
        PQclear(r);  // a failed renewal only shortens the lease: the finish will tell
      }
    });
  }
  ~lease_keeper() {
    {
      std::lock_guard lock(m_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  lease_keeper(const lease_keeper&) = delete;
  lease_keeper& operator=(const lease_keeper&) = delete;

 private:
  pg::conn_ptr conn_;
  std::string sql_;
  std::vector<std::optional<std::string>> params_;
  std::mutex m_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

// The mapping a run names.
inline pg_mapping run_mapping(const std::map<std::string, std::string>& kv) {
  auto get = [&](const char* k) {
    auto it = kv.find(k);
    return it == kv.end() ? std::string() : it->second;
  };
  if (get("mapping_kind") == "memhealth") return pg_own_mapping(get("mapping"));
  return parse_pg_mapping(get("mapping"), get("mapping_name"));
}

}  // namespace detail::pgw

/// A job a worker holds: its number, scopes (nullopt = every row), record count and claim token,
/// and for a large scope split into blocks, its place among them.
struct pg_job_claim {
  int job = -1;                                    ///< the job's number (0-based)
  std::optional<std::vector<std::string>> scopes;  ///< its scopes; nullopt = every row
  std::size_t records = 0;                         ///< records the coordinator counted in it
  std::string token;                               ///< this claim's token (16 hex digits)
  int parent = -1;                                 ///< a block job: the job of its scope; else -1
  int block = -1;          ///< a block job: its index among the scope's blocks; else -1
  std::size_t blocks = 0;  ///< the scope's blocks (a block job, or the job that waits for them)
};

/// Claims one job of run `run` over `c` (autocommit): a pending one, or one whose lease expired,
/// lowest number first, with `FOR UPDATE SKIP LOCKED` (concurrent claimers never wait for each
/// other or take the same job); a job with blocks only once all of them are done. The lease ends
/// `lease` from now (server clock).
/// @return the claim, or nullopt when no job is claimable now. @throws error(io) on SQL failure.
[[nodiscard]] inline std::optional<pg_job_claim> pg_claim_job(PGconn* c, const std::string& run,
                                                              const std::string& worker,
                                                              std::chrono::milliseconds lease,
                                                              const std::string& where = "") {
  detail::pgw::check_run_id(run);
  const std::string jobs = detail::pg::ident(c, detail::pgw::jobs_table(run));
  pg_job_claim cl;
  cl.token = detail::pgw::random_hex(16);
  auto r = detail::pg::exec(
      c,
      "UPDATE " + jobs +
          " SET state = 'claimed', worker = $1, token = $2, attempts = attempts + 1, "
          "claimed_at = clock_timestamp(), expires_at = clock_timestamp() + $3::bigint * "
          "interval '1 millisecond' WHERE job = (SELECT j.job FROM " +
          jobs +
          " j WHERE (j.state = 'pending' OR (j.state = 'claimed' AND j.expires_at < "
          "clock_timestamp())) AND NOT EXISTS (SELECT 1 FROM " +
          jobs +
          " b WHERE b.parent = j.job AND b.state <> 'done') ORDER BY j.job LIMIT 1 FOR UPDATE "
          "SKIP LOCKED) RETURNING job, scopes::text, records, parent, block, blocks",
      {worker, cl.token, std::to_string(lease.count())}, where, "cannot claim a job");
  if (PQntuples(r.get()) == 0) return std::nullopt;
  cl.job = std::stoi(detail::pg::cell(r.get(), 0, 0));
  if (!PQgetisnull(r.get(), 0, 1))
    cl.scopes =
        nlohmann::json::parse(detail::pg::cell(r.get(), 0, 1)).get<std::vector<std::string>>();
  cl.records = std::stoul(detail::pg::cell(r.get(), 0, 2));
  if (!PQgetisnull(r.get(), 0, 3)) cl.parent = std::stoi(detail::pg::cell(r.get(), 0, 3));
  if (!PQgetisnull(r.get(), 0, 4)) cl.block = std::stoi(detail::pg::cell(r.get(), 0, 4));
  cl.blocks = std::stoul(detail::pg::cell(r.get(), 0, 5));
  return cl;
}

/// Hands in the result of a claim: in one transaction, marks the job done and stores
/// `findings_json` (see the file comment), only when the claim's token still holds the job and
/// its lease has not expired. @return true when the result was accepted, false when the lease
/// was lost (nothing written). @throws error(io) on SQL failure.
inline bool pg_finish_job(PGconn* c, const std::string& run, const pg_job_claim& cl,
                          const std::string& worker, const std::string& findings_json,
                          const std::string& where = "") {
  detail::pgw::check_run_id(run);
  using detail::pg::exec;
  const std::string jobs = detail::pg::ident(c, detail::pgw::jobs_table(run));
  const std::string results = detail::pg::ident(c, detail::pgw::results_table(run));
  exec(c, "BEGIN", {}, where, "cannot begin");
  try {
    auto u = exec(c,
                  "UPDATE " + jobs +
                      " SET state = 'done', finished_at = clock_timestamp() WHERE job = $1 AND "
                      "token = $2 AND state = 'claimed' AND expires_at >= clock_timestamp()",
                  {std::to_string(cl.job), cl.token}, where, "cannot finish a job");
    if (std::string(PQcmdTuples(u.get())) != "1") {
      exec(c, "ROLLBACK", {}, where, "cannot roll back");
      return false;
    }
    auto ins =
        exec(c,
             "INSERT INTO " + results +
                 " (job, worker, token, records, findings, accepted_at) VALUES ($1, $2, "
                 "$3, $4, $5, clock_timestamp()) ON CONFLICT (job) DO NOTHING",
             {std::to_string(cl.job), worker, cl.token, std::to_string(cl.records), findings_json},
             where, "cannot store a result");
    if (std::string(PQcmdTuples(ins.get())) != "1") {
      exec(c, "ROLLBACK", {}, where, "cannot roll back");
      return false;
    }
    exec(c, "COMMIT", {}, where, "cannot commit a result");
    return true;
  } catch (...) {
    PQclear(PQexec(c, "ROLLBACK"));
    throw;
  }
}

}  // namespace memhealth
