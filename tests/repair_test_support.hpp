// Test support shared by the repair tests: a scratch directory, a whole-file reader, and an
// in-memory store whose restore() throws for one record index the first `failures` times (a
// backend hiccup), to make aborted intents.
#pragma once

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "memhealth/config.hpp"
#include "memhealth/store/memory_store.hpp"
#include "memhealth/store/store.hpp"

#include <unistd.h>

namespace memhealth::test {

/// A fresh directory under the system temp dir, named `prefix`-<pid>-`name`, removed on scope exit.
struct scratch_dir {
  std::filesystem::path path;
  explicit scratch_dir(const std::string& name, const std::string& prefix = "memhealth-test") {
    path = std::filesystem::temp_directory_path() /
           (prefix + "-" + std::to_string(::getpid()) + "-" + name);
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~scratch_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

/// The bytes of a file ("" when it cannot be read).
inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

struct flaky_store {
  using record_type = memory_record;
  memory_store<memory_record> inner;
  std::size_t bad_index = 0;
  int failures = 0;
  std::size_t size() const { return inner.size(); }
  const memory_record& record(std::size_t i) const { return inner.record(i); }
  std::span<const float> embedding(std::size_t i) const { return inner.embedding(i); }
  std::optional<std::size_t> find(std::string_view id) const { return inner.find(id); }
  std::size_t dimension() const { return inner.dimension(); }
  memory_record restore(std::size_t i, const memory_record& r) {
    if (i == bad_index && failures > 0) {
      --failures;
      throw error(error_code::io, "flaky backend");
    }
    return inner.restore(i, r);
  }
  memory_record extract(std::size_t i) const { return inner.extract(i); }
};
static_assert(mutable_record_store<flaky_store>);

}  // namespace memhealth::test
