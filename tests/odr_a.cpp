// ODR test, translation unit A. Together with odr_b.cpp: every public header (the umbrella first,
// once it exists) is included in two translation units of memhealth-tests, and both units use the
// same inline functions and template instantiations. A header that defines a non-inline function
// or variable makes the link fail with "multiple definition of ...".
#include <doctest/doctest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "memhealth_all_headers.hpp"

namespace memhealth_odr {
std::int64_t probe_b();  // defined in odr_b.cpp

// 2024-01-01T09:00:00+08:00 = 2024-01-01T01:00:00Z = 1704067200000 + 3600000 ms since the epoch.
std::int64_t probe_a() {
  const auto t = memhealth::parse_timestamp("2024-01-01T09:00:00+08:00");
  return t ? memhealth::epoch_ms(*t) : -1;
}
}  // namespace memhealth_odr

TEST_CASE("odr: every header in two translation units links and behaves the same") {
  CHECK(memhealth_odr::probe_a() == 1704070800000);
  // probe_b: store of 3 records, index of "r2" is 1, plus "ＡＢＣ" normalised to "abc" (3 bytes).
  CHECK(memhealth_odr::probe_b() == 1 * 100 + 3);
  memhealth::memory_store<> store;
  memhealth::memory_record r;
  r.id = "x";
  r.content = "same templates as odr_b.cpp";
  store.insert(std::move(r));
  CHECK(store.find("x") == std::optional<std::size_t>{0});
  CHECK(memhealth::text_normalizer{}("ＡＢＣ") == "abc");
}
