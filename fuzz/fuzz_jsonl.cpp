// libFuzzer target: the JSONL record reader (parse_jsonl, io/jsonl_read.hpp).
// Documented: never throws on bad data (only bad_alloc / system_error); the result does not
// depend on threads or piece size; what it keeps writes back canonically (write, read, write
// gives the same bytes).
#include <cstddef>
#include <cstdint>

#include "memhealth/io/jsonl.hpp"

#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace mh = memhealth;
  const auto in = memhealth_fuzz::text(data, size);
  mh::load_options one;
  one.threads = 1;
  const auto a = mh::parse_jsonl(in, "<fuzz>", one);
  MEMHEALTH_FUZZ_CHECK(a.records.size() <= a.lines_read);

  if (size >= 256 && size <= 16384) {  // the parallel reader must give the same result
    mh::load_options two;
    two.threads = 2;
    two.piece_bytes = 96;
    const auto b = mh::parse_jsonl(in, "<fuzz>", two);
    MEMHEALTH_FUZZ_CHECK(b.lines_read == a.lines_read);
    MEMHEALTH_FUZZ_CHECK(b.issues.size() == a.issues.size());
    MEMHEALTH_FUZZ_CHECK(mh::to_jsonl(b.records) == mh::to_jsonl(a.records));
  }

  // Never lose a record: what was kept reads back whole and writes the same bytes again.
  const std::string w1 = mh::to_jsonl(a.records);
  const auto c = mh::parse_jsonl(w1, "<fuzz-rewrite>", one);
  MEMHEALTH_FUZZ_CHECK(c.records.size() == a.records.size());
  MEMHEALTH_FUZZ_CHECK(mh::to_jsonl(c.records) == w1);
  return 0;
}
