// expect: memhealth: apply_edit: this record type lacks the capability the edit writes
// An edit of a known type on a record without the field it writes (here effective_weight)
// fails to compile with one message naming the edit's capability and how to provide it.
#include <string>

#include <memhealth/repair/apply_edit.hpp>

struct plain_record {
  std::string id;
  std::string content;
  std::string status;
};

int main() {
  plain_record r{"p1", "text", "active"};
  memhealth::apply_edit(r, memhealth::edit_set_status{"archived"});  // fine: status exists
  memhealth::apply_edit(r, memhealth::edit_set_weight{0.5});         // no effective_weight
  return 0;
}
