// expect: memhealth: memory_store mutations need the record capability 'repairable_record'
// A store of records without status / links / effective_weight cannot be repaired: every
// mutation (here restore(), the rollback primitive) refuses with one readable message.
#include <string>
#include <vector>

#include <memhealth/store/memory_store.hpp>

struct plain_record {
  std::string id;
  std::string content;
  std::vector<float> embedding;
};

int main() {
  memhealth::memory_store<plain_record> store;
  store.insert(plain_record{"p1", "text", {0.6f, 0.8f}});
  (void)store.restore(0, plain_record{"p1", "text", {0.6f, 0.8f}});
  return 0;
}
