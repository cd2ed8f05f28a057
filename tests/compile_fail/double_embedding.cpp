// expect: Vectors of double are not converted silently: store float32.
// An embedding stored as std::vector<double>: memhealth refuses to convert it behind your back.
#include <string>
#include <vector>

#include <memhealth/record/traits.hpp>

struct wide_record {
  std::string id;
  std::string content;
  std::vector<double> embedding;
};

int main() {
  wide_record r{"w1", "text", {0.6, 0.8}};
  return static_cast<int>(memhealth::field::embedding(r).size());
}
