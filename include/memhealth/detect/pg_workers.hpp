#pragma once
/// @file pg_workers.hpp
/// One check of a PostgreSQL store (store/pg_store.hpp) spread across worker threads, processes
/// and machines, with the report of the single-process check. Link libpq (`memhealth::pg`).
///
/// **Coordinator** (`pg_parallel_check`):
/// 1. opens a REPEATABLE READ READ ONLY transaction and exports its snapshot
///    (`pg_export_snapshot()`, PostgreSQL docs 9.27.5 "Snapshot Synchronization Functions"); the
///    transaction stays open until every job is done, so every reader can import it;
/// 2. counts the table's rows in that snapshot without reading them (`pg_store::census`: one
///    `GROUP BY` query giving the rows per scope and per vector length); the mapping is checked
///    against the catalog first, so a missing column, a vector of the wrong type or a missing
///    privilege fails here, before any table is created or any job runs. The run's store-wide
///    embedding dimension (`d.dimension` 0) is the most common vector length counted there;
/// 3. creates the run's three tables (below) in the first schema of the connection's
///    search_path and fills the job table: scopes in byte order, batched into jobs of at most
///    `pg_run_options::job_records` records; a scope larger than that is one job of its own, and
///    when the check partitions it by k-means its join is also split into block jobs ("Blocks");
/// 4. starts `pg_run_options::workers` - 1 worker threads (`pg_run_worker`) and, meanwhile,
///    reads every row in the snapshot (`pg_store_options::snapshot`) **without its vector**
///    (`pg_store_options::vectors` false: the server sends each vector's length only), checks
///    that it holds the rows, dimension and per-scope counts of step 2 (error(io) otherwise), and
///    runs the store-wide detectors itself (below); then its own thread is the last worker
///    (worker 0), claiming jobs like the others until none is left, and it waits until every job
///    is done. So `workers` N keeps N threads busy in this process (the store-wide pass is, in
///    effect, worker 0's first job), and nothing but the count of step 2 comes before the first
///    claim. The vectors are held only per job, by the worker that checks it;
/// 5. merges the results in a fixed order (below), drops the run's tables and ends the snapshot.
///
/// **Workers** (`pg_run_worker`, a thread of the coordinator or `memhealth worker URI --run ID` on
/// any machine): claim a job with `UPDATE ... WHERE job = (SELECT job ... FOR UPDATE SKIP LOCKED
/// LIMIT 1)` (docs: SELECT, "The Locking Clause") and a lease (`expires_at`); a job whose lease
/// expired is claimable again. A claimed job is read in the exported snapshot (`SET TRANSACTION
/// SNAPSHOT`, docs "SET TRANSACTION"; `pg_store_options::scopes`: only the job's scopes), checked
/// to hold exactly the job's record count, and checked by the scope-local detectors of the same
/// pipeline (`make_default_pipeline(settings)`; `scope_local_detector`, incremental.hpp) with the
/// run's clock and store-wide embedding dimension. The findings go to the result table in the
/// same transaction that marks the job done, and only while the worker's lease (its claim token)
/// still holds: a worker whose lease expired and whose job another worker claimed gets its
/// result refused (`pg_finish_job` returns false); the result table's primary key accepts one
/// result per job. While a worker checks, a second connection renews its lease every third of
/// the lease time; a killed worker stops renewing and loses the job.
///
/// **Store-wide and scope-local detectors.** Of the default pipeline, duplicates (exact and near
/// clusters, within a scope), conflicts (pairs and claim groups within a scope), hygiene,
/// secrets, mojibake, content_size and content_time are scope-local: their findings about a
/// scope depend on that scope's records only (and the clock and dimension, which the run fixes).
/// They run in the workers, as do staleness (in a full check a record's staleness depends on
/// that record alone) and structural's per-record checks (`structural_detector::part`
/// `per_record`: content, embedding, status, source, scope, metadata, timestamps of one
/// record). The rest of structural (`store_wide`: dangling links, duplicate ids across the
/// store, supersession, cycles, the store-wide majority embedding version) and scope
/// (cross-scope links) are store-wide and run in the coordinator on its read without vectors
/// (they need ids, links, statuses, versions and whether a record has a vector), as does the one
/// store-wide part of duplicates, cross_scope_duplicate: the workers run duplicates without it,
/// and the coordinator runs duplicates on the records whose normalised text appears in two or
/// more scopes (all of them, in store order) and keeps only its cross_scope_duplicate findings
/// (a cluster found there is also found by a worker).
///
/// **Memory.** The coordinator holds every row without its vector (text, ids, links, metadata)
/// plus each row's key; a worker holds the rows of the job it checks, vectors included. So for
/// a table of n rows with d-dimensional vectors the largest part, n x d x 4 bytes, is never held
/// at once, only a job's share of it (`job_records`; a scope larger than that is one job).
/// `pg_run_options::rows_with_vectors` is the exception: a caller that asks for them gets every
/// row with its vector.
///
/// **Without a job table** (`pg_run_options::job_table` false; `memhealth check postgresql://`
/// without `--workers` uses it with one thread): the same steps without the run's tables, the
/// jobs taken from a list in this process by `workers` threads (at least one) while this thread
/// makes the store-wide pass; no external worker can join and no block jobs are made (a large
/// scope is one job, checked whole as the single-process check does). The report is the same.
///
/// **Blocks.** The single-process check joins a scope of more than
/// `default_check_settings::block_scopes_above` usable records by k-means blocking
/// (`scope_size_blocking`, kmeans_blocking.hpp): seeded spherical k-means on the scope's rows in
/// store order, every row assigned an owner partition and probes, then exact joins inside each
/// partition (owners with owners, probers with owners), the union sorted by (i, j). A job of one
/// scope with more than `job_records` records and more than `block_scopes_above` (the check's
/// setting, part of the run's fingerprint) gets B = ceil(records / job_records) block jobs (at
/// most ceil(records / 512), the partitions), numbered before the scope-level jobs so they are
/// claimed first. Block job b reads the whole scope in the snapshot, trains and assigns exactly
/// as the single-process check (same rows, same order, same seed), and joins only the partitions
/// whose place in the join order is b modulo B (`kmeans_part`), for each partitioned join the
/// duplicate and conflict detectors ask for (`partitioned_pair_source`; at the check's
/// thresholds and pair budget); its result is those pairs with their exact scores. The scope's
/// own job is claimable only when all B blocks are done; it runs every scope-local detector as
/// any job, but takes each such join from the union of its blocks' pairs (sorted, made unique:
/// a pair seen by two partitions is kept once; over the pair budget when any block or the union
/// is), so the duplicate clusters, conflict judgements and the rest see the pairs, the scores
/// and the whole scope exactly as the single-process check does. A join no block computed (the
/// budget fallback of the duplicate detector after the union went over the budget) is computed
/// by the scope's job itself. Block jobs are claimed, leased, renewed and accepted once as any
/// job: a block whose worker dies is redone by another worker, and a late result is refused.
///
/// **Merge order** (the single-process order, in pipeline order, detector by detector): a
/// store-wide detector's findings as the coordinator found them; structural's per-record
/// findings from the jobs and the coordinator's dangling links, record by record (store order;
/// a record's own checks before its dangling links), then its store-wide findings; a job-run
/// detector's findings other than check_skipped sorted by the store indices of their records
/// (sorted ascending, compared lexicographically; ties in job order, then as the worker emitted
/// them: the order every detector emits in: record order, clusters by smallest member, pairs by (i,
/// j)), then its info check_skipped findings (duplicates' "no usable embedding") merged into one
/// (ids in store order, `count` summed), then its other check_skipped findings (pair budgets) in
/// job order, then, for duplicates, the coordinator's cross_scope_duplicate findings. The report is
/// byte for byte that of `make_default_pipeline(settings).run(store, d)` on the same rows for any
/// number of workers, with two known exceptions: records that share an id (structural reports them
/// as duplicate_id, critical) may have their per-record findings and dangling links ordered by the
/// first of them, and pair-budget findings of several scopes (more than `max_pairs_per_scope`
/// similar pairs) come in job order, which may differ from the detector's.
///
/// **Tables**, claims, leases and the result format: detect/pg_jobs.hpp.
///
/// **Errors.** As pg_store for the connection and the mapping; error(precondition) for a worker
/// whose detection settings differ from the run's, a run id that is malformed or names no run,
/// a mapping without a place for the scope (then the whole table is one job instead: not an
/// error for the coordinator), or an incremental run (`detect_options::since`/`changed`);
/// error(io) when a job failed in a worker (its message), no worker is left, or
/// `pg_run_options::wait_limit` passed.

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>

#include "memhealth/config.hpp"
#include "memhealth/detect/default_pipeline.hpp"
#include "memhealth/detect/finding.hpp"
#include "memhealth/detect/incremental.hpp"
#include "memhealth/detect/pg_jobs.hpp"
#include "memhealth/detect/pipeline.hpp"
#include "memhealth/store/pg_conn.hpp"
#include "memhealth/store/pg_mapping.hpp"
#include "memhealth/store/pg_store.hpp"
#include "memhealth/store/subset_store.hpp"

#include <libpq-fe.h>
#include <unistd.h>

namespace memhealth {

/// Knobs of `pg_parallel_check`.
struct pg_run_options {
  /// Workers in this process (0 = none: only external workers): `workers` - 1 threads, and the
  /// calling thread, which first runs the store-wide detectors (see the file comment).
  unsigned workers = 1;
  /// Most records per job: scopes are batched into jobs up to this; a scope larger than this is
  /// a job of its own, and when the check partitions it (more than
  /// `default_check_settings::block_scopes_above` records) its k-means join is also split into
  /// ceil(records / job_records) block jobs (at most one per partition; see "Blocks").
  std::size_t job_records = 20'000;
  std::chrono::milliseconds lease{std::chrono::minutes{2}};  ///< a claim's lease (renewed)
  std::chrono::milliseconds poll{100};      ///< how often the coordinator and idle workers look
  std::chrono::milliseconds wait_limit{0};  ///< give up waiting after this (0 = never)
  std::string run_id;                       ///< "" = 16 random hex digits; else 1-32 of [a-z0-9]
  bool keep_tables = false;  ///< keep the run's tables (for inspection) instead of dropping them
  /// true: the jobs go through a job table in the database (external `memhealth worker`s can
  /// join; needs CREATE on the first schema of the search_path). false: no table is written (a
  /// read-only role suffices): `workers` threads of this process (at least 1) take the jobs from
  /// a list in memory, a large scope is checked whole by one thread (no block jobs), and
  /// `on_ready`, `lease`, `poll` and `wait_limit` are not used. The report is the same.
  bool job_table = true;
  std::size_t fetch_rows = 1000;  ///< rows per FETCH (pg_store_options::fetch_rows)
  /// Called with the run id once the job table is filled, before the coordinator waits (e.g. to
  /// print it for `memhealth worker --run ID`).
  std::function<void(const std::string&)> on_ready;
  /// Asked between steps (before each job a worker thread of this process would take, while
  /// the coordinator waits, after its store-wide pass): true stops the run, which then fails
  /// with error(precondition) "stopped on request" after the jobs in hand end and, unless
  /// `keep_tables`, drops the run's tables (e.g. on SIGINT/SIGTERM; external workers then find
  /// the run gone: one between jobs ends with `pg_worker_result::run_ended`, one with a job in
  /// hand with an error). Called from several threads. Empty: never.
  std::function<bool()> stop_requested;
  /// Called once the report is merged, before the snapshot ends, with the coordinator's store:
  /// every row of the run's snapshot, in store order, read without vectors (`vector_length(i)`
  /// and `has_vector` give each one's presence) unless `rows_with_vectors`. The callee may move
  /// the store out (`memhealth plan` of a postgresql:// store plans from it, so the plan and the
  /// findings see one state). Not called on failure.
  std::function<void(pg_store<>&)> on_rows;
  /// Read the coordinator's rows with their vectors, for an `on_rows` that needs them (the
  /// retrieval monitor compares vectors; costs n x d x 4 bytes). false: the run never holds
  /// every vector at once.
  bool rows_with_vectors = false;
};

/// Knobs of `pg_run_worker`.
struct pg_worker_options {
  std::string name;                     ///< shown in the job table; "" = host:pid
  std::chrono::milliseconds poll{100};  ///< how often an idle worker looks for a job
  std::size_t fetch_rows = 1000;        ///< rows per FETCH
  /// Test hook: called after a job is claimed, before it is read; an exception thrown here
  /// ends the worker as a kill would (the job stays claimed until its lease expires).
  std::function<void(int job)> after_claim;
  /// Asked before each claim: true ends the worker (the job in hand, if any, was finished and
  /// its result written), with `pg_worker_result::stopped` set. Empty: never.
  std::function<bool()> stop_requested;
};

/// What the jobs of split scopes took from their blocks (see "Blocks").
struct pg_block_use {
  std::size_t joins = 0;   ///< partitioned joins answered from the blocks' pairs
  std::size_t misses = 0;  ///< partitioned joins the blocks had not computed (done by the job)
};

/// Where a worker's time went, in wall-clock seconds summed over the jobs it checked (a
/// profile, not part of any result).
struct pg_job_times {
  double read_s = 0;   ///< reading the jobs' rows (`pg_store::open` with the job's scopes)
  double check_s = 0;  ///< running the detectors and encoding the findings
};

/// What one worker did.
struct pg_worker_result {
  std::size_t jobs_done = 0;        ///< results accepted
  std::size_t results_refused = 0;  ///< results refused (the lease was lost)
  pg_block_use blocks_used;         ///< over the split scopes' jobs it checked
  pg_job_times times;               ///< over every job it checked (refused ones included)
  bool stopped = false;  ///< ended by `stop_requested` before the run's jobs were all done
  /// Ended because the run's tables were gone when it looked for its next job: the coordinator
  /// drops them once every job is done (a worker that finished the last job can look in
  /// between) or when it stops early (`pg_run_options::stop_requested`); either way no job was
  /// left to this worker. A job in hand when they go is an error, not this.
  bool run_ended = false;
};

/// Where `pg_parallel_check`'s time went, in wall-clock seconds (a profile for benchmarks and
/// `--verbose` output; the phases of the coordinator's thread follow each other, the worker
/// threads run meanwhile).
struct pg_run_timings {
  double head_s = 0;        ///< steps 1-3: snapshot, census, job table (until `on_ready`)
  double read_s = 0;        ///< the coordinator's read of the whole table (step 4)
  double store_wide_s = 0;  ///< the store-wide detectors and the merge's row index (step 4)
  double own_jobs_s = 0;    ///< the coordinator's thread as worker 0
  double wait_s = 0;        ///< waiting for the other workers' last jobs
  double merge_s = 0;       ///< reading, decoding and merging the results (step 5)
  pg_job_times jobs;        ///< summed over this process's worker threads (not external ones)
};

/// What `pg_parallel_check` gives back.
struct pg_run_result {
  report findings;             ///< the merged report (see the file comment, "Merge order")
  std::size_t dimension = 0;   ///< the store-wide embedding dimension the run used
  std::string run_id;          ///< the run's id
  std::size_t jobs = 0;        ///< jobs in the run (block jobs included)
  std::size_t block_jobs = 0;  ///< of them, block jobs (parts of large scopes' joins)
  std::size_t job_claims = 0;  ///< claims made (> jobs when leases expired)
  std::map<std::string, std::size_t> jobs_by_worker;  ///< accepted results per worker name
  pg_block_use blocks_used;  ///< summed over this process's worker threads (not external ones)
  pg_run_timings timings;    ///< where the time went (a profile)
  /// What the coordinator's read could not take whole (`pg_store::load_issues`: wrong field
  /// types, malformed vectors, shared keys, skipped rows), in read order; the jobs read the same
  /// rows alike, so the findings are those of the records as kept.
  std::vector<load_issue> load_issues;
};

namespace detail::pgw {

// Thrown by block_collector once a block job has the pairs it came for (stops that detector).
struct block_stop {};

// Where a detector of the default pipeline runs (see "Store-wide and scope-local detectors"):
// in the jobs, the scope-local detectors, structural's per-record part and staleness (in a full
// check its findings depend on one record each); in the coordinator, the others and
// structural's store-wide part.
template <class D>
struct in_jobs : scope_local_detector<D> {};
template <>
struct in_jobs<structural_detector> : std::true_type {};
template <>
struct in_jobs<staleness_detector> : std::true_type {};
template <class D>
inline constexpr bool in_coordinator = !in_jobs<D>::value || std::is_same_v<D, structural_detector>;

// The key of one partitioned join: its rows (count and a checksum of their vectors, in order),
// threshold (bit pattern) and pair budget. A block job and its scope's job read the same rows in
// the same order, so they compute the same key for the same join.
inline std::string piece_key(const rows_cref& x, std::span<const std::uint32_t> rows, float t,
                             std::size_t budget) {
  return std::to_string(rows.size()) + ":" + std::to_string(kmeans_rows_checksum(x, rows)) + ":" +
         std::to_string(std::bit_cast<std::uint32_t>(t)) + ":" + std::to_string(budget);
}

// A block job's source: computes its part (kmeans_part) of each partitioned join asked for,
// once per key, then stops the detector that asked (block_stop); exact joins are skipped.
class block_collector final : public partitioned_pair_source {
 public:
  explicit block_collector(kmeans_part part) : part_(part) {}
  std::optional<bool> pairs(const rows_cref& x, std::span<const std::uint32_t> rows, float t,
                            const kmeans_blocking_options& o, std::size_t budget,
                            std::vector<scored_pair>& out) override {
    const std::string key = piece_key(x, rows, t, budget);
    if (std::none_of(pieces_.begin(), pieces_.end(),
                     [&](const piece& p) { return p.key == key; })) {
      piece p;
      p.key = key;
      p.truncated =
          detail::kmeans_pairs(x, rows, t, o, budget, cosine_kernel{}, p.pairs, part_).truncated;
      pieces_.push_back(std::move(p));
    }
    out.clear();
    throw block_stop{};
  }
  [[nodiscard]] bool skip_exact() const override { return true; }
  // The block job's result (see pg_jobs.hpp, "Tables").
  [[nodiscard]] nlohmann::json result() const {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& p : pieces_) {
      nlohmann::json flat = nlohmann::json::array();
      for (const auto& q : p.pairs) {
        flat.push_back(q.i);
        flat.push_back(q.j);
        flat.push_back(std::bit_cast<std::uint32_t>(q.score));
      }
      arr.push_back({{"key", p.key}, {"truncated", p.truncated}, {"pairs", std::move(flat)}});
    }
    return {{"pieces", std::move(arr)}};
  }

 private:
  struct piece {
    std::string key;
    bool truncated = false;
    std::vector<scored_pair> pairs;
  };
  kmeans_part part_;
  std::vector<piece> pieces_;
};

// A scope job's source: the union of its block jobs' pieces. A join that every block computed
// is answered from them (pairs sorted by (i, j), unique; over the budget when a block was or the
// union is); any other join (none of the blocks reached it) is computed by the caller.
class block_supply final : public partitioned_pair_source {
 public:
  // `results`: the block jobs' results, one per block. @throws error(parse) for another shape.
  block_supply(const std::vector<std::string>& results, const std::string& where) {
    std::map<std::string, std::pair<std::size_t, merged>> acc;  // key -> (blocks seen, union)
    for (const auto& text : results) {
      const auto j = nlohmann::json::parse(text, nullptr, false);
      try {
        for (const auto& p : j.at("pieces")) {
          auto& [seen, m] = acc[p.at("key").get<std::string>()];
          ++seen;
          m.truncated = m.truncated || p.at("truncated").get<bool>();
          const auto& flat = p.at("pairs");
          if (flat.size() % 3 != 0) throw error(error_code::parse, "pairs not in threes");
          for (std::size_t k = 0; k < flat.size(); k += 3)
            m.pairs.push_back({flat.at(k).get<std::uint32_t>(), flat.at(k + 1).get<std::uint32_t>(),
                               std::bit_cast<float>(flat.at(k + 2).get<std::uint32_t>())});
        }
      } catch (const std::exception& ex) {
        throw error(error_code::parse,
                    where + ": a block job's result is not a list of pair pieces: " + ex.what());
      }
    }
    for (auto& [key, sm] : acc) {
      auto& [seen, m] = sm;
      if (seen != results.size()) continue;  // not computed by every block: not the whole join
      std::sort(m.pairs.begin(), m.pairs.end(), detail::pair_less);
      m.pairs.erase(std::unique(m.pairs.begin(), m.pairs.end(),
                                [](const scored_pair& a, const scored_pair& b) {
                                  return a.i == b.i && a.j == b.j;
                                }),
                    m.pairs.end());
      if (m.truncated) m.pairs.clear();
      joins_.emplace(key, std::move(m));
    }
  }
  std::optional<bool> pairs(const rows_cref& x, std::span<const std::uint32_t> rows, float t,
                            const kmeans_blocking_options&, std::size_t budget,
                            std::vector<scored_pair>& out) override {
    const auto it = joins_.find(piece_key(x, rows, t, budget));
    out.clear();
    if (it == joins_.end()) {
      ++use_.misses;
      return std::nullopt;
    }
    ++use_.joins;
    const merged& m = it->second;
    if (m.truncated || (budget != 0 && m.pairs.size() > budget)) return true;
    for (const auto& q : m.pairs)
      if (!(q.i < q.j && q.j < rows.size()))
        throw error(error_code::parse, "a block job's pair names a row outside its scope");
    out = m.pairs;
    return false;
  }
  // Joins asked for so far: answered from the blocks, or not there.
  [[nodiscard]] const pg_block_use& use() const noexcept { return use_; }

 private:
  struct merged {
    bool truncated = false;
    std::vector<scored_pair> pairs;
  };
  std::map<std::string, merged> joins_;
  pg_block_use use_;
};

}  // namespace detail::pgw

/// Checks the records of one claimed job (see the file comment, "Workers") and gives the
/// findings as the result table holds them. `kv` is the run's table (`snapshot`, `now_ms`,
/// `dimension`, mapping). A block job (`cl.block` >= 0) gives its part of the scope's
/// partitioned joins instead (see "Blocks"); the job of a split scope (`cl.blocks` > 0,
/// `cl.block` < 0) is given its blocks' results in `block_results` (one per block, any order)
/// and takes those joins from them (`use`, when given, counts them). @throws as pg_store::open;
/// error(io) when the rows read are not the job's (another record count or scope: the snapshot or
/// the scope expression disagrees) or a split scope's job is not given one result per block;
/// error(parse) for a block result of another shape. `times`, when given, gets the seconds spent
/// reading and checking added.
inline std::string pg_check_job(const std::string& conninfo,
                                const std::map<std::string, std::string>& kv,
                                const pg_job_claim& cl, const default_check_settings& settings,
                                std::size_t fetch_rows = 1000,
                                const std::vector<std::string>& block_results = {},
                                pg_block_use* use = nullptr, pg_job_times* times = nullptr) {
  const auto t_read = std::chrono::steady_clock::now();
  pg_store_options so;
  so.read_only = true;
  so.snapshot = kv.at("snapshot");
  so.scopes = cl.scopes;
  so.fetch_rows = fetch_rows;
  auto store = pg_store<>::open(conninfo, detail::pgw::run_mapping(kv), so);
  const auto t_check = std::chrono::steady_clock::now();
  if (times) times->read_s += std::chrono::duration<double>(t_check - t_read).count();
  if (store.rows_read() != cl.records)  // rows, skipped ones (load issues) included
    throw error(error_code::io, store.description() + ": job " + std::to_string(cl.job) + " read " +
                                    std::to_string(store.rows_read()) +
                                    " rows, the coordinator counted " + std::to_string(cl.records));
  if (cl.scopes) {
    const std::unordered_set<std::string> want(cl.scopes->begin(), cl.scopes->end());
    for (std::size_t i = 0; i < store.size(); ++i)
      if (!want.count(store.record(i).scope))
        throw error(error_code::io, store.description() + ": job " + std::to_string(cl.job) +
                                        " read a row of scope '" + store.record(i).scope +
                                        "', not one of the job's");
  }
  // a block job computes its part of the partitioned joins; a split scope's job is supplied
  std::shared_ptr<detail::pgw::block_collector> collect;
  std::shared_ptr<detail::pgw::block_supply> supply;
  std::shared_ptr<partitioned_pair_source> source;
  if (cl.block >= 0) {
    if (static_cast<std::size_t>(cl.block) >= cl.blocks)
      throw error(error_code::io, store.description() + ": job " + std::to_string(cl.job) +
                                      " is block " + std::to_string(cl.block) + " of " +
                                      std::to_string(cl.blocks));
    collect = std::make_shared<detail::pgw::block_collector>(
        kmeans_part{static_cast<std::size_t>(cl.block), cl.blocks});
    source = collect;
  } else if (cl.blocks > 0) {
    if (block_results.size() != cl.blocks)
      throw error(error_code::io, store.description() + ": job " + std::to_string(cl.job) +
                                      " waits for " + std::to_string(cl.blocks) +
                                      " blocks, but has " + std::to_string(block_results.size()) +
                                      " results of them");
    supply = std::make_shared<detail::pgw::block_supply>(block_results, store.description());
    source = supply;
  }
  detect_options d;
  d.now = utc_time(std::chrono::milliseconds(std::stoll(kv.at("now_ms"))));
  d.dimension = std::stoul(kv.at("dimension"));
  const auto p = make_default_pipeline(settings);
  detection_context<pg_store<>> ctx(store, d);
  nlohmann::json out = nlohmann::json::array();
  std::size_t position = 0;
  std::vector<finding> found;
  auto one = [&](const auto& det) {
    using D = std::remove_cvref_t<decltype(det)>;
    if constexpr (detail::pgw::in_jobs<D>::value) {
      constexpr bool hooked = requires(D & x) {
        x.candidates.source = std::shared_ptr<partitioned_pair_source>();
      };
      constexpr bool structural = std::is_same_v<D, structural_detector>;
      if (collect && !hooked) {  // a block job runs the detectors that join pairs only
        ++position;
        return;
      }
      found.clear();
      if constexpr (hooked || structural || requires { det.cross_scope_check; }) {
        D local = det;
        if constexpr (structural) local.part = structural_detector::part_kind::per_record;
        if constexpr (requires { local.cross_scope_check; })
          local.cross_scope_check = false;  // store-wide: the coordinator's
        if constexpr (hooked) local.candidates.source = source;
        try {
          local.run(ctx, found);
        } catch (const detail::pgw::block_stop&) {
          if (!collect) throw;
        }
      } else {
        det.run(ctx, found);
      }
      if (!collect)
        for (const auto& f : found) {
          std::vector<std::string> rows;
          for (const auto& id : f.record_ids)
            if (auto i = store.find(id)) rows.push_back(store.store_key(*i));
          out.push_back(detail::pgw::encode_finding(f, position, rows));
        }
    }
    ++position;
  };
  std::apply([&](const auto&... det) { (one(det), ...); }, p.detectors());
  if (use && supply) {
    use->joins += supply->use().joins;
    use->misses += supply->use().misses;
  }
  std::string text = collect ? collect->result().dump() : out.dump();
  if (times)
    times->check_s +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t_check).count();
  return text;
}

/// Runs a worker of run `run` until every job of the run is done or failed: claims jobs, checks
/// them (`pg_check_job`), hands in results (`pg_finish_job`), renewing each lease meanwhile;
/// while other workers hold the remaining jobs it waits, and takes a job whose lease expired.
/// The job of a split scope (claimable once its blocks are done) is checked with its blocks'
/// results, read from the result table (see "Blocks").
/// A job whose check throws is marked failed (its error text in the job table) and the
/// exception propagates. @throws error(precondition) when `settings` differ from the run's
/// (`pg_settings_fingerprint`) or there is no such run; as pg_check_job.
inline pg_worker_result pg_run_worker(const std::string& conninfo, const std::string& run,
                                      const default_check_settings& settings,
                                      const pg_worker_options& opt = {}) {
  detail::pgw::check_run_id(run);
  const std::string where = describe_conninfo(conninfo) + " run " + run;
  auto conn = detail::pg::connect(conninfo);
  PGconn* c = conn.get();
  const auto kv = detail::pgw::read_run(c, run, where);
  if (kv.count("settings") == 0 || kv.at("settings") != pg_settings_fingerprint(settings))
    throw error(error_code::precondition,
                where +
                    ": this worker's detection settings differ from the run's (give the "
                    "worker the options the check was given); run: " +
                    (kv.count("settings") ? kv.at("settings") : std::string("none")) +
                    ", worker: " + pg_settings_fingerprint(settings));
  const std::chrono::milliseconds lease(std::stoll(kv.at("lease_ms")));
  const std::string name = opt.name.empty() ? detail::pgw::host_pid() : opt.name;
  const std::string jobs = detail::pg::ident(c, detail::pgw::jobs_table(run));
  pg_worker_result res;
  while (true) {
    if (opt.stop_requested && opt.stop_requested()) {
      res.stopped = true;
      return res;
    }
    std::optional<pg_job_claim> cl;
    try {
      cl = pg_claim_job(c, run, name, lease, where);
      if (!cl) {
        auto st = detail::pg::exec(c,
                                   "SELECT count(*) FILTER (WHERE state NOT IN ('done', "
                                   "'failed')) FROM " +
                                       jobs,
                                   {}, where, "cannot read the job table");
        if (detail::pg::cell(st.get(), 0, 0) == "0") return res;
      }
    } catch (const error&) {
      // the coordinator dropped the run's tables meanwhile (every job done, or stopped)
      auto gone =
          detail::pg::exec(c, "SELECT to_regclass($1) IS NULL", {detail::pgw::jobs_table(run)},
                           where, "cannot look up the job table");
      if (detail::pg::cell(gone.get(), 0, 0) != "t") throw;
      res.run_ended = true;
      return res;
    }
    if (!cl) {
      std::this_thread::sleep_for(opt.poll);
      continue;
    }
    if (opt.after_claim) opt.after_claim(cl->job);
    std::string findings;
    pg_block_use used;
    try {
      std::vector<std::string> block_results;  // a split scope's job: its blocks' results
      if (cl->block < 0 && cl->blocks > 0) {
        auto br = detail::pg::exec(
            c,
            "SELECT r.findings FROM " + detail::pg::ident(c, detail::pgw::results_table(run)) +
                " r JOIN " + jobs + " j USING (job) WHERE j.parent = $1 ORDER BY j.block",
            {std::to_string(cl->job)}, where, "cannot read the results of a scope's blocks");
        for (int k = 0; k < PQntuples(br.get()); ++k)
          block_results.push_back(detail::pg::cell(br.get(), k, 0));
      }
      detail::pgw::lease_keeper keep(
          conninfo,
          "UPDATE " + jobs +
              " SET expires_at = clock_timestamp() + $3::bigint * interval '1 millisecond' "
              "WHERE job = $1 AND token = $2 AND state = 'claimed' AND expires_at >= "
              "clock_timestamp()",
          {std::to_string(cl->job), cl->token, std::to_string(lease.count())}, lease);
      findings = pg_check_job(conninfo, kv, *cl, settings, opt.fetch_rows, block_results, &used,
                              &res.times);
    } catch (const std::exception& ex) {
      try {
        detail::pg::exec(
            c, "UPDATE " + jobs + " SET state = 'failed', error = $3 WHERE job = $1 AND token = $2",
            {std::to_string(cl->job), cl->token, name + ": " + ex.what()}, where,
            "cannot mark a job failed");
      } catch (...) {
      }
      throw;
    }
    if (pg_finish_job(c, run, *cl, name, findings, where)) {
      ++res.jobs_done;
      res.blocks_used.joins += used.joins;
      res.blocks_used.misses += used.misses;
    } else
      ++res.results_refused;
  }
}

namespace detail::pgw {

// One worker result decoded: (position, finding, store indices sorted) in emission order.
struct decoded {
  std::size_t position;
  finding f;
  std::vector<std::size_t> at;  // store indices of the rows it names, ascending
};

// The findings of the scope-local detector at `position`, merged (see "Merge order").
inline void merge_local(std::vector<std::vector<decoded>>& by_job, std::size_t position,
                        std::vector<finding>& out) {
  std::vector<decoded*> main, info, other;
  for (auto& job : by_job)
    for (auto& x : job) {
      if (x.position != position) continue;
      if (x.f.kind != finding_kinds::check_skipped)
        main.push_back(&x);
      else if (x.f.severity == severity::info)
        info.push_back(&x);
      else
        other.push_back(&x);
    }
  std::stable_sort(main.begin(), main.end(),
                   [](const decoded* a, const decoded* b) { return a->at < b->at; });
  for (auto* x : main) out.push_back(std::move(x->f));
  // info check_skipped: one per (detector, check), ids in store order, counts summed
  std::vector<std::string> done;
  for (std::size_t k = 0; k < info.size(); ++k) {
    const auto* check = info[k]->f.evidence_of("check");
    const std::string key =
        check && std::holds_alternative<std::string>(*check) ? std::get<std::string>(*check) : "";
    if (std::find(done.begin(), done.end(), key) != done.end()) continue;
    done.push_back(key);
    std::vector<std::pair<std::size_t, std::string>> ids;
    std::int64_t count = 0;
    finding merged = info[k]->f;
    for (std::size_t m = k; m < info.size(); ++m) {
      const auto* c2 = info[m]->f.evidence_of("check");
      const std::string k2 =
          c2 && std::holds_alternative<std::string>(*c2) ? std::get<std::string>(*c2) : "";
      if (k2 != key) continue;
      for (std::size_t r = 0; r < info[m]->f.record_ids.size(); ++r)
        ids.emplace_back(r < info[m]->at.size() ? info[m]->at[r] : 0, info[m]->f.record_ids[r]);
      if (const auto* n = info[m]->f.evidence_of("count"))
        if (const auto* v = std::get_if<std::int64_t>(n)) count += *v;
    }
    std::stable_sort(ids.begin(), ids.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    merged.record_ids.clear();
    for (auto& [i, id] : ids) merged.record_ids.push_back(std::move(id));
    for (auto& [ek, ev] : merged.evidence)
      if (ek == "count") ev = count;
    out.push_back(std::move(merged));
  }
  for (auto* x : other) out.push_back(std::move(x->f));
}

// structural's findings (see "Merge order"): the jobs' per-record findings (one record each,
// sorted by its store index) and the coordinator's dangling_reference findings (the first ones
// of `wide`, its store-wide part's, in record order), record by record, the record's own checks
// first; then the rest of `wide` (duplicate ids, supersession, cycles, versions). A dangling
// link's record is found by walking `store` forward to the next record with its id.
template <class S>
inline void merge_structural(std::vector<std::vector<decoded>>& by_job, std::size_t position,
                             std::vector<finding>& wide, const S& store,
                             std::vector<finding>& out) {
  std::vector<decoded*> own;
  for (auto& job : by_job)
    for (auto& x : job)
      if (x.position == position) own.push_back(&x);
  std::stable_sort(own.begin(), own.end(),
                   [](const decoded* a, const decoded* b) { return a->at < b->at; });
  std::vector<std::pair<std::size_t, finding*>> links;  // (store index, dangling_reference)
  std::size_t i = 0, k = 0;
  for (; k < wide.size() && wide[k].kind == finding_kinds::dangling_reference; ++k) {
    const std::string_view id =
        wide[k].record_ids.empty() ? std::string_view() : std::string_view(wide[k].record_ids[0]);
    while (i < store.size() && store.record(i).id != id) ++i;
    links.emplace_back(i, &wide[k]);
  }
  std::size_t a = 0, b = 0;
  while (a < own.size() || b < links.size()) {
    const bool take_own =
        a < own.size() &&
        (b == links.size() || (!own[a]->at.empty() && own[a]->at.front() <= links[b].first));
    if (take_own)
      out.push_back(std::move(own[a++]->f));
    else
      out.push_back(std::move(*links[b++].second));
  }
  for (; k < wide.size(); ++k) out.push_back(std::move(wide[k]));
}

// Block jobs per scope-level job (see "Blocks"): a job of one scope with more than
// `job_records` records that the check partitions (more than s.block_scopes_above records;
// block_scopes_above != 0) gets ceil(records / job_records) blocks, at most the partitions its
// k-means blocking makes of that many rows (ceil(records / partition_size)); else 0 (not split).
inline std::vector<std::size_t> plan_blocks(
    const std::vector<std::pair<std::optional<std::vector<std::string>>, std::size_t>>& jobs,
    std::size_t job_records, const default_check_settings& s) {
  const std::size_t per = std::max<std::size_t>(job_records, 1);
  const std::size_t part = std::max<std::size_t>(scope_size_blocking{}.kmeans.partition_size, 1);
  std::vector<std::size_t> out(jobs.size(), 0);
  for (std::size_t t = 0; t < jobs.size(); ++t) {
    const auto& scopes = jobs[t].first;
    const std::size_t n = jobs[t].second;
    if (!scopes || scopes->size() != 1 || n <= per || s.block_scopes_above == 0 ||
        n <= s.block_scopes_above)
      continue;
    const std::size_t b = std::min((n + per - 1) / per, (n + part - 1) / part);
    if (b >= 2) out[t] = b;
  }
  return out;
}

}  // namespace detail::pgw

/// Checks the table `mapping` describes with the default pipeline spread across workers (see
/// the file comment) and gives the report `make_default_pipeline(settings).run(store, d)` gives
/// for the same rows. `d.now` is the run's clock; `d.dimension` 0 = the store's most common.
/// @throws see the file comment ("Errors"); the run's tables are dropped unless
///         `opt.keep_tables`, failure or not.
inline pg_run_result pg_parallel_check(const std::string& conninfo, const pg_mapping& mapping,
                                       const default_check_settings& settings, detect_options d,
                                       const pg_run_options& opt = {}) {
  if (d.since || d.changed)
    throw error(error_code::precondition,
                "a check spread across workers is a full check: incremental runs (since, "
                "changed) are not supported");
  pg_run_result res;
  auto clock = std::chrono::steady_clock::now();
  auto lap = [&clock](double& into) {  // seconds since the last lap, added to `into`
    const auto now = std::chrono::steady_clock::now();
    into += std::chrono::duration<double>(now - clock).count();
    clock = now;
  };
  res.run_id = opt.run_id.empty() ? detail::pgw::random_hex(16) : opt.run_id;
  detail::pgw::check_run_id(res.run_id);
  const std::string where = describe_conninfo(conninfo) + " run " + res.run_id;
  using detail::pg::cell;
  using detail::pg::exec;
  // 1. the snapshot, held until the end
  auto snap_conn = detail::pg::connect(conninfo);
  exec(snap_conn.get(), "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", {}, where,
       "cannot begin");
  auto sr =
      exec(snap_conn.get(), "SELECT pg_export_snapshot()", {}, where, "cannot export a snapshot");
  const std::string snapshot = cell(sr.get(), 0, 0);
  // 2. the table counted in it, per scope and vector length (the mapping checked first); the
  //    rows themselves are read in step 4, while the workers run
  pg_store_options so;
  so.read_only = true;
  so.snapshot = snapshot;
  so.fetch_rows = opt.fetch_rows;
  const pg_table_census census = pg_store<>::census(conninfo, mapping, so);
  if (d.dimension == 0) d.dimension = census.dimension;
  res.dimension = d.dimension;
  // 3. jobs: scopes in byte order, batched; then large scopes split into blocks
  std::vector<std::pair<std::optional<std::vector<std::string>>, std::size_t>> jobs;
  if (census.scopes) {
    std::vector<std::string> batch;
    std::size_t n = 0;
    for (const auto& [scope, k] : *census.scopes) {
      if (!batch.empty() && n + k > std::max<std::size_t>(opt.job_records, 1)) {
        jobs.emplace_back(std::move(batch), n);
        batch.clear();
        n = 0;
      }
      batch.push_back(scope);
      n += k;
    }
    if (!batch.empty()) jobs.emplace_back(std::move(batch), n);
  } else {
    jobs.emplace_back(std::nullopt, census.rows);
  }
  // blocks[t]: block jobs of scope-level job t (0 = not split); block jobs are numbered first.
  // Without a job table a large scope is checked whole by one thread (no blocks).
  const bool table = opt.job_table;
  const std::vector<std::size_t> blocks =
      table ? detail::pgw::plan_blocks(jobs, opt.job_records, settings)
            : std::vector<std::size_t>(jobs.size(), 0);
  std::size_t block_jobs = 0;
  for (std::size_t b : blocks) block_jobs += b;
  res.block_jobs = block_jobs;
  res.jobs = jobs.size() + block_jobs;
  const bool own = !mapping.record_column.empty();
  const std::vector<std::pair<std::string, std::string>> kv = {
      {"snapshot", snapshot},
      {"now_ms", std::to_string(
                     std::chrono::duration_cast<std::chrono::milliseconds>(d.now.time_since_epoch())
                         .count())},
      {"dimension", std::to_string(d.dimension)},
      {"settings", pg_settings_fingerprint(settings)},
      {"mapping_kind", own ? "memhealth" : "json"},
      {"mapping", own ? mapping.table : pg_mapping_json(mapping).dump()},
      {"mapping_name", mapping.name},
      {"lease_ms", std::to_string(opt.lease.count())},
      {"jobs", std::to_string(res.jobs)}};
  detail::pg::conn_ptr conn;  // the job table's connection (none without a job table)
  if (table) conn = detail::pg::connect(conninfo);
  PGconn* c = conn.get();
  const std::string run_t = table ? detail::pg::ident(c, detail::pgw::run_table(res.run_id)) : "";
  const std::string jobs_t = table ? detail::pg::ident(c, detail::pgw::jobs_table(res.run_id)) : "";
  const std::string results_t =
      table ? detail::pg::ident(c, detail::pgw::results_table(res.run_id)) : "";
  std::vector<std::thread> threads;
  std::mutex err_m;
  std::exception_ptr worker_error;
  std::atomic<unsigned> running{0};
  std::atomic<bool> stop{false};  // without a job table: a job failed, the others stop
  std::vector<std::string> local_results(table ? 0 : jobs.size());
  auto drop = [&] {
    if (opt.keep_tables || !table) return;
    PQclear(
        PQexec(c, ("DROP TABLE IF EXISTS " + results_t + ", " + jobs_t + ", " + run_t).c_str()));
  };
  auto join_all = [&] {
    for (auto& t : threads)
      if (t.joinable()) t.join();
  };
  const auto stopping = [&opt] { return opt.stop_requested && opt.stop_requested(); };
  const auto stop_if_asked = [&] {
    if (stopping())
      throw error(error_code::precondition,
                  where + ": stopped on request before every job was done" +
                      (table && !opt.keep_tables ? "; the run's tables are dropped" : ""));
  };
  try {
    if (table) {
      exec(c, "BEGIN", {}, where, "cannot begin");
      exec(c,
           "CREATE TABLE " + run_t + " (key text PRIMARY KEY, value text NOT NULL); CREATE TABLE " +
               jobs_t +
               " (job int PRIMARY KEY, scopes jsonb, records int NOT NULL, state text NOT NULL "
               "DEFAULT 'pending', worker text, token text, attempts int NOT NULL DEFAULT 0, "
               "claimed_at timestamptz, expires_at timestamptz, finished_at timestamptz, error "
               "text, parent int, block int, blocks int NOT NULL DEFAULT 0); CREATE TABLE " +
               results_t + " (job int PRIMARY KEY REFERENCES " + jobs_t +
               ", worker text NOT NULL, token text NOT NULL, records int NOT NULL, findings text "
               "NOT NULL, accepted_at timestamptz NOT NULL)",
           {}, where, "cannot create the run's tables");
      for (const auto& [k, v] : kv)
        exec(c, "INSERT INTO " + run_t + " VALUES ($1, $2)", {k, v}, where, "cannot write the run");
      const std::string insert_job =
          "INSERT INTO " + jobs_t +
          " (job, scopes, records, parent, block, blocks) VALUES ($1, $2::jsonb, $3, $4, $5, $6)";
      std::size_t next_block = 0;
      for (std::size_t j = 0; j < jobs.size(); ++j) {
        std::optional<std::string> scopes;
        if (jobs[j].first) scopes = nlohmann::json(*jobs[j].first).dump();
        const std::string number = std::to_string(block_jobs + j),
                          records = std::to_string(jobs[j].second);
        for (std::size_t b = 0; b < blocks[j]; ++b)
          exec(c, insert_job,
               {std::to_string(next_block++), scopes, records, number, std::to_string(b),
                std::to_string(blocks[j])},
               where, "cannot write a job");
        exec(c, insert_job,
             {number, scopes, records, std::nullopt, std::nullopt, std::to_string(blocks[j])},
             where, "cannot write a job");
      }
      exec(c, "COMMIT", {}, where, "cannot commit the job table");
    }
    lap(res.timings.head_s);
    if (table && opt.on_ready) opt.on_ready(res.run_id);
    // 4. workers: with a job table the coordinator's thread is worker 0, after its store-wide
    //    pass (below), and the other workers start now; without one every worker is a thread
    //    taking the next job from this process's list, started now
    auto work = [&](unsigned w) {
      try {
        pg_worker_options wo;
        wo.name = detail::pgw::host_pid() + ":" + std::to_string(w);
        wo.poll = opt.poll;
        wo.fetch_rows = opt.fetch_rows;
        wo.stop_requested = opt.stop_requested;
        const auto wr = pg_run_worker(conninfo, res.run_id, settings, wo);
        std::lock_guard lock(err_m);
        res.blocks_used.joins += wr.blocks_used.joins;
        res.blocks_used.misses += wr.blocks_used.misses;
        res.timings.jobs.read_s += wr.times.read_s;
        res.timings.jobs.check_s += wr.times.check_s;
      } catch (...) {
        std::lock_guard lock(err_m);
        if (!worker_error) worker_error = std::current_exception();
      }
      --running;
    };
    std::atomic<std::size_t> next_job{0};
    const std::map<std::string, std::string> kv_map(kv.begin(), kv.end());
    auto work_here = [&](unsigned w) {
      const std::string name = detail::pgw::host_pid() + ":" + std::to_string(w);
      pg_job_times times;
      std::size_t done = 0;
      try {
        for (std::size_t j = next_job++; j < jobs.size() && !stop && !stopping(); j = next_job++) {
          pg_job_claim cl;
          cl.job = static_cast<int>(j);
          cl.scopes = jobs[j].first;
          cl.records = jobs[j].second;
          local_results[j] =
              pg_check_job(conninfo, kv_map, cl, settings, opt.fetch_rows, {}, nullptr, &times);
          ++done;
        }
      } catch (...) {
        std::lock_guard lock(err_m);
        if (!worker_error) worker_error = std::current_exception();
        stop = true;
      }
      std::lock_guard lock(err_m);
      if (done) res.jobs_by_worker[name] += done;
      res.timings.jobs.read_s += times.read_s;
      res.timings.jobs.check_s += times.check_s;
    };
    if (table) {
      if (opt.workers > 0) ++running;  // worker 0, this thread, later
      for (unsigned w = 1; w < opt.workers; ++w) {
        ++running;
        threads.emplace_back(work, w);
      }
    } else {
      for (unsigned w = 0; w < std::max(1u, opt.workers); ++w) threads.emplace_back(work_here, w);
    }
    // the whole table, read while the workers check their jobs; it must be what was counted.
    // The store-wide detectors need no vector, so the vectors are not read (only their
    // lengths), unless the caller wants the rows with them (on_rows, rows_with_vectors).
    pg_store_options wide_opt = so;
    wide_opt.vectors = opt.on_rows && opt.rows_with_vectors;
    auto store = pg_store<>::open(conninfo, mapping, wide_opt);
    lap(res.timings.read_s);
    res.load_issues = store.load_issues();
    if (store.rows_read() != census.rows || store.dimension() != census.dimension)
      throw error(error_code::io, where + ": the rows read (" + std::to_string(store.rows_read()) +
                                      ", most common dimension " +
                                      std::to_string(store.dimension()) +
                                      ") are not the rows counted in the same snapshot (" +
                                      std::to_string(census.rows) + ", dimension " +
                                      std::to_string(census.dimension) + ")");
    // the jobs were cut by the scope expression: it must be the records' (rows skipped for a
    // load issue have no record to compare)
    if (census.scopes && store.rows_read() == store.size()) {
      std::unordered_map<std::string_view, std::size_t> per;
      for (std::size_t i = 0; i < store.size(); ++i) ++per[store.record(i).scope];
      bool same = per.size() == census.scopes->size();
      for (const auto& [scope, k] : *census.scopes) {
        const auto it = per.find(scope);
        same = same && it != per.end() && it->second == k;
      }
      if (!same)
        throw error(error_code::io, where +
                                        ": the records' scopes are not the scopes counted by the "
                                        "mapping's scope expression in the same snapshot");
    }
    const auto p = make_default_pipeline(settings);
    detection_context<pg_store<>> whole(store, d);
    std::vector<std::vector<finding>> wide(
        std::tuple_size_v<std::remove_cvref_t<decltype(p.detectors())>>);
    std::vector<finding> cross;
    {
      std::size_t position = 0;
      auto one = [&](const auto& det) {
        using D = std::remove_cvref_t<decltype(det)>;
        if constexpr (std::is_same_v<D, structural_detector>) {
          D part = det;
          part.part = structural_detector::part_kind::store_wide;
          part.run(whole, wide[position]);
        } else if constexpr (detail::pgw::in_coordinator<D>) {
          det.run(whole, wide[position]);
        } else if constexpr (requires { det.cross_scope_check; }) {
          if (det.cross_scope_check) {
            // the records whose normalised text is in two or more scopes
            const auto& texts = whole.normalized_texts();
            std::unordered_map<std::string_view, std::pair<std::string_view, bool>> seen;
            for (std::size_t i = 0; i < store.size(); ++i) {
              if (texts[i].empty()) continue;
              auto [it, fresh] = seen.try_emplace(texts[i], store.record(i).scope, false);
              if (!fresh && it->second.first != store.record(i).scope) it->second.second = true;
            }
            std::vector<std::size_t> idx;
            for (std::size_t i = 0; i < store.size(); ++i)
              if (!texts[i].empty() && seen.at(texts[i]).second) idx.push_back(i);
            if (!idx.empty()) {
              subset_store<pg_store<>> sub(store, std::move(idx));
              detection_context<subset_store<pg_store<>>> part(sub, whole.options());
              std::vector<finding> all;
              det.run(part, all);
              for (auto& f : all)
                if (f.kind == finding_kinds::cross_scope_duplicate) cross.push_back(std::move(f));
            }
          }
        }
        ++position;
      };
      std::apply([&](const auto&... det) { (one(det), ...); }, p.detectors());
    }
    // the store index of every row key, for the merge (made while the workers still run)
    std::unordered_map<std::string, std::size_t> at;
    at.reserve(store.size());
    for (std::size_t i = 0; i < store.size(); ++i) at.emplace(store.store_key(i), i);
    lap(res.timings.store_wide_s);
    stop_if_asked();
    // (job, findings) of every scope-level job, in job order
    std::vector<std::pair<std::string, std::string>> results;
    if (table) {
      // worker 0: this thread checks jobs too, until none is left
      if (opt.workers > 0) work(0);
      stop_if_asked();
      lap(res.timings.own_jobs_s);
      // wait for every job
      const auto start = std::chrono::steady_clock::now();
      while (true) {
        auto st = exec(c,
                       "SELECT count(*) FILTER (WHERE state = 'done'), count(*) FILTER (WHERE "
                       "state = 'failed'), (SELECT 'job ' || job || ': ' || coalesce(error, '') "
                       "FROM " +
                           jobs_t + " WHERE state = 'failed' ORDER BY job LIMIT 1) FROM " + jobs_t,
                       {}, where, "cannot read the job table");
        if (cell(st.get(), 0, 1) != "0")
          throw error(error_code::io, where + ": a job failed: " + cell(st.get(), 0, 2));
        if (cell(st.get(), 0, 0) == std::to_string(res.jobs)) break;
        if (opt.workers > 0 && running == 0) {
          std::lock_guard lock(err_m);
          if (worker_error) std::rethrow_exception(worker_error);
        }
        stop_if_asked();
        if (opt.wait_limit.count() > 0 && std::chrono::steady_clock::now() - start > opt.wait_limit)
          throw error(error_code::io, where + ": not every job was done within the wait limit (" +
                                          std::to_string(opt.wait_limit.count()) + " ms)");
        std::this_thread::sleep_for(opt.poll);
      }
      join_all();
      lap(res.timings.wait_s);
      // 5. merge
      auto rr = exec(c,
                     "SELECT r.job, r.worker, r.findings, j.attempts, j.parent IS NOT NULL FROM " +
                         results_t + " r JOIN " + jobs_t + " j USING (job) ORDER BY r.job",
                     {}, where, "cannot read the results");
      if (PQntuples(rr.get()) != static_cast<int>(res.jobs))
        throw error(error_code::io, where + ": " + std::to_string(PQntuples(rr.get())) +
                                        " results for " + std::to_string(res.jobs) + " jobs");
      for (int k = 0; k < PQntuples(rr.get()); ++k) {
        ++res.jobs_by_worker[cell(rr.get(), k, 1)];
        res.job_claims += std::stoul(cell(rr.get(), k, 3));
        if (cell(rr.get(), k, 4) == "t") continue;  // a block job: its pairs went to its scope's
        results.emplace_back(cell(rr.get(), k, 0), cell(rr.get(), k, 2));
      }
    } else {
      join_all();
      lap(res.timings.wait_s);
      if (worker_error) std::rethrow_exception(worker_error);
      stop_if_asked();
      res.job_claims = jobs.size();
      for (std::size_t j = 0; j < jobs.size(); ++j)
        results.emplace_back(std::to_string(j), std::move(local_results[j]));
    }
    std::vector<std::vector<detail::pgw::decoded>> by_job;  // scope-level jobs, in job order
    by_job.reserve(jobs.size());
    for (const auto& [job, text] : results) {
      const auto arr = nlohmann::json::parse(text, nullptr, false);
      if (!arr.is_array())
        throw error(error_code::parse,
                    where + ": the result of job " + job + " is not a JSON array");
      auto& dst = by_job.emplace_back();
      for (const auto& e : arr) {
        detail::pgw::decoded x;
        std::vector<std::string> rows;
        x.f = detail::pgw::decode_finding(e, x.position, rows);
        for (const auto& key : rows) {
          auto it = at.find(key);
          if (it == at.end())
            throw error(error_code::parse,
                        where + ": a result names row " + key + ", which is not in the snapshot");
          x.at.push_back(it->second);
        }
        dst.push_back(std::move(x));
      }
    }
    results.clear();
    for (auto& job : by_job)
      for (auto& x : job) std::sort(x.at.begin(), x.at.end());
    // (info check_skipped keeps its ids' order for the merge: re-derive it per id)
    for (auto& job : by_job)
      for (auto& x : job)
        if (x.f.kind == finding_kinds::check_skipped && x.f.severity == severity::info) {
          x.at.clear();
          for (const auto& id : x.f.record_ids) {
            auto i = store.find(id);
            x.at.push_back(i ? *i : 0);
          }
        }
    report& r = res.findings;
    r.records_total = store.size();
    r.records_checked = store.size();
    std::size_t position = 0;
    auto put = [&](const auto& det) {
      using D = std::remove_cvref_t<decltype(det)>;
      if constexpr (std::is_same_v<D, structural_detector>) {
        detail::pgw::merge_structural(by_job, position, wide[position], store, r.findings);
      } else if constexpr (detail::pgw::in_jobs<D>::value) {
        detail::pgw::merge_local(by_job, position, r.findings);
        if constexpr (requires { det.cross_scope_check; })
          for (auto& f : cross) r.findings.push_back(std::move(f));
      } else {
        for (auto& f : wide[position]) r.findings.push_back(std::move(f));
      }
      ++position;
    };
    std::apply([&](const auto&... det) { (put(det), ...); }, p.detectors());
    lap(res.timings.merge_s);
    if (opt.on_rows) opt.on_rows(store);
  } catch (...) {
    // stop the workers: without the run's tables they end with an error; this process's list
    // workers after their current job
    stop = true;
    drop();
    join_all();
    throw;
  }
  drop();
  PQclear(PQexec(snap_conn.get(), "COMMIT"));
  return res;
}

}  // namespace memhealth
