// libFuzzer target: the retrieval/feedback events reader (parse_events_jsonl, monitor/events.hpp).
// Documented: never throws for bad content; bad lines become load issues.
#include <cstddef>
#include <cstdint>

#include "memhealth/monitor/events.hpp"

#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace mh = memhealth;
  const auto r = mh::parse_events_jsonl(memhealth_fuzz::text(data, size), "<fuzz>");
  MEMHEALTH_FUZZ_CHECK(r.retrievals.size() + r.feedback.size() <= r.lines_read);
  for (const auto& e : r.retrievals) (void)mh::to_jsonl(e);
  for (const auto& e : r.feedback) (void)mh::to_jsonl(e);
  return 0;
}
