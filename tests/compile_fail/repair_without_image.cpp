// expect: memhealth: apply_plan needs the record capability 'imaged_record'
// A store whose record type has no image (record_image.hpp) cannot be repaired under the
// write-ahead log: apply_plan refuses with one readable message naming itself and the fix.
#include <string>
#include <vector>

#include <memhealth/repair/executor.hpp>
#include <memhealth/store/memory_store.hpp>

struct plain_record {
  std::string id;
  std::string content;
  std::string status;
};

int main() {
  memhealth::memory_store<plain_record> store;
  store.insert(plain_record{"p1", "text", "active"});
  memhealth::wal_writer wal("/tmp/memhealth_cf_unused.wal");
  (void)memhealth::apply_plan(store, memhealth::repair_plan{}, wal);
  return 0;
}
