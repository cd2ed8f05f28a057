// The model adapters (net/, issue 19) against the local test server (tests/fake_openai_server.hpp,
// in this process, on 127.0.0.1): embedding throughput with batching on (64 texts per request)
// and off (1), and a rerun with a warm answer cache, which must send no request.
//
//   ./bench/memhealth-bench --benchmark_filter=models/ --benchmark_format=json
// Size: MEMHEALTH_BENCH_MODELS_N texts (default 2000; 100 in tiny mode). Built when
// memhealth::http and cpp-httplib are found.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <string>
#include <vector>

#include "memhealth/net/openai_embedder.hpp"

#include "../tests/fake_openai_server.hpp"
#include "bench_common.hpp"

namespace bench_models {

std::vector<std::string> texts(std::size_t n) {
  std::vector<std::string> t;
  t.reserve(n);
  for (std::size_t i = 0; i < n; ++i)
    t.push_back("User note " + std::to_string(i) + ": prefers tea over coffee on weekday " +
                std::to_string(i % 7));
  return t;
}

memhealth::openai_embedder_options options(const memhealth::test::fake_openai_server& s,
                                           std::size_t batch, std::filesystem::path cache = {}) {
  memhealth::openai_embedder_options o;
  o.url = s.url();
  o.model = "bench-embed";
  o.dimension = 384;
  o.batch_size = batch;
  o.api_key_env.clear();
  o.cache_path = std::move(cache);
  return o;
}

void embed_run(benchmark::State& state, std::size_t batch) {
  const std::size_t n = memhealth_bench::size_from_env("MEMHEALTH_BENCH_MODELS_N", 2000, 100);
  memhealth::test::fake_openai_server srv(384);
  const auto t = texts(n);
  std::vector<float> out(n * 384);
  int requests = 0;
  for (auto _ : state) {
    const int before = srv.embedding_requests.load();
    memhealth::openai_embedder e(options(srv, batch));
    memhealth::embed_batch(e, t, std::span<float>(out));
    requests = srv.embedding_requests.load() - before;
  }
  state.counters["records_per_s"] =
      benchmark::Counter(static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["requests"] = requests;
  state.counters["records"] = static_cast<double>(n);
  if (requests != static_cast<int>((n + batch - 1) / batch))
    state.SkipWithError("unexpected request count");
}

void models_embed_batched(benchmark::State& state) {
  embed_run(state, 64);
}
void models_embed_unbatched(benchmark::State& state) {
  embed_run(state, 1);
}

// A rerun over the same texts with the cache filled by a first run: no request at all.
void models_embed_warm_cache(benchmark::State& state) {
  const std::size_t n = memhealth_bench::size_from_env("MEMHEALTH_BENCH_MODELS_N", 2000, 100);
  memhealth::test::fake_openai_server srv(384);
  const auto t = texts(n);
  std::vector<float> out(n * 384);
  const char* tmp = std::getenv("MEMHEALTH_BENCH_TMP");
  const auto cache = std::filesystem::path(tmp ? tmp : "/tmp") /
                     ("memhealth-bench-models-" + std::to_string(::getpid()) + ".sqlite");
  std::filesystem::remove(cache);
  {
    memhealth::openai_embedder warm(options(srv, 64, cache));
    memhealth::embed_batch(warm, t, std::span<float>(out));
  }
  const int before = srv.embedding_requests.load();
  for (auto _ : state) {
    memhealth::openai_embedder e(options(srv, 64, cache));
    memhealth::embed_batch(e, t, std::span<float>(out));
  }
  const int sent = srv.embedding_requests.load() - before;
  state.counters["records_per_s"] =
      benchmark::Counter(static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["requests"] = sent;
  std::filesystem::remove(cache);
  std::filesystem::remove(cache.string() + "-wal");
  std::filesystem::remove(cache.string() + "-shm");
  if (sent != 0) state.SkipWithError("the warm cache sent requests");
}

BENCHMARK(models_embed_batched)->Name("models/embed_batched")->Iterations(1)->UseRealTime();
BENCHMARK(models_embed_unbatched)->Name("models/embed_unbatched")->Iterations(1)->UseRealTime();
BENCHMARK(models_embed_warm_cache)->Name("models/embed_warm_cache")->Iterations(1)->UseRealTime();

}  // namespace bench_models
