#pragma once
/// @file record_encode.hpp
/// The canonical encoder of the JSONL record format: one `memory_record` -> one JSON object
/// (`append_json`, `to_json`). docs/format.md specifies the format; record_codec.hpp gives the
/// whole contract. Needs no JSON parser.

#include <algorithm>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "memhealth/io/detail_json_text.hpp"
#include "memhealth/io/record_keys.hpp"
#include "memhealth/record/memory_record.hpp"
#include "memhealth/record/time.hpp"

namespace memhealth {
namespace detail::jsonl {

inline bool has_extra(const memory_record& r, std::string_view name) noexcept {
  return std::any_of(r.extra.begin(), r.extra.end(),
                     [&](const extra_field& e) { return e.name == name; });
}

// True when the typed field `name` holds a value (so an extra of that name is stale).
inline bool typed_present(const memory_record& r, std::span<const float> emb, key_id k) noexcept {
  switch (k) {
    case key_id::id:
      return !r.id.empty();
    case key_id::content:
      return !r.content.empty();
    case key_id::embedding:
      return !emb.empty();
    case key_id::embedding_version:
      return !r.embedding_version.empty();
    case key_id::metadata:
      return !r.metadata.empty();
    case key_id::created_at:
      return r.created_at.has_value();
    case key_id::updated_at:
      return r.updated_at.has_value();
    case key_id::last_accessed_at:
      return r.last_accessed_at.has_value();
    case key_id::source:
      return !r.source.empty();
    case key_id::scope:
      return !r.scope.empty();
    case key_id::status:
      return !r.status.empty();
    case key_id::kind:
      return !r.kind.empty();
    case key_id::claim:
      return r.claim.has_value();
    case key_id::duplicate_of:
      return !r.links.duplicate_of.empty();
    case key_id::related_ids:
      return !r.links.related_ids.empty();
    case key_id::related_notes:
      return !r.links.related_notes.empty();
    case key_id::supersedes:
      return !r.links.supersedes.empty();
    case key_id::confidence:
      return r.confidence.has_value();
    case key_id::effective_weight:
      return r.effective_weight.has_value();
    case key_id::unknown:
      return false;
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
  out.resize(old + 2 +
             e.size() * 17);  // a float is at most 15 characters, "-Infinity" with quotes 11
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
        if constexpr (std::is_same_v<T, std::monostate>)
          out += "null";
        else if constexpr (std::is_same_v<T, bool>)
          out += x ? "true" : "false";
        else if constexpr (std::is_same_v<T, std::int64_t>)
          json_text::append_int(out, x);
        else if constexpr (std::is_same_v<T, double>)
          json_text::append_number(out, x, true);
        else if constexpr (std::is_same_v<T, std::string>)
          json_text::append_escaped(out, x);
        else
          out += x.text.empty() ? std::string_view("null") : std::string_view(x.text);
      },
      v);
}

inline void append_record(const memory_record& r, std::span<const float> emb, std::string& out) {
  object_writer w(out);
  // A typed field is written unless it is empty and an extra field of the same name holds the
  // original value (kept there by the reader); id and content are written even when empty.
  auto wanted = [&](key_id k) {
    if (typed_present(r, emb, k)) return true;
    return (k == key_id::id || k == key_id::content) &&
           !has_extra(r, key_names[static_cast<int>(k)]);
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
      if (!p.holder.empty()) c.string("holder", p.holder);
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
    if (k != key_id::unknown && wanted(k))
      continue;  // the typed value supersedes the stale original
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
