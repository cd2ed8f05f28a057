// The SQLite store backend (store/sqlite_store.hpp) against the in-memory store on the same
// records: N generated records (default 100,000; $MEMHEALTH_BENCH_SQLITE_N overrides, e.g. 2000
// for a smoke run) with 384-d unit embeddings, 200 scopes, deterministic. Files live in
// $MEMHEALTH_BENCH_TMP or the system temp dir; they are written once, outside the timings.
//
// - */load_100k: from the persistent form to a store with every record and embedding read once.
//   memory: read_jsonl (2 threads) + memory_store::from_records; sqlite: sqlite_store::open
//   (index + quick_check) + record(i) and embedding(i) for every i (blocks of 4096 rows).
// - */check_100k: the default detection pipeline over a freshly loaded store (sqlite: freshly
//   opened, so lazy reads are included).
// - */apply_100k: apply_plan of 1000 two-record actions (status + weight), 10 actions per log
//   fdatasync; the sqlite store runs one transaction per action (synchronous=FULL).
// Counters: records_per_s (load, check) and actions_per_s (apply), per wall-clock second;
// file_MB (load): size of the JSONL file / the database file.
// Each benchmark runs once (Iterations(1)): these are seconds-long, disk-bound runs.
//   ./memhealth-bench --benchmark_filter='_100k'
#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "memhealth/detect/default_pipeline.hpp"
#include "memhealth/io/jsonl.hpp"
#include "memhealth/repair/executor.hpp"
#include "memhealth/store/memory_store.hpp"
#include "memhealth/store/sqlite_store.hpp"

#include "bench_common.hpp"
#include <unistd.h>

namespace bench_sqlite_store {

namespace fs = std::filesystem;
using namespace memhealth;

std::size_t bench_n() {
  return memhealth_bench::size_from_env("MEMHEALTH_BENCH_SQLITE_N", 100000, 2000);
}

struct fixture {
  fs::path dir, jsonl, db;
  std::size_t n = 0;
  repair_plan plan;

  fixture() {
    n = bench_n();
    const fs::path base = std::getenv("MEMHEALTH_BENCH_TMP")
                              ? fs::path(std::getenv("MEMHEALTH_BENCH_TMP"))
                              : fs::temp_directory_path();
    dir = base / ("memhealth-bench-sqlite-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    jsonl = dir / "store.jsonl";
    db = dir / "store.db";
    std::vector<memory_record> recs;
    recs.reserve(n);
    std::uint64_t state = 0x9e3779b97f4a7c15ull;
    auto next = [&] {  // splitmix64 -> uniform in [-1, 1)
      std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
      z ^= z >> 31;
      return float(double(z >> 11) / double(1ull << 53) * 2.0 - 1.0);
    };
    for (std::size_t i = 0; i < n; ++i) {
      memory_record r;
      r.id = "mem-" + std::to_string(i);
      r.content = "Memory " + std::to_string(i) + ": the user mentioned topic " +
                  std::to_string(i % 977) + " while talking about item " +
                  std::to_string(i * 7919 % 100003) + ".";
      r.embedding.resize(384);
      double sq = 0;
      for (auto& x : r.embedding) {
        x = next();
        sq += double(x) * x;
      }
      for (auto& x : r.embedding) x = float(x / std::sqrt(sq));
      r.embedding_version = "bench-384";
      r.scope = "user:" + std::to_string(i % 200);
      r.status = "active";
      r.source = "user_declared";
      r.kind = "fact";
      r.metadata.emplace("topic", std::string("t") + std::to_string(i % 50));
      r.created_at = parse_timestamp("2024-03-01T08:00:00.000+08:00");
      r.updated_at = parse_timestamp("2024-03-02T08:00:00.000Z");
      recs.push_back(std::move(r));
    }
    write_jsonl(jsonl, recs);
    (void)sqlite_store<>::create(db, recs);
    const std::size_t actions = std::min<std::size_t>(1000, n / 2);
    for (std::size_t k = 0; k < actions; ++k) {
      repair_action a;
      a.type = "bench";
      a.idempotency_key = "bench-" + std::to_string(k);
      const std::string x = "mem-" + std::to_string(2 * k), y = "mem-" + std::to_string(2 * k + 1);
      a.targets = {x, y};
      a.edits.push_back({x, edit_set_status{"archived"}});
      a.edits.push_back({y, edit_set_weight{0.5}});
      plan.actions.push_back(std::move(a));
    }
  }
  ~fixture() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  // A fresh copy of the database (apply changes it).
  fs::path copy_db(const std::string& name) const {
    const fs::path p = dir / name;
    for (const char* sfx : {"", "-wal", "-shm"}) fs::remove(p.string() + sfx);
    fs::copy_file(db, p);
    return p;
  }
};

fixture& fx() {
  static fixture f;
  return f;
}

memory_store<> load_memory() {
  load_options lo;
  lo.threads = 2;
  auto lr = read_jsonl(fx().jsonl, lo);
  return memory_store<>::from_records(std::move(lr.records));
}

sqlite_store<> load_sqlite(const fs::path& p) {
  auto s = sqlite_store<>::open(p);
  std::size_t sink = 0;
  for (std::size_t i = 0; i < s.size(); ++i)
    sink += s.record(i).content.size() + s.embedding(i).size();
  benchmark::DoNotOptimize(sink);
  return s;
}

template <class F>
void timed(benchmark::State& st, double units, const char* counter, F&& f) {
  double secs = 0;
  for (auto _ : st) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    secs += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  st.counters[counter] = benchmark::Counter(units * double(st.iterations()) / secs);
}

detect_options check_options() {
  detect_options d;
  d.now = parse_timestamp("2024-06-01T00:00:00Z")->instant;
  return d;
}

void memory_load(benchmark::State& st) {
  timed(st, double(fx().n), "records_per_s",
        [] { benchmark::DoNotOptimize(load_memory().size()); });
  st.counters["file_MB"] = double(fs::file_size(fx().jsonl)) / 1e6;
}
void sqlite_load(benchmark::State& st) {
  timed(st, double(fx().n), "records_per_s",
        [] { benchmark::DoNotOptimize(load_sqlite(fx().db).size()); });
  st.counters["file_MB"] = double(fs::file_size(fx().db)) / 1e6;
}
void memory_check(benchmark::State& st) {
  auto s = load_memory();
  timed(st, double(fx().n), "records_per_s", [&] {
    benchmark::DoNotOptimize(make_default_pipeline().run(s, check_options()).findings.size());
  });
}
void sqlite_check(benchmark::State& st) {
  timed(st, double(fx().n), "records_per_s", [&] {
    auto s = sqlite_store<>::open(fx().db);
    benchmark::DoNotOptimize(make_default_pipeline().run(s, check_options()).findings.size());
  });
}
void memory_apply(benchmark::State& st) {
  auto s = load_memory();
  timed(st, double(fx().plan.actions.size()), "actions_per_s", [&] {
    const fs::path wal = fx().dir / "memory.wal";
    fs::remove(wal);
    wal_writer w(wal);
    apply_options o;
    o.batch_size = 10;
    o.max_records = 1u << 30;
    o.limits.rate_limited = false;  // measure the store and the log, not the token bucket
    const auto r = apply_plan(s, fx().plan, w, o);
    if (r.applied.size() != fx().plan.actions.size()) st.SkipWithError("not every action applied");
  });
}
void sqlite_apply(benchmark::State& st) {
  const fs::path p = fx().copy_db("apply.db");
  auto s = sqlite_store<>::open(p);
  timed(st, double(fx().plan.actions.size()), "actions_per_s", [&] {
    const fs::path wal = fx().dir / "sqlite.wal";
    fs::remove(wal);
    wal_writer w(wal);
    apply_options o;
    o.batch_size = 10;
    o.max_records = 1u << 30;
    o.limits.rate_limited = false;  // measure the store and the log, not the token bucket
    const auto r = apply_plan(s, fx().plan, w, o);
    if (r.applied.size() != fx().plan.actions.size()) st.SkipWithError("not every action applied");
  });
}

BENCHMARK(memory_load)
    ->Name("memory/load_100k")
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(sqlite_load)
    ->Name("sqlite/load_100k")
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(memory_check)
    ->Name("memory/check_100k")
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(sqlite_check)
    ->Name("sqlite/check_100k")
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(memory_apply)
    ->Name("memory/apply_100k")
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(sqlite_apply)
    ->Name("sqlite/apply_100k")
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace bench_sqlite_store
