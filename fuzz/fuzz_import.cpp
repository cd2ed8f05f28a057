// libFuzzer target: the importers (io/import_mem0.hpp, import_locomo.hpp, import_prefeval.hpp)
// and the format sniffer (import_sniff.hpp). The first byte picks the importer, the rest is the
// file's text. Documented: error(parse) for input not in the format; problems inside become
// load issues.
#include <cstddef>
#include <cstdint>

#include "memhealth/io/import_locomo.hpp"
#include "memhealth/io/import_mem0.hpp"
#include "memhealth/io/import_prefeval.hpp"
#include "memhealth/io/import_sniff.hpp"
#include "memhealth/io/jsonl.hpp"

#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace mh = memhealth;
  if (size == 0) return 0;
  const auto in = memhealth_fuzz::text(data + 1, size - 1);
  (void)mh::sniff_format(in);
  try {
    mh::basic_load_result<mh::memory_record> r;
    switch (data[0] % 3) {
      case 0:
        r = mh::import_mem0_text(in, "<fuzz>");
        break;
      case 1:
        r = mh::import_locomo_text(in, "26", "<fuzz>");
        break;
      default:
        r = mh::import_prefeval_text(in, "lifestyle_dietary", "<fuzz>");
        break;
    }
    // Imported records are memhealth records: they write and read back without loss.
    const std::string w = mh::to_jsonl(r.records);
    mh::load_options one;
    one.threads = 1;
    const auto back = mh::parse_jsonl(w, "<fuzz-import>", one);
    MEMHEALTH_FUZZ_CHECK(back.records.size() == r.records.size());
    MEMHEALTH_FUZZ_CHECK(mh::to_jsonl(back.records) == w);
  } catch (const mh::error& e) {
    MEMHEALTH_FUZZ_CHECK(e.code() == mh::error_code::parse);
  }
  return 0;
}
