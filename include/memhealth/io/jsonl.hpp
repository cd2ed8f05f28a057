#pragma once
/// @file jsonl.hpp
/// The JSONL record format: one JSON object per line, one `memory_record` per object. Reading
/// (`parse_jsonl`, `read_jsonl`) and canonical, atomic writing (`append_json`, `to_json`,
/// `to_jsonl`, `write_jsonl`). The format is specified in docs/format.md.
///
/// `read_jsonl_each` streams records to a callback instead of keeping them.
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
/// Large inputs are parsed in pieces on several threads (`load_options`), with the same result
/// as one thread. Link with `-lsimdjson` and the platform's threads library (`-pthread`).

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

#if defined(_WIN32)
#include <fstream>
#else
#include <fcntl.h>
#include <unistd.h>
#endif

#include "memhealth/config.hpp"
#include "memhealth/io/detail_json_text.hpp"
#include "memhealth/io/load_issue.hpp"
#include "memhealth/record/memory_record.hpp"
#include "memhealth/record/time.hpp"
#include "memhealth/store/memory_store.hpp"
#include "memhealth/worker_thread.hpp"

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

[[noreturn]] inline void throw_io(const std::string& what, const std::filesystem::path& p, int err) {
  throw error(error_code::io, what + " '" + p.string() + "': " + std::strerror(err));
}

// Writes chunks produced by `fill(buffer, flush)` to a temporary file next to `target`, syncs it
// and renames it over `target`. The temporary file is removed on failure.
template <class Fill>
void atomic_write(const std::filesystem::path& target, Fill&& fill) {
  static std::atomic<unsigned> counter{0};
  const std::filesystem::path dir = target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
#if defined(_WIN32)
  const std::filesystem::path tmp = dir / (target.filename().string() + ".tmp-" + std::to_string(counter++));
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw error(error_code::io, "write_jsonl: cannot create '" + tmp.string() + "'");
    std::string buf;
    auto flush = [&] {
      f.write(buf.data(), static_cast<std::streamsize>(buf.size()));
      buf.clear();
      if (!f) throw error(error_code::io, "write_jsonl: cannot write '" + tmp.string() + "'");
    };
    try {
      fill(buf, flush);
      flush();
      f.close();
      if (!f) throw error(error_code::io, "write_jsonl: cannot write '" + tmp.string() + "'");
    } catch (...) {
      f.close();
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      throw;
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, target, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    throw error(error_code::io, "write_jsonl: cannot rename to '" + target.string() + "'");
  }
#else
  const std::filesystem::path tmp =
      dir / ("." + target.filename().string() + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) throw_io("write_jsonl: cannot create temporary file", tmp, errno);
  bool failed = false;  // set once fail() has closed and removed the temporary file
  auto fail = [&](const char* what, const std::filesystem::path& p, int err) {
    failed = true;
    ::close(fd);
    ::unlink(tmp.c_str());
    throw_io(what, p, err);
  };
  std::string buf;
  auto flush = [&] {
    const char* p = buf.data();
    std::size_t n = buf.size();
    while (n > 0) {
      const ssize_t w = ::write(fd, p, n);
      if (w < 0) {
        if (errno == EINTR) continue;
        fail("write_jsonl: cannot write", tmp, errno);
      }
      p += w;
      n -= static_cast<std::size_t>(w);
    }
    buf.clear();
  };
  try {
    fill(buf, flush);
    flush();
  } catch (...) {
    if (!failed) {
      ::close(fd);
      ::unlink(tmp.c_str());
    }
    throw;
  }
  if (::fsync(fd) != 0) fail("write_jsonl: cannot sync", tmp, errno);
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw_io("write_jsonl: cannot close", tmp, err);
  }
  if (::rename(tmp.c_str(), target.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw_io("write_jsonl: cannot rename over", target, err);
  }
  // Make the rename itself durable (best effort: some file systems refuse fsync on directories).
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    (void)::fsync(dfd);
    ::close(dfd);
  }
#endif
}

inline constexpr std::size_t write_chunk = std::size_t{1} << 20;

}  // namespace detail::jsonl

// ---------------------------------------------------------------------- reading

/// How JSONL is read. The result never depends on these options: any thread count and piece size
/// give the same records, issues (same line numbers) and `lines_read`, in input order.
struct load_options {
  /// Parsing threads. 0 = `std::thread::hardware_concurrency()` capped at 8; 1 = parse
  /// sequentially on the calling thread. With more than one, that many worker threads parse
  /// pieces of the input while the calling thread puts the pieces back in input order (and calls
  /// `read_jsonl_each`'s callback).
  unsigned threads = 0;
  /// Size of the pieces the input is cut into (at line ends; a longer line makes a longer piece).
  /// Each worker holds one piece of a file in a reused buffer; at most `2 * threads + 2` parsed
  /// pieces wait to be handed to `read_jsonl_each`'s callback (`16 * threads + 16` when the
  /// records are kept). An input (text or regular file) shorter than two pieces is
  /// parsed on the calling thread alone. Values below 1 count as 1.
  std::size_t piece_bytes = std::size_t{4} << 20;
};

namespace detail::jsonl {

inline unsigned resolve_threads(unsigned threads) noexcept {
  if (threads != 0) return threads;
  return std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
}

// True when a file is read on the calling thread alone: one thread asked for, or a regular file
// shorter than two pieces (threads would cost more than they save).
inline bool read_sequentially(const std::filesystem::path& path, unsigned threads, std::size_t piece) {
  if (threads == 1) return true;
  std::error_code ec;
  const auto n = std::filesystem::file_size(path, ec);
  return !ec && n / 2 < piece;
}

// One piece of the input, handed to a worker: bytes up to `readable_end` may be read.
struct piece_view {
  std::size_t index = 0;
  const char* begin = nullptr;
  std::size_t size = 0;
  const char* readable_end = nullptr;
};

// A worker's reused input buffer with SIMDJSON_PADDING spare bytes.
struct piece_buffer {
  std::unique_ptr<char[]> data;
  std::size_t capacity = 0;
  void reserve(std::size_t n, std::size_t keep) {  // keeps the first `keep` bytes
    if (n <= capacity) return;
    std::unique_ptr<char[]> bigger(new char[n + simdjson::SIMDJSON_PADDING]);
    if (keep) std::memcpy(bigger.get(), data.get(), keep);
    data = std::move(bigger);
    capacity = n;
  }
};

// Cuts text already in memory into pieces (no copy). Thread-safe.
class text_source {
 public:
  text_source(const char* data, std::size_t len, const char* readable_end, std::size_t piece)
      : pos_(data), end_(data + len), readable_end_(readable_end), piece_(piece) {}
  bool next(piece_view& out, piece_buffer&) {
    std::lock_guard lock(m_);
    if (pos_ == end_) return false;
    const char* cut = end_;
    if (static_cast<std::size_t>(end_ - pos_) > piece_) {
      const char* q = pos_ + piece_;
      if (const void* nl = std::memchr(q, '\n', static_cast<std::size_t>(end_ - q))) cut = static_cast<const char*>(nl) + 1;
    }
    out = piece_view{index_++, pos_, static_cast<std::size_t>(cut - pos_), readable_end_};
    pos_ = cut;
    return true;
  }

 private:
  std::mutex m_;
  const char* pos_;
  const char* end_;
  const char* readable_end_;
  std::size_t piece_;
  std::size_t index_ = 0;
};

// Reads a file piece by piece into the caller's buffer: the bytes after the last line end of a
// piece are carried over to the next one. Thread-safe (reads are serialised; parsing is not).
class file_source {
 public:
  file_source(const std::filesystem::path& path, std::size_t piece)
      : f_(std::fopen(path.c_str(), "rb"), &std::fclose), path_(path), piece_(piece) {
    if (!f_) throw_io("read_jsonl: cannot open", path, errno);
  }
  bool next(piece_view& out, piece_buffer& buf) {
    std::lock_guard lock(m_);
    std::size_t have = carry_.size();
    buf.reserve(std::max(piece_, 2 * have), 0);
    if (have) std::memcpy(buf.data.get(), carry_.data(), have);
    std::size_t cut = 0;
    for (;;) {
      if (!eof_) {
        errno = 0;
        const std::size_t n = std::fread(buf.data.get() + have, 1, buf.capacity - have, f_.get());
        if (n == 0) {
          if (std::ferror(f_.get())) throw_io("read_jsonl: cannot read", path_, errno ? errno : EIO);
          eof_ = true;
        }
        have += n;
      }
      if (eof_) {
        cut = have;
        break;
      }
      const std::string_view got(buf.data.get(), have);
      if (const std::size_t nl = got.rfind('\n'); nl != std::string_view::npos) {
        cut = nl + 1;
        break;
      }
      if (have == buf.capacity) buf.reserve(2 * buf.capacity, have);  // one line longer than a piece
    }
    carry_.assign(buf.data.get() + cut, have - cut);
    if (cut == 0) return false;
    out = piece_view{index_++, buf.data.get(), cut, buf.data.get() + buf.capacity + simdjson::SIMDJSON_PADDING};
    return true;
  }
  std::size_t size_hint() const {  // 0 when unknown
    std::error_code ec;
    const auto n = std::filesystem::file_size(path_, ec);
    return ec ? 0 : static_cast<std::size_t>(n);
  }

 private:
  std::mutex m_;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f_;
  std::filesystem::path path_;
  std::size_t piece_;
  std::string carry_;
  std::size_t index_ = 0;
  bool eof_ = false;
};

// Parses the pieces of `src` on `threads` worker threads; the calling thread takes the parsed
// pieces in input order, shifts their issues' line numbers by the lines of earlier pieces, adds
// issues and lines_read to `out` and hands the records to `sink(std::vector<memory_record>&,
// std::size_t piece_bytes)`. Exceptions from a worker (I/O, bad_alloc) or the sink stop every
// worker and are rethrown here.
// At most `window` parsed pieces wait (workers pause beyond it): small when the records are
// dropped after the sink, large when they are kept anyway, so that workers do not wait for a
// descheduled calling thread.
template <class Source, class Sink>
void parse_parallel(Source& src, std::string_view file, unsigned threads, std::size_t window, load_result& out,
                    Sink&& sink) {
  struct parsed {
    std::unique_ptr<load_result> res;
    std::size_t lines = 0;
    std::size_t bytes = 0;
  };
  std::mutex m;
  std::condition_variable ready_cv, space_cv;
  std::vector<std::optional<parsed>> ready;  // slot = index - delivered, window-bounded
  std::vector<std::unique_ptr<load_result>> spare;
  std::size_t delivered = 0;
  ready.resize(window);
  unsigned running = threads;
  bool stop = false;
  std::exception_ptr failure;

  auto work = [&](std::size_t) {
    try {
      reader r(file);
      piece_buffer buf;
      for (;;) {
        std::unique_ptr<load_result> res;
        {
          std::lock_guard lock(m);
          if (stop) break;
          if (!spare.empty()) res = std::move(spare.back()), spare.pop_back();
        }
        if (!res) res = std::make_unique<load_result>();
        piece_view pv;
        if (!src.next(pv, buf)) break;
        {
          std::unique_lock lock(m);
          space_cv.wait(lock, [&] { return stop || pv.index < delivered + window; });
          if (stop) break;
        }
        r.restart(pv.index == 0);
        r.process(pv.begin, pv.size, pv.readable_end, true, *res);
        {
          std::lock_guard lock(m);
          ready[pv.index % window] = parsed{std::move(res), r.lines(), pv.size};
        }
        ready_cv.notify_one();
      }
    } catch (...) {
      std::lock_guard lock(m);
      if (!failure) failure = std::current_exception();
      stop = true;
    }
    {
      std::lock_guard lock(m);
      --running;
    }
    ready_cv.notify_one();
    space_cv.notify_all();
  };

  std::vector<std::jthread> workers;
  // Declared after `workers`, so it runs first on the way out: stops the workers before they are
  // joined (a sink exception must not leave them waiting for space).
  struct stopper {
    std::mutex& m;
    bool& stop;
    std::condition_variable& cv;
    ~stopper() {
      {
        std::lock_guard lock(m);
        stop = true;
      }
      cv.notify_all();
    }
  } stop_on_exit{m, stop, space_cv};
  workers.reserve(threads);
  for (unsigned t = 0; t < threads; ++t) workers.push_back(start_worker(work, t));

  std::size_t line_offset = 0;
  for (;;) {
    parsed p;
    {
      std::unique_lock lock(m);
      auto& slot = ready[delivered % window];
      ready_cv.wait(lock, [&] { return failure || slot.has_value() || running == 0; });
      if (failure) break;
      if (!slot) break;  // every worker is done and nothing is left
      p = std::move(*slot);
      slot.reset();
    }
    load_result& part = *p.res;
    for (load_issue& is : part.issues) {
      is.line += line_offset;
      out.issues.push_back(std::move(is));
    }
    out.lines_read += part.lines_read;
    line_offset += p.lines;
    sink(part.records, p.bytes);
    part.records.clear();
    part.issues.clear();
    part.lines_read = 0;
    {
      std::lock_guard lock(m);
      ++delivered;
      spare.push_back(std::move(p.res));
    }
    space_cv.notify_all();
  }
  {
    std::lock_guard lock(m);
    stop = true;
  }
  space_cv.notify_all();
  workers.clear();  // joins
  if (failure) std::rethrow_exception(failure);
}

// Pieces that may wait when the records are kept: their records are kept anyway, so only the
// calling thread's scheduling bounds it.
constexpr std::size_t keep_window(unsigned threads) noexcept { return 16 * std::size_t{threads} + 16; }

// Appends each piece's records to out.records; the first piece's record density sizes the
// vector once (total_bytes = 0: unknown).
inline auto append_records(load_result& out, std::size_t total_bytes) {
  return [&out, total_bytes, first = true](std::vector<memory_record>& recs, std::size_t bytes) mutable {
    if (first && total_bytes > 0 && bytes > 0) {
      const double per_byte = static_cast<double>(recs.size()) / static_cast<double>(bytes);
      out.records.reserve(static_cast<std::size_t>(per_byte * static_cast<double>(total_bytes) * 1.05) + 16);
    }
    first = false;
    std::move(recs.begin(), recs.end(), std::back_inserter(out.records));
  };
}

}  // namespace detail::jsonl

/// Parses JSONL text: one JSON object per line, blank lines ignored, `\n` or `\r\n` line ends,
/// an optional UTF-8 byte order mark.
/// @param text the whole input; parsed in place (only a line within SIMDJSON_PADDING bytes of
///        the end is copied into a padded buffer).
/// @param file_name name reported in every `load_issue::file`.
/// @param opt threads and piece size (see `load_options`); the result does not depend on them.
/// @return every record that could be kept, in input order, and one `load_issue` per problem
///         (see the file comment and docs/format.md for what is kept, skipped and reported).
///         `lines_read` counts non-blank lines.
/// @errors never throws on bad data; only `std::bad_alloc`, or `std::system_error` when a thread
///         cannot be started.
/// @complexity O(bytes) work, spread over `opt.threads` threads when the text holds two pieces
///         or more.
template <class = void>  // deferred instantiation, see memhealth.hpp
load_result parse_jsonl(std::string_view text, std::string_view file_name, const load_options& opt) {
  load_result res;
  const unsigned threads = detail::jsonl::resolve_threads(opt.threads);
  const std::size_t piece = std::max<std::size_t>(opt.piece_bytes, 1);
  const char* end = text.data() + text.size();
  if (threads == 1 || text.size() < 2 * piece) {
    detail::jsonl::reader r(file_name);
    r.process(text.data(), text.size(), end, true, res);
    return res;
  }
  detail::jsonl::text_source src(text.data(), text.size(), end, piece);
  detail::jsonl::parse_parallel(src, file_name, threads, detail::jsonl::keep_window(threads), res,
                                detail::jsonl::append_records(res, text.size()));
  return res;
}

/// `parse_jsonl(text, file_name, load_options{})`: all hardware threads (up to 8).
template <class = void>  // deferred instantiation, see memhealth.hpp
load_result parse_jsonl(std::string_view text, std::string_view file_name = "<memory>") {
  return parse_jsonl(text, file_name, load_options{});
}

namespace detail::jsonl {
// Streams a file through a 4 MiB buffer (grown only for a longer line) on the calling thread;
// calls after_chunk(res, bytes_consumed_so_far, file_size_or_0) after each chunk's lines are parsed.
template <class AfterChunk>
void stream_file(const std::filesystem::path& path, load_result& res, AfterChunk&& after_chunk) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) throw_io("read_jsonl: cannot open", path, errno);
  const std::string name = path.string();
  reader r(name);
  std::size_t capacity = std::size_t{4} << 20;
  std::unique_ptr<char[]> buf(new char[capacity + simdjson::SIMDJSON_PADDING]);
  std::size_t have = 0, consumed = 0;
  bool eof = false;
  std::error_code size_ec;
  const auto size = std::filesystem::file_size(path, size_ec);
  const std::size_t file_size = size_ec ? 0 : static_cast<std::size_t>(size);
  while (!eof || have > 0) {
    if (!eof) {
      errno = 0;
      const std::size_t n = std::fread(buf.get() + have, 1, capacity - have, f.get());
      if (n == 0) {
        if (std::ferror(f.get())) throw_io("read_jsonl: cannot read", path, errno ? errno : EIO);
        eof = true;
      }
      have += n;
    }
    const std::size_t used = r.process(buf.get(), have, buf.get() + capacity + simdjson::SIMDJSON_PADDING, eof, res);
    std::memmove(buf.get(), buf.get() + used, have - used);
    have -= used;
    consumed += used;
    after_chunk(res, consumed, file_size);
    if (have == capacity) {  // one line longer than the buffer: grow it
      std::unique_ptr<char[]> bigger(new char[2 * capacity + simdjson::SIMDJSON_PADDING]);
      std::memcpy(bigger.get(), buf.get(), have);
      buf = std::move(bigger);
      capacity *= 2;
    }
  }
}
}  // namespace detail::jsonl

/// Reads a JSONL file (see `parse_jsonl`); issues name the file as `path.string()`.
/// The file is read piece by piece (`opt.piece_bytes`, 4 MiB by default) into buffers that are
/// reused, never whole: memory beyond the records is O(threads x (piece + longest line)).
/// With more than one thread and a file of two pieces or more, workers parse pieces in parallel
/// (see `load_options`); the result does not depend on `opt`.
/// @throws memhealth::error with `error_code::io` when the file cannot be opened or read
///         (missing, a directory, no permission); everything inside the file is a `load_issue`.
/// @complexity O(bytes) work, spread over `opt.threads` threads.
template <class = void>  // deferred instantiation, see memhealth.hpp
load_result read_jsonl(const std::filesystem::path& path, const load_options& opt) {
  load_result res;
  const unsigned threads = detail::jsonl::resolve_threads(opt.threads);
  const std::size_t piece = std::max<std::size_t>(opt.piece_bytes, 1);
  if (detail::jsonl::read_sequentially(path, threads, piece)) {
    bool reserved = false;
    detail::jsonl::stream_file(path, res, [&](load_result& r, std::size_t consumed, std::size_t file_size) {
      if (reserved || file_size == 0 || consumed == 0 || r.records.empty()) return;
      // one reservation from the first chunk's record density saves re-growing the vector
      reserved = true;
      const double per_byte = static_cast<double>(r.records.size()) / static_cast<double>(consumed);
      r.records.reserve(static_cast<std::size_t>(per_byte * static_cast<double>(file_size) * 1.05) + 16);
    });
    return res;
  }
  detail::jsonl::file_source src(path, piece);
  const std::string name = path.string();
  detail::jsonl::parse_parallel(src, name, threads, detail::jsonl::keep_window(threads), res,
                                detail::jsonl::append_records(res, src.size_hint()));
  return res;
}

/// `read_jsonl(path, load_options{})`: all hardware threads (up to 8).
template <class = void>  // deferred instantiation, see memhealth.hpp
load_result read_jsonl(const std::filesystem::path& path) { return read_jsonl(path, load_options{}); }

/// Streams a JSONL file record by record without keeping the records: calls
/// `on_record(memory_record&&)` for every record `read_jsonl` would keep, in file order, on the
/// calling thread, a few MiB at a time. For files larger than memory, or to feed a store or a
/// database directly. With more than one thread (see `load_options`), workers parse the next
/// pieces while `on_record` runs.
/// @return the issues and `lines_read`; `records` is empty.
/// @throws memhealth::error(error_code::io) as `read_jsonl`; exceptions from `on_record`
///         propagate (the workers are stopped and joined first; records not yet handed over are
///         dropped).
/// @complexity O(bytes); memory O(threads x (piece + longest line)).
template <class F>
  requires std::invocable<F&, memory_record&&>
load_result read_jsonl_each(const std::filesystem::path& path, const load_options& opt, F&& on_record) {
  load_result res;
  const unsigned threads = detail::jsonl::resolve_threads(opt.threads);
  const std::size_t piece = std::max<std::size_t>(opt.piece_bytes, 1);
  if (detail::jsonl::read_sequentially(path, threads, piece)) {
    detail::jsonl::stream_file(path, res, [&](load_result& r, std::size_t, std::size_t) {
      for (auto& rec : r.records) on_record(std::move(rec));
      r.records.clear();
    });
    return res;
  }
  detail::jsonl::file_source src(path, piece);
  const std::string name = path.string();
  detail::jsonl::parse_parallel(src, name, threads, 2 * std::size_t{threads} + 2, res,
                                [&](std::vector<memory_record>& recs, std::size_t) {
    for (auto& rec : recs) on_record(std::move(rec));
  });
  return res;
}

/// `read_jsonl_each(path, load_options{}, on_record)`: all hardware threads (up to 8).
template <class F>
  requires std::invocable<F&, memory_record&&>
load_result read_jsonl_each(const std::filesystem::path& path, F&& on_record) {
  return read_jsonl_each(path, load_options{}, std::forward<F>(on_record));
}

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

/// A range whose elements are `memory_record`s.
template <class Range>
concept memory_record_range =
    std::ranges::input_range<Range> &&
    std::is_same_v<std::remove_cvref_t<std::ranges::range_reference_t<Range>>, memory_record>;

/// Canonical JSONL of a range of records: one `append_json` object per record, each followed by
/// `\n`. @complexity O(total size).
template <memory_record_range Range>
[[nodiscard]] std::string to_jsonl(const Range& records) {
  std::string s;
  for (const memory_record& r : records) {
    append_json(r, s);
    s.push_back('\n');
  }
  return s;
}

/// Canonical JSONL of every record of an in-memory store, in index order, embeddings taken from
/// the store's block (no record is copied).
[[nodiscard]] inline std::string to_jsonl(const memory_store<memory_record>& store) {
  std::string s;
  for (std::size_t i = 0; i < store.size(); ++i) {
    detail::jsonl::append_record(store.record(i), store.embedding(i), s);
    s.push_back('\n');
  }
  return s;
}

/// Writes records as canonical JSONL (see `append_json`) to `path`, atomically: the data goes to
/// a temporary file in the same directory, which is fsync'ed and renamed over `path`; readers see
/// the old file or the complete new one, never a partial file.
/// @throws memhealth::error with `error_code::io` when the temporary file cannot be created,
///         written, synced or renamed (the temporary file is removed; `path` is untouched).
/// @complexity O(total size); memory O(1 MiB) buffer.
template <memory_record_range Range>
void write_jsonl(const std::filesystem::path& path, const Range& records) {
  detail::jsonl::atomic_write(path, [&](std::string& buf, auto& flush) {
    for (const memory_record& r : records) {
      append_json(r, buf);
      buf.push_back('\n');
      if (buf.size() >= detail::jsonl::write_chunk) flush();
    }
  });
}

/// Writes every record of an in-memory store (index order) as canonical JSONL, atomically (see
/// the range overload). Embeddings come from the store's block via `store.embedding(i)`; records
/// are not copied. @throws memhealth::error(error_code::io) as the range overload.
inline void write_jsonl(const std::filesystem::path& path, const memory_store<memory_record>& store) {
  detail::jsonl::atomic_write(path, [&](std::string& buf, auto& flush) {
    for (std::size_t i = 0; i < store.size(); ++i) {
      detail::jsonl::append_record(store.record(i), store.embedding(i), buf);
      buf.push_back('\n');
      if (buf.size() >= detail::jsonl::write_chunk) flush();
    }
  });
}

}  // namespace memhealth
