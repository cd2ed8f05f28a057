// worker_thread.hpp: the library's one way to start worker threads (start_worker, run_workers).
#include "memhealth/worker_thread.hpp"

#include <doctest/doctest.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace worker_thread_test {
namespace mh = memhealth;

// The callable is held by reference (this one can be neither copied nor moved), runs once per
// index on a thread other than the caller's, and its effects are visible once the jthreads are
// joined.
TEST_CASE("start_worker runs fn(w) once per index on its own thread, by reference") {
  struct recorder {
    std::array<int, 4> calls{};
    std::array<std::thread::id, 4> ran_on{};
    recorder() = default;
    recorder(const recorder&) = delete;
    recorder& operator=(const recorder&) = delete;
    void operator()(std::size_t w) {
      calls[w] += 1;
      ran_on[w] = std::this_thread::get_id();
    }
  } rec;
  {
    std::vector<std::jthread> pool;
    for (std::size_t w = 0; w < 4; ++w) pool.push_back(mh::detail::start_worker(rec, w));
  }  // joined here
  for (std::size_t w = 0; w < 4; ++w) {
    CHECK(rec.calls[w] == 1);
    CHECK(rec.ran_on[w] != std::this_thread::get_id());
    CHECK(rec.ran_on[w] != std::thread::id{});
  }
  // A const callable works too; each worker writes only its own slot.
  std::array<std::size_t, 3> squares{};
  const auto square = [&](std::size_t w) { squares[w] = w * w; };
  {
    std::vector<std::jthread> pool;
    for (std::size_t w = 0; w < 3; ++w) pool.push_back(mh::detail::start_worker(square, w));
  }
  CHECK(squares == std::array<std::size_t, 3>{0, 1, 4});
}

TEST_CASE(
    "run_workers: every index once, all joined on return, the lowest failing index's exception "
    "reaches the caller") {
  // 8 workers, each adds its index + 1: 1 + 2 + ... + 8 = 36; each slot written once.
  std::atomic<int> sum{0};
  std::array<int, 8> hits{};
  mh::detail::run_workers(8, [&](std::size_t w) {
    sum += static_cast<int>(w) + 1;
    hits[w] += 1;
  });
  CHECK(sum.load() == 36);
  CHECK(hits == std::array<int, 8>{1, 1, 1, 1, 1, 1, 1, 1});

  // Workers 1 and 3 throw (they would call std::terminate in a bare jthread); the rest still
  // run to the end, and the exception of worker 1 is rethrown after all have finished.
  std::array<int, 5> done{};
  std::string what;
  try {
    mh::detail::run_workers(5, [&](std::size_t w) {
      if (w == 1 || w == 3) throw std::runtime_error("worker " + std::to_string(w));
      done[w] = 1;
    });
  } catch (const std::runtime_error& e) {
    what = e.what();
  }
  CHECK(what == "worker 1");
  CHECK(done == std::array<int, 5>{1, 0, 1, 0, 1});

  int calls = 0;
  mh::detail::run_workers(0, [&](std::size_t) { ++calls; });
  CHECK(calls == 0);
}
}  // namespace worker_thread_test
