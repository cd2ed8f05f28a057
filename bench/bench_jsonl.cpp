// Throughput of the JSONL loader: memhealth::read_jsonl against nlohmann::json (line by line)
// and Python's orjson (bench/orjson_load.py, run from this process so all figures come from
// one run).
//
// Data: 100,000 records with 384-d float32 embeddings, generated deterministically on first use
// into $MEMHEALTH_BENCH_JSONL or /tmp/memhealth_bench_100k_384.jsonl (canonical memhealth
// output, about 515 MB).
// - jsonl/load_memhealth: read_jsonl with the default options (all hardware threads, file
//   file read in 4 MiB pieces), records kept; timed in real (wall-clock) time.
// - jsonl/load_memhealth_1thread: read_jsonl with threads = 1 (streamed), records kept; CPU time.
// - jsonl/stream_memhealth: read_jsonl_each (default threads), each record dropped; real time.
// - jsonl/stream_memhealth_1thread: the same with threads = 1; CPU time.
//   Each adds wall_MBps and cpu_MBps (process CPU time of all threads); load_* add loadavg_1m.
// - jsonl/load_orjson/0 (objects dropped) and /1 (kept in a list): orjson's MB/s over process
//   CPU time (orjson_MBps, single-threaded) and wall clock (orjson_wall_MBps), and the ratios
//   x_load (load_memhealth wall MB/s / orjson_MBps), x_stream (wall), x_load_1thread and
//   x_stream_1thread (CPU MB/s / orjson_MBps).
// Run it as
//   ./bench --benchmark_filter=jsonl
// (all benchmarks in one process, memhealth first, for the ratios).
#include <benchmark/benchmark.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "memhealth/io/jsonl.hpp"

#include "bench_common.hpp"

namespace bench_jsonl {

// 100,000 records; 2,000 with MEMHEALTH_BENCH_TINY=1 (a separate file)
const std::size_t k_records = memhealth_bench::tiny() ? 2'000 : 100'000;
constexpr std::size_t k_dim = 384;

std::filesystem::path data_path() {
  if (const char* p = std::getenv("MEMHEALTH_BENCH_JSONL")) return p;
  return memhealth_bench::tiny() ? "/tmp/memhealth_bench_2k_384.jsonl"
                                 : "/tmp/memhealth_bench_100k_384.jsonl";
}

// Deterministic realistic records: sentences from word lists, a few metadata keys, timestamps
// with mixed UTC offsets, unit-norm Gaussian embeddings (Box-Muller over mt19937_64, so the file
// is the same with every standard library).
void generate(const std::filesystem::path& path) {
  static const char* subjects[] = {"The user", "My sister",    "Alex",
                                   "The team", "Our landlord", "用户"};
  static const char* verbs[] = {"prefers",        "dislikes", "moved to",
                                "is allergic to", "works at", "plans to visit"};
  static const char* objects[] = {"green tea in the morning",
                                  "Berlin",
                                  "shellfish",
                                  "a quiet table near the window",
                                  "the Tuesday stand-up",
                                  "杭州的西湖",
                                  "window seats on long flights",
                                  "dark mode"};
  static const char* topics[] = {"diet", "travel", "work", "family", "housing", "settings"};
  static const char* kinds[] = {"fact", "preference", "episodic", "temporary"};
  static const char* sources[] = {"user_declared", "model_extracted", "system_log", "manual_entry"};
  static const int offsets[] = {0, 480, -420, 60, 330};
  std::mt19937_64 rng(20240301);
  auto uniform = [&] { return (static_cast<double>(rng() >> 11) + 0.5) * 0x1.0p-53; };
  auto pick = [&](auto& arr) { return arr[rng() % std::size(arr)]; };
  std::vector<memhealth::memory_record> batch;
  std::string out;
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  const std::int64_t t0 = 1'700'000'000'000;
  for (std::size_t i = 0; i < k_records; ++i) {
    memhealth::memory_record r;
    r.id = "mem-" + std::to_string(i);
    r.content = std::string(pick(subjects)) + " " + pick(verbs) + " " + pick(objects) +
                " (noted in session " + std::to_string(rng() % 500) + ").";
    r.embedding.resize(k_dim);
    double norm = 0;
    for (std::size_t j = 0; j < k_dim; j += 2) {
      const double u = uniform(), v = uniform();
      const double rad = std::sqrt(-2 * std::log(u));
      r.embedding[j] = static_cast<float>(rad * std::cos(2 * M_PI * v));
      if (j + 1 < k_dim) r.embedding[j + 1] = static_cast<float>(rad * std::sin(2 * M_PI * v));
    }
    for (float x : r.embedding) norm += double(x) * x;
    for (float& x : r.embedding) x = static_cast<float>(x / std::sqrt(norm));
    r.embedding_version = "bge-small-en-v1.5/l2";
    r.metadata.emplace("topic", std::string(pick(topics)));
    r.metadata.emplace("ingest_batch", static_cast<std::int64_t>(i / 1000));
    r.metadata.emplace("entities",
                       memhealth::raw_json{"[\"user\",\"" + std::string(pick(topics)) + "\"]"});
    const std::int64_t created = t0 + static_cast<std::int64_t>(rng() % 20'000'000'000ULL);
    const auto off = static_cast<std::int16_t>(pick(offsets));
    r.created_at = memhealth::timestamp{memhealth::timestamp_from_epoch_ms(created).instant, off};
    r.updated_at =
        memhealth::timestamp{memhealth::timestamp_from_epoch_ms(created + 3'600'000).instant, off};
    if (i % 3 == 0) r.last_accessed_at = memhealth::timestamp_from_epoch_ms(created + 86'400'000);
    r.source = pick(sources);
    r.scope = "user:" + std::to_string(i % 97) + "/project:alpha";
    r.status = i % 50 == 0 ? "archived" : "active";
    r.kind = pick(kinds);
    if (i % 4 == 0) r.claim = memhealth::fact_claim{"user", pick(topics), pick(objects)};
    if (i % 10 == 0) r.links.related_ids = {"mem-" + std::to_string(i / 2)};
    r.confidence = static_cast<double>(rng() % 1000) / 1000.0;
    out.clear();
    memhealth::append_json(r, out);
    out.push_back('\n');
    f.write(out.data(), static_cast<std::streamsize>(out.size()));
  }
  if (!f) throw std::runtime_error("bench_jsonl: cannot write " + path.string());
}

const std::filesystem::path& ensure_data() {
  static const std::filesystem::path p = [] {
    auto path = data_path();
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) generate(path);
    return path;
  }();
  return p;
}

// MB/s of the memhealth benchmarks, for the ratios the orjson benchmarks report.
double g_load_wall_mbps = 0;       // read_jsonl, default threads, records kept: wall clock
double g_load_1thread_mbps = 0;    // read_jsonl, 1 thread, records kept: CPU time
double g_stream_wall_mbps = 0;     // read_jsonl_each, default threads, records dropped: wall clock
double g_stream_1thread_mbps = 0;  // read_jsonl_each, 1 thread: CPU time

// Process CPU seconds (all threads), as orjson_load.py's time.process_time.
double process_cpu_seconds() {
  return static_cast<double>(std::clock()) / CLOCKS_PER_SEC;
}
double wall_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Adds wall_MBps and cpu_MBps (process CPU time, all threads) for `iterations` loads of `bytes`.
void add_throughput(benchmark::State& state, double bytes, double wall, double cpu) {
  const double total = bytes * static_cast<double>(state.iterations()) / 1e6;
  state.counters["wall_MBps"] = total / wall;
  state.counters["cpu_MBps"] = total / cpu;
}

// read_jsonl with `threads` (0 = all hardware threads), records kept.
void load_with(benchmark::State& state, unsigned threads, double& out_mbps) {
  const auto& path = ensure_data();
  const auto bytes = static_cast<std::int64_t>(std::filesystem::file_size(path));
  std::size_t records = 0;
  memhealth::load_options opt;
  opt.threads = threads;
  const double cpu0 = process_cpu_seconds(), wall0 = wall_seconds();
  for (auto _ : state) {
    auto res = memhealth::read_jsonl(path, opt);
    records = res.records.size();
    if (!res.issues.empty()) state.SkipWithError("unexpected load issues");
    benchmark::DoNotOptimize(res);
  }
  const double cpu = process_cpu_seconds() - cpu0, wall = wall_seconds() - wall0;
  state.SetBytesProcessed(state.iterations() * bytes);
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(records));
  state.counters["records"] = static_cast<double>(records);
  state.counters["threads"] = memhealth::detail::jsonl::resolve_threads(threads);
  add_throughput(state, static_cast<double>(bytes), wall, cpu);
  double load[1] = {0};
  if (getloadavg(load, 1) == 1) state.counters["loadavg_1m"] = load[0];
  // the parallel load is compared by wall clock, the sequential ones by CPU time (as orjson)
  out_mbps = threads == 1 ? state.counters["cpu_MBps"].value : state.counters["wall_MBps"].value;
}

void load_memhealth(benchmark::State& state) {
  load_with(state, 0, g_load_wall_mbps);
}
void load_memhealth_1thread(benchmark::State& state) {
  load_with(state, 1, g_load_1thread_mbps);
}

// Parse-and-drop, like orjson_load.py without --keep: read_jsonl_each hands each record to a
// callback, which drops it.
void stream_with(benchmark::State& state, unsigned threads, double& out_mbps) {
  const auto& path = ensure_data();
  const auto bytes = static_cast<std::int64_t>(std::filesystem::file_size(path));
  std::size_t records = 0;
  memhealth::load_options opt;
  opt.threads = threads;
  const double cpu0 = process_cpu_seconds(), wall0 = wall_seconds();
  for (auto _ : state) {
    records = 0;
    auto res = memhealth::read_jsonl_each(path, opt, [&](memhealth::memory_record&& r) {
      benchmark::DoNotOptimize(r);
      ++records;
    });
    if (!res.issues.empty()) state.SkipWithError("unexpected load issues");
  }
  const double cpu = process_cpu_seconds() - cpu0, wall = wall_seconds() - wall0;
  state.SetBytesProcessed(state.iterations() * bytes);
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(records));
  state.counters["threads"] = memhealth::detail::jsonl::resolve_threads(threads);
  add_throughput(state, static_cast<double>(bytes), wall, cpu);
  out_mbps = threads == 1 ? state.counters["cpu_MBps"].value : state.counters["wall_MBps"].value;
}

void stream_memhealth(benchmark::State& state) {
  stream_with(state, 0, g_stream_wall_mbps);
}
void stream_memhealth_1thread(benchmark::State& state) {
  stream_with(state, 1, g_stream_1thread_mbps);
}

void load_nlohmann(benchmark::State& state) {
  const auto& path = ensure_data();
  const auto bytes = static_cast<std::int64_t>(std::filesystem::file_size(path));
  std::size_t records = 0;
  for (auto _ : state) {
    std::ifstream f(path, std::ios::binary);
    std::string line;
    std::vector<nlohmann::json> docs;
    while (std::getline(f, line))
      if (!line.empty()) docs.push_back(nlohmann::json::parse(line));
    records = docs.size();
    benchmark::DoNotOptimize(docs);
  }
  state.SetBytesProcessed(state.iterations() * bytes);
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(records));
}

// Runs bench/orjson_load.py and reports its CPU time as this benchmark's manual time, so
// bytes_per_second is orjson's MB/s. state.range(0) == 1 runs it with --keep (parsed objects kept
// in a list, like read_jsonl keeps records); 0 drops each object (like read_jsonl_each).
void load_orjson(benchmark::State& state) {
  const bool keep = state.range(0) == 1;
  const auto& path = ensure_data();
  const auto bytes = static_cast<std::int64_t>(std::filesystem::file_size(path));
  std::filesystem::path script = std::filesystem::path(__FILE__).parent_path() / "orjson_load.py";
  if (const char* s = std::getenv("MEMHEALTH_BENCH_ORJSON_SCRIPT")) script = s;
  if (std::system("python3 -c 'import orjson' >/dev/null 2>&1") != 0) {
    state.SkipWithError("skipped: python3 with orjson is not available");
    return;
  }
  const std::string out = "/tmp/memhealth_bench_orjson.json";
  for (auto _ : state) {
    const std::string cmd = "python3 '" + script.string() + "' '" + path.string() + "'" +
                            (keep ? " --keep --repeat 1" : " --repeat 3") + " > " + out;
    if (std::system(cmd.c_str()) != 0) {
      state.SkipWithError("orjson_load.py failed");
      return;
    }
    std::ifstream f(out);
    std::stringstream ss;
    ss << f.rdbuf();
    const auto j = nlohmann::json::parse(ss.str());
    const double seconds = j.at("cpu_seconds").get<double>();
    state.SetIterationTime(seconds);
    state.counters["orjson_MBps"] = static_cast<double>(bytes) / seconds / 1e6;
    state.counters["orjson_wall_MBps"] = j.at("wall_MBps").get<double>();
    state.counters["records"] = j.at("records").get<double>();
  }
  state.SetBytesProcessed(state.iterations() * bytes);
  // memhealth's MB/s over this orjson figure (CPU time): x_load = parallel read_jsonl (wall
  // clock), x_load_1thread = sequential read_jsonl (CPU), x_stream / x_stream_1thread the same
  // for read_jsonl_each
  const double theirs = state.counters["orjson_MBps"].value;
  if (g_load_wall_mbps > 0) state.counters["x_load"] = g_load_wall_mbps / theirs;
  if (g_load_1thread_mbps > 0) state.counters["x_load_1thread"] = g_load_1thread_mbps / theirs;
  if (g_stream_wall_mbps > 0) state.counters["x_stream"] = g_stream_wall_mbps / theirs;
  if (g_stream_1thread_mbps > 0)
    state.counters["x_stream_1thread"] = g_stream_1thread_mbps / theirs;
}

// Real (wall-clock) time for the parallel load: the main thread's CPU time would leave out the
// other threads' work. CPU time for the sequential ones, to compare with orjson's process CPU time.
// Every memhealth benchmark also reports wall_MBps and cpu_MBps (process CPU time, all threads).
BENCHMARK(load_memhealth)
    ->Name("jsonl/load_memhealth")
    ->Unit(benchmark::kMillisecond)
    ->MinTime(3)
    ->UseRealTime();
BENCHMARK(load_memhealth_1thread)
    ->Name("jsonl/load_memhealth_1thread")
    ->Unit(benchmark::kMillisecond)
    ->MinTime(3);
BENCHMARK(stream_memhealth)
    ->Name("jsonl/stream_memhealth")
    ->Unit(benchmark::kMillisecond)
    ->MinTime(3)
    ->UseRealTime();
BENCHMARK(stream_memhealth_1thread)
    ->Name("jsonl/stream_memhealth_1thread")
    ->Unit(benchmark::kMillisecond)
    ->MinTime(3);
BENCHMARK(load_nlohmann)->Name("jsonl/load_nlohmann")->Unit(benchmark::kMillisecond)->Iterations(1);
// arg 0: orjson drops each object; arg 1: keeps them in a list
BENCHMARK(load_orjson)
    ->Name("jsonl/load_orjson")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->UseManualTime();

}  // namespace bench_jsonl
