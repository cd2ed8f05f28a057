// Crash test of repairs on an SQLite store (ctest: sqlite.crash). One executable, two roles:
//
//   memhealth-sqlite-crash-child child DB WAL BATCH
//       applies the test plan to the store DB, logging to WAL; with MEMHEALTH_CRASH_AT=k it calls
//       _exit(77) at the k-th apply_options::crash_hook call (a crash at a named point);
//       with MEMHEALTH_HOOK_COUNT_OUT=file it writes the number of hook calls of a full run there.
//   memhealth-sqlite-crash-child drive ITERATIONS [SEED]
//       builds a base store, then until ITERATIONS children were killed: copies it, runs the child
//       and kills it, half the time through the crash hook at a random call, half the time with
//       SIGKILL after a random delay (anywhere: inside SQLite's commit, the log's fdatasync,
//       process start-up); then recovers with the log and checks that PRAGMA integrity_check is
//       "ok", that every action's three records are all at their before-images or all at their
//       after-images, that every action the log commits is at its after-images, and that no other
//       record changed.
//
// Prints "N passed, M failed" (one per run) and exits non-zero on any failure or when fewer than
// ITERATIONS children were killed.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <memhealth/io/jsonl.hpp>
#include <memhealth/repair/apply_edit.hpp>
#include <memhealth/repair/executor.hpp>
#include <memhealth/repair/rollback.hpp>
#include <memhealth/repair/wal.hpp>
#include <memhealth/store/sqlite_store.hpp>

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace memhealth;

namespace {

constexpr int n_actions = 20;
constexpr int n_records = 3 * n_actions + 10;  // 10 records no action touches

memory_record base_record(int i) {
  memory_record r;
  r.id = "r" + std::to_string(i);
  r.content = "memory number " + std::to_string(i);
  r.embedding = {0.5f, -0.5f, 0.5f, float(i) / 100.0f};
  r.embedding_version = "m1";
  r.scope = "user:" + std::to_string(i % 3);
  r.status = "active";
  r.source = "user_declared";
  r.kind = "fact";
  r.metadata.emplace("topic", std::string("t") + std::to_string(i % 5));
  r.updated_at = parse_timestamp("2024-03-02T09:00:00.000+02:00");
  return r;
}

// Action k edits records 3k, 3k+1, 3k+2 (disjoint across actions): status, notes, embedding.
repair_plan test_plan() {
  repair_plan p;
  for (int k = 0; k < n_actions; ++k) {
    repair_action a;
    a.type = "test";
    a.idempotency_key = "action-" + std::to_string(k);
    const std::string x = "r" + std::to_string(3 * k), y = "r" + std::to_string(3 * k + 1),
                      z = "r" + std::to_string(3 * k + 2);
    a.targets = {x, y, z};
    a.edits.push_back({x, edit_set_status{"archived"}});
    a.edits.push_back({x, edit_set_weight{0.5}});
    a.edits.push_back({y, edit_append_notes{{"note of action " + std::to_string(k)}}});
    a.edits.push_back({z, edit_replace_embedding{{1.0f, 2.0f, 3.0f, float(k)}, "m2"}});
    p.actions.push_back(std::move(a));
  }
  return p;
}

int run_child(const std::string& db, const std::string& wal_path, std::size_t batch) {
  long crash_at = 0;
  if (const char* e = std::getenv("MEMHEALTH_CRASH_AT")) crash_at = std::atol(e);
  long calls = 0;
  apply_options opt;
  opt.batch_size = batch;
  opt.crash_hook = [&](std::string_view) {
    if (++calls == crash_at) ::_exit(77);
  };
  auto store = sqlite_store<>::open(db, {.verify = false});
  wal_writer wal(wal_path);
  const auto res = apply_plan(store, test_plan(), wal, opt);
  if (const char* out = std::getenv("MEMHEALTH_HOOK_COUNT_OUT"))
    std::ofstream(out) << calls << "\n";
  return res.applied.size() == std::size_t(n_actions) ? 0 : 3;
}

struct run_stats {
  std::size_t at_after = 0, at_before = 0;
};

// Recovers the store and checks it; returns an empty string or what is wrong.
std::string check(const fs::path& db, const fs::path& wal, const std::vector<memory_record>& base,
                  run_stats& st) {
  auto store = sqlite_store<>::open(db);  // verify: quick_check
  std::set<std::string> committed;
  if (fs::exists(wal) && fs::file_size(wal) > 0) {
    const auto log = read_wal_file(wal);
    recover(store, log);
    for (const auto& a : logged_actions(log))
      if (a.state == logged_state::committed) committed.insert(a.intent->idempotency_key);
  }
  if (auto ic = store.integrity_check(); ic != "ok") return "integrity_check: " + ic;
  if (store.size() != base.size()) return "record count changed";
  const auto plan = test_plan();
  for (int k = 0; k < n_actions; ++k) {
    int before = 0, after = 0;
    for (int j = 0; j < 3; ++j) {
      const std::size_t i = std::size_t(3 * k + j);
      memory_record want_after = base[i];
      for (const auto& e : plan.actions[std::size_t(k)].edits)
        if (e.record_id == base[i].id) apply_edit(want_after, e.op);
      const std::string cur = to_json(store.extract(i));
      before += cur == to_json(base[i]);
      after += cur == to_json(want_after);
    }
    if (!(before == 3 || after == 3))
      return "action-" + std::to_string(k) + " is half applied (" + std::to_string(after) +
             " of 3 records at after-images)";
    if (committed.count("action-" + std::to_string(k)) && after != 3)
      return "action-" + std::to_string(k) + " is committed in the log but not in the store";
    (after == 3 ? st.at_after : st.at_before) += 1;
  }
  for (std::size_t i = 3 * n_actions; i < base.size(); ++i)
    if (to_json(store.extract(i)) != to_json(base[i]))
      return "untouched record " + base[i].id + " changed";
  return {};
}

pid_t spawn(const std::string& self, const fs::path& db, const fs::path& wal, std::size_t batch,
            long crash_at, const std::string& count_out = {}) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (crash_at > 0)
      ::setenv("MEMHEALTH_CRASH_AT", std::to_string(crash_at).c_str(), 1);
    else
      ::unsetenv("MEMHEALTH_CRASH_AT");
    if (!count_out.empty()) ::setenv("MEMHEALTH_HOOK_COUNT_OUT", count_out.c_str(), 1);
    const std::string b = std::to_string(batch);
    ::execl(self.c_str(), self.c_str(), "child", db.c_str(), wal.c_str(), b.c_str(),
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  return pid;
}

int drive(const std::string& self, int iterations, unsigned seed) {
  const fs::path work =
      fs::temp_directory_path() / ("memhealth-sqlite-crash-" + std::to_string(::getpid()));
  fs::remove_all(work);
  fs::create_directories(work);
  std::vector<memory_record> base;
  for (int i = 0; i < n_records; ++i) base.push_back(base_record(i));
  { auto s = sqlite_store<>::create(work / "base.db", base); }

  // Calibration: a full run gives the number of hook calls and the run time.
  const auto t0 = std::chrono::steady_clock::now();
  fs::copy_file(work / "base.db", work / "run.db", fs::copy_options::overwrite_existing);
  int status = 0;
  ::waitpid(spawn(self, work / "run.db", work / "run.wal", 2, 0, (work / "count").string()),
            &status, 0);
  const auto full = std::chrono::steady_clock::now() - t0;
  long hooks = 0;
  std::ifstream(work / "count") >> hooks;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || hooks < n_actions) {
    std::cerr << "calibration run failed (status " << status << ", " << hooks << " hook calls)\n";
    return 2;
  }
  const auto full_us = std::chrono::duration_cast<std::chrono::microseconds>(full).count();
  std::cout << "calibration: " << hooks << " hook calls, full run " << full_us / 1000 << " ms\n";

  std::mt19937 rng(seed);
  int passed = 0, failed = 0, by_hook = 0, by_kill = 0, finished = 0;
  run_stats st;
  // Runs until `iterations` children were killed (a run may finish before its kill: not counted),
  // at most 2 x iterations runs.
  for (int it = 0; by_hook + by_kill < iterations && it < 2 * iterations; ++it) {
    fs::remove(work / "run.wal");
    for (const char* sfx : {"", "-wal", "-shm"}) fs::remove(work / ("run.db" + std::string(sfx)));
    fs::copy_file(work / "base.db", work / "run.db");
    const std::size_t batch = 1 + rng() % 4;
    pid_t pid;
    if (it % 2 == 0) {
      const long at = 1 + long(rng() % std::uint32_t(hooks));
      pid = spawn(self, work / "run.db", work / "run.wal", batch, at);
      ::waitpid(pid, &status, 0);
    } else {
      pid = spawn(self, work / "run.db", work / "run.wal", batch, 0);
      // anywhere from process start-up to near the end of a full run
      std::this_thread::sleep_for(
          std::chrono::microseconds(rng() % std::uint32_t(full_us * 9 / 10 + 1)));
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
    }
    if (WIFSIGNALED(status))
      ++by_kill;
    else if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
      ++by_hook;
    else if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
      ++finished;
    std::string problem;
    try {
      problem = check(work / "run.db", work / "run.wal", base, st);
    } catch (const std::exception& e) {
      problem = std::string("exception: ") + e.what();
    }
    if (problem.empty()) {
      ++passed;
    } else {
      ++failed;
      std::cerr << "iteration " << it << " (batch " << batch << ", status " << status
                << "): " << problem << "\n";
    }
  }
  std::cout << "crashes: " << by_hook << " at a hook, " << by_kill << " by SIGKILL, " << finished
            << " runs finished before the kill; actions after recovery: " << st.at_after
            << " all at after-images, " << st.at_before
            << " all at before-images, 0 mixed allowed\n";
  std::cout << passed << " passed, " << failed << " failed\n";
  std::error_code ec;
  fs::remove_all(work, ec);
  return failed == 0 && by_hook + by_kill >= iterations ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "child" && argc == 5)
      return run_child(argv[2], argv[3], std::size_t(std::atol(argv[4])));
    if (mode == "drive" && (argc == 3 || argc == 4)) {
      const unsigned seed = argc == 4 ? unsigned(std::atol(argv[3])) : 20240301u;
      return drive(fs::canonical("/proc/self/exe").string(), std::atoi(argv[2]), seed);
    }
    std::cerr << "usage: " << argv[0] << " child DB WAL BATCH | drive ITERATIONS [SEED]\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "memhealth-sqlite-crash-child: " << e.what() << "\n";
    return 2;
  }
}
