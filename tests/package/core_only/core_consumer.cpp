// Detection-only consumer: memhealth::core's headers, no JSON parser in the translation unit.
#include <memhealth/detect/hygiene.hpp>
#include <memhealth/detect/pipeline.hpp>
#include <memhealth/store/memory_store.hpp>

#if defined(SIMDJSON_VERSION) || defined(NLOHMANN_JSON_VERSION_MAJOR)
#error "a memhealth::core header pulled in a JSON parser"
#endif

#include <cstdio>
#include <string>
#include <utility>

int main() {
  memhealth::memory_store<> store;
  const char* contents[] = {"User prefers tea over coffee.", ""};  // the second is empty
  const char* ids[] = {"a", "b"};
  for (int i = 0; i < 2; ++i) {
    memhealth::memory_record r;
    r.id = ids[i];
    r.content = contents[i];
    r.embedding = {1.0f, 0.0f};
    store.insert(std::move(r));
  }
  memhealth::pipeline p{memhealth::hygiene_detector{}};
  const memhealth::report rep = p.run(store);
  if (rep.records_total != 2) {
    std::fprintf(stderr, "core consumer: FAILED: records_total %zu, expected 2\n",
                 rep.records_total);
    return 1;
  }
  std::printf("core consumer: %zu records, %zu findings OK\n", rep.records_total,
              rep.findings.size());
  return 0;
}
