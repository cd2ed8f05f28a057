#pragma once
/// @file record_codec.hpp
/// The record codec of the JSONL format: one `memory_record` <-> one JSON object. Decoding
/// (`detail::jsonl::reader`, which the parallel loader in jsonl_read.hpp runs over the pieces of
/// jsonl_lines.hpp) and canonical encoding (`append_json`, `to_json`). The format is specified in
/// docs/format.md.
///
/// Reading never aborts on bad data. Every problem becomes a `load_issue` (file, 1-based line,
/// field, reason) and loading goes on:
/// - a line that is not a JSON object (or not JSON) is skipped (`record_kept = false`);
/// - a field of the wrong JSON type, a timestamp that does not parse, a malformed claim: the field
///   is left empty and the original value is kept verbatim (minified) in `memory_record::extra`
///   under the field's own name, so writing the record back reproduces it;
/// - a number outside the target type's range (1e300 in a float32 embedding) is stored as
///   +-infinity (or 0 on underflow) and reported;
/// - values that parse but are wrong for the domain (empty content, unknown status, a dimension
///   other than the model's, NaN/Infinity in an embedding) are kept as they are **without** an
///   issue: the structural check reports them as findings.
///
/// Writing is canonical: fixed key order, shortest round-trip numbers, timestamps through
/// `format_timestamp` (original offset kept), RFC 8259 escaping. Reading a file memhealth wrote
/// and writing it again gives the same bytes.
///
/// Reading uses simdjson's On-Demand API (one document per line over a padded buffer);
/// embedding numbers are parsed from their raw tokens (an exact fast path, else
/// `std::from_chars<float>`), so a float written shortest-round-trip reads back bit-exactly.

#include <simdjson.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <atomic>
#include <concepts>
#include <condition_variable>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <ranges>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "memhealth/config.hpp"
#include "memhealth/io/detail_json_text.hpp"
#include "memhealth/io/load_issue.hpp"
#include "memhealth/record/memory_record.hpp"
#include "memhealth/record/time.hpp"

namespace memhealth {

/// Records loaded from JSONL, with the problems met (see `basic_load_result`).
using load_result = basic_load_result<memory_record>;

namespace detail::jsonl {

namespace od = simdjson::ondemand;
using json_text::trim;

enum class key_id : std::uint8_t {
  id, content, embedding, embedding_version, metadata, created_at, updated_at, last_accessed_at,
  source, scope, status, kind, claim, duplicate_of, related_ids, related_notes, supersedes,
  confidence, effective_weight, unknown
};

inline constexpr std::string_view key_names[] = {
    "id", "content", "embedding", "embedding_version", "metadata", "created_at", "updated_at",
    "last_accessed_at", "source", "scope", "status", "kind", "claim", "duplicate_of", "related_ids",
    "related_notes", "supersedes", "confidence", "effective_weight"};

inline key_id key_of(std::string_view k) noexcept {
  for (std::size_t i = 0; i < std::size(key_names); ++i)
    if (key_names[i] == k) return static_cast<key_id>(i);
  return key_id::unknown;
}

constexpr std::string_view type_name(od::json_type t) noexcept {
  switch (t) {
    case od::json_type::array: return "an array";
    case od::json_type::object: return "an object";
    case od::json_type::number: return "a number";
    case od::json_type::string: return "a string";
    case od::json_type::boolean: return "a boolean";
    case od::json_type::null: return "null";
  }
  return "an unknown value";
}

template <class T, class R>
T take(R&& r) {  // r is consumed
  T out;
  if (auto err = std::move(r).get(out)) throw simdjson::simdjson_error(err);
  return out;
}

// Thrown inside a line when the line is not valid JSON; caught by the line loop.
struct bad_json {
  std::string reason;
};

inline std::string quote_excerpt(std::string_view s) {
  constexpr std::size_t max = 60;
  std::string out(s.substr(0, max));
  if (s.size() > max) out += "...";
  return out;
}

// Parses JSONL line by line. A line is parsed in place when SIMDJSON_PADDING bytes after it are
// readable (below `readable_end`), otherwise from a padded copy.
class reader {
 public:
  explicit reader(std::string_view file) : file_(file) {}

  // Starts a new piece of the input: line numbers count from 0 again (the caller adds the lines
  // of earlier pieces); a byte order mark is looked for only when the piece starts the input.
  void restart(bool at_input_start) noexcept {
    line_ = 0;
    first_chunk_ = at_input_start;
  }

  // Lines (blank ones included) met so far in the current piece.
  std::size_t lines() const noexcept { return line_; }

  // Parses the complete lines of [data, data + len) (and the last, unterminated one when
  // `final`); bytes up to `readable_end` may be read. @return the number of bytes consumed.
  std::size_t process(const char* data, std::size_t len, const char* readable_end, bool final, load_result& res) {
    const char* p = data;
    const char* end = data + len;
    if (first_chunk_) {
      first_chunk_ = false;
      if (len >= 3 && std::memcmp(p, "\xEF\xBB\xBF", 3) == 0) p += 3;  // UTF-8 byte order mark
    }
    while (p < end) {
      const char* nl = static_cast<const char*>(std::memchr(p, '\n', static_cast<std::size_t>(end - p)));
      if (!nl && !final) break;
      ++line_;
      const char* le = nl ? nl : end;
      const char* b = p;
      while (b < le && json_text::is_ws(*b)) ++b;
      const char* e = le;
      while (e > b && json_text::is_ws(e[-1])) --e;
      p = nl ? nl + 1 : end;
      if (b == e) continue;  // blank line
      ++res.lines_read;
      const auto n = static_cast<std::size_t>(e - b);
      if (static_cast<std::size_t>(readable_end - b) >= n + simdjson::SIMDJSON_PADDING) {
        buf_end_ = readable_end;
        parse_line(std::string_view(b, n), res);
      } else {
        scratch_.assign(b, n);
        scratch_.append(simdjson::SIMDJSON_PADDING, '\0');
        buf_end_ = scratch_.data() + scratch_.size();
        parse_line(std::string_view(scratch_.data(), n), res);
      }
    }
    return static_cast<std::size_t>(p - data);
  }

 private:
  std::size_t cap(const char* p) const noexcept { return static_cast<std::size_t>(buf_end_ - p); }

  void issue(std::string_view field, std::string reason, bool kept = true) {
    line_issues_.push_back(load_issue{std::string(file_), line_, std::string(field), std::move(reason), kept});
  }

  // Checks that a span of the line is one complete JSON value (the On-Demand front end skips
  // values it is not asked about without validating them).
  static void validate(std::string_view raw) {
    if (!json_text::validator::check(raw)) throw bad_json{"not valid JSON (malformed value " + quote_excerpt(raw) + ")"};
  }

  od::document sub_document(std::string_view raw) { return sub_.iterate(raw.data(), raw.size(), cap(raw.data())).value(); }

  // Raw text of a value (consumes it), trailing whitespace trimmed.
  static std::string_view raw_of(od::value& v) {
    switch (v.type().value()) {
      case od::json_type::array: {
        od::array a = v.get_array().value();
        return trim(a.raw_json().value());
      }
      case od::json_type::object: {
        od::object o = v.get_object().value();
        return trim(o.raw_json().value());
      }
      default: return trim(v.raw_json_token());
    }
  }

  // Keeps a value the record cannot hold in `extra` under its field name, unchanged.
  void keep_in_extra(std::string_view key, std::string_view raw, std::string reason) {
    validate(raw);
    rec_->extra.push_back(extra_field{std::string(key), json_text::minify(raw)});
    issue(key, std::move(reason) + "; the value is kept unchanged in extra and written back");
  }

  void wrong_type(std::string_view key, od::value& v, std::string_view expected) {
    const auto t = v.type().value();
    const std::string_view raw = raw_of(v);
    keep_in_extra(key, raw, "expected " + std::string(expected) + ", found " + std::string(type_name(t)));
  }

  // String field: null = absent.
  void read_string(std::string_view key, od::value& v, std::string& dst) {
    const auto t = v.type().value();
    if (t == od::json_type::string) {
      dst = std::string_view(v.get_string().value());
    } else if (t == od::json_type::null) {
      if (!v.is_null()) throw bad_json{"not valid JSON (bad null)"};
    } else {
      wrong_type(key, v, "a string");
    }
  }

  void read_embedding(std::string_view key, od::value& v) {
    const auto t = v.type().value();
    if (t == od::json_type::null) {
      if (!v.is_null()) throw bad_json{"not valid JSON (bad null)"};
      return;
    }
    if (t != od::json_type::array) return wrong_type(key, v, "an array of numbers");
    od::array a = v.get_array().value();
    const std::string_view raw = trim(a.raw_json().value());
    auto& out = rec_->embedding;
    if (read_plain_numbers(raw, out)) {
      dim_hint_ = out.size();
      return;
    }
    out.clear();
    out.reserve(dim_hint_);
    std::size_t out_of_range = 0, first_bad = 0;
    std::string_view first_token;
    const char* p = raw.data() + 1;  // after '['
    const char* end = raw.data() + raw.size() - 1;  // at ']'
    bool ok = raw.size() >= 2 && raw.back() == ']';
    while (ok && p < end && json_text::is_ws(*p)) ++p;
    while (ok && p < end) {
      float f = 0;
      if (*p == '"') {
        const char* q = static_cast<const char*>(std::memchr(p + 1, '"', static_cast<std::size_t>(end - p - 1)));
        if (!q || !json_text::parse_non_finite_text(std::string_view(p + 1, static_cast<std::size_t>(q - p - 1)), f)) {
          ok = false;
          break;
        }
        p = q + 1;
      } else if (const char* fast_end = json_text::parse_float_fast(p, end, f)) {
        p = fast_end;
      } else {
        auto [q, ec] = std::from_chars(p, end, f);
        if (ec == std::errc::result_out_of_range) {
          const std::string_view tok(p, static_cast<std::size_t>(q - p));
          if (json_text::parse_float_token(tok, f) != json_text::number_status::out_of_range) {
            ok = false;
            break;
          }
          if (out_of_range++ == 0) first_bad = out.size(), first_token = tok;
        } else if (ec != std::errc{}) {
          ok = false;
          break;
        }
        p = q;
      }
      out.push_back(f);
      while (p < end && json_text::is_ws(*p)) ++p;
      if (p == end) break;
      if (*p != ',') {
        ok = false;
        break;
      }
      ++p;
      while (p < end && json_text::is_ws(*p)) ++p;
      if (p == end) ok = false;  // trailing comma
    }
    if (!ok) {
      out.clear();
      keep_in_extra(key, raw, "expected an array of numbers (or \"NaN\"/\"Infinity\"/\"-Infinity\")");
      return;
    }
    if (!out.empty()) dim_hint_ = out.size();
    if (out_of_range)
      issue(key, std::to_string(out_of_range) + " value(s) outside the float32 range, first at index " +
                     std::to_string(first_bad) + " (" + quote_excerpt(first_token) +
                     "); stored as +-Infinity (overflow) or 0 (underflow)");
  }

  // The common case of an embedding: `[n,n,...,n]` with plain numbers, no whitespace, no strings.
  // The commas are found first (16 bytes at a time with SSE2, else 8 with SWAR), then every number is parsed between two
  // commas, so consecutive numbers do not wait for each other. Returns false (out unspecified)
  // for anything else, and for a number out of float range: the general loop decides.
  bool read_plain_numbers(std::string_view raw, std::vector<float>& out) {
    if (raw.size() < 3 || raw.front() != '[' || raw.back() != ']') return false;
    const char* b = raw.data() + 1;
    const char* e = raw.data() + raw.size() - 1;
    const auto n = static_cast<std::size_t>(e - b);
    if (n > std::numeric_limits<std::uint32_t>::max()) return false;
    if (commas_.size() < n + 16) commas_.resize(n + 16);  // at most n commas; reused buffer
    std::uint32_t* c = commas_.data();
#if defined(__SSE2__)
    const __m128i comma = _mm_set1_epi8(',');
    for (std::size_t i = 0; i < n; i += 16) {  // bytes up to e + 15 are readable (padding)
      const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i));
      auto m = static_cast<std::uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(x, comma)));
      if (n - i < 16) m &= (1u << (n - i)) - 1;
      for (; m; m &= m - 1) *c++ = static_cast<std::uint32_t>(i) + static_cast<std::uint32_t>(std::countr_zero(m));
    }
#else
    constexpr std::uint64_t ones7 = 0x7F7F7F7F7F7F7F7FULL;
    for (std::size_t i = 0; i < n; i += 8) {  // bytes up to e + 7 are readable (padding)
      const std::uint64_t t = json_text::load8(b + i) ^ 0x2C2C2C2C2C2C2C2CULL;  // ',' bytes become 0
      std::uint64_t m = ~(((t & ones7) + ones7) | t | ones7);  // 0x80 exactly where t has a 0 byte
      if (n - i < 8) m &= (std::uint64_t{1} << (8 * (n - i))) - 1;
      for (; m; m &= m - 1) *c++ = static_cast<std::uint32_t>(i + static_cast<std::size_t>(std::countr_zero(m)) / 8);
    }
#endif
    const auto n_commas = static_cast<std::size_t>(c - commas_.data());
    out.resize(n_commas + 1);
    const char* tb = b;
    for (std::size_t k = 0; k < out.size(); ++k) {  // 16 bytes after te are readable (padding)
      const char* te = k < n_commas ? b + commas_[k] : e;
      if (json_text::parse_float_token_fast(tb, te, out[k]) != te) {
        auto [q2, ec] = std::from_chars(tb, te, out[k]);
        if (ec != std::errc{} || q2 != te) return false;
      }
      tb = te + 1;
    }
    return true;
  }

  void read_metadata(std::string_view key, od::value& v) {
    const auto t = v.type().value();
    if (t == od::json_type::null) {
      if (!v.is_null()) throw bad_json{"not valid JSON (bad null)"};
      return;
    }
    if (t != od::json_type::object) return wrong_type(key, v, "an object");
    od::object o = v.get_object().value();
    const std::string_view raw = trim(o.raw_json().value());
    validate(raw);
    od::document d = sub_document(raw);
    od::object mo = d.get_object().value();  // named: a temporary's value() would dangle in range-for
    for (auto fr : mo) {
      od::field f = take<od::field>(fr);
      std::string k(f.unescaped_key().value());
      od::value& mv = f.value();
      metadata_value val;
      switch (mv.type().value()) {
        case od::json_type::null: break;
        case od::json_type::boolean: val = bool(mv.get_bool().value()); break;
        case od::json_type::string: val = std::string(std::string_view(mv.get_string().value())); break;
        case od::json_type::number: {
          const std::string_view tok = trim(mv.raw_json_token());
          if (json_text::is_floating_token(tok)) {
            double x = 0;
            if (json_text::parse_float_token(tok, x) == json_text::number_status::ok) val = x;
            else val = raw_json{std::string(tok)};  // beyond double: kept as text, nothing lost
          } else {
            std::int64_t x = 0;
            auto [q, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), x);
            if (ec == std::errc{} && q == tok.data() + tok.size()) val = x;
            else val = raw_json{std::string(tok)};  // beyond int64: kept as text
          }
          break;
        }
        default: val = raw_json{json_text::minify(raw_of(mv))};
      }
      if (rec_->metadata.contains(k))
        issue(key, "duplicate metadata key \"" + quote_excerpt(k) + "\"; the first value is kept, this one is dropped");
      else
        rec_->metadata.emplace(std::move(k), std::move(val));
    }
  }

  void read_timestamp(std::string_view key, od::value& v, std::optional<timestamp>& dst) {
    const auto t = v.type().value();
    if (t == od::json_type::string) {
      const std::string_view tok = trim(v.raw_json_token());
      const std::string_view s = v.get_string().value();
      if (auto ts = parse_timestamp(s)) {
        dst = *ts;
      } else {
        keep_in_extra(key, tok, "cannot parse " + quote_excerpt(tok) + " as an ISO-8601 date-time; the field is left empty");
      }
    } else if (t == od::json_type::number) {
      const std::string_view tok = trim(v.raw_json_token());
      std::int64_t ms = 0;
      auto [q, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), ms);
      // Years 0001..9999 only: what format_timestamp can write back.
      constexpr std::int64_t lo = -62135596800000LL, hi = 253402300799999LL;
      if (ec == std::errc{} && q == tok.data() + tok.size() && ms >= lo && ms <= hi) {
        dst = timestamp_from_epoch_ms(ms);
      } else {
        keep_in_extra(key, tok, "expected integer epoch milliseconds for years 0001..9999, found " + quote_excerpt(tok) +
                                    "; the field is left empty");
      }
    } else if (t == od::json_type::null) {
      if (!v.is_null()) throw bad_json{"not valid JSON (bad null)"};
    } else {
      wrong_type(key, v, "an ISO-8601 string or integer epoch milliseconds");
    }
  }

  void read_unit_number(std::string_view key, od::value& v, std::optional<double>& dst) {
    const auto t = v.type().value();
    if (t == od::json_type::number) {
      const std::string_view tok = trim(v.raw_json_token());
      double x = 0;
      switch (json_text::parse_float_token(tok, x)) {
        case json_text::number_status::ok: dst = x; break;
        case json_text::number_status::out_of_range:
          dst = x;
          issue(key, quote_excerpt(tok) + " is outside the double range; stored as " + (x == 0 ? "0" : "+-Infinity"));
          break;
        case json_text::number_status::invalid: keep_in_extra(key, tok, "malformed number"); break;
      }
    } else if (t == od::json_type::string) {
      const std::string_view tok = trim(v.raw_json_token());
      double x = 0;
      if (json_text::parse_non_finite_text(std::string_view(v.get_string().value()), x)) dst = x;
      else keep_in_extra(key, tok, "expected a number, found a string");
    } else if (t == od::json_type::null) {
      if (!v.is_null()) throw bad_json{"not valid JSON (bad null)"};
    } else {
      wrong_type(key, v, "a number");
    }
  }

  void read_string_array(std::string_view key, od::value& v, std::vector<std::string>& dst) {
    const auto t = v.type().value();
    if (t == od::json_type::null) {
      if (!v.is_null()) throw bad_json{"not valid JSON (bad null)"};
      return;
    }
    if (t != od::json_type::array) return wrong_type(key, v, "an array of strings");
    od::array a = v.get_array().value();
    const std::string_view raw = trim(a.raw_json().value());
    validate(raw);
    od::document d = sub_document(raw);
    std::vector<std::string> out;
    od::array items = d.get_array().value();
    for (auto er : items) {
      od::value e = take<od::value>(er);
      if (e.type().value() != od::json_type::string) {
        keep_in_extra(key, raw, "expected an array of strings, found a non-string element");
        return;
      }
      out.emplace_back(std::string_view(e.get_string().value()));
    }
    dst = std::move(out);
  }

  void read_claim(std::string_view key, od::value& v) {
    const auto t = v.type().value();
    if (t == od::json_type::null) {
      if (!v.is_null()) throw bad_json{"not valid JSON (bad null)"};
      return;
    }
    if (t != od::json_type::object) return wrong_type(key, v, "an object");
    od::object o = v.get_object().value();
    const std::string_view raw = trim(o.raw_json().value());
    validate(raw);
    od::document d = sub_document(raw);
    static constexpr std::string_view names[] = {"entity", "attribute", "value", "scene", "preference", "constraint"};
    std::string slots[6];
    bool seen[7] = {};
    memhealth::polarity pol = memhealth::polarity::neutral;
    std::string why;
    od::object co = d.get_object().value();
    for (auto fr : co) {
      od::field f = take<od::field>(fr);
      const std::string_view k = f.unescaped_key().value();
      od::value& e = f.value();
      const auto et = e.type().value();
      std::size_t i = 0;
      while (i < 6 && names[i] != k) ++i;
      if (i < 6) {
        if (et != od::json_type::string) {
          why = "claim field \"" + std::string(k) + "\" is not a string";
          break;
        }
        slots[i] = std::string(std::string_view(e.get_string().value()));
        seen[i] = true;
      } else if (k == "polarity") {
        seen[6] = true;
        std::string_view s;
        if (et == od::json_type::string) s = e.get_string().value();
        else if (et == od::json_type::number) s = trim(e.raw_json_token());
        if (s == "positive" || s == "1") pol = memhealth::polarity::positive;
        else if (s == "negative" || s == "-1") pol = memhealth::polarity::negative;
        else if (s == "neutral" || s == "0") pol = memhealth::polarity::neutral;
        else why = "polarity must be \"positive\", \"negative\", \"neutral\", 1, -1 or 0";
        if (et == od::json_type::string && (s == "1" || s == "-1" || s == "0"))
          why = "polarity must be \"positive\", \"negative\", \"neutral\", 1, -1 or 0";
        if (!why.empty()) break;
      } else {
        why = "unknown claim field \"" + quote_excerpt(k) + "\"";
        break;
      }
    }
    const bool fact = seen[0] || seen[1] || seen[2];
    const bool pref = seen[3] || seen[4] || seen[5] || seen[6];
    if (why.empty() && fact == pref)
      why = fact ? "claim mixes fact fields (entity/attribute/value) and preference fields"
                 : "claim has none of entity/attribute/value or scene/preference/constraint/polarity";
    if (!why.empty()) return keep_in_extra(key, raw, why);
    if (fact) rec_->claim = fact_claim{std::move(slots[0]), std::move(slots[1]), std::move(slots[2])};
    else rec_->claim = preference_claim{std::move(slots[3]), std::move(slots[4]), std::move(slots[5]), pol};
  }

  void read_field(key_id k, std::string_view key, od::value& v) {
    switch (k) {
      case key_id::id: read_string(key, v, rec_->id); break;
      case key_id::content: read_string(key, v, rec_->content); break;
      case key_id::embedding: read_embedding(key, v); break;
      case key_id::embedding_version: read_string(key, v, rec_->embedding_version); break;
      case key_id::metadata: read_metadata(key, v); break;
      case key_id::created_at: read_timestamp(key, v, rec_->created_at); break;
      case key_id::updated_at: read_timestamp(key, v, rec_->updated_at); break;
      case key_id::last_accessed_at: read_timestamp(key, v, rec_->last_accessed_at); break;
      case key_id::source: read_string(key, v, rec_->source); break;
      case key_id::scope: read_string(key, v, rec_->scope); break;
      case key_id::status: read_string(key, v, rec_->status); break;
      case key_id::kind: read_string(key, v, rec_->kind); break;
      case key_id::claim: read_claim(key, v); break;
      case key_id::duplicate_of: read_string(key, v, rec_->links.duplicate_of); break;
      case key_id::related_ids: read_string_array(key, v, rec_->links.related_ids); break;
      case key_id::related_notes: read_string_array(key, v, rec_->links.related_notes); break;
      case key_id::supersedes: read_string_array(key, v, rec_->links.supersedes); break;
      case key_id::confidence: read_unit_number(key, v, rec_->confidence); break;
      case key_id::effective_weight: read_unit_number(key, v, rec_->effective_weight); break;
      case key_id::unknown: {
        const std::string_view raw = raw_of(v);
        validate(raw);
        rec_->extra.push_back(extra_field{std::string(key), json_text::minify(raw)});
        break;
      }
    }
  }

  void parse_line(std::string_view text, load_result& res) {
    line_issues_.clear();
    rec_ = &res.records.emplace_back();
    bool ok = true;
    std::string why;
    try {
      od::document doc = parser_.iterate(text.data(), text.size(), cap(text.data())).value();
      const auto t = doc.type().value();
      if (t != od::json_type::object) {
        validate(text);  // a proper reason when the line is not JSON at all
        throw bad_json{"the line is " + std::string(type_name(t)) + ", not a JSON object"};
      }
      std::uint32_t seen = 0;
      bool has_id = false;
      od::object obj = doc.get_object().value();
      for (auto fr : obj) {
        od::field f = take<od::field>(fr);
        const std::string_view key = f.unescaped_key().value();
        od::value& v = f.value();
        const key_id k = key_of(key);
        if (k != key_id::unknown) {
          const std::uint32_t bit = 1u << static_cast<unsigned>(k);
          if (seen & bit) {
            validate(raw_of(v));
            issue(key, "duplicate field; the first occurrence is used, this one is dropped");
            continue;
          }
          seen |= bit;
          has_id = has_id || k == key_id::id;
        }
        read_field(k, key, v);
      }
      const char* rest = nullptr;
      if (!doc.current_location().get(rest)) throw bad_json{"trailing content after the JSON object"};
      if (!has_id) issue("id", "missing id; the record is kept with an empty id");
      else if (rec_->id.empty() && std::none_of(rec_->extra.begin(), rec_->extra.end(), [](const extra_field& e) { return e.name == "id"; }))
        issue("id", "empty id; the record is kept");
    } catch (const bad_json& e) {
      ok = false;
      why = e.reason;
    } catch (const simdjson::simdjson_error& e) {
      ok = false;
      why = std::string("not valid JSON (") + e.what() + ")";
    }
    if (!ok) {
      res.records.pop_back();
      line_issues_.clear();
      issue("", why + "; line skipped", false);
    }
    for (auto& i : line_issues_) res.issues.push_back(std::move(i));
  }

  od::parser parser_;
  od::parser sub_;
  memory_record* rec_ = nullptr;  // the record being filled: res.records.back()
  std::vector<load_issue> line_issues_;
  std::string_view file_;
  std::size_t line_ = 0;  // 1-based number of the current line
  std::size_t dim_hint_ = 0;
  const char* buf_end_ = nullptr;
  std::string scratch_;
  std::vector<std::uint32_t> commas_;  // read_plain_numbers' offsets, reused
  bool first_chunk_ = true;
};

// ------------------------------------------------------------------ writing

inline bool has_extra(const memory_record& r, std::string_view name) noexcept {
  return std::any_of(r.extra.begin(), r.extra.end(), [&](const extra_field& e) { return e.name == name; });
}

// True when the typed field `name` holds a value (so an extra of that name is stale).
inline bool typed_present(const memory_record& r, std::span<const float> emb, key_id k) noexcept {
  switch (k) {
    case key_id::id: return !r.id.empty();
    case key_id::content: return !r.content.empty();
    case key_id::embedding: return !emb.empty();
    case key_id::embedding_version: return !r.embedding_version.empty();
    case key_id::metadata: return !r.metadata.empty();
    case key_id::created_at: return r.created_at.has_value();
    case key_id::updated_at: return r.updated_at.has_value();
    case key_id::last_accessed_at: return r.last_accessed_at.has_value();
    case key_id::source: return !r.source.empty();
    case key_id::scope: return !r.scope.empty();
    case key_id::status: return !r.status.empty();
    case key_id::kind: return !r.kind.empty();
    case key_id::claim: return r.claim.has_value();
    case key_id::duplicate_of: return !r.links.duplicate_of.empty();
    case key_id::related_ids: return !r.links.related_ids.empty();
    case key_id::related_notes: return !r.links.related_notes.empty();
    case key_id::supersedes: return !r.links.supersedes.empty();
    case key_id::confidence: return r.confidence.has_value();
    case key_id::effective_weight: return r.effective_weight.has_value();
    case key_id::unknown: return false;
  }
  return false;
}

class object_writer {
 public:
  explicit object_writer(std::string& out) : out_(out) { out_.push_back('{'); }
  void key(std::string_view k) {
    if (!first_) out_.push_back(',');
    first_ = false;
    json_text::append_escaped(out_, k);
    out_.push_back(':');
  }
  void string(std::string_view k, std::string_view v) {
    key(k);
    json_text::append_escaped(out_, v);
  }
  void close() { out_.push_back('}'); }

 private:
  std::string& out_;
  bool first_ = true;
};

inline void append_string_array(std::string& out, const std::vector<std::string>& v) {
  out.push_back('[');
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) out.push_back(',');
    json_text::append_escaped(out, v[i]);
  }
  out.push_back(']');
}

inline void append_embedding(std::string& out, std::span<const float> e) {
  const std::size_t old = out.size();
  out.resize(old + 2 + e.size() * 17);  // a float is at most 15 characters, "-Infinity" with quotes 11
  char* p = out.data() + old;
  *p++ = '[';
  for (std::size_t i = 0; i < e.size(); ++i) {
    if (i) *p++ = ',';
    p = json_text::write_number(p, e[i]);
  }
  *p++ = ']';
  out.resize(static_cast<std::size_t>(p - out.data()));
}

inline void append_metadata_value(std::string& out, const metadata_value& v) {
  std::visit(
      [&out](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::monostate>) out += "null";
        else if constexpr (std::is_same_v<T, bool>) out += x ? "true" : "false";
        else if constexpr (std::is_same_v<T, std::int64_t>) json_text::append_int(out, x);
        else if constexpr (std::is_same_v<T, double>) json_text::append_number(out, x, true);
        else if constexpr (std::is_same_v<T, std::string>) json_text::append_escaped(out, x);
        else out += x.text.empty() ? std::string_view("null") : std::string_view(x.text);
      },
      v);
}

inline void append_record(const memory_record& r, std::span<const float> emb, std::string& out) {
  object_writer w(out);
  // A typed field is written unless it is empty and an extra field of the same name holds the
  // original value (kept there by the reader); id and content are written even when empty.
  auto wanted = [&](key_id k) {
    if (typed_present(r, emb, k)) return true;
    return (k == key_id::id || k == key_id::content) && !has_extra(r, key_names[static_cast<int>(k)]);
  };
  auto name = [](key_id k) { return key_names[static_cast<int>(k)]; };
  auto str = [&](key_id k, const std::string& v) {
    if (wanted(k)) w.string(name(k), v);
  };
  auto time = [&](key_id k, const std::optional<timestamp>& t) {
    if (t) w.string(name(k), format_timestamp(*t));
  };
  auto arr = [&](key_id k, const std::vector<std::string>& v) {
    if (!v.empty()) {
      w.key(name(k));
      append_string_array(out, v);
    }
  };
  auto num = [&](key_id k, const std::optional<double>& v) {
    if (v) {
      w.key(name(k));
      json_text::append_number(out, *v);
    }
  };
  str(key_id::id, r.id);
  str(key_id::content, r.content);
  if (!emb.empty()) {
    w.key("embedding");
    append_embedding(out, emb);
  }
  str(key_id::embedding_version, r.embedding_version);
  if (!r.metadata.empty()) {
    w.key("metadata");
    object_writer m(out);
    for (const auto& [k, v] : r.metadata) {
      m.key(k);
      append_metadata_value(out, v);
    }
    m.close();
  }
  time(key_id::created_at, r.created_at);
  time(key_id::updated_at, r.updated_at);
  time(key_id::last_accessed_at, r.last_accessed_at);
  str(key_id::source, r.source);
  str(key_id::scope, r.scope);
  str(key_id::status, r.status);
  str(key_id::kind, r.kind);
  if (r.claim) {
    w.key("claim");
    object_writer c(out);
    if (const auto* f = std::get_if<fact_claim>(&*r.claim)) {
      c.string("entity", f->entity);
      c.string("attribute", f->attribute);
      c.string("value", f->value);
    } else {
      const auto& p = std::get<preference_claim>(*r.claim);
      c.string("scene", p.scene);
      c.string("preference", p.preference);
      c.string("constraint", p.constraint);
      c.string("polarity", to_string(p.polarity));
    }
    c.close();
  }
  str(key_id::duplicate_of, r.links.duplicate_of);
  arr(key_id::related_ids, r.links.related_ids);
  arr(key_id::related_notes, r.links.related_notes);
  arr(key_id::supersedes, r.links.supersedes);
  num(key_id::confidence, r.confidence);
  num(key_id::effective_weight, r.effective_weight);
  for (const auto& e : r.extra) {
    const key_id k = key_of(e.name);
    if (k != key_id::unknown && wanted(k)) continue;  // the typed value supersedes the stale original
    w.key(e.name);
    out += e.json.empty() ? std::string_view("null") : std::string_view(e.json);
  }
  w.close();
}

}  // namespace detail::jsonl

// ---------------------------------------------------------------------- writing

/// Appends the canonical JSON object of a record (no newline) to `out`.
///
/// Keys in this order, each omitted when absent or empty (`id` and `content` always written):
/// id, content, embedding, embedding_version, metadata (keys sorted), created_at, updated_at,
/// last_accessed_at, source, scope, status, kind, claim, duplicate_of, related_ids,
/// related_notes, supersedes, confidence, effective_weight, then `extra` fields in their order.
/// An extra field named like a typed field is written only while the typed field is empty (it
/// holds the original value the reader could not interpret); once the typed field is set, the
/// typed value wins and the stale original is not written.
/// Numbers: embedding values as float32 shortest round-trip, confidence/weight/metadata numbers
/// as double shortest round-trip (metadata doubles keep a ".0" so they read back as numbers, not
/// integers); non-finite values as the strings "NaN", "Infinity", "-Infinity".
/// Assumes strings are valid UTF-8 (they are copied as is; only RFC 8259's escapes are applied).
/// @complexity O(size of the record).
inline void append_json(const memory_record& r, std::string& out) {
  detail::jsonl::append_record(r, r.embedding, out);
}

/// The canonical JSON object of a record (see `append_json`).
[[nodiscard]] inline std::string to_json(const memory_record& r) {
  std::string s;
  append_json(r, s);
  return s;
}

}  // namespace memhealth
