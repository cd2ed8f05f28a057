// The PostgreSQL store (store/pg_store.hpp) and a check spread across workers
// (detect/pg_workers.hpp), issue 22 "Measure": N generated records (default 1,000,000;
// $MEMHEALTH_BENCH_PG_N overrides; 2,000 in tiny mode) in N / 200 scopes (5,000 at 10^6), DIM-d
// unit embeddings (default 64; $MEMHEALTH_BENCH_PG_DIM), every 100th record a planted exact
// duplicate of the one before it (same scope), written once with pg_store::create into the schema
// `memhealth_bench` of the server $MEMHEALTH_BENCH_PG_URI (a libpq URI without a password; its
// role may create schemas). Without that variable every benchmark here is "skipped: ...";
// scripts/bench_tiny.sh starts a throwaway server (scripts/pg_test_cluster.sh) and sets it.
//
// - pg/copy_floor: `COPY (SELECT record, embedding FROM memhealth_records ORDER BY seq) TO STDOUT`
//   read to the end: the time to read the rows alone, the floor of any check.
// - pg/check_single: pg_store::open (the whole table, one cursor) + the default pipeline.
// - pg/check_scoped: pg_parallel_check without a job table on one thread (`memhealth check
//   postgresql://` without --workers); its report must equal check_single's.
// - pg/check_workers/W: pg_parallel_check with W worker threads (jobs of min(20,000, N / 20)
//   records); its report must equal check_single's (an error otherwise). Counter head_s: seconds
//   from the call until the job table is filled (`pg_run_options::on_ready`): the serial stretch
//   before any worker can claim a job.
// - sqlite/check: the same records in an SQLite store (sqlite_store::open + the default pipeline).
// Counter records_per_s per wall-clock second; cpu_s: user + system CPU seconds of this process
// (every thread) during the benchmark; server_cpu_s: of the server's backends that ended
// meanwhile (the postmaster's reaped children, read from /proc when the server runs on this
// machine; -1 otherwise); peak_rss_mb: this process's peak resident set during the benchmark
// (VmHWM after a reset through /proc/self/clear_refs). The workers' benchmarks also give the
// coordinator's phases (pg_run_timings: read_s, wide_s, own_jobs_s, wait_s, merge_s) and the
// workers' seconds reading and checking jobs (jobs_read_s, jobs_check_s, summed over threads). Each
// runs once (Iterations(1)).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "memhealth/detect/default_pipeline.hpp"
#include "memhealth/detect/pg_workers.hpp"
#include "memhealth/detect/report_json.hpp"
#include "memhealth/store/pg_store.hpp"
#include "memhealth/store/sqlite_store.hpp"

#include "bench_common.hpp"
#include <libpq-fe.h>
#include <sys/resource.h>
#include <unistd.h>

namespace bench_pg {

namespace fs = std::filesystem;
using namespace memhealth;

struct pg_fixture {
  std::string uri;  // with search_path = memhealth_bench; "" = no server
  std::string why;  // why there is none
  fs::path sqlite;  // the same records in an SQLite store
  std::size_t n = 0;
  long postmaster = 0;  // the server's postmaster pid when it runs here (0 = unknown)
  std::optional<std::string> single_report;  // check_single's report (for the workers' check)

  pg_fixture() {
    const char* base = std::getenv("MEMHEALTH_BENCH_PG_URI");
    if (!base || !*base) {
      why = "skipped: MEMHEALTH_BENCH_PG_URI is not set (no PostgreSQL server to measure)";
      return;
    }
    n = memhealth_bench::size_from_env("MEMHEALTH_BENCH_PG_N", 1000000, 2000);
    const std::size_t dim = memhealth_bench::size_from_env("MEMHEALTH_BENCH_PG_DIM", 64, 16);
    const std::size_t scopes = std::max<std::size_t>(1, n / 200);
    {
      PGconn* c = PQconnectdb(base);
      if (PQstatus(c) != CONNECTION_OK) {
        why =
            std::string("skipped: cannot connect to MEMHEALTH_BENCH_PG_URI: ") + PQerrorMessage(c);
        PQfinish(c);
        return;
      }
      PQclear(PQexec(c, "DROP SCHEMA IF EXISTS memhealth_bench CASCADE"));
      postmaster = parent_of(PQbackendPID(c));
      PGresult* r = PQexec(c, "CREATE SCHEMA memhealth_bench");
      const bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
      PQclear(r);
      PQfinish(c);
      if (!ok) {
        why = "skipped: cannot create schema memhealth_bench";
        return;
      }
    }
    const std::string b = base;
    uri = b + (b.find('?') == std::string::npos ? "?" : "&") +
          "options=-csearch_path%3Dmemhealth_bench";
    std::vector<memory_record> recs;
    recs.reserve(n);
    std::uint64_t state = 0x9e3779b97f4a7c15ull;
    const auto t0 = *parse_timestamp("2024-03-01T08:00:00.000Z");
    std::vector<float> e(dim);
    for (std::size_t i = 0; i < n; ++i) {
      memory_record r;
      r.id = "mem-" + std::to_string(i);
      const bool planted = i % 100 == 99;  // an exact duplicate of record i - 1
      const std::size_t src = planted ? i - 1 : i;
      r.content = "Memory " + memhealth_bench::note(src) + ": the user mentioned topic " +
                  memhealth_bench::note(src % 977) + ".";
      if (!planted) {
        for (auto& x : e) x = static_cast<float>(memhealth_bench::splitmix_uniform(state));
        memhealth_bench::normalize_row(e.data(), dim);
      }
      memhealth_bench::set_generated_fields(r, t0, e.data(), dim);
      r.scope = "user:" + std::to_string((planted ? i - 1 : i) % scopes);
      recs.push_back(std::move(r));
    }
    (void)pg_store<>::create(uri, recs);
    const fs::path dir = std::getenv("MEMHEALTH_BENCH_TMP")
                             ? fs::path(std::getenv("MEMHEALTH_BENCH_TMP"))
                             : fs::temp_directory_path();
    sqlite = dir / ("memhealth-bench-pg-" + std::to_string(::getpid()) + ".db");
    fs::remove(sqlite);
    (void)sqlite_store<>::create(sqlite, recs);
  }
  // The parent pid of process `pid` (/proc/PID/stat field 4), 0 when it cannot be read.
  static long parent_of(long pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(in, line) || line.rfind(')') == std::string::npos) return 0;
    std::istringstream rest(line.substr(line.rfind(')') + 2));
    std::string state;
    long ppid = 0;
    rest >> state >> ppid;
    return ppid;
  }
  ~pg_fixture() {
    std::error_code ec;
    if (!sqlite.empty()) fs::remove(sqlite, ec);
  }
};

pg_fixture& fx() {
  static pg_fixture f;
  return f;
}

// User + system CPU seconds of this process so far (every thread).
double self_cpu() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// CPU seconds of the postmaster's reaped children (the backends that ended), -1 when unknown.
double server_cpu() {
  if (fx().postmaster == 0) return -1;
  std::ifstream in("/proc/" + std::to_string(fx().postmaster) + "/stat");
  std::string line;
  if (!std::getline(in, line) || line.rfind(')') == std::string::npos) return -1;
  std::istringstream rest(line.substr(line.rfind(')') + 2));
  std::vector<std::string> f;  // fields 3.. of stat
  for (std::string x; rest >> x;) f.push_back(x);
  if (f.size() < 15) return -1;
  // fields 16 (cutime) and 17 (cstime): f[13], f[14]
  return static_cast<double>(std::stoll(f[13]) + std::stoll(f[14])) /
         static_cast<double>(::sysconf(_SC_CLK_TCK));
}

// Measures the CPU of this process and of the server's backends over one benchmark iteration.
// This process's peak resident set (VmHWM of /proc/self/status) in MB, -1 when unreadable.
double peak_rss_mb() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::strtod(line.c_str() + 6, nullptr) / 1024.0;
  return -1;
}

// Resets the peak resident set to the current one (writing "5" to /proc/self/clear_refs, Linux
// 4.0 and later), so that peak_rss_mb() afterwards is the peak of what ran since.
void reset_peak_rss() {
  std::ofstream f("/proc/self/clear_refs");
  f << "5";
}

struct cpu_meter {
  double self = self_cpu(), server = server_cpu();
  cpu_meter() { reset_peak_rss(); }
  void report(benchmark::State& st) const {
    // peak_rss_mb: this process's peak resident set during the benchmark (the fixture's own
    // memory included: compare benchmarks of one run)
    st.counters["peak_rss_mb"] = peak_rss_mb();
    st.counters["cpu_s"] = self_cpu() - self;
    if (server >= 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));  // backends reaped
      st.counters["server_cpu_s"] = server_cpu() - server;
    }
  }
};

detect_options bench_options() {
  detect_options d;
  d.now = parse_timestamp("2024-06-01T00:00:00Z")->instant;
  return d;
}

void finish(benchmark::State& st, double seconds) {
  st.SetIterationTime(seconds);
  st.counters["records_per_s"] = static_cast<double>(fx().n) / seconds;
  st.counters["load_avg"] = memhealth_bench::load_avg();
}

void BM_pg_copy_floor(benchmark::State& st) {
  if (!fx().why.empty()) return st.SkipWithError(fx().why.c_str());
  for (auto _ : st) {
    const auto t = std::chrono::steady_clock::now();
    PGconn* c = PQconnectdb(fx().uri.c_str());
    PGresult* r = PQexec(c,
                         "COPY (SELECT record, embedding FROM memhealth_records ORDER BY seq) TO "
                         "STDOUT");
    const bool ok = PQresultStatus(r) == PGRES_COPY_OUT;
    PQclear(r);
    std::size_t bytes = 0;
    char* buf = nullptr;
    int len = 0;
    while (ok && (len = PQgetCopyData(c, &buf, 0)) > 0) {
      bytes += static_cast<std::size_t>(len);
      PQfreemem(buf);
    }
    PQclear(PQgetResult(c));
    PQfinish(c);
    benchmark::DoNotOptimize(bytes);
    if (!ok) return st.SkipWithError("COPY failed");
    finish(st, memhealth_bench::seconds_since(t));
  }
}

void BM_pg_check_single(benchmark::State& st) {
  if (!fx().why.empty()) return st.SkipWithError(fx().why.c_str());
  for (auto _ : st) {
    const cpu_meter cpu;
    const auto t = std::chrono::steady_clock::now();
    const auto d = bench_options();
    report r;
    {
      pg_store_options o;
      o.read_only = true;
      auto s = pg_store<>::open(fx().uri, pg_own_mapping(), o);
      r = make_default_pipeline().run(s, d);
    }  // the connection closed: its backend's CPU is counted
    finish(st, memhealth_bench::seconds_since(t));
    cpu.report(st);
    fx().single_report = check_report_json(r, "bench", d, {}).dump();
  }
}

// pg_parallel_check without a job table, one thread (what `memhealth check postgresql://`
// without --workers runs): its report must equal check_single's.
void BM_pg_check_scoped(benchmark::State& st) {
  if (!fx().why.empty()) return st.SkipWithError(fx().why.c_str());
  for (auto _ : st) {
    const cpu_meter cpu;
    const auto t = std::chrono::steady_clock::now();
    pg_run_options ro;
    ro.job_table = false;
    ro.job_records = std::clamp<std::size_t>(fx().n / 20, 1, 20000);
    const auto d = bench_options();
    const auto res = pg_parallel_check(fx().uri, pg_own_mapping(), {}, d, ro);
    finish(st, memhealth_bench::seconds_since(t));
    st.counters["jobs"] = static_cast<double>(res.jobs);
    cpu.report(st);
    if (fx().single_report &&
        check_report_json(res.findings, "bench", d, {}).dump() != *fx().single_report)
      return st.SkipWithError("the scoped check's report differs from the single-process check's");
  }
}

void BM_pg_check_workers(benchmark::State& st) {
  if (!fx().why.empty()) return st.SkipWithError(fx().why.c_str());
  for (auto _ : st) {
    const cpu_meter cpu;
    const auto t = std::chrono::steady_clock::now();
    pg_run_options ro;
    ro.workers = static_cast<unsigned>(st.range(0));
    ro.job_records = std::clamp<std::size_t>(fx().n / 20, 1, 20000);  // >= 20 jobs
    double head = 0;  // seconds until the job table is filled (no worker can start before)
    ro.on_ready = [&](const std::string&) { head = memhealth_bench::seconds_since(t); };
    const auto d = bench_options();
    const auto res = pg_parallel_check(fx().uri, pg_own_mapping(), {}, d, ro);
    finish(st, memhealth_bench::seconds_since(t));
    st.counters["jobs"] = static_cast<double>(res.jobs);
    st.counters["head_s"] = head;
    cpu.report(st);
    const auto& tm = res.timings;
    st.counters["read_s"] = tm.read_s;
    st.counters["wide_s"] = tm.store_wide_s;
    st.counters["own_jobs_s"] = tm.own_jobs_s;
    st.counters["wait_s"] = tm.wait_s;
    st.counters["merge_s"] = tm.merge_s;
    st.counters["jobs_read_s"] = tm.jobs.read_s;
    st.counters["jobs_check_s"] = tm.jobs.check_s;
    if (fx().single_report &&
        check_report_json(res.findings, "bench", d, {}).dump() != *fx().single_report)
      return st.SkipWithError("the workers' report differs from the single-process check's");
  }
}

void BM_sqlite_check(benchmark::State& st) {
  if (!fx().why.empty()) return st.SkipWithError(fx().why.c_str());
  for (auto _ : st) {
    const cpu_meter cpu;
    const auto t = std::chrono::steady_clock::now();
    auto s = sqlite_store<>::open(fx().sqlite);
    const auto r = make_default_pipeline().run(s, bench_options());
    benchmark::DoNotOptimize(r.findings.size());
    finish(st, memhealth_bench::seconds_since(t));
    cpu.report(st);
  }
}

BENCHMARK(BM_pg_copy_floor)->Name("pg/copy_floor")->Iterations(1)->UseManualTime();
BENCHMARK(BM_pg_check_single)->Name("pg/check_single")->Iterations(1)->UseManualTime();
BENCHMARK(BM_pg_check_scoped)->Name("pg/check_scoped")->Iterations(1)->UseManualTime();
BENCHMARK(BM_pg_check_workers)
    ->Name("pg/check_workers")
    ->Arg(1)
    ->Arg(2)
    ->Iterations(1)
    ->UseManualTime();
BENCHMARK(BM_sqlite_check)->Name("sqlite/check")->Iterations(1)->UseManualTime();

}  // namespace bench_pg
