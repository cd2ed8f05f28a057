// Durable append throughput of the repair write-ahead log (repair/wal.hpp) against SQLite in WAL
// mode with synchronous=FULL doing the same work, in one run, files in one temporary directory
// ($MEMHEALTH_BENCH_TMP or the system temp dir) on the same disk.
//
// One "action" is what the executor logs for a one-record repair:
// - wal/append_N: N intent frames, each with one record's before-image (canonical JSON, about
//   1 KB: a 64-float embedding and ~250 chars of text) and its after-image (a status change and
//   a duplicate link: written as an edit of the before-image in format 2, ~60 bytes), written
//   with one write() and made durable with one fdatasync (group commit via
//   begin_batch/commit_batch), then N lazy commit frames (buffered; written ahead of the next
//   batch and synced with it).
// - sqlite/insert_N: N INSERTs of one row (integer key, text idempotency key, 1 KB blob) in one
//   transaction (BEGIN ... COMMIT), journal_mode=WAL, synchronous=FULL: one WAL fsync per commit.
// N = 1 (one action per commit) and N = 100 (batched). Counter actions_per_s is actions divided
// by the wall-clock time of the benchmark loop (measured with steady_clock: the cost is waiting
// on the disk, not CPU; the Time/CPU columns are per commit group). The WAL writes about 1.4x
// SQLite's payload bytes per action (frame_bytes_per_action). Run it as
//   ./memhealth-bench --benchmark_filter='wal/|sqlite/'
// Goal (issue 17): wal/append_1 at least sqlite/insert_1, wal/append_100 at least 1.5x
// sqlite/insert_100.
#include <benchmark/benchmark.h>
#include <sqlite3.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "memhealth/io/jsonl.hpp"
#include "memhealth/repair/wal.hpp"

#include <unistd.h>

namespace bench_wal {

namespace fs = std::filesystem;

fs::path bench_dir() {
  fs::path base = std::getenv("MEMHEALTH_BENCH_TMP") ? fs::path(std::getenv("MEMHEALTH_BENCH_TMP"))
                                                     : fs::temp_directory_path();
  fs::path d = base / ("memhealth-bench-wal-" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

struct image_pair {
  std::size_t index = 0;
  std::string id, before_json, after_json;
};

// A before/after pair of about 1 KB of canonical JSON each.
image_pair make_images() {
  memhealth::memory_record r;
  r.id = "mem-000123";
  r.content =
      "The user prefers window seats on long flights and asked to avoid layovers in winter; "
      "they fly twice a month between Berlin and Hangzhou, usually on Tuesday mornings, and "
      "keep a frequent-flyer account with the same alliance for lounge access.";
  for (int i = 0; i < 64; ++i) r.embedding.push_back(0.0123f * float(i) - 0.2f);
  r.embedding_version = "bench-v1";
  r.source = "user_declared";
  r.scope = "user:7/travel";
  r.status = "active";
  r.kind = "preference";
  image_pair p;
  p.id = r.id;
  p.before_json = memhealth::to_json(r);
  r.status = "archived";
  r.links.duplicate_of = "mem-000042";
  p.after_json = memhealth::to_json(r);
  return p;
}

template <std::size_t n>
void wal_append(benchmark::State& state) {
  const fs::path dir = bench_dir();
  const fs::path path = dir / "bench.wal";
  fs::remove(path);
  const image_pair img = make_images();
  const std::vector<image_pair> records{img};
  std::size_t actions = 0;
  {
    memhealth::wal_writer wal(path, memhealth::wal_sync::per_batch, "bench");
    std::vector<std::uint64_t> seqs(n);
    const auto t0 = std::chrono::steady_clock::now();
    for (auto _ : state) {
      wal.begin_batch();
      for (std::size_t k = 0; k < n; ++k)
        seqs[k] = wal.append_intent(static_cast<std::int64_t>(k), "key", 1, records);
      wal.commit_batch();
      for (std::size_t k = 0; k < n; ++k)
        wal.append_commit(seqs[k], static_cast<std::int64_t>(k), "key");
      actions += n;
    }
    wal.flush();
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    state.counters["actions_per_s"] = static_cast<double>(actions) / wall;
    state.counters["frame_bytes_per_action"] =
        static_cast<double>(wal.bytes_written()) / static_cast<double>(actions);
  }
  state.counters["payload_bytes"] =
      static_cast<double>(img.before_json.size() + img.after_json.size());
  fs::remove_all(dir);
}

void check(int rc, sqlite3* db, benchmark::State& state) {
  if (rc != SQLITE_OK && rc != SQLITE_DONE) state.SkipWithError(sqlite3_errmsg(db));
}

template <std::size_t n>
void sqlite_insert(benchmark::State& state) {
  const fs::path dir = bench_dir();
  const fs::path path = dir / "bench.sqlite";
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) {
    state.SkipWithError("cannot open sqlite db");
    return;
  }
  check(sqlite3_exec(db,
                     "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
                     "CREATE TABLE log(seq INTEGER PRIMARY KEY, key TEXT, image BLOB);",
                     nullptr, nullptr, nullptr),
        db, state);
  sqlite3_stmt* ins = nullptr;
  check(sqlite3_prepare_v2(db, "INSERT INTO log(key, image) VALUES(?1, ?2)", -1, &ins, nullptr), db,
        state);
  const std::string blob(1024, 'x');
  std::size_t actions = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state) {
    check(sqlite3_exec(db, "BEGIN", nullptr, nullptr, nullptr), db, state);
    for (std::size_t k = 0; k < n; ++k) {
      sqlite3_bind_text(ins, 1, "key", 3, SQLITE_STATIC);
      sqlite3_bind_blob(ins, 2, blob.data(), static_cast<int>(blob.size()), SQLITE_STATIC);
      check(sqlite3_step(ins), db, state);
      sqlite3_reset(ins);
    }
    check(sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr), db, state);
    actions += n;
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  sqlite3_finalize(ins);
  sqlite3_close(db);
  state.counters["actions_per_s"] = static_cast<double>(actions) / wall;
  fs::remove_all(dir);
}

BENCHMARK(wal_append<1>)->Name("wal/append_1");
BENCHMARK(sqlite_insert<1>)->Name("sqlite/insert_1");
BENCHMARK(wal_append<100>)->Name("wal/append_100");
BENCHMARK(sqlite_insert<100>)->Name("sqlite/insert_100");

}  // namespace bench_wal
