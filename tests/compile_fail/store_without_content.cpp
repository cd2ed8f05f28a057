// expect: memhealth: memory_store<R> needs the record capability 'basic_record' (fields id and content)
// memory_store<R> of a type that has an id but no content.
#include <string>

#include <memhealth/store/memory_store.hpp>

struct id_only {
  std::string id;
};

int main() {
  memhealth::memory_store<id_only> store;
  return static_cast<int>(store.size());
}
