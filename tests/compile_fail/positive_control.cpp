// Positive control for the compile-fail tests: each construct the failing cases get wrong, done
// right. Must compile cleanly with -Wall -Wextra -Wpedantic -Werror.
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <memhealth/detect/pipeline.hpp>
#include <memhealth/record/traits.hpp>
#include <memhealth/store/memory_store.hpp>

struct embedded_note {  // missing_capability.cpp, with the embedding it lacked
  std::string id;
  std::string content;
  std::vector<float> embedding;
};

template <class R>
std::size_t dimension_of(const R& r) {
  MEMHEALTH_REQUIRE_CAPABILITY(embedded_record, R, "the near-duplicate detector", "embedding");
  return memhealth::field::embedding(r).size();
}

struct counting_detector {  // not_a_detector.cpp, with name and run()
  static constexpr std::string_view name = "counting";
  template <class Ctx>
  void run(Ctx& ctx, std::vector<memhealth::finding>& out) const {
    if (ctx.store().size() > 1000) out.push_back(memhealth::finding{});
  }
};

int main() {
  const embedded_note n{"n1", "text", {0.6f, 0.8f}};
  std::size_t total = dimension_of(n);  // float embedding: double_embedding.cpp done right

  memhealth::memory_store<embedded_note> notes;  // id and content: store_without_content.cpp
  notes.insert(n);
  total += notes.size();

  memhealth::memory_store<> store;  // memory_record has an image: repair_without_image.cpp
  memhealth::memory_record r;
  r.id = "r1";
  r.content = "text";
  store.insert(r);
  r.status = "archived";
  (void)store.restore(0, r);

  memhealth::pipeline p{counting_detector{}};
  total += p.run(std::as_const(store)).findings.size();
  return total == 4 ? 0 : 1;
}
