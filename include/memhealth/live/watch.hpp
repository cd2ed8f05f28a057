#pragma once
/// @file watch.hpp
/// `memhealth::watcher`: continuous checking beside a live agent (issue 20, `memhealth watch`).
/// Each `poll(store, now, sink)` reads a snapshot of the store, sees what changed since the last
/// poll (by content fingerprint, so a writer that forgets `updated_at` is still seen), opens risk
/// windows, and runs the checks the `scheduler` says are due; every finding is handed to `sink`
/// once while it stays open, and once more when a full run no longer finds it (resolved).
///
/// ## Tasks and their default periods (`watch_cadence`, the reference cadence: SPEC section 5)
/// | task | runs | default |
/// |---|---|---|
/// | `write_checks` | duplicates, conflicts, hygiene on the records written since its last run ("at
/// write time", "asynchronously after writes") | every poll that saw writes | | `structural` |
/// structural checks on the records changed since its last run | 5 min | | `structural_full` |
/// structural checks on every record | 1 h | | `full` | every detector on every record (the daily
/// duplicate and conflict runs) | 24 h | | `risk_window` | every detector on the records of the
/// scopes a risk window touched | on a trigger | | `drift` | drift and the migration gate between
/// the old and the new embedding model | on a new `embedding_version` | | `monitor` | the retrieval
/// monitor over the events added (`add_events`; those of the two windows before the newest event
/// are kept) | 1 h |
///
/// ## Risk windows (`watch_risk_options`)
/// A burst of writes (at least `burst_writes` records changed within `burst_window`), a new
/// ingest batch id (metadata key from `batch_keys`), a record whose scope changed: each triggers
/// `risk_window` at once for the scopes involved. A new embedding version triggers `drift` and
/// `structural_full`.
///
/// ## State
/// Cursors (`watch:<task>`) and the schedule live in `sqlite_state`, the per-record fingerprints,
/// reported findings and batch ids in `watch_state`. A restart resumes from them: a task whose
/// run did not complete runs again, and what it finds again is not reported twice (findings
/// are keyed by `finding_key`). The records' fingerprints are also kept in memory between polls
/// (the long-running process's cache), so a poll writes only what changed. Each task run is also
/// noted in the findings history of `sqlite_state` (`watch_options::history_scope`): uptime and
/// the recurrence of repaired faults are computed from it (store/run_history.hpp).
///
/// Cost of a poll: O(n x (record size + d)) to fingerprint the snapshot, plus the due tasks;
/// an incremental task checks only its changed records (compared with their scope): its
/// duplicate, conflict and hygiene checks run on the scopes of those records
/// (`run_incremental`, detect/incremental.hpp), with the normalised texts of the store cached
/// by content across polls.
///
/// Errors: `memhealth::error` from the state database (io, busy, schema) propagate; the poll
/// then changed nothing it had not committed (cursors advance only after a task's findings were
/// handed over and recorded). Bad data is a finding, never an exception.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "memhealth/config.hpp"
#include "memhealth/detect/default_pipeline.hpp"
#include "memhealth/detect/finding.hpp"
#include "memhealth/detect/incremental.hpp"
#include "memhealth/drift/drift.hpp"
#include "memhealth/drift/migration_gate.hpp"
#include "memhealth/live/scheduler.hpp"
#include "memhealth/live/watch_state.hpp"
#include "memhealth/monitor/events.hpp"
#include "memhealth/monitor/retrieval_monitor.hpp"
#include "memhealth/record/memory_record.hpp"
#include "memhealth/repair/finding_identity.hpp"
#include "memhealth/similarity/kernels.hpp"
#include "memhealth/store/run_history.hpp"
#include "memhealth/store/sqlite_state.hpp"
#include "memhealth/text/normalize.hpp"

namespace memhealth {

/// Names of the watch's tasks.
namespace watch_tasks {
inline constexpr std::string_view write_checks = "write_checks";        ///< on writes
inline constexpr std::string_view structural = "structural";            ///< incremental
inline constexpr std::string_view structural_full = "structural_full";  ///< every record
inline constexpr std::string_view full = "full";                        ///< every detector
inline constexpr std::string_view risk_window = "risk_window";          ///< on a trigger
inline constexpr std::string_view drift = "drift";                      ///< on a model switch
inline constexpr std::string_view monitor = "monitor";                  ///< retrieval events
}  // namespace watch_tasks

/// Periods of the watch (defaults: the reference cadence). 0 = only when triggered.
struct watch_cadence {
  std::chrono::milliseconds poll{std::chrono::seconds{10}};       ///< store re-read interval (> 0)
  std::chrono::milliseconds write_checks{0};                      ///< 0 = at every poll with writes
  std::chrono::milliseconds structural{std::chrono::minutes{5}};  ///< incremental structural
  std::chrono::milliseconds structural_full{std::chrono::hours{1}};  ///< full structural
  std::chrono::milliseconds full{std::chrono::hours{24}};            ///< every detector
  std::chrono::milliseconds monitor{std::chrono::hours{1}};          ///< retrieval aggregation
};

/// What opens a risk window.
struct watch_risk_options {
  std::size_t burst_writes = 200;  ///< records changed within `burst_window` (0 = never a burst)
  std::chrono::milliseconds burst_window{std::chrono::minutes{1}};  ///< burst window length
  /// Metadata keys naming an ingest batch (the first string value found is the batch id).
  std::vector<std::string> batch_keys{"ingest_batch", "batch", "import_batch", "source_batch"};
};

/// Everything a watcher is configured with.
struct watch_options {
  default_check_settings check{};    ///< thresholds of the detectors
  watch_cadence cadence{};           ///< task periods
  watch_risk_options risk{};         ///< risk-window triggers
  monitor_options monitor{};         ///< retrieval monitor (window = its aggregation window)
  drift_options drift{};             ///< drift test
  gate_options gate{};               ///< migration gate
  std::size_t version_sample = 256;  ///< vectors kept per embedding version for drift (>= 3)
  std::size_t dimension = 0;         ///< expected embedding dimension (0 = the store's)
  /// Keep every finding of a poll's task runs (new and already open) in
  /// `watch_poll_result::findings`, for a caller that plans repairs from them (watch_repair.hpp).
  bool collect_findings = false;
  /// The store's name in the findings history of the state database (`memhealth watch`: its
  /// absolute path, "sqlite:" kept, as the repair history scopes it). After each task run the
  /// watcher notes it there (`sqlite_state::note_history_run`): a `full` run, or one that changed
  /// whether an error or critical finding is open, with the findings it found (a repaired fault
  /// found again has recurred).
  std::string history_scope;
};

/// One thing the watcher hands to the sink.
struct watch_event {
  bool resolved = false;  ///< false: a new finding; true: an open one no longer found
  std::string task;       ///< the task that found (or stopped finding) it
  std::string key;        ///< `finding_key`
  finding what;           ///< the finding (for a resolved one: detector, kind, severity only)
};

/// One task run of a poll.
struct watch_task_run {
  std::string task;                  ///< task name
  std::vector<std::string> reasons;  ///< triggers that made it run ("" when its period came)
  std::size_t records_checked = 0;   ///< records checked (incremental) or in the store
  std::size_t findings = 0;          ///< findings the run produced
  std::size_t reported = 0;          ///< of them, new (handed to the sink)
  std::size_t resolved = 0;          ///< open findings it resolved
  double seconds = 0;                ///< wall time of the run
};

/// What one poll saw and did.
struct watch_poll_result {
  std::size_t records = 0;                ///< records in the snapshot
  std::size_t changed = 0;                ///< new or changed by content since the last poll
  std::size_t removed = 0;                ///< records gone since the last poll
  std::vector<std::string> risk_windows;  ///< risk windows opened (one line each)
  std::vector<std::string> new_versions;  ///< embedding versions seen for the first time
  std::vector<watch_task_run> runs;       ///< tasks run, in order
  std::size_t open_findings = 0;          ///< findings reported and not resolved, after it
  /// With `watch_options::collect_findings`: every finding the poll's runs produced (new and
  /// already open), once per `finding_key`; otherwise empty.
  std::vector<finding> findings;
};

/// Continuous checking of one store (see the file comment). One thread; the states must outlive
/// it. Records are `memory_record` (fingerprints use its canonical form).
class watcher {
 public:
  /// A watcher keeping its state in `state` and `wstate` (same database). @throws
  /// error(invalid_argument) for a poll period <= 0 or a version sample < 3; error(io/...) from
  /// the state database.
  watcher(watch_options opt, sqlite_state& state, watch_state& wstate)
      : opt_(std::move(opt)), state_(state), wstate_(wstate), sched_(make_tasks(opt_.cadence)) {
    if (opt_.cadence.poll.count() <= 0)
      throw error(error_code::invalid_argument, "watch: the poll period must be > 0");
    if (opt_.version_sample < 3)
      throw error(error_code::invalid_argument, "watch: version_sample must be >= 3");
    for (const auto& t : sched_.tasks())
      if (auto s = state_.schedule(state_name(t.name))) sched_.restore(t.name, s->first, s->second);
    known_ = wstate_.records();
    batches_ = wstate_.batches();
    for (auto& f : wstate_.open_findings()) open_.emplace(f.key, std::move(f));
    first_poll_ = known_.empty();
  }

  /// Adds retrieval and feedback events for the `monitor` task (kept for two monitor windows).
  void add_events(std::vector<retrieval_event> retrievals, std::vector<feedback_event> feedback) {
    for (auto& e : retrievals) retrievals_.push_back(std::move(e));
    for (auto& e : feedback) feedback_.push_back(std::move(e));
    has_events_ = has_events_ || !retrievals_.empty() || !feedback_.empty();
  }

  /// Makes task `name` (a `watch_tasks` name) run at the next poll whatever its period, for
  /// `reason` (shown in the poll's log line). @return false for an unknown task.
  bool request(std::string_view name, std::string reason) {
    return sched_.trigger(name, std::move(reason));
  }

  /// The scheduler (to see what is due and when).
  [[nodiscard]] const scheduler& schedule() const noexcept { return sched_; }
  /// Findings reported and not resolved.
  [[nodiscard]] std::size_t open_findings() const noexcept { return open_.size(); }
  /// Open findings by (kind, severity).
  [[nodiscard]] std::map<std::pair<std::string, std::string>, std::size_t> open_by_kind() const {
    std::map<std::pair<std::string, std::string>, std::size_t> m;
    for (const auto& [k, f] : open_) ++m[{f.kind, f.severity}];
    return m;
  }

  /// Reads the snapshot `store` at `now`, opens risk windows and runs the due tasks, handing
  /// new and resolved findings to `sink(const watch_event&)` before they are recorded (a sink
  /// that throws leaves them unrecorded: they are handed over again by the next run).
  /// A `full` run covers the record checks due with it (`write_checks`, `structural`,
  /// `structural_full`, `risk_window`: they complete without running), as `structural_full`
  /// covers `structural`.
  template <record_store S, class Sink>
  watch_poll_result poll(const S& store, utc_time now, Sink&& sink) {
    static_assert(std::is_same_v<typename S::record_type, memory_record>,
                  "watcher: the store's records must be memory_record");
    using namespace watch_tasks;
    watch_poll_result res;
    collected_.clear();
    res.records = store.size();
    see_snapshot(store, now, res);
    auto due = sched_.due(now);
    const auto is_due = [&](std::string_view t) {
      return std::find(due.begin(), due.end(), t) != due.end();
    };
    std::vector<std::string_view> covered;
    if (is_due(full))
      covered = {write_checks, structural, structural_full, risk_window};
    else if (is_due(structural_full))
      covered = {structural};
    if (is_due(full)) res.runs.push_back(run_task(store, std::string(full), now, sink, &res));
    for (const auto& name : due) {
      if (name == full) continue;
      if (std::find(covered.begin(), covered.end(), name) != covered.end() ||
          (name == monitor && !has_events_)) {
        if (name == risk_window) risk_scopes_.clear();
        state_.set_cursor(state_name(name), now);
        complete(name, now);
        continue;
      }
      res.runs.push_back(run_task(store, name, now, sink, &res));
    }
    collected_.clear();
    removed_.clear();
    res.open_findings = open_.size();
    return res;
  }

 private:
  static std::vector<scheduled_task> make_tasks(const watch_cadence& c) {
    using namespace watch_tasks;
    return {{std::string(write_checks), c.write_checks},
            {std::string(structural), c.structural},
            {std::string(structural_full), c.structural_full},
            {std::string(full), c.full},
            {std::string(risk_window), std::chrono::milliseconds{0}},
            {std::string(drift), std::chrono::milliseconds{0}},
            {std::string(monitor), c.monitor}};
  }
  static std::string state_name(std::string_view task) { return "watch:" + std::string(task); }
  static std::int64_t ms(utc_time t) noexcept {
    return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  }

  std::string batch_of(const memory_record& r) const {
    for (const auto& k : opt_.risk.batch_keys) {
      const auto it = r.metadata.find(k);
      if (it != r.metadata.end())
        if (const auto* s = std::get_if<std::string>(&it->second); s && !s->empty()) return *s;
    }
    return {};
  }

  // Fingerprints the snapshot, records what changed, opens risk windows.
  template <class S>
  void see_snapshot(const S& store, utc_time now, watch_poll_result& res) {
    const std::int64_t now_ms = ms(now);
    std::vector<std::pair<std::string, watched_record>> changed;
    std::vector<std::string> fresh_batches;
    std::set<std::string> risk_scopes_now;
    std::unordered_set<std::string> present;
    present.reserve(store.size());
    std::map<std::string, std::size_t> versions;
    std::map<std::string, std::vector<std::string>> batch_scopes;
    for (std::size_t i = 0; i < store.size(); ++i) {
      const memory_record& r = store.record(i);
      const auto emb = store.embedding(i);
      present.insert(r.id);
      if (!emb.empty() && !r.embedding_version.empty()) ++versions[r.embedding_version];
      sample_vector(r, emb);
      const std::uint64_t fp = record_fingerprint(r, emb);
      const auto it = known_.find(r.id);
      if (it != known_.end() && it->second.fingerprint == fp) continue;
      watched_record w{fp, now_ms, r.scope, batch_of(r)};
      if (it != known_.end() && it->second.scope != r.scope && !first_poll_) {
        res.risk_windows.push_back("scope changed: " + r.id + " (" + it->second.scope + " -> " +
                                   r.scope + ")");
        risk_scopes_now.insert(it->second.scope);
        risk_scopes_now.insert(r.scope);
      }
      if (!w.batch.empty() && !batches_.count(w.batch)) {
        batches_.insert(w.batch);
        fresh_batches.push_back(w.batch);
      }
      if (!w.batch.empty()) batch_scopes[w.batch].push_back(r.scope);
      changed.emplace_back(r.id, std::move(w));
    }
    std::vector<std::string> removed;
    for (const auto& [id, w] : known_)
      if (!present.count(id)) removed.push_back(id);
    // A record that links to a removed one counts as changed (its link now dangles), and so does
    // every other record of an open finding that names a removed one (the finding is resolved,
    // and what remains of it, e.g. two of a cluster of three, is found again).
    if (!removed.empty()) {
      const std::set<std::string> gone(removed.begin(), removed.end());
      std::set<std::string> co_members;
      for (const auto& [key, f] : open_) {
        const auto ids = ids_of_key(key);
        if (std::any_of(ids.begin(), ids.end(),
                        [&](const std::string& x) { return gone.count(x); }))
          co_members.insert(ids.begin(), ids.end());
      }
      std::set<std::string> already;
      for (const auto& c : changed) already.insert(c.first);
      for (std::size_t i = 0; i < store.size(); ++i) {
        const memory_record& r = store.record(i);
        bool links = gone.count(r.links.duplicate_of) > 0 || co_members.count(r.id) > 0;
        for (const auto& t : r.links.related_ids) links = links || gone.count(t) > 0;
        for (const auto& t : r.links.supersedes) links = links || gone.count(t) > 0;
        if (!links || already.count(r.id) || !known_.count(r.id)) continue;
        auto w = known_.at(r.id);
        w.changed_ms = now_ms;
        changed.emplace_back(r.id, std::move(w));
      }
    }
    res.changed = changed.size();
    res.removed = removed.size();
    wstate_.update_records(changed, removed, fresh_batches, now_ms);
    for (auto& [id, w] : changed) known_[id] = w;
    for (const auto& id : removed) known_.erase(id);
    // a new ingest batch (not on the first poll: everything is new then)
    if (!first_poll_)
      for (const auto& b : fresh_batches) {
        res.risk_windows.push_back("new ingest batch: " + b);
        for (const auto& s : batch_scopes[b]) risk_scopes_now.insert(s);
      }
    // a burst of writes
    if (!first_poll_) bursts_.emplace_back(now, changed.size());  // not the first snapshot
    while (!bursts_.empty() && bursts_.front().first + opt_.risk.burst_window <= now)
      bursts_.pop_front();
    std::size_t in_window = 0;
    for (const auto& b : bursts_) in_window += b.second;
    if (!first_poll_ && opt_.risk.burst_writes > 0 && in_window >= opt_.risk.burst_writes &&
        !changed.empty()) {
      res.risk_windows.push_back("write burst: " + std::to_string(in_window) + " records within " +
                                 std::to_string(opt_.risk.burst_window.count() / 1000) + " s");
      for (const auto& [id, w] : changed) risk_scopes_now.insert(w.scope);
      bursts_.clear();  // one window per burst
    }
    if (!risk_scopes_now.empty()) {
      risk_scopes_.insert(risk_scopes_now.begin(), risk_scopes_now.end());
      sched_.trigger(watch_tasks::risk_window, "risk window");
    }
    // findings about removed records are resolved at once (below, by the next full run too)
    removed_.insert(removed.begin(), removed.end());
    if (!changed.empty() || !removed.empty())
      sched_.trigger(watch_tasks::write_checks, std::to_string(changed.size()) + " written");
    // a new embedding model
    auto fresh = state_.note_embedding_versions(versions, now);
    if (!first_poll_ && !fresh.empty()) {
      for (const auto& v : fresh) {
        res.new_versions.push_back(v);
        new_versions_.push_back(v);
      }
      sched_.trigger(watch_tasks::drift, "new embedding version");
      sched_.trigger(watch_tasks::structural_full, "new embedding version");
    }
    // a new model's sample that has doubled since drift last ran (a migration under way): again,
    // until the sample is full
    for (const auto& [v, last] : drift_sample_at_) {
      const auto it = samples_.find(v);
      const std::size_t now_n = it == samples_.end() ? 0 : it->second.size();
      if (now_n >= 2 * std::max<std::size_t>(last, 1) && last < opt_.version_sample &&
          std::find(new_versions_.begin(), new_versions_.end(), v) == new_versions_.end()) {
        new_versions_.push_back(v);
        sched_.trigger(watch_tasks::drift, "the new model's sample grew");
      }
    }
    first_poll_ = false;
  }

  // Keeps up to version_sample (normalised text hash, vector) per embedding version for drift.
  // Each record is sampled once per version (by id).
  void sample_vector(const memory_record& r, std::span<const float> emb) {
    if (emb.empty() || r.embedding_version.empty()) return;
    auto& s = samples_[r.embedding_version];
    if (s.size() >= opt_.version_sample) return;
    if (!sampled_ids_[r.embedding_version].insert(r.id).second) return;
    s.push_back({std::hash<std::string>{}(text_normalizer{}(r.content)),
                 std::vector<float>(emb.begin(), emb.end())});
  }

  // The records a task checks: nullptr = all.
  template <class S>
  std::shared_ptr<const std::vector<bool>> selection(const S& store, std::string_view task,
                                                     std::size_t& n) const {
    n = store.size();
    if (task == watch_tasks::structural_full || task == watch_tasks::full) return nullptr;
    auto mask = std::make_shared<std::vector<bool>>(store.size(), false);
    n = 0;
    if (task == watch_tasks::risk_window) {
      for (std::size_t i = 0; i < store.size(); ++i)
        if (risk_scopes_.count(store.record(i).scope)) (*mask)[i] = true, ++n;
      return mask;
    }
    const auto cursor = state_.cursor(state_name(task));
    const std::int64_t c = cursor ? ms(*cursor) : std::numeric_limits<std::int64_t>::min();
    for (std::size_t i = 0; i < store.size(); ++i) {
      const auto it = known_.find(store.record(i).id);
      if (it == known_.end() || it->second.changed_ms > c) (*mask)[i] = true, ++n;
    }
    return mask;
  }

  template <class S, class Sink>
  watch_task_run run_task(const S& store, const std::string& task, utc_time now, Sink& sink,
                          watch_poll_result* res) {
    const auto t0 = std::chrono::steady_clock::now();
    watch_task_run run;
    run.task = task;
    run.reasons = sched_.state_of(task).triggers;
    std::vector<finding> found;
    std::set<std::string> detectors;  // whose open findings a full run may resolve
    bool full = false;
    if (task == watch_tasks::drift) {
      found = drift_findings();
      run.records_checked = 0;
    } else if (task == watch_tasks::monitor) {
      found = monitor_findings(store, now);
    } else {
      std::size_t n = 0;
      auto mask = selection(store, task, n);
      run.records_checked = n;
      full = mask == nullptr;
      if (n > 0) {
        detect_options d;
        d.now = now;
        d.dimension = opt_.dimension ? opt_.dimension : store.dimension();
        d.changed = mask;
        auto p = make_default_pipeline(opt_.check);
        const auto& ds = p.detectors();
        // Incremental tasks run the scope-local detectors on the scopes of their changed records
        // (detect/incremental.hpp: same findings); the text-hash cache lives across polls and
        // is dropped when it holds many more texts than the store.
        if (text_hashes_.size() > 2 * store.size() + 1024) text_hashes_.clear();
        report r;
        if (task == watch_tasks::write_checks) {
          r = run_incremental(
              pipeline{std::get<1>(ds), std::get<2>(ds), std::get<5>(ds), std::get<6>(ds),
                       std::get<7>(ds), std::get<8>(ds), std::get<9>(ds)},
              store, d, text_normalizer{}, &text_hashes_);
        } else if (task == watch_tasks::structural || task == watch_tasks::structural_full) {
          r = run_incremental(pipeline{std::get<0>(ds)}, store, d, text_normalizer{},
                              &text_hashes_);
          detectors.insert(std::string(structural_detector::name));
        } else {  // full, risk_window
          r = run_incremental(p, store, d, text_normalizer{}, &text_hashes_);
          std::apply([&](const auto&... x) { (detectors.insert(std::string(x.name)), ...); }, ds);
        }
        found = std::move(r.findings);
      }
    }
    run.findings = found.size();
    // new findings, then resolutions
    std::vector<reported_finding> opened;
    std::set<std::string> seen;
    for (auto& f : found) {
      auto key = finding_key(f);
      if (!seen.insert(key).second) continue;
      if (opt_.collect_findings && collected_.insert(key).second) res->findings.push_back(f);
      if (open_.count(key)) continue;
      sink(watch_event{false, task, key, f});
      opened.push_back({key, f.detector, f.kind, std::string(to_string(f.severity))});
      ++run.reported;
    }
    // ids of the new findings by (detector, kind): an open finding of the same detector and kind
    // that shares a record with one of them is superseded (a cluster that grew or shrank); a
    // store-wide finding (mixed_embedding_version) is one per store
    std::map<std::pair<std::string, std::string>, std::set<std::string>> new_ids;
    for (const auto& f : opened) {
      auto& ids = new_ids[{f.detector, f.kind}];
      for (auto& id : ids_of_key(f.key)) ids.insert(std::move(id));
    }
    std::vector<std::string> resolved;
    for (const auto& [key, f] : open_) {
      const bool gone_record = mentions_removed(key);
      const bool not_found = full && detectors.count(f.detector) && !seen.count(key);
      bool superseded = false;
      if (const auto it = new_ids.find({f.detector, f.kind});
          it != new_ids.end() && !seen.count(key)) {
        superseded = f.kind == finding_kinds::mixed_embedding_version;
        for (const auto& id : ids_of_key(key)) superseded = superseded || it->second.count(id) > 0;
      }
      if (!gone_record && !not_found && !superseded) continue;
      finding w;
      w.detector = f.detector;
      w.kind = f.kind;
      w.severity = parse_severity(f.severity).value_or(severity::warning);
      w.record_ids = ids_of_key(key);
      w.with("reason", std::string(gone_record  ? "a record it names was removed"
                                   : superseded ? "superseded by a finding of the same records"
                                                : "a full run no longer finds it"));
      sink(watch_event{true, task, key, std::move(w)});
      resolved.push_back(key);
    }
    run.resolved = resolved.size();
    wstate_.note_findings(opened, resolved, ms(now));
    for (auto& f : opened) open_.emplace(f.key, std::move(f));
    for (const auto& k : resolved) open_.erase(k);
    {  // the findings history (uptime, recurrence of repaired faults)
      std::size_t open_errors = 0;
      for (const auto& [k, f] : open_)
        open_errors += f.severity == "error" || f.severity == "critical";
      const std::vector<std::string> found_keys(seen.begin(), seen.end());
      (void)state_.note_history_run(opt_.history_scope, now, task == watch_tasks::full, open_errors,
                                    found_keys);
    }
    if (task == watch_tasks::risk_window) risk_scopes_.clear();
    if (task == watch_tasks::drift) {
      for (const auto& v : new_versions_) {
        const auto it = samples_.find(v);
        drift_sample_at_[v] = it == samples_.end() ? 0 : it->second.size();
      }
      new_versions_.clear();
    }
    state_.set_cursor(state_name(task), now);
    complete(task, now);
    run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return run;
  }

  void complete(std::string_view task, utc_time now) {
    const auto s = sched_.completed(task, now);
    state_.set_schedule(state_name(task), now, s.next.value_or(now));
  }

  // The record ids a finding key names (see finding_key).
  static std::vector<std::string> ids_of_key(const std::string& key) {
    std::vector<std::string> ids;
    std::size_t b = 0;
    for (int field = 0; b <= key.size(); ++field) {
      const std::size_t e = std::min(key.find('\x1f', b), key.size());
      if (field >= 2) {
        const std::string part = key.substr(b, e - b);
        if (part.find('=') != std::string::npos) break;  // the evidence part
        ids.push_back(part);
      }
      b = e + 1;
    }
    return ids;
  }

  // True when the finding key names a record id removed at this poll.
  bool mentions_removed(const std::string& key) const {
    if (removed_.empty()) return false;
    const auto ids = ids_of_key(key);
    return std::any_of(ids.begin(), ids.end(),
                       [&](const std::string& id) { return removed_.count(id) > 0; });
  }

  // Drift and the migration gate between each new version and the most sampled other one.
  std::vector<finding> drift_findings() const {
    std::vector<finding> out;
    for (const auto& v : new_versions_) {
      const auto cur = samples_.find(v);
      std::string ref_version;
      std::size_t best = 0;
      for (const auto& [name, s] : samples_)
        if (name != v && s.size() > best) best = s.size(), ref_version = name;
      const auto tag = [&](finding f) {
        f.with("reference_version", ref_version).with("current_version", v);
        out.push_back(std::move(f));
      };
      if (cur == samples_.end() || ref_version.empty()) {
        finding f;
        f.kind = std::string(finding_kinds::check_skipped);
        f.severity = severity::info;
        f.detector = "drift";
        f.with("reason", std::string("no sample of another embedding version to compare with"));
        tag(std::move(f));
        continue;
      }
      const auto& ref = samples_.at(ref_version);
      const auto rows = [](const std::vector<sampled_vector>& s) {
        std::size_t d = 0;
        for (const auto& x : s) d = std::max(d, x.v.size());
        row_matrix m(static_cast<Eigen::Index>(s.size()), static_cast<Eigen::Index>(d));
        m.setZero();
        for (std::size_t i = 0; i < s.size(); ++i)
          for (std::size_t j = 0; j < s[i].v.size(); ++j)
            m(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) = s[i].v[j];
        return m;
      };
      const row_matrix R = rows(ref), C = rows(cur->second);
      for (auto& f : detect_drift(R, C, opt_.drift).findings) tag(std::move(f));
      // the gate needs the same texts in both spaces
      std::vector<sampled_vector> a, b;
      for (const auto& x : ref)
        for (const auto& y : cur->second)
          if (x.text_hash == y.text_hash) {
            a.push_back(x);
            b.push_back(y);
            break;
          }
      if (a.size() >= 3) {
        for (auto& f : migration_gate(rows(a), rows(b), opt_.gate).findings) tag(std::move(f));
      } else {
        finding f;
        f.kind = std::string(finding_kinds::check_skipped);
        f.severity = severity::info;
        f.detector = "migration_gate";
        f.with("reason", std::string("fewer than 3 texts embedded by both models"))
            .with("texts_in_both", static_cast<std::int64_t>(a.size()));
        tag(std::move(f));
      }
    }
    return out;
  }

  template <class S>
  std::vector<finding> monitor_findings(const S& store, utc_time /*now*/) {
    // keep the events of the last two aggregation windows, counted back from the newest event
    // (not from the clock: a file of older events is still checked once)
    utc_time newest{};
    for (const auto& e : retrievals_) newest = std::max(newest, e.time.instant);
    for (const auto& e : feedback_) newest = std::max(newest, e.time.instant);
    const auto keep = newest - 2 * opt_.monitor.window;
    auto r = monitor_retrievals(store, std::span<const retrieval_event>(retrievals_),
                                std::span<const feedback_event>(feedback_), opt_.monitor);
    std::erase_if(retrievals_, [&](const retrieval_event& e) { return e.time.instant < keep; });
    std::erase_if(feedback_, [&](const feedback_event& e) { return e.time.instant < keep; });
    has_events_ = !retrievals_.empty() || !feedback_.empty();
    return std::move(r.findings.findings);
  }

  struct sampled_vector {
    std::size_t text_hash = 0;
    std::vector<float> v;
  };

  watch_options opt_;
  sqlite_state& state_;
  watch_state& wstate_;
  scheduler sched_;
  std::unordered_map<std::string, watched_record> known_;
  normalized_text_hashes text_hashes_;  // normalised-text hashes by content, for the subsets
  std::unordered_set<std::string> batches_;
  std::map<std::string, reported_finding> open_;
  std::set<std::string> collected_;  // keys put in this poll's watch_poll_result::findings
  std::deque<std::pair<utc_time, std::size_t>> bursts_;
  std::set<std::string> risk_scopes_;
  std::set<std::string> removed_;
  std::vector<std::string> new_versions_;
  std::map<std::string, std::size_t> drift_sample_at_;  // new version -> its sample at drift
  std::map<std::string, std::unordered_set<std::string>> sampled_ids_;
  std::map<std::string, std::vector<sampled_vector>> samples_;
  std::vector<retrieval_event> retrievals_;
  std::vector<feedback_event> feedback_;
  bool has_events_ = false;
  bool first_poll_ = true;
};

}  // namespace memhealth
