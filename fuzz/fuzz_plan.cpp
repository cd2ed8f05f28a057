// libFuzzer target: the repair plan reader (parse_plan, repair/plan_file.hpp: plan files of
// schema_version 2, JSON Lines, and 1, one JSON document). Documented: error(parse) or
// error(schema) for bad input, nothing else; a plan read round-trips exactly through its file
// text (plan_to_text) and through the document form (plan_to_json).
#include <cstddef>
#include <cstdint>

#include "memhealth/repair/plan_file.hpp"
#include "memhealth/repair/plan_json.hpp"

#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace mh = memhealth;
  try {
    const mh::repair_plan p = mh::parse_plan(memhealth_fuzz::text(data, size));
    const auto j = mh::plan_to_json(p);
    MEMHEALTH_FUZZ_CHECK(mh::plan_to_json(mh::plan_from_json(j)) == j);
    const std::string t = mh::plan_to_text(p);
    MEMHEALTH_FUZZ_CHECK(mh::plan_to_text(mh::parse_plan(t)) == t);
  } catch (const mh::error& e) {
    MEMHEALTH_FUZZ_CHECK(e.code() == mh::error_code::parse || e.code() == mh::error_code::schema);
  }
  return 0;
}
