// The consumer program of the package tests: built against an installed memhealth
// (find_package/, pkg_config/) and against the source tree (add_subdirectory/). It checks values
// worked out by hand, so a package that compiles but links the wrong thing still fails.
#if __has_include(<memhealth/memhealth.hpp>)
#include <memhealth/memhealth.hpp>
#else
#include <memhealth/record/time.hpp>
#include <memhealth/store/memory_store.hpp>
#include <memhealth/text/normalize.hpp>
#include <memhealth/version.hpp>
#endif

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>

namespace {
int failures = 0;
void expect(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "package consumer: FAILED: %s\n", what);
    ++failures;
  }
}
}  // namespace

int main() {
  // 2024-01-01T09:00:00+08:00 is 01:00 UTC: 1704067200000 (midnight) + 3600000 ms.
  const auto t = memhealth::parse_timestamp("2024-01-01T09:00:00+08:00");
  expect(t.has_value() && memhealth::epoch_ms(*t) == 1704070800000, "parse_timestamp with offset");

  memhealth::memory_store<> store;
  for (const char* id : {"a", "b", "c"}) {
    memhealth::memory_record r;
    r.id = id;
    r.content = std::string("memory ") + id;
    r.embedding = {1.0f, 0.0f};
    store.insert(std::move(r));
  }
  const auto found = store.find("c");
  expect(found && *found == 2, "memory_store::find(\"c\") == 2");
  expect(!store.find("z"), "memory_store::find(\"z\") is empty");
  expect(store.dimension() == 2 && store.block_rows() == 3, "3 x 2 embedding block");

  // utf8proc is linked: NFKC maps fullwidth ＡＢＣ to ABC, case folding to abc.
  expect(memhealth::text_normalizer{}("ＡＢＣ") == "abc", "text_normalizer NFKC + casefold");

#ifdef MEMHEALTH_EXPECTED_VERSION
  expect(std::strcmp(memhealth::version_string, MEMHEALTH_EXPECTED_VERSION) == 0,
         "version.hpp agrees with the package version");
#endif
  if (failures == 0) std::printf("package consumer: memhealth %s OK\n", memhealth::version_string);
  return failures == 0 ? 0 : 1;
}
