#pragma once
/// @file memory_record.hpp
/// `memhealth::memory_record`, the default record type with every field of SPEC section 1, and
/// the small vocabulary types it is made of (claims, links, metadata values, source and status
/// names).
///
/// Enumerated fields (`status`, `source`, `kind`) are stored as the text the store holds, so a
/// wrong-but-parseable value ("actve", "") survives loading and is reported by the structural
/// check instead of being silently mapped to something legal. `parse_status`, `parse_source` and
/// `source_rank` interpret the text.

#include <boost/container/flat_map.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "memhealth/record/boxed_optional.hpp"
#include "memhealth/record/time.hpp"

namespace memhealth {

// ---------------------------------------------------------------- status, source, kind

/// The legal lifecycle states of a record. Anything else in a store is `illegal_status`.
enum class record_status : std::uint8_t {
  active,          ///< visible to retrieval
  archived,        ///< kept for history (merged duplicates, conflict losers); not retrieved
  pending_review,  ///< waiting for a person (undecidable conflicts, illegal status fixed by repair)
};

/// Text of a status as stored: "active", "archived", "pending_review".
constexpr std::string_view to_string(record_status s) noexcept {
  switch (s) {
    case record_status::active:
      return "active";
    case record_status::archived:
      return "archived";
    case record_status::pending_review:
      return "pending_review";
  }
  return "";
}

/// Parses stored status text (exact, lower-case). @return nullopt for anything illegal.
constexpr std::optional<record_status> parse_status(std::string_view s) noexcept {
  if (s == "active") return record_status::active;
  if (s == "archived") return record_status::archived;
  if (s == "pending_review") return record_status::pending_review;
  return std::nullopt;
}

/// Where a record came from, in SPEC's confidence order (see `source_rank`).
enum class record_source : std::uint8_t {
  user_declared,    ///< the user said it explicitly
  system_config,    ///< configured by an operator
  manual_entry,     ///< entered by hand (ranks with system_config)
  model_extracted,  ///< inferred by a model from conversation
  system_log,       ///< derived from logs / statistics
};

/// Text of a source as stored: "user_declared", "system_config", "manual_entry",
/// "model_extracted", "system_log".
constexpr std::string_view to_string(record_source s) noexcept {
  switch (s) {
    case record_source::user_declared:
      return "user_declared";
    case record_source::system_config:
      return "system_config";
    case record_source::manual_entry:
      return "manual_entry";
    case record_source::model_extracted:
      return "model_extracted";
    case record_source::system_log:
      return "system_log";
  }
  return "";
}

/// Parses stored source text. @return nullopt for empty or unknown text.
constexpr std::optional<record_source> parse_source(std::string_view s) noexcept {
  if (s == "user_declared") return record_source::user_declared;
  if (s == "system_config") return record_source::system_config;
  if (s == "manual_entry") return record_source::manual_entry;
  if (s == "model_extracted") return record_source::model_extracted;
  if (s == "system_log") return record_source::system_log;
  return std::nullopt;
}

/// Credibility rank of a source, higher is more trusted: user_declared 4, system_config and
/// manual_entry 3, model_extracted 2, system_log 1, missing or unknown 0.
constexpr int source_rank(std::string_view s) noexcept {
  const auto p = parse_source(s);
  if (!p) return 0;
  switch (*p) {
    case record_source::user_declared:
      return 4;
    case record_source::system_config:
    case record_source::manual_entry:
      return 3;
    case record_source::model_extracted:
      return 2;
    case record_source::system_log:
      return 1;
  }
  return 0;
}

/// Common record kinds. `kind` is open text: these are the names the default decay and conflict
/// policies know; a store may use others (they fall back to the `fact` policy).
namespace kinds {
inline constexpr std::string_view fact = "fact";              ///< lasting fact about a subject
inline constexpr std::string_view preference = "preference";  ///< a user's like/dislike/constraint
inline constexpr std::string_view episodic = "episodic";      ///< a one-off event
inline constexpr std::string_view temporary = "temporary";    ///< short-lived working memory
}  // namespace kinds

// ---------------------------------------------------------------- claims

/// A structured fact: (entity, attribute, value), e.g. ("user", "diet", "vegetarian").
struct fact_claim {
  std::string entity;     ///< who or what the fact is about
  std::string attribute;  ///< the predicate
  std::string value;      ///< the object
  friend bool operator==(const fact_claim&, const fact_claim&) = default;
};

/// Polarity of a preference. Written as "positive", "negative", "neutral".
enum class polarity : std::int8_t { negative = -1, neutral = 0, positive = 1 };

/// Text of a polarity: "positive", "negative", "neutral".
constexpr std::string_view to_string(polarity p) noexcept {
  return p == polarity::positive ? "positive" : p == polarity::negative ? "negative" : "neutral";
}

/// A structured preference: (scene, preference, constraint, polarity, holder), e.g.
/// ("dinner", "cilantro", "any amount", negative, "wife").
struct preference_claim {
  std::string scene;       ///< situation the preference applies to ("dinner", "travel")
  std::string preference;  ///< the subject of the preference ("cilantro")
  std::string constraint;  ///< qualifier ("a little", "on weekdays"); may be empty
  memhealth::polarity polarity = memhealth::polarity::neutral;  ///< like (+) or dislike (-)
  /// Whose preference it is, as a fact's entity is written ("user", "wife", "priya's sister");
  /// "" = the user (claims written before holders were, and hand-written ones, carry none).
  /// Written as the claim's "holder" field only when set.
  std::string holder{};
  /// The holder compared: `holder`, or "user" when it is empty.
  [[nodiscard]] std::string_view holder_or_user() const noexcept {
    return holder.empty() ? std::string_view("user") : std::string_view(holder);
  }
  friend bool operator==(const preference_claim&, const preference_claim&) = default;
};

/// The structured form of a record: a fact or a preference.
using claim = std::variant<fact_claim, preference_claim>;

// ---------------------------------------------------------------- links

/// References from one record to others, by id.
struct record_links {
  std::string duplicate_of;  ///< id of the primary this record was merged into; empty = none
  std::vector<std::string> related_ids;    ///< ids of related records
  std::vector<std::string> related_notes;  ///< free text kept from merged records / dropped links
  std::vector<std::string> supersedes;     ///< ids of records this record replaces
  friend bool operator==(const record_links&, const record_links&) = default;
};

// ---------------------------------------------------------------- metadata

/// A JSON array or object kept verbatim (minified text) as a metadata value.
struct raw_json {
  std::string text;  ///< the JSON text, e.g. `["a","b"]`
  friend bool operator==(const raw_json&, const raw_json&) = default;
};

/// One metadata value: null, boolean, integer, floating point, string, or a nested JSON value
/// kept as text. The alternative index is the value's type name for schema checks
/// (`metadata_type_name`).
using metadata_value =
    std::variant<std::monostate, bool, std::int64_t, double, std::string, raw_json>;

/// Type name of a metadata value as used in schemas: "null", "bool", "integer", "number",
/// "string", "json".
constexpr std::string_view metadata_type_name(const metadata_value& v) noexcept {
  constexpr std::string_view names[] = {"null", "bool", "integer", "number", "string", "json"};
  return names[v.index()];
}

/// Metadata: key -> value, sorted by key (a Boost.Container flat_map: one allocation, cache
/// friendly for the handful of keys records carry).
using metadata_map = boost::container::flat_map<std::string, metadata_value, std::less<>>;

/// A field the loader did not recognise, kept so it can be written back: name and minified JSON.
struct extra_field {
  std::string name;  ///< the JSON key
  std::string json;  ///< the value as minified JSON text
  friend bool operator==(const extra_field&, const extra_field&) = default;
};

// ---------------------------------------------------------------- the record

/// The default memory record: every field of SPEC section 1.
///
/// Optional fields are `std::optional` (absent is different from zero) or empty strings/vectors
/// (absent and empty mean the same). Times are UTC instants with ms precision (`timestamp`).
/// `embedding` is contiguous float32 of the model's dimension; an empty vector means missing.
struct memory_record {
  std::string id;                 ///< globally unique id
  std::string content;            ///< UTF-8 text of the memory
  std::vector<float> embedding;   ///< d floats (float32); empty = missing
  std::string embedding_version;  ///< model / normalisation that made `embedding`
  metadata_map metadata;          ///< key/value attributes (topic, entities, ingest batch, ...)
  std::optional<timestamp> created_at;        ///< when the record was first written
  std::optional<timestamp> updated_at;        ///< when it was last changed
  std::optional<timestamp> last_accessed_at;  ///< when retrieval last returned it
  std::string source;                         ///< see `record_source`; empty = missing
  std::string scope;   ///< hierarchical owner, e.g. "user:7/project:alpha"; empty = missing
  std::string status;  ///< see `record_status`; anything else is illegal
  std::string kind;    ///< see `kinds`: fact, preference, episodic, temporary, ...
  /// Structured form, when extracted. Boxed (one pointer, the claim on the heap when set): few
  /// records carry one, and an inline `std::optional<claim>` would cost 120 bytes in every record.
  boxed_optional<memhealth::claim> claim;
  record_links links;                      ///< duplicate_of, related_ids, related_notes, supersedes
  std::optional<double> confidence;        ///< [0,1]; absent = unknown
  std::optional<double> effective_weight;  ///< [0,1] after decay / down-weighting; absent = 1
  std::vector<extra_field> extra;  ///< unrecognised input fields, written back in input order

  friend bool operator==(const memory_record&, const memory_record&) = default;
};

}  // namespace memhealth
