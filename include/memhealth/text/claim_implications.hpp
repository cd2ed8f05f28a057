#pragma once
/// @file claim_implications.hpp
/// What a claim implies beyond its own words, for both readers (claims_english.hpp,
/// claims_chinese.hpp): the denials a lasting restriction adds ("is vegetarian": eats no meat,
/// no fish ...) and the service noun a termination drops ("cancelled the Spotify subscription"
/// ends using Spotify). Internal (namespace detail::claims); use `default_claim_extractor`.

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "memhealth/text/claim.hpp"
#include "memhealth/text/claim_words.hpp"

namespace memhealth::detail::claims {

// A lasting restriction denies what it excludes (claim_words::restrictions): "is vegetarian",
// "follows a vegan diet", "became vegetarian" add one denial per excluded kind ("eats no meat",
// "eats no fish" ...), so that "eats fish" conflicts with it. Chinese claims keep characters.
inline void add_restrictions(const text_claim& c, std::vector<text_claim>& out) {
  if (c.polarity < 0 || c.event || !c.restrictive) return;
  const sv p = c.predicate;
  for (const auto& r : claim_words::restrictions) {
    if (std::find(c.terms.begin(), c.terms.end(), r.word) == c.terms.end()) continue;
    // the holder is, follows, went, became ... the restriction; not "cooks vegetarian food"
    if (!(p.empty() || p == r.word || p == "follow" || p == "go" || p == "become" || p == "turn" ||
          p == "stay" || p == "remain" || p == "keep"))
      continue;
    for (const sv x : r.excludes) {
      if (x.empty()) continue;
      text_claim d;
      d.holder = c.holder;
      d.kind = predicate_class::state;
      d.polarity = -1;
      d.any_predicate = true;
      d.predicate = "eat";  // any consumption: the judge does not hold it against "cooks X"
      d.restrictive = true;
      d.change = c.change;
      d.terms = {std::string(x)};
      d.object = d.terms;
      d.scene = c.scene;
      out.push_back(std::move(d));
    }
  }
}

// A termination ends the holder's use of a thing, not the contract or card it came with:
// "cancelled their Spotify subscription" ends using Spotify, "closed the Barclays account" ends
// banking with Barclays. Removes claim_words::service_nouns from the object and the terms when
// something else is left.
inline void drop_service_nouns(std::vector<std::string>& terms, std::vector<std::string>& object) {
  auto service = [](const std::string& w) {
    return std::find(claim_words::service_nouns.begin(), claim_words::service_nouns.end(), w) !=
           claim_words::service_nouns.end();
  };
  const auto kept = [&](const std::vector<std::string>& v) {
    return std::count_if(v.begin(), v.end(), [&](const std::string& w) { return !service(w); });
  };
  const std::vector<std::string>& what = object.empty() ? terms : object;
  if (kept(what) == 0 || kept(what) == static_cast<std::ptrdiff_t>(what.size())) return;
  std::erase_if(object, service);
  std::erase_if(terms, service);
}

}  // namespace memhealth::detail::claims
