// libFuzzer target: the metadata schema reader (parse_schema_json, io/metadata_schema_json.hpp).
// Documented: error(parse) when not a JSON object, error(schema) for a bad member; nothing else.
#include <cstddef>
#include <cstdint>

#include "memhealth/io/metadata_schema_json.hpp"

#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace mh = memhealth;
  try {
    (void)mh::parse_schema_json(memhealth_fuzz::text(data, size));
  } catch (const mh::error& e) {
    MEMHEALTH_FUZZ_CHECK(e.code() == mh::error_code::parse || e.code() == mh::error_code::schema);
  }
  return 0;
}
