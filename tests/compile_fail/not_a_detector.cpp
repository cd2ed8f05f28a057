// expect: memhealth: a pipeline element is not a detector
// A pipeline element without `name` and `run(ctx, out)`: a settings struct passed by mistake.
#include <utility>

#include <memhealth/detect/pipeline.hpp>
#include <memhealth/store/memory_store.hpp>

struct near_duplicate_settings {
  float threshold = 0.92f;
};

int main() {
  memhealth::memory_store<> store;
  memhealth::pipeline p{near_duplicate_settings{}};
  return static_cast<int>(p.run(std::as_const(store)).findings.size());
}
