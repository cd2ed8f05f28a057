// ODR test, translation unit B (see odr_a.cpp).
#include <cstdint>
#include <string>
#include <utility>

#include "memhealth_all_headers.hpp"

namespace memhealth_odr {
// 100 * index of "r2" in a store of r1, r2, r3 + length of normalize("ＡＢＣ").
std::int64_t probe_b() {
  memhealth::memory_store<> store;
  for (const char* id : {"r1", "r2", "r3"}) {
    memhealth::memory_record r;
    r.id = id;
    r.content = std::string("content of ") + id;
    store.insert(std::move(r));
  }
  const auto i = store.find("r2");
  const std::string folded = memhealth::text_normalizer{}("ＡＢＣ");
  return (i ? static_cast<std::int64_t>(*i) : -1) * 100 + static_cast<std::int64_t>(folded.size());
}
}  // namespace memhealth_odr
