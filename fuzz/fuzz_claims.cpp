// libFuzzer target: the claim extractor and the claim judge (text/claims.hpp,
// detect/claim_judge.hpp) on any bytes. Documented: never throws on any text, whatever the bytes;
// the input is split at its first newline into the two statements of a pair, each read into
// claims, compared both ways (pairs are unordered: both orders must agree), and turned into a
// structured claim.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "memhealth/detect/claim_judge.hpp"
#include "memhealth/text/claims.hpp"

#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace mh = memhealth;
  const std::string_view in = memhealth_fuzz::text(data, size);
  const std::size_t nl = in.find('\n');
  const std::string_view a = in.substr(0, nl);
  const std::string_view b = nl == std::string_view::npos ? std::string_view{} : in.substr(nl + 1);
  const mh::default_claim_extractor read;
  const auto ca = read(a), cb = read(b);
  (void)mh::structured_claim(ca);
  if (ca.parsed() && cb.parsed()) {
    const mh::claim_rules rules;
    const auto ab = rules(ca, cb), ba = rules(cb, ca);
    MEMHEALTH_FUZZ_CHECK(ab.conflict == ba.conflict);
  }
  return 0;
}
