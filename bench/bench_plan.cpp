// plan1m and apply1m: `memhealth plan` and `memhealth apply` at 1,000,000 records, through the
// library calls the tool makes, in one process.
//
// The store is made here (the records of scripts/make_scale_store.py: 32-d random unit
// embeddings, scopes of 200 records, every record missing the metadata key "topic" that the
// schema requires, so one finding and one tier-1 fill_metadata_defaults action per record) and
// written as JSONL to $MEMHEALTH_BENCH_TMP (or the system temp dir).
// - plan1m: read the JSONL store, detect with the default pipeline handing findings to the
//   planner part by part (`pipeline::run_each`), plan into a plan file (`make_plan_file`,
//   gzip-compressed: plan.jsonl.gz).
// - apply1m: read the store and count findings (what `apply` reports before), apply the plan file
//   action by action (`apply_plan_stream`, 16 actions per group commit, fdatasync per batch, as
//   the tool does), write the repaired store (atomic JSONL) and count findings again.
// Each runs its work in a child process (fork), so its peak RSS (the child's ru_maxrss) is its own
// whatever ran before it. Counters: peak_rss_mb, records_per_s (records / the child's wall time,
// which is also the reported time), plan_file_bytes, actions, findings before/after, wal_bytes.
// Size: MEMHEALTH_BENCH_PLAN_N (default 1,000,000; 2,000 with MEMHEALTH_BENCH_TINY=1). Run
//   ./memhealth-bench --benchmark_filter='plan1m|apply1m' --benchmark_out=plan.json
//   --benchmark_out_format=json
// Goals (issue 17): plan <= 20 s and <= 1.5 GB with a plan file <= 150 MB; apply in the same
// memory.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "memhealth/memhealth.hpp"

#include "bench_common.hpp"
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace bench_plan {

namespace fs = std::filesystem;

// The scratch directory, removed at exit.
struct scratch {
  fs::path dir;
  ~scratch() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

fs::path plan_bench_dir() {
  static const scratch s{[] {
    const fs::path base = std::getenv("MEMHEALTH_BENCH_TMP")
                              ? fs::path(std::getenv("MEMHEALTH_BENCH_TMP"))
                              : fs::temp_directory_path();
    fs::path d = base / ("memhealth-bench-plan-" + std::to_string(::getpid()));
    fs::create_directories(d);
    return d;
  }()};
  return s.dir;
}

std::size_t plan_n() {
  return memhealth_bench::size_from_env("MEMHEALTH_BENCH_PLAN_N", 1000000, 2000);
}

// Runs `work` in a child process (fork) and returns what it wrote to `out` (its counters, as
// "name value" lines) and its peak RSS in MB (ru_maxrss from wait4): each measurement starts from
// a process that has done nothing else, whatever ran before it in this one.
struct child_result {
  std::map<std::string, double> counters;
  double peak_rss_mb = 0;
  std::string error;
};
template <class Work>
child_result in_child(Work&& work) {
  child_result r;
  int fds[2];
  if (::pipe(fds) != 0) {
    r.error = "pipe failed";
    return r;
  }
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    std::string text;
    try {
      for (const auto& [k, v] : work()) text += k + " " + std::to_string(v) + "\n";
    } catch (const std::exception& e) {
      text = std::string("error ") + e.what() + "\n";
    }
    for (std::size_t done = 0; done < text.size();) {
      const ssize_t w = ::write(fds[1], text.data() + done, text.size() - done);
      if (w <= 0) break;
      done += static_cast<std::size_t>(w);
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;)
    text.append(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);
  int status = 0;
  struct rusage ru {};
  if (pid < 0 || ::wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status)) {
    r.error = "the child process failed";
    return r;
  }
  r.peak_rss_mb = static_cast<double>(ru.ru_maxrss) / 1024.0;  // KB on Linux
  std::istringstream in(text);
  std::string key;
  while (in >> key) {
    if (key == "error") {
      std::getline(in, r.error);
      break;
    }
    double v = 0;
    in >> v;
    r.counters[key] = v;
  }
  return r;
}

// The store of scripts/make_scale_store.py (not byte-identical: C++'s generator), once per run.
const fs::path& scale_store() {
  static const fs::path path = [] {
    const std::size_t n = plan_n();
    const fs::path p = plan_bench_dir() / "store.jsonl";
    std::mt19937_64 rnd(1);
    std::normal_distribution<double> g;
    const char* kinds[] = {"food", "travel", "work", "family", "music"};
    const std::size_t scopes = std::max<std::size_t>(1, n / 200);
    memhealth::atomic_write(p, [&](std::string& buf, auto& flush) {
      char head[512];
      for (std::size_t i = 0; i < n; ++i) {
        double v[32], s = 0;
        for (double& x : v) x = g(rnd), s += x * x;
        s = std::sqrt(s);
        std::snprintf(
            head, sizeof head,
            "{\"id\":\"m%07zu\",\"content\":\"User %zu likes item %zu in %s context number "
            "%zu.\",\"embedding\":[",
            i, i % scopes, i, kinds[i % 5], i * 7 % 100003);
        buf += head;
        for (int k = 0; k < 32; ++k) {
          char num[32];
          std::snprintf(num, sizeof num, k ? ",%.6f" : "%.6f", v[k] / s);
          buf += num;
        }
        std::snprintf(
            head, sizeof head,
            "],\"embedding_version\":\"e5-small-v1\",\"metadata\":{\"ingest_batch\":\"b1\"},"
            "\"created_at\":\"2024-03-01T10:00:00.000Z\",\"updated_at\":\"2024-03-01T10:"
            "00:00.000Z\",\"last_accessed_at\":\"2024-07-01T10:00:00.000Z\",\"source\":"
            "\"user_declared\",\"scope\":\"user:%zu\",\"status\":\"active\"}\n",
            i % scopes);
        buf += head;
        if (buf.size() >= (1u << 20)) flush();
      }
    });
    return p;
  }();
  return path;
}

// What `memhealth plan/apply --schema data/sample_schema.json --now 2024-07-15T00:00:00Z
// --default topic=unknown` set up.
memhealth::default_check_settings check_settings() {
  memhealth::default_check_settings s;
  // data/sample_schema.json: {"required": {"topic": "string", "ingest_batch": "string"}}
  s.schema.required["topic"] = memhealth::metadata_types::string;
  s.schema.required["ingest_batch"] = memhealth::metadata_types::string;
  s.threads = 2;
  return s;
}
memhealth::detect_options detect_opts(const memhealth::memory_store<>& store) {
  memhealth::detect_options d;
  d.now = memhealth::parse_timestamp("2024-07-15T00:00:00Z")->instant;
  d.dimension = store.dimension();
  return d;
}
memhealth::memory_store<> load(const fs::path& p) {
  auto lr = memhealth::read_jsonl(p);
  return memhealth::memory_store<>::from_records(std::move(lr.records));
}
std::size_t count_findings(const memhealth::memory_store<>& store) {
  std::size_t n = 0;
  (void)memhealth::make_default_pipeline(check_settings())
      .run_each(
          store, [&](std::vector<memhealth::finding>& part) { n += part.size(); },
          detect_opts(store));
  return n;
}

const fs::path plan_path() {
  return plan_bench_dir() / "plan.jsonl.gz";
}

memhealth::plan_file_summary make_plan_of(const memhealth::memory_store<>& store,
                                          const fs::path& out, std::size_t* findings) {
  memhealth::planner_options po;
  po.max_records_per_run = 2 * store.size() + 1;
  po.blast_radius_threshold = 2 * store.size() + 1;
  po.metadata_defaults["topic"] = std::string("unknown");
  const auto detectors = memhealth::make_default_pipeline(check_settings());
  return memhealth::make_plan_file(
      store,
      [&](const auto& add) {
        (void)detectors.run_each(
            store,
            [&](std::vector<memhealth::finding>& part) {
              *findings += part.size();
              for (const auto& f : part) add(f);
            },
            detect_opts(store));
      },
      po, out.string());
}

using counter_list = std::vector<std::pair<std::string, double>>;

// The plan command's work, in a child process: load, detect into the planner, write the plan.
counter_list plan_work() {
  const auto t0 = std::chrono::steady_clock::now();
  const auto store = load(scale_store());
  std::size_t findings = 0;
  const auto sum = make_plan_of(store, plan_path(), &findings);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return {{"seconds", secs},
          {"findings", static_cast<double>(findings)},
          {"actions", static_cast<double>(sum.header.actions)},
          {"plan_file_bytes", static_cast<double>(fs::file_size(plan_path()))}};
}

// The apply command's work, in a child process: load, count findings, apply the plan file action
// by action through the log, write the repaired store, count findings again.
counter_list apply_work() {
  const fs::path wal = plan_bench_dir() / "run.wal", out = plan_bench_dir() / "repaired.jsonl";
  fs::remove(wal);
  const auto t0 = std::chrono::steady_clock::now();
  auto store = load(scale_store());
  const std::size_t before = count_findings(store);
  memhealth::apply_counts c;
  {
    memhealth::wal_writer w(wal);
    memhealth::plan_reader reader(plan_path().string());
    memhealth::apply_options opt;
    opt.batch_size = 16;
    opt.max_records = 2 * store.size() + 1;
    opt.limits.per_second = 1e9;
    opt.limits.burst = 1e9;
    c = memhealth::apply_plan_stream(
        store, reader, w, opt,
        [](const memhealth::action_outcome&, const memhealth::repair_action&) {});
    w.sync();
  }
  memhealth::write_jsonl(out, store);
  const std::size_t after = count_findings(store);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double wal_bytes = static_cast<double>(fs::file_size(wal));
  fs::remove(wal);
  fs::remove(out);
  return {{"seconds", secs},
          {"applied", static_cast<double>(c.applied)},
          {"findings_before", static_cast<double>(before)},
          {"findings_after", static_cast<double>(after)},
          {"wal_bytes", wal_bytes}};
}

void report(benchmark::State& state, const child_result& r, std::vector<std::string> keep) {
  state.SetIterationTime(r.counters.count("seconds") ? r.counters.at("seconds") : 0);
  state.counters["peak_rss_mb"] = r.peak_rss_mb;
  const double n = static_cast<double>(plan_n());
  if (r.counters.count("seconds") && r.counters.at("seconds") > 0)
    state.counters["records_per_s"] = n / r.counters.at("seconds");
  for (const auto& k : keep)
    if (r.counters.count(k)) state.counters[k] = r.counters.at(k);
}

void plan1m(benchmark::State& state) {
  (void)scale_store();
  child_result r;
  for (auto _ : state) {
    r = in_child(plan_work);
    report(state, r, {"plan_file_bytes", "actions"});
  }
  const double n = static_cast<double>(plan_n());
  if (!r.error.empty()) return state.SkipWithError(r.error.c_str());
  if (r.counters["findings"] != n || r.counters["actions"] != n)
    state.SkipWithError("expected one finding and one action per record");
}

void apply1m(benchmark::State& state) {
  (void)scale_store();
  if (!fs::exists(plan_path())) {  // apply1m run alone: make the plan first (another child)
    const child_result p = in_child(plan_work);
    if (!p.error.empty()) return state.SkipWithError(p.error.c_str());
  }
  child_result r;
  for (auto _ : state) {
    r = in_child(apply_work);
    report(state, r, {"findings_before", "findings_after", "wal_bytes"});
  }
  state.counters["plan_file_bytes"] = static_cast<double>(fs::file_size(plan_path()));
  const double n = static_cast<double>(plan_n());
  if (!r.error.empty()) return state.SkipWithError(r.error.c_str());
  if (r.counters["applied"] != n || r.counters["findings_before"] != n ||
      r.counters["findings_after"] != 0)
    state.SkipWithError("expected every action applied and findings n -> 0");
}

BENCHMARK(plan1m)->Name("plan1m")->Iterations(1)->UseManualTime()->Unit(benchmark::kSecond);
BENCHMARK(apply1m)->Name("apply1m")->Iterations(1)->UseManualTime()->Unit(benchmark::kSecond);

}  // namespace bench_plan
