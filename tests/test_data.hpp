// Where the tests find real (third-party) data: tests/data/<rel> first (the subsets bundled with
// the repository, see tests/data/README.md), then ../shared/data/<rel> (larger sets on machines
// that have the team's data folder). A test whose data is in neither place is skipped: it prints
// "memhealth-skip: ..." (ctest reports it as skipped through SKIP_REGULAR_EXPRESSION, see
// tests/CMakeLists.txt) and returns without failing.
#pragma once

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#ifndef MEMHEALTH_SOURCE_DIR
#error "tests/CMakeLists.txt defines MEMHEALTH_SOURCE_DIR"
#endif
#ifndef MEMHEALTH_SHARED_DATA_DIR
#define MEMHEALTH_SHARED_DATA_DIR MEMHEALTH_SOURCE_DIR "/../shared/data"
#endif

namespace memhealth::test {

/// The bundled data folder, `<repo>/tests/data`.
inline std::filesystem::path bundled_data_dir() {
  return std::filesystem::path(MEMHEALTH_SOURCE_DIR) / "tests" / "data";
}

/// The team's shared data folder, `<repo>/../shared/data` unless the build says otherwise.
inline std::filesystem::path shared_data_dir() {
  return std::filesystem::path(MEMHEALTH_SHARED_DATA_DIR);
}

/// `rel` (a file or directory relative to a data folder, e.g. "locomo/26.json") in the bundled
/// folder, else in the shared folder; nullopt when neither holds it.
inline std::optional<std::filesystem::path> find_data(std::string_view rel) {
  for (const auto& dir : {bundled_data_dir(), shared_data_dir()}) {
    auto p = dir / std::filesystem::path(std::string(rel));
    if (std::filesystem::exists(p)) return p;
  }
  return std::nullopt;
}

/// The message a skipped test prints (matched by ctest's SKIP_REGULAR_EXPRESSION).
inline std::string skip_message(std::string_view rel) {
  return "memhealth-skip: real data '" + std::string(rel) + "' is in neither " +
         bundled_data_dir().string() + " nor " + shared_data_dir().string() +
         " (see tests/data/README.md)";
}

/// The rows of a tab-separated file after its header line, each split into its fields (an
/// unreadable file gives no rows).
inline std::vector<std::vector<std::string>> read_tsv_rows(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::vector<std::vector<std::string>> rows;
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::vector<std::string> cols;
    std::stringstream ss(line);
    for (std::string c; std::getline(ss, c, '\t');) cols.push_back(c);
    rows.push_back(std::move(cols));
  }
  return rows;
}

}  // namespace memhealth::test

/// Declares `const std::filesystem::path var` = the data file or directory `rel`, or skips the
/// current test case (message and return) when it is absent.
#define MEMHEALTH_TEST_DATA(var, rel)                          \
  const auto var##_found_ = ::memhealth::test::find_data(rel); \
  if (!var##_found_) {                                         \
    MESSAGE(::memhealth::test::skip_message(rel));             \
    return;                                                    \
  }                                                            \
  const std::filesystem::path var = *var##_found_
