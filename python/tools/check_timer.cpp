// memhealth-py-check-timer: the C++ side of bench/python_check.py. Reads records (JSONL, without
// embeddings) and their n x d float32 embeddings (raw little-endian, row-major), builds a
// memory_store, runs the default pipeline (what `memhealth check` and memhealth.check run) and
// prints the seconds of the load+store build and of the check.
//   memhealth-py-check-timer RECORDS.jsonl EMBEDDINGS.f32 DIM THREADS
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "memhealth/memhealth.hpp"

int main(int argc, char** argv) {
  if (argc != 5) {
    std::cerr << "usage: memhealth-py-check-timer RECORDS.jsonl EMBEDDINGS.f32 DIM THREADS\n";
    return 2;
  }
  using clock = std::chrono::steady_clock;
  const std::size_t d = std::strtoul(argv[3], nullptr, 10);
  const unsigned threads = static_cast<unsigned>(std::strtoul(argv[4], nullptr, 10));
  const auto t0 = clock::now();
  auto lr = memhealth::read_jsonl(argv[1]);
  std::ifstream f(argv[2], std::ios::binary);
  std::vector<float> block(lr.records.size() * d);
  f.read(reinterpret_cast<char*>(block.data()),
         static_cast<std::streamsize>(block.size() * sizeof(float)));
  if (!f) {
    std::cerr << "memhealth-py-check-timer: cannot read " << argv[2] << "\n";
    return 2;
  }
  for (std::size_t i = 0; i < lr.records.size(); ++i)
    lr.records[i].embedding.assign(block.begin() + static_cast<std::ptrdiff_t>(i * d),
                                   block.begin() + static_cast<std::ptrdiff_t>((i + 1) * d));
  block = {};
  auto store = memhealth::memory_store<>::from_records(std::move(lr.records), d);
  const auto t1 = clock::now();
  memhealth::default_check_settings s;
  s.threads = threads;
  memhealth::detect_options o;
  o.dimension = store.dimension();
  const auto r = memhealth::make_default_pipeline(s).run(store, o);
  const auto t2 = clock::now();
  std::printf("{\"load_s\": %.6f, \"check_s\": %.6f, \"records\": %zu, \"findings\": %zu}\n",
              std::chrono::duration<double>(t1 - t0).count(),
              std::chrono::duration<double>(t2 - t1).count(), store.size(), r.findings.size());
  return 0;
}
