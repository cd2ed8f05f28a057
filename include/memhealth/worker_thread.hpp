#pragma once
/// @file worker_thread.hpp
/// How the library starts its worker threads: the structural scan, the joins, the int8
/// quantisation, k-means blocking and the parallel JSONL parser all go through this header.
///
/// Why not `std::jthread(lambda)` at each site (a compile-cost fix, issue #6): each distinct
/// callable gives a distinct `std::thread::_State_impl<...>` with a virtual `_M_run`, which
/// exists wherever the function that starts the thread is instantiated; for a non-template
/// inline function that is every TU including its header. Once a TU starts any thread, GCC's
/// devirtualisation treats every such state type in the TU as a possible target and compiles
/// its `_M_run`, the callable, and everything the callable calls, even when the function that
/// would start the thread is never called. In the umbrella TU this compiled the whole parallel
/// JSONL parser (simdjson included) and the int8 quantiser into every program that only ran
/// the default pipeline (8,897 functions gimplified instead of 6,769). Here the callable is
/// erased behind a function pointer, so the library has one thread state type and a worker body
/// is emitted only if the function that starts it is emitted.

#include <cstddef>
#include <exception>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

namespace memhealth::detail {

/// Entry point of an erased worker: `fn` is the caller's callable, `w` the worker index.
using worker_entry = void (*)(void* fn, std::size_t w);

/// Starts a thread that runs `entry(fn, w)`. The only `std::jthread` construction in the library.
/// @throws std::system_error when the thread cannot be started (as `std::jthread`).
inline std::jthread start_worker_erased(worker_entry entry, void* fn, std::size_t w) {
  return std::jthread([entry, fn, w] { entry(fn, w); });
}

/// Starts a `std::jthread` that calls `fn(w)`.
/// @param fn an lvalue function object (not a function name), held by reference, not copied:
///   threads started from the same `fn` share it and call it concurrently, so its `operator()`
///   must be safe to call from several threads at once, and `fn` must outlive the threads
///   (declare it before the container of threads, which then joins them first on the way out,
///   exceptions included). An exception must not leave `fn` (as with `std::jthread`, one that
///   does calls `std::terminate`); `run_workers` catches and rethrows them for you.
/// @throws std::system_error when the thread cannot be started.
template <class F>
std::jthread start_worker(F& fn, std::size_t w) {
  return start_worker_erased([](void* f, std::size_t i) { (*static_cast<F*>(f))(i); },
                             const_cast<void*>(static_cast<const void*>(std::addressof(fn))), w);
}

/// A temporary would be destroyed while the thread still runs: not allowed.
template <class F>
void start_worker(const F&&, std::size_t) = delete;

/// Runs `fn(w)` for every w in [0, count) on `count` new threads and returns when all have
/// finished. `fn` is shared by the threads (see `start_worker`). An exception thrown by a worker
/// is caught on its thread; once every worker has finished, the one of the lowest w is rethrown
/// on the calling thread (the others are dropped). count 0 does nothing.
/// @throws whatever a worker threw; std::system_error when a thread cannot be started (the
///   threads already started are joined first).
template <class F>
void run_workers(std::size_t count, F&& fn) {
  std::vector<std::exception_ptr> failed(count);
  auto guarded = [&](std::size_t w) {
    try {
      fn(w);
    } catch (...) {
      failed[w] = std::current_exception();
    }
  };
  {
    std::vector<std::jthread> pool;
    pool.reserve(count);
    for (std::size_t w = 0; w < count; ++w) pool.push_back(start_worker(guarded, w));
  }  // joins
  for (auto& e : failed)
    if (e) std::rethrow_exception(e);
}

}  // namespace memhealth::detail
