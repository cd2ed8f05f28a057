#pragma once
/// @file apply_edit.hpp
/// `apply_edit(record, op)`: what each record edit of action.hpp does to one record. A pure
/// function of the record's current state and the edit (no store, no I/O), so the executor can
/// compute an action's after-images on copies before it logs and touches anything.
///
/// Generic over records: each edit needs only the field it writes (through `field::raw::F`), and
/// a record type without that field fails to compile with a message naming the field.
/// `memory_record` has them all.

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "memhealth/config.hpp"
#include "memhealth/record/memory_record.hpp"
#include "memhealth/record/time.hpp"
#include "memhealth/record/traits.hpp"
#include "memhealth/repair/action.hpp"

namespace memhealth {

namespace detail::edits {

template <class V>
bool contains(const V& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// Appends each of `add` not yet in `dst` (and not twice from `add` itself).
template <class V>
void append_unique(V& dst, const std::vector<std::string>& add) {
  for (const auto& s : add)
    if (!contains(dst, s)) dst.push_back(s);
}

template <class T>
void to_utc(T& t) {
  using U = std::remove_cvref_t<T>;
  if constexpr (std::is_same_v<U, timestamp>) {
    t.utc_offset_minutes = 0;
  } else if constexpr (is_optional<U>::value) {
    if (t) to_utc(*t);
  }
  // integer epoch ms or std::chrono::sys_time: no offset to drop, already UTC.
}

template <class R>
inline constexpr bool always_false = false;

}  // namespace detail::edits

namespace detail::edits {

template <class E>
struct capability;  // name of the capability an edit writes, and the fields it needs
template <>
struct capability<edit_set_status> {
  static constexpr const char* name = "status (field status)";
};
template <>
struct capability<edit_set_duplicate_of> {
  static constexpr const char* name = "duplicate link (field duplicate_of)";
};
template <>
struct capability<edit_add_supersedes> {
  static constexpr const char* name = "supersedes links (field supersedes)";
};
template <>
struct capability<edit_append_notes> {
  static constexpr const char* name = "related notes (field related_notes)";
};
template <>
struct capability<edit_drop_links> {
  static constexpr const char* name = "links (fields related_ids, supersedes, duplicate_of)";
};
template <>
struct capability<edit_set_weight> {
  static constexpr const char* name = "effective weight (field effective_weight)";
};
template <>
struct capability<edit_fill_metadata> {
  static constexpr const char* name = "metadata (field metadata)";
};
template <>
struct capability<edit_normalize_timestamps> {
  static constexpr const char* name =
      "timestamps (created_at, updated_at, last_accessed_at; any subset)";
};
template <>
struct capability<edit_replace_embedding> {
  static constexpr const char* name = "embedding (fields embedding, embedding_version)";
};
template <>
struct capability<edit_set_content> {
  static constexpr const char* name = "content (field content)";
};

}  // namespace detail::edits

/// True when record type `R` has the writable fields edit `E` (one alternative of
/// `record_edit_op`) writes: see the table in `apply_edit`. Fields come from the lookup ladder of
/// record/traits.hpp (traits entry, data member, ADL accessor), as lvalues.
template <class R, class E>
inline constexpr bool edit_supported = [] {
  if constexpr (std::is_same_v<E, edit_set_status>)
    return detail::field_status::available<R>;
  else if constexpr (std::is_same_v<E, edit_set_duplicate_of>)
    return detail::field_duplicate_of::available<R>;
  else if constexpr (std::is_same_v<E, edit_add_supersedes>)
    return detail::field_supersedes::available<R>;
  else if constexpr (std::is_same_v<E, edit_append_notes>)
    return detail::field_related_notes::available<R>;
  else if constexpr (std::is_same_v<E, edit_drop_links>)
    return detail::field_related_ids::available<R> && detail::field_supersedes::available<R> &&
           detail::field_duplicate_of::available<R>;
  else if constexpr (std::is_same_v<E, edit_set_weight>)
    return detail::field_effective_weight::available<R>;
  else if constexpr (std::is_same_v<E, edit_fill_metadata>)
    return detail::field_metadata::available<R>;
  else if constexpr (std::is_same_v<E, edit_normalize_timestamps>)
    return true;
  else if constexpr (std::is_same_v<E, edit_replace_embedding>)
    return detail::field_embedding::available<R> && detail::field_embedding_version::available<R>;
  else if constexpr (std::is_same_v<E, edit_set_content>)
    return detail::field_content::available<R> &&
           detail::writable_with<R, decltype(field::raw::content), std::string>;
  else
    return false;
}();

/// Name of the record capability edit `E` writes, as used in messages ("status (field status)").
template <class E>
inline constexpr const char* edit_capability = detail::edits::capability<E>::name;

namespace detail::edits {

template <class R, class E>
void apply_one(R& r, const E& e) {
  namespace de = detail::edits;
  if constexpr (std::is_same_v<E, edit_set_status>) {
    field::raw::status(r) = e.status;
  } else if constexpr (std::is_same_v<E, edit_set_duplicate_of>) {
    field::raw::duplicate_of(r) = e.primary_id;
  } else if constexpr (std::is_same_v<E, edit_add_supersedes>) {
    de::append_unique(field::raw::supersedes(r), e.ids);
  } else if constexpr (std::is_same_v<E, edit_append_notes>) {
    de::append_unique(field::raw::related_notes(r), e.notes);
  } else if constexpr (std::is_same_v<E, edit_drop_links>) {
    auto dropped = [&](const auto& s) { return de::contains(e.ids, std::string(s)); };
    auto& rel = field::raw::related_ids(r);
    rel.erase(std::remove_if(rel.begin(), rel.end(), dropped), rel.end());
    auto& sup = field::raw::supersedes(r);
    sup.erase(std::remove_if(sup.begin(), sup.end(), dropped), sup.end());
    auto& dup = field::raw::duplicate_of(r);
    if (dropped(dup)) dup = {};
  } else if constexpr (std::is_same_v<E, edit_set_weight>) {
    if (!(e.weight >= 0.0 && e.weight <= 1.0))
      throw error(error_code::invalid_argument,
                  "edit_set_weight: weight must be in [0,1], got " + std::to_string(e.weight));
    field::raw::effective_weight(r) = e.weight;
  } else if constexpr (std::is_same_v<E, edit_fill_metadata>) {
    auto& m = field::raw::metadata(r);
    if (m.find(e.key) == m.end()) m.emplace(e.key, e.value);
  } else if constexpr (std::is_same_v<E, edit_normalize_timestamps>) {
    if constexpr (detail::field_created_at::available<R>) de::to_utc(field::raw::created_at(r));
    if constexpr (detail::field_updated_at::available<R>) de::to_utc(field::raw::updated_at(r));
    if constexpr (detail::field_last_accessed_at::available<R>)
      de::to_utc(field::raw::last_accessed_at(r));
  } else if constexpr (std::is_same_v<E, edit_replace_embedding>) {
    if (e.embedding.empty())
      throw error(error_code::precondition,
                  "edit_replace_embedding: the vector is empty (no embedder filled it)");
    auto& v = field::raw::embedding(r);
    v.assign(e.embedding.begin(), e.embedding.end());
    field::raw::embedding_version(r) = e.version;
  } else if constexpr (std::is_same_v<E, edit_set_content>) {
    if (e.content.empty())
      throw error(error_code::invalid_argument, "edit_set_content: the new content is empty");
    field::raw::content(r) = e.content;
  } else {
    static_assert(de::always_false<E>, "memhealth: apply_edit: unhandled record edit");
  }
}

}  // namespace detail::edits

/// Applies one edit of a known type `E` to `r` (semantics as in the `record_edit_op` overload).
/// A record type without the capability `E` writes fails to compile with one message naming the
/// edit, the capability and how to provide it.
template <class R, class E>
requires(!std::is_same_v<std::remove_cvref_t<E>, record_edit_op>) void apply_edit(R& r,
                                                                                  const E& e) {
  static_assert(
      edit_supported<R, E>,
      "memhealth: apply_edit: this record type lacks the capability the edit writes (see "
      "memhealth::edit_capability<E>: status, links, related_notes, effective_weight, "
      "metadata, embedding or content). Provide the field by specialising "
      "memhealth::record_traits<R> "
      "with a member pointer or callable yielding an lvalue, by a data member of that name, "
      "or by an ADL accessor memhealth_<field>(r).");
  if constexpr (edit_supported<R, E>) detail::edits::apply_one(r, e);
}

/// Applies one edit to `r` in place:
/// - `edit_set_status`: status = the given text (not validated: the planner writes legal states).
/// - `edit_set_duplicate_of`: duplicate_of = primary id (empty clears it).
/// - `edit_add_supersedes`: appends each id not already in supersedes, in the edit's order.
/// - `edit_append_notes`: appends each note not already in related_notes, in the edit's order.
/// - `edit_drop_links`: removes every listed id from related_ids and supersedes, and clears
///   duplicate_of when it is one of them. Notes are not touched.
/// - `edit_set_weight`: effective_weight = weight.
/// - `edit_fill_metadata`: inserts key = value when the key is missing; an existing key is kept.
/// - `edit_normalize_timestamps`: created_at, updated_at and last_accessed_at (those the record
///   has) keep their instant and get offset 0 (written with `Z`).
/// - `edit_replace_embedding`: embedding = the vector, embedding_version = the version.
/// - `edit_set_content`: content = the text (the embedding is not touched: the executor pairs it
///   with an `edit_replace_embedding` that embeds the new text).
///
/// Each edit needs only the record capability it writes (`edit_capability`): status; duplicate_of;
/// supersedes; related_notes; related_ids + supersedes + duplicate_of; effective_weight; metadata;
/// none (timestamps: those the record has); embedding + embedding_version; content (writable from
/// `std::string`).
/// Every edit is idempotent: applying it twice equals applying it once.
/// @throws memhealth::error(invalid_argument) for a weight outside [0,1] or NaN, and for an
///         `edit_set_content` with empty content;
///         memhealth::error(precondition) for an `edit_replace_embedding` whose vector is still
///         empty (the executor fills it from the embedder first), and for an edit whose capability
///         `R` lacks (`edit_supported<R, E>` false; `apply_plan` turns it into a failed action).
///         `r` is unchanged when it throws.
/// @complexity O(size of the edit x size of the list it edits).
template <class R>
void apply_edit(R& r, const record_edit_op& op) {
  std::visit(
      [&](const auto& e) {
        using E = std::remove_cvref_t<decltype(e)>;
        if constexpr (edit_supported<R, E>) {
          detail::edits::apply_one(r, e);
        } else {
          throw error(error_code::precondition,
                      std::string("apply_edit: the record type has no writable ") +
                          edit_capability<E> + " for this edit");
        }
      },
      op);
}

/// Applies an edit to a copy of `r` and returns it (see `apply_edit(R&, const record_edit_op&)`).
template <class R>
[[nodiscard]] R applied(R r, const record_edit_op& op) {
  apply_edit(r, op);
  return r;
}

}  // namespace memhealth
