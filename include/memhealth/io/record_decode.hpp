#pragma once
/// @file record_decode.hpp
/// The decoder of the JSONL record format: one JSON object -> one `memory_record`
/// (`detail::jsonl::reader`, which the parallel loader in jsonl_read.hpp runs over the pieces of
/// jsonl_lines.hpp). The format is specified in docs/format.md; record_codec.hpp gives the whole
/// contract (reading never aborts on bad data, what becomes a load_issue).
///
/// Reading uses simdjson's On-Demand API (one document per line over a padded buffer);
/// embedding numbers are parsed from their raw tokens (an exact fast path, else
/// `std::from_chars<float>`), so a float written shortest-round-trip reads back bit-exactly.

#include <simdjson.h>

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "memhealth/config.hpp"
#include "memhealth/io/detail_float_array.hpp"
#include "memhealth/io/detail_json_text.hpp"
#include "memhealth/io/load_issue.hpp"
#include "memhealth/io/record_keys.hpp"
#include "memhealth/record/memory_record.hpp"
#include "memhealth/record/time.hpp"

namespace memhealth {

/// Records loaded from JSONL, with the problems met (see `basic_load_result`).
using load_result = basic_load_result<memory_record>;

namespace detail::jsonl {

namespace od = simdjson::ondemand;
using json_text::trim;

constexpr std::string_view type_name(od::json_type t) noexcept {
  switch (t) {
    case od::json_type::array:
      return "an array";
    case od::json_type::object:
      return "an object";
    case od::json_type::number:
      return "a number";
    case od::json_type::string:
      return "a string";
    case od::json_type::boolean:
      return "a boolean";
    case od::json_type::null:
      return "null";
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
  std::size_t process(const char* data, std::size_t len, const char* readable_end, bool final,
                      load_result& res) {
    const char* p = data;
    const char* end = data + len;
    if (first_chunk_) {
      first_chunk_ = false;
      if (len >= 3 && std::memcmp(p, "\xEF\xBB\xBF", 3) == 0) p += 3;  // UTF-8 byte order mark
    }
    while (p < end) {
      const char* nl =
          static_cast<const char*>(std::memchr(p, '\n', static_cast<std::size_t>(end - p)));
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
    line_issues_.push_back(
        load_issue{std::string(file_), line_, std::string(field), std::move(reason), kept});
  }

  // Checks that a span of the line is one complete JSON value (the On-Demand front end skips
  // values it is not asked about without validating them).
  static void validate(std::string_view raw) {
    if (!json_text::validator::check(raw))
      throw bad_json{"not valid JSON (malformed value " + quote_excerpt(raw) + ")"};
  }

  od::document sub_document(std::string_view raw) {
    return sub_.iterate(raw.data(), raw.size(), cap(raw.data())).value();
  }

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
      default:
        return trim(v.raw_json_token());
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
    keep_in_extra(key, raw,
                  "expected " + std::string(expected) + ", found " + std::string(type_name(t)));
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
    if (json_text::parse_plain_float_array(raw, out, commas_)) {
      dim_hint_ = out.size();
      return;
    }
    out.clear();
    out.reserve(dim_hint_);
    const json_text::float_array_scan s = json_text::parse_float_array(raw, out);
    if (!s.ok) {
      out.clear();
      keep_in_extra(key, raw,
                    "expected an array of numbers (or \"NaN\"/\"Infinity\"/\"-Infinity\")");
      return;
    }
    if (!out.empty()) dim_hint_ = out.size();
    if (s.out_of_range)
      issue(key, std::to_string(s.out_of_range) +
                     " value(s) outside the float32 range, first at index " +
                     std::to_string(s.first_bad) + " (" + quote_excerpt(s.first_token) +
                     "); stored as +-Infinity (overflow) or 0 (underflow)");
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
    od::object mo =
        d.get_object().value();  // named: a temporary's value() would dangle in range-for
    for (auto fr : mo) {
      od::field f = take<od::field>(fr);
      std::string k(f.unescaped_key().value());
      od::value& mv = f.value();
      metadata_value val;
      switch (mv.type().value()) {
        case od::json_type::null:
          break;
        case od::json_type::boolean:
          val = bool(mv.get_bool().value());
          break;
        case od::json_type::string:
          val = std::string(std::string_view(mv.get_string().value()));
          break;
        case od::json_type::number: {
          const std::string_view tok = trim(mv.raw_json_token());
          if (json_text::is_floating_token(tok)) {
            double x = 0;
            if (json_text::parse_float_token(tok, x) == json_text::number_status::ok)
              val = x;
            else
              val = raw_json{std::string(tok)};  // beyond double: kept as text, nothing lost
          } else {
            std::int64_t x = 0;
            auto [q, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), x);
            if (ec == std::errc{} && q == tok.data() + tok.size())
              val = x;
            else
              val = raw_json{std::string(tok)};  // beyond int64: kept as text
          }
          break;
        }
        default:
          val = raw_json{json_text::minify(raw_of(mv))};
      }
      if (rec_->metadata.contains(k))
        issue(key, "duplicate metadata key \"" + quote_excerpt(k) +
                       "\"; the first value is kept, this one is dropped");
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
        keep_in_extra(key, tok,
                      "cannot parse " + quote_excerpt(tok) +
                          " as an ISO-8601 date-time; the field is left empty");
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
        keep_in_extra(key, tok,
                      "expected integer epoch milliseconds for years 0001..9999, found " +
                          quote_excerpt(tok) + "; the field is left empty");
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
        case json_text::number_status::ok:
          dst = x;
          break;
        case json_text::number_status::out_of_range:
          dst = x;
          issue(key, quote_excerpt(tok) + " is outside the double range; stored as " +
                         (x == 0 ? "0" : "+-Infinity"));
          break;
        case json_text::number_status::invalid:
          keep_in_extra(key, tok, "malformed number");
          break;
      }
    } else if (t == od::json_type::string) {
      const std::string_view tok = trim(v.raw_json_token());
      double x = 0;
      if (json_text::parse_non_finite_text(std::string_view(v.get_string().value()), x))
        dst = x;
      else
        keep_in_extra(key, tok, "expected a number, found a string");
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
    static constexpr std::string_view names[] = {"entity",     "attribute",  "value", "scene",
                                                 "preference", "constraint", "holder"};
    std::string slots[7];
    bool seen[8] = {};
    memhealth::polarity pol = memhealth::polarity::neutral;
    std::string why;
    od::object co = d.get_object().value();
    for (auto fr : co) {
      od::field f = take<od::field>(fr);
      const std::string_view k = f.unescaped_key().value();
      od::value& e = f.value();
      const auto et = e.type().value();
      std::size_t i = 0;
      while (i < 7 && names[i] != k) ++i;
      if (i < 7) {
        if (et != od::json_type::string) {
          why = "claim field \"" + std::string(k) + "\" is not a string";
          break;
        }
        slots[i] = std::string(std::string_view(e.get_string().value()));
        seen[i] = true;
      } else if (k == "polarity") {
        seen[7] = true;
        std::string_view s;
        if (et == od::json_type::string)
          s = e.get_string().value();
        else if (et == od::json_type::number)
          s = trim(e.raw_json_token());
        if (s == "positive" || s == "1")
          pol = memhealth::polarity::positive;
        else if (s == "negative" || s == "-1")
          pol = memhealth::polarity::negative;
        else if (s == "neutral" || s == "0")
          pol = memhealth::polarity::neutral;
        else
          why = "polarity must be \"positive\", \"negative\", \"neutral\", 1, -1 or 0";
        if (et == od::json_type::string && (s == "1" || s == "-1" || s == "0"))
          why = "polarity must be \"positive\", \"negative\", \"neutral\", 1, -1 or 0";
        if (!why.empty()) break;
      } else {
        why = "unknown claim field \"" + quote_excerpt(k) + "\"";
        break;
      }
    }
    const bool fact = seen[0] || seen[1] || seen[2];
    const bool pref = seen[3] || seen[4] || seen[5] || seen[6] || seen[7];
    if (why.empty() && fact == pref)
      why = fact ? "claim mixes fact fields (entity/attribute/value) and preference fields"
                 : "claim has none of entity/attribute/value or "
                   "scene/preference/constraint/polarity/holder";
    if (!why.empty()) return keep_in_extra(key, raw, why);
    if (fact)
      rec_->claim = fact_claim{std::move(slots[0]), std::move(slots[1]), std::move(slots[2])};
    else
      rec_->claim = preference_claim{std::move(slots[3]), std::move(slots[4]), std::move(slots[5]),
                                     pol, std::move(slots[6])};
  }

  void read_field(key_id k, std::string_view key, od::value& v) {
    switch (k) {
      case key_id::id:
        read_string(key, v, rec_->id);
        break;
      case key_id::content:
        read_string(key, v, rec_->content);
        break;
      case key_id::embedding:
        read_embedding(key, v);
        break;
      case key_id::embedding_version:
        read_string(key, v, rec_->embedding_version);
        break;
      case key_id::metadata:
        read_metadata(key, v);
        break;
      case key_id::created_at:
        read_timestamp(key, v, rec_->created_at);
        break;
      case key_id::updated_at:
        read_timestamp(key, v, rec_->updated_at);
        break;
      case key_id::last_accessed_at:
        read_timestamp(key, v, rec_->last_accessed_at);
        break;
      case key_id::source:
        read_string(key, v, rec_->source);
        break;
      case key_id::scope:
        read_string(key, v, rec_->scope);
        break;
      case key_id::status:
        read_string(key, v, rec_->status);
        break;
      case key_id::kind:
        read_string(key, v, rec_->kind);
        break;
      case key_id::claim:
        read_claim(key, v);
        break;
      case key_id::duplicate_of:
        read_string(key, v, rec_->links.duplicate_of);
        break;
      case key_id::related_ids:
        read_string_array(key, v, rec_->links.related_ids);
        break;
      case key_id::related_notes:
        read_string_array(key, v, rec_->links.related_notes);
        break;
      case key_id::supersedes:
        read_string_array(key, v, rec_->links.supersedes);
        break;
      case key_id::confidence:
        read_unit_number(key, v, rec_->confidence);
        break;
      case key_id::effective_weight:
        read_unit_number(key, v, rec_->effective_weight);
        break;
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
      if (!doc.current_location().get(rest))
        throw bad_json{"trailing content after the JSON object"};
      if (!has_id)
        issue("id", "missing id; the record is kept with an empty id");
      else if (rec_->id.empty() &&
               std::none_of(rec_->extra.begin(), rec_->extra.end(),
                            [](const extra_field& e) { return e.name == "id"; }))
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
  std::vector<std::uint32_t> commas_;  // parse_plain_float_array's comma offsets, reused
  bool first_chunk_ = true;
};

}  // namespace detail::jsonl
}  // namespace memhealth
