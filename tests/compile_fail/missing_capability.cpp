// expect: memhealth: the near-duplicate detector needs the record capability 'embedded_record' (field(s) embedding)
// A record type without an embedding, passed to an entry point that needs `embedded_record`.
// MEMHEALTH_REQUIRE_CAPABILITY must name the capability, the component and the missing field.
#include <cstddef>
#include <string>

#include <memhealth/record/traits.hpp>

struct note {  // id and content only: no embedding
  std::string id;
  std::string content;
};

template <class R>
std::size_t dimension_of(const R& r) {
  MEMHEALTH_REQUIRE_CAPABILITY(embedded_record, R, "the near-duplicate detector", "embedding");
  return memhealth::field::embedding(r).size();
}

int main() {
  return static_cast<int>(dimension_of(note{"n1", "text"}));
}
