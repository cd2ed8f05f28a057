// libFuzzer target: the SQLite store reader (sqlite_store::open, store/sqlite_store.hpp).
//
// The input is written to a file and opened read-only as a memhealth SQLite store (validation
// with quick_check, then the record index); every record is then read three ways: streamed by
// for_each, block by block through record()/embedding() (tiny blocks and a tiny embedding cache,
// so the block and cache logic run on small inputs), and one at a time by extract(). Documented
// (the file comment of sqlite_store.hpp): every failure throws memhealth::error (schema, parse,
// io); so a crash, a sanitizer report or another exception is a bug. Checked on success: the
// three readings agree, and indices and store keys are consistent.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "memhealth/store/sqlite_store.hpp"

#include "fuzz_support.hpp"
#include <unistd.h>

namespace {
namespace mh = memhealth;

// The database file: one per process, on tmpfs when there is one (it is rewritten per input).
// A plain file, not a directory: libFuzzer ends with _Exit, so nothing could remove a directory;
// the file and its -wal/-shm/-journal are removed after every input.
const std::filesystem::path& db_path() {
  static const std::filesystem::path path = [] {
    std::error_code ec;
    const std::filesystem::path base =
        std::filesystem::is_directory("/dev/shm", ec) ? "/dev/shm" : "/tmp";
    return base / ("memhealth-fuzz-sqlite-" + std::to_string(::getpid()) + ".db");
  }();
  return path;
}

void remove_files(const std::filesystem::path& db) {
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"})
    std::filesystem::remove(db.string() + suffix, ec);
}

void check_store(const std::filesystem::path& db) {
  mh::sqlite_store_options opt;
  opt.read_only = true;
  opt.block_rows = 3;
  opt.cached_embedding_blocks = 2;
  opt.busy_timeout = std::chrono::milliseconds(0);
  const auto s = mh::sqlite_store<>::open(db, opt);
  const std::size_t n = s.size();

  std::vector<mh::memory_record> streamed;
  s.for_each([&](std::size_t i, const mh::memory_record& r) {
    MEMHEALTH_FUZZ_CHECK(i == streamed.size());
    streamed.push_back(r);
  });
  MEMHEALTH_FUZZ_CHECK(streamed.size() == n);

  for (std::size_t i = 0; i < n; ++i) {
    const mh::memory_record& r = s.record(i);
    MEMHEALTH_FUZZ_CHECK(r.id == streamed[i].id);
    MEMHEALTH_FUZZ_CHECK(r.embedding.empty());  // record() leaves the embedding out
    const auto e = s.embedding(i);
    MEMHEALTH_FUZZ_CHECK(e.size() == streamed[i].embedding.size());
    if (i > 0) MEMHEALTH_FUZZ_CHECK(s.store_key(i) != s.store_key(i - 1));  // distinct rowids
  }
  for (std::size_t i = n; i-- > 0;) {  // backwards: other blocks in the cache
    const mh::memory_record x = s.extract(i);
    MEMHEALTH_FUZZ_CHECK(x.id == streamed[i].id);
    MEMHEALTH_FUZZ_CHECK(x.embedding.size() == streamed[i].embedding.size());
    if (const auto at = s.find(x.id)) MEMHEALTH_FUZZ_CHECK(*at < n);
  }
  (void)s.integrity_check();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::filesystem::path& db = db_path();
  remove_files(db);
  {
    std::FILE* f = std::fopen(db.c_str(), "wb");
    if (!f) __builtin_trap();
    if (size && std::fwrite(data, 1, size, f) != size) __builtin_trap();
    std::fclose(f);
  }
  try {
    check_store(db);
  } catch (const mh::error&) {
    // documented: schema, parse or io for a file that is not a sound memhealth store
  }
  remove_files(db);
  return 0;
}
