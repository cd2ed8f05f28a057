#pragma once
/// @file traits.hpp
/// Customization points: how memhealth reads (and, for repairs, writes) the fields of any record
/// type, and the capability concepts components ask for.
///
/// ## Lookup order
/// For a record type `R` and a field `F` (one of `id`, `content`, `embedding`,
/// `embedding_version`, `metadata`, `created_at`, `updated_at`, `last_accessed_at`, `source`,
/// `scope`, `status`, `kind`, `claim`, `duplicate_of`, `related_ids`, `related_notes`,
/// `supersedes`, `confidence`, `effective_weight`), `memhealth::field::F(r)` looks, in order:
/// 1. for an entry `record_traits<R>::F`: a member pointer or a callable, called as
///    `std::invoke(record_traits<R>::F, r)`;
/// 2. for a data member `r.F`;
/// 3. for a free function `memhealth_F(r)` found by argument-dependent lookup (in `R`'s namespace).
/// The first that exists wins, per field, so a traits specialisation may rename only some fields.
///
/// ## What each field yields (normalised)
/// | field | type | accepted sources |
/// |---|---|---|
/// | id, content, embedding_version, source, scope, status, kind, duplicate_of | `std::string_view`
/// | anything convertible to `std::string_view`, or an enum with an ADL `to_string` | | embedding |
/// `std::span<const float>` (d floats; empty = missing) | `std::vector<float>`, `std::array`,
/// `std::span` | | created_at, updated_at, last_accessed_at | `std::optional<timestamp>` |
/// `timestamp`, `std::chrono::sys_time<D>`, integer epoch ms, or `std::optional` of those | |
/// confidence, effective_weight | `std::optional<double>` | arithmetic or `std::optional` of it |
/// | related_ids, related_notes, supersedes | `std::span<const std::string>` | contiguous ranges of
/// `std::string` | | claim | `const claim*` (null = none) | an lvalue `claim`,
/// `std::optional<claim>` or `boxed_optional<claim>` |
///
/// Accessors return views into the record, so a mapping must yield an lvalue (or a view into
/// storage that outlives the call). A callable returning `std::string`, `std::vector<float>` or
/// `std::vector<std::string>` by value is refused at compile time with a message: store a
/// computed field (e.g. a scope built from tenant + user) as a member of your record.
/// | metadata | the lvalue as is (`metadata_map&` for the default) | an lvalue map of string ->
/// `metadata_value` |
///
/// ## Writing (repairs only)
/// `memhealth::field::raw::F(r)` yields the un-normalised source. A field is *writable* when that
/// is a non-const lvalue of an assignable type; `repairable_record<R>` lists what repairs write.
///
/// The design follows {fmt}'s formatter customisation and EnTT's `component_traits`.

#include <array>
#include <concepts>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "memhealth/record/memory_record.hpp"
#include "memhealth/record/time.hpp"

namespace memhealth {

/// Specialise for your record type to map fields whose names differ from memhealth's. Each entry
/// is a member pointer or a callable taking the record (see the lookup order above). The primary
/// template is empty: unspecialised types fall through to members and ADL.
/// @code
/// template <> struct memhealth::record_traits<my_note> {
///   static constexpr auto id = &my_note::key;
///   static constexpr auto content = &my_note::text;
///   static constexpr auto updated_at = [](const my_note& n) { return n.modified; };
/// };
/// @endcode
template <class R>
struct record_traits {};

namespace detail {

template <class T>
constexpr decltype(auto) pass_through(T&& x) noexcept {
  return std::forward<T>(x);
}

template <class T>
concept has_adl_to_string = requires(const T& v) {
  { to_string(v) } -> std::convertible_to<std::string_view>;
};

template <class T>
constexpr std::string_view as_text(const T& v) noexcept {
  if constexpr (std::is_convertible_v<const T&, std::string_view>) {
    return std::string_view(v);
  } else {
    static_assert(has_adl_to_string<T>,
                  "memhealth: a text field (id, content, source, scope, status, kind, ...) must "
                  "yield something convertible to std::string_view, or an enum with an ADL "
                  "to_string(e) returning one.");
    return std::string_view(to_string(v));
  }
}

// A text mapping must not yield a std::string by value: every accessor returns a view, and a
// view of a temporary would dangle. Deleted with a message (C++20 has no `= delete("...")`).
template <class T>
requires std::is_same_v<T, std::string> std::string_view as_text(T&& v) {
  static_assert(
      !std::is_same_v<T, T>,
      "memhealth: a text field mapping (id, content, scope, status, ...) returned a "
      "std::string by value. Accessors return std::string_view, which would dangle. Map a "
      "data member (member pointer), or a callable returning a reference or a "
      "std::string_view into storage that outlives the call.");
  return v;
}

template <class T>
constexpr std::span<const float> as_floats(const T& v) noexcept {
  static_assert(std::is_convertible_v<const T&, std::span<const float>>,
                "memhealth: the embedding field must yield a contiguous range of float "
                "(std::vector<float>, std::array<float,N>, std::span<const float>). Vectors of "
                "double are not converted silently: store float32.");
  return std::span<const float>(v);
}

// Same rule for vectors: a by-value std::vector<float> would leave the span dangling.
template <class T>
requires std::is_same_v<T, std::vector<float>> std::span<const float> as_floats(T&& v) {
  static_assert(!std::is_same_v<T, T>,
                "memhealth: the embedding mapping returned a std::vector<float> by value; the "
                "accessor returns std::span<const float>, which would dangle. Map a data member or "
                "a callable returning a reference.");
  return v;
}

template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};

template <class T>
constexpr std::optional<timestamp> as_time(const T& v) noexcept {
  if constexpr (is_optional<T>::value) {
    if (!v) return std::nullopt;
    return as_time(*v);
  } else if constexpr (std::is_same_v<T, timestamp>) {
    return v;
  } else if constexpr (std::is_integral_v<T>) {
    return timestamp_from_epoch_ms(static_cast<std::int64_t>(v));
  } else {
    return make_timestamp(v);  // any std::chrono::sys_time<D>
  }
}

template <class T>
constexpr std::optional<double> as_number(const T& v) noexcept {
  if constexpr (is_optional<T>::value) {
    if (!v) return std::nullopt;
    return static_cast<double>(*v);
  } else {
    static_assert(std::is_arithmetic_v<T>,
                  "memhealth: confidence / effective_weight must be arithmetic");
    return static_cast<double>(v);
  }
}

template <class T>
constexpr std::span<const std::string> as_strings(const T& v) noexcept {
  return std::span<const std::string>(v);
}

template <class T>
requires std::is_same_v<T, std::vector<std::string>> std::span<const std::string> as_strings(
    T&& v) {
  static_assert(!std::is_same_v<T, T>,
                "memhealth: a link mapping returned a std::vector<std::string> by value; the "
                "accessor returns a span, which would dangle. Map a data member or a callable "
                "returning a reference.");
  return v;
}

inline const claim* as_claim(const claim& c) noexcept {
  return &c;
}
const claim* as_claim(claim&&) = delete;  // the claim mapping must yield an lvalue
const claim* as_claim(std::optional<claim>&&) = delete;
inline const claim* as_claim(const std::optional<claim>& c) noexcept {
  return c ? &*c : nullptr;
}
const claim* as_claim(boxed_optional<claim>&&) = delete;
inline const claim* as_claim(const boxed_optional<claim>& c) noexcept {
  return c ? &*c : nullptr;
}

}  // namespace detail

/// Generates, for one field NAME: the three lookup concepts, a raw accessor
/// (`field::raw::NAME`) and a normalised accessor (`field::NAME`). NORMALIZE is a function
/// applied to the raw value.
#define MEMHEALTH_DETAIL_DEFINE_FIELD(NAME, NORMALIZE)                                         \
  namespace detail::field_##NAME {                                                             \
    void memhealth_##NAME() = delete; /* poison pill: ADL only */                              \
    template <class R>                                                                         \
    concept by_traits = requires {                                                             \
      record_traits<std::remove_cvref_t<R>>::NAME;                                             \
    };                                                                                         \
    template <class R>                                                                         \
    concept by_member = requires(R & r) {                                                      \
      r.NAME;                                                                                  \
    };                                                                                         \
    template <class R>                                                                         \
    concept by_adl = requires(R & r) {                                                         \
      memhealth_##NAME(r);                                                                     \
    };                                                                                         \
    template <class R>                                                                         \
    concept available = by_traits<R> || by_member<R> || by_adl<R>;                             \
    struct raw_fn {                                                                            \
      template <class R>                                                                       \
      requires available<R>                                                                    \
      constexpr decltype(auto) operator()(R& r) const {                                        \
        if constexpr (by_traits<R>)                                                            \
          return std::invoke(record_traits<std::remove_cvref_t<R>>::NAME, r);                  \
        else if constexpr (by_member<R>)                                                       \
          return (r.NAME);                                                                     \
        else                                                                                   \
          return memhealth_##NAME(r);                                                          \
      }                                                                                        \
    };                                                                                         \
    struct fn {                                                                                \
      template <class R>                                                                       \
      requires available<const R>                                                              \
      constexpr decltype(auto) operator()(const R& r) const { return NORMALIZE(raw_fn{}(r)); } \
    };                                                                                         \
  }                                                                                            \
  namespace field {                                                                            \
  namespace raw {                                                                              \
  inline constexpr detail::field_##NAME::raw_fn NAME{};                                        \
  }                                                                                            \
  inline constexpr detail::field_##NAME::fn NAME{};                                            \
  }

/// Field accessors. `field::F(r)` reads field F of any record (normalised, see the table above);
/// `field::raw::F(r)` yields the mapped source itself (used by repairs to write).
MEMHEALTH_DETAIL_DEFINE_FIELD(id, detail::as_text)
MEMHEALTH_DETAIL_DEFINE_FIELD(content, detail::as_text)
MEMHEALTH_DETAIL_DEFINE_FIELD(embedding, detail::as_floats)
MEMHEALTH_DETAIL_DEFINE_FIELD(embedding_version, detail::as_text)
MEMHEALTH_DETAIL_DEFINE_FIELD(metadata, detail::pass_through)
MEMHEALTH_DETAIL_DEFINE_FIELD(created_at, detail::as_time)
MEMHEALTH_DETAIL_DEFINE_FIELD(updated_at, detail::as_time)
MEMHEALTH_DETAIL_DEFINE_FIELD(last_accessed_at, detail::as_time)
MEMHEALTH_DETAIL_DEFINE_FIELD(source, detail::as_text)
MEMHEALTH_DETAIL_DEFINE_FIELD(scope, detail::as_text)
MEMHEALTH_DETAIL_DEFINE_FIELD(status, detail::as_text)
MEMHEALTH_DETAIL_DEFINE_FIELD(kind, detail::as_text)
MEMHEALTH_DETAIL_DEFINE_FIELD(claim, detail::as_claim)
MEMHEALTH_DETAIL_DEFINE_FIELD(duplicate_of, detail::as_text)
MEMHEALTH_DETAIL_DEFINE_FIELD(related_ids, detail::as_strings)
MEMHEALTH_DETAIL_DEFINE_FIELD(related_notes, detail::as_strings)
MEMHEALTH_DETAIL_DEFINE_FIELD(supersedes, detail::as_strings)
MEMHEALTH_DETAIL_DEFINE_FIELD(confidence, detail::as_number)
MEMHEALTH_DETAIL_DEFINE_FIELD(effective_weight, detail::as_number)

#undef MEMHEALTH_DETAIL_DEFINE_FIELD

/// `memory_record` keeps its links in one struct; map the four link fields onto it.
template <>
struct record_traits<memory_record> {
  static constexpr auto duplicate_of = [](auto& r) -> auto& { return r.links.duplicate_of; };
  static constexpr auto related_ids = [](auto& r) -> auto& { return r.links.related_ids; };
  static constexpr auto related_notes = [](auto& r) -> auto& { return r.links.related_notes; };
  static constexpr auto supersedes = [](auto& r) -> auto& { return r.links.supersedes; };
};

// ---------------------------------------------------------------- capability concepts

/// Every record: an id and text content. Required by everything in memhealth.
template <class R>
concept basic_record =
    detail::field_id::available<const R> && detail::field_content::available<const R>;

/// Has an embedding (`field::embedding`). Needed by embedding checks, near duplicates, drift.
template <class R>
concept embedded_record = basic_record<R> && detail::field_embedding::available<const R>;

/// Has an embedding and the version of the model that made it. Needed by version-mixing checks.
template <class R>
concept versioned_embedding_record =
    embedded_record<R> && detail::field_embedding_version::available<const R>;

/// Has `created_at` and `updated_at`. Needed by timestamp checks, recency rules, decay.
template <class R>
concept timestamped_record = basic_record<R> && detail::field_created_at::available<const R> &&
    detail::field_updated_at::available<const R>;

/// Has `last_accessed_at`. Used by decay curves when present.
template <class R>
concept accessed_record = basic_record<R> && detail::field_last_accessed_at::available<const R>;

/// Has a scope. Needed by duplicates (never across scopes), conflicts, scope checks, merges.
template <class R>
concept scoped_record = basic_record<R> && detail::field_scope::available<const R>;

/// Has a source. Needed by the missing-source check and the source-credibility conflict rule.
template <class R>
concept sourced_record = basic_record<R> && detail::field_source::available<const R>;

/// Has a status. Needed by the illegal-status check, conflicts (active only) and repairs.
template <class R>
concept status_record = basic_record<R> && detail::field_status::available<const R>;

/// Has a kind. Needed by per-kind decay curves and state-versus-event conflict handling.
template <class R>
concept kinded_record = basic_record<R> && detail::field_kind::available<const R>;

/// Has a structured claim. Needed by claim-based conflict detection.
template <class R>
concept claimed_record = basic_record<R> && detail::field_claim::available<const R>;

/// Has links (duplicate_of, related_ids, supersedes). Needed by reference checks.
template <class R>
concept linked_record = basic_record<R> && detail::field_duplicate_of::available<const R> &&
    detail::field_related_ids::available<const R> && detail::field_supersedes::available<const R>;

/// Has metadata. Needed by the metadata-schema check and the information score.
template <class R>
concept metadata_record = basic_record<R> && detail::field_metadata::available<const R>;

/// Has an effective weight. Needed by staleness repairs.
template <class R>
concept weighted_record = basic_record<R> && detail::field_effective_weight::available<const R>;

/// Has a confidence.
template <class R>
concept confidence_record = basic_record<R> && detail::field_confidence::available<const R>;

namespace detail {
template <class R, class F, class V>
concept writable_with = requires(R& r, F f, V v) {
  f(r) = v;
};
}  // namespace detail

/// The fields repairs write are mapped to assignable lvalues: status (from std::string), the four
/// links, effective_weight (from double). Needed by the in-memory store's mutations.
template <class R>
concept repairable_record = status_record<R> && linked_record<R> && weighted_record<R> &&
    detail::writable_with<R, decltype(field::raw::status), std::string> &&
    detail::writable_with<R, decltype(field::raw::duplicate_of), std::string> &&
    detail::writable_with<R, decltype(field::raw::effective_weight), double>;

}  // namespace memhealth

/// Gate for a component's entry point: if R lacks CONCEPT, fails with one readable message naming
/// the capability, the component and how to provide the field. Use inside a function template.
#define MEMHEALTH_REQUIRE_CAPABILITY(CONCEPT, R, COMPONENT, FIELDS)                                \
  static_assert(::memhealth::CONCEPT<R>,                                                           \
                "memhealth: " COMPONENT " needs the record capability '" #CONCEPT                  \
                "' (field(s) " FIELDS                                                              \
                "), which this record type does not provide. Provide it by specialising "          \
                "memhealth::record_traits<R> with a member pointer or callable for the field, by " \
                "adding a data member of that name, or by an ADL function memhealth_<field>(r).")
