#pragma once
/// @file drill_faults.hpp
/// The faults a drill injects (`fault_kind`, their names and the finding that detects each) and,
/// in `detail::drill`, how one is placed on a record of any type: which record fields each fault
/// writes, the check that a record type can take it, and the injection itself.
///
/// A fault writes only the fields it needs (through `field::raw::F`, like the repairs in
/// apply_edit.hpp). A record type whose mapping for one of them is missing or read-only (a
/// callable returning a const reference) cannot take that fault: the drill injects none of that
/// kind and says which field it lacks (`drill_kind_result::note`), it is not a compile error.
///
/// | fault | fields written (besides the new record's id) |
/// |---|---|
/// | exact_duplicate | id |
/// | paraphrased_duplicate | content, embedding (of the target and the copy; claim cleared when
/// present) | | conflicting_claim | content, claim, embedding (kind, source, times, links, weight
/// when present) | | free_text_conflict | content, embedding (of the target and the copy; claim
/// cleared, the copy's times, links, last access and weight when present) | | dimension_error,
/// nan_vector, zero_padded_vector | embedding | |
/// missing_metadata | metadata (a map with `erase(key)`) | | dangling_link | related_ids (a
/// container with `push_back`) | | scope_leak | scope (links cleared when present) | |
/// mixed_embedding_version | embedding_version | | stale_record | created_at, updated_at
/// (last_accessed_at and the weight when present; kind for a kind that never decays) | |
/// junk_content | content |

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <numbers>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "memhealth/audit/drill_pairs.hpp"
#include "memhealth/config.hpp"
#include "memhealth/detect/vocabulary.hpp"
#include "memhealth/record/memory_record.hpp"
#include "memhealth/record/time.hpp"
#include "memhealth/record/traits.hpp"
#include "memhealth/similarity/lsh.hpp"

namespace memhealth {

/// The anomalies a drill injects (see the table in drill.hpp's file comment).
enum class fault_kind : std::uint8_t {
  exact_duplicate,
  paraphrased_duplicate,
  conflicting_claim,
  dimension_error,
  nan_vector,
  missing_metadata,
  dangling_link,
  scope_leak,
  mixed_embedding_version,
  zero_padded_vector,
  stale_record,
  junk_content,
  free_text_conflict,
};

/// Every fault kind, in declaration order.
inline constexpr std::array<fault_kind, 13> all_fault_kinds{fault_kind::exact_duplicate,
                                                            fault_kind::paraphrased_duplicate,
                                                            fault_kind::conflicting_claim,
                                                            fault_kind::dimension_error,
                                                            fault_kind::nan_vector,
                                                            fault_kind::missing_metadata,
                                                            fault_kind::dangling_link,
                                                            fault_kind::scope_leak,
                                                            fault_kind::mixed_embedding_version,
                                                            fault_kind::zero_padded_vector,
                                                            fault_kind::stale_record,
                                                            fault_kind::junk_content,
                                                            fault_kind::free_text_conflict};

/// Name of a fault kind ("exact_duplicate", ...).
constexpr std::string_view to_string(fault_kind k) noexcept {
  constexpr std::array<std::string_view, 13> names{"exact_duplicate",
                                                   "paraphrased_duplicate",
                                                   "conflicting_claim",
                                                   "dimension_error",
                                                   "nan_vector",
                                                   "missing_metadata",
                                                   "dangling_link",
                                                   "scope_leak",
                                                   "mixed_embedding_version",
                                                   "zero_padded_vector",
                                                   "stale_record",
                                                   "junk_content",
                                                   "free_text_conflict"};
  return names[static_cast<std::size_t>(k)];
}

/// The finding kind that counts as detecting a fault of kind k.
constexpr std::string_view expected_finding(fault_kind k) noexcept {
  constexpr std::array<std::string_view, 13> kinds{finding_kinds::exact_duplicate,
                                                   finding_kinds::near_duplicate,
                                                   finding_kinds::conflict,
                                                   finding_kinds::embedding_dim_mismatch,
                                                   finding_kinds::embedding_non_finite,
                                                   finding_kinds::metadata_schema_violation,
                                                   finding_kinds::dangling_reference,
                                                   finding_kinds::cross_scope_duplicate,
                                                   finding_kinds::mixed_embedding_version,
                                                   finding_kinds::embedding_zero_padded,
                                                   finding_kinds::stale,
                                                   finding_kinds::junk_content,
                                                   finding_kinds::conflict};
  return kinds[static_cast<std::size_t>(k)];
}

namespace detail::drill {

// ---------------------------------------------------------------- random stream and vectors

// splitmix64 stream (Steele, Lea, Flood, "Fast splittable pseudorandom number generators",
// OOPSLA 2014), the one lsh.hpp uses: the same numbers on every platform.
struct rng {
  std::uint64_t state;
  std::uint64_t next() noexcept { return lsh_splitmix64(state); }
  double uniform() noexcept { return uniform_open(state); }  // (0,1)
  std::size_t below(std::size_t n) noexcept { return static_cast<std::size_t>(next() % n); }
  float gaussian() noexcept {  // Box-Muller
    const double u1 = uniform(), u2 = uniform();
    return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) *
                              std::cos(2.0 * std::numbers::pi * u2));
  }
};

inline void normalize(std::vector<float>& v) {
  double s = 0;
  for (float x : v) s += static_cast<double>(x) * x;
  if (s == 0) return;
  const auto inv = static_cast<float>(1.0 / std::sqrt(s));
  for (float& x : v) x *= inv;
}

inline std::vector<float> random_unit(std::size_t d, rng& g) {
  std::vector<float> v(d);
  for (float& x : v) x = g.gaussian();
  normalize(v);
  return v;
}

// ---------------------------------------------------------------- writing fields of any record

// The raw mapping of field F yields a non-const lvalue: the drill can write it.
template <class R, class F>
concept lvalue_field = requires(R& r, F f) {
  f(r);
}
&&std::is_lvalue_reference_v<decltype(std::declval<F>()(std::declval<R&>()))> &&
    !std::is_const_v<std::remove_reference_t<decltype(std::declval<F>()(std::declval<R&>()))>>;

template <class R, class F, class V>
concept settable = lvalue_field<R, F> && requires(R& r, F f, V v) {
  f(r) = v;
};

template <class R, class F>
using raw_t = std::remove_cvref_t<decltype(std::declval<F>()(std::declval<R&>()))>;

// A time field is a timestamp, integer epoch milliseconds or a std::chrono::sys_time, optional
// or not (what detail::as_time reads).
template <class T>
concept time_value = std::is_same_v<T, timestamp> || std::is_integral_v<T> || requires {
  typename T::clock;
  typename T::duration;
  requires std::is_same_v<typename T::clock, std::chrono::system_clock>;
};
template <class T>
concept time_slot = time_value<T> ||(is_optional<T>::value&& time_value<typename T::value_type>);

template <class T>
void assign_time(T& dst, const timestamp& t) {
  if constexpr (is_optional<T>::value) {
    typename T::value_type v{};
    assign_time(v, t);
    dst = v;
  } else if constexpr (std::is_same_v<T, timestamp>) {
    dst = t;
  } else if constexpr (std::is_integral_v<T>) {
    dst = static_cast<T>(t.instant.time_since_epoch().count());
  } else {
    dst = std::chrono::floor<typename T::duration>(t.instant);
  }
}

template <class R, class F>
concept time_field = lvalue_field<R, F> && time_slot<raw_t<R, F>>;

// Sets time field F of r when the type has it and it is writable; returns whether it did.
template <class R, class F>
bool set_time(R& r, F f, const timestamp& t) {
  if constexpr (time_field<R, F>) {
    assign_time(f(r), t);
    return true;
  } else {
    return false;
  }
}

// Clears an optional field (weight, last access) when the type has one; returns whether it did.
template <class R, class F>
bool clear_optional(R& r, F f) {
  if constexpr (lvalue_field<R, F>) {
    if constexpr (is_optional<raw_t<R, F>>::value) {
      f(r).reset();
      return true;
    }
  }
  return false;
}

// Clears a link field (empty string or empty list) when the type has it writable.
template <class R, class F>
void clear_link(R& r, F f) {
  if constexpr (lvalue_field<R, F>) f(r) = raw_t<R, F>{};
}

template <class R>
void clear_links(R& r) {
  clear_link(r, field::raw::duplicate_of);
  clear_link(r, field::raw::related_ids);
  clear_link(r, field::raw::related_notes);
  clear_link(r, field::raw::supersedes);
}

template <class R>
inline constexpr bool writes_id = settable<R, decltype(field::raw::id), std::string>;
template <class R>
inline constexpr bool writes_content = settable<R, decltype(field::raw::content), std::string>;
template <class R>
inline constexpr bool writes_scope = settable<R, decltype(field::raw::scope), std::string>;
template <class R>
inline constexpr bool writes_version =
    settable<R, decltype(field::raw::embedding_version), std::string>;
template <class R>
inline constexpr bool writes_kind = settable<R, decltype(field::raw::kind), std::string>;
template <class R>
inline constexpr bool writes_embedding =
    settable<R, decltype(field::raw::embedding), std::vector<float>>;
template <class R>
inline constexpr bool writes_claim = settable<R, decltype(field::raw::claim), fact_claim>;
template <class R>
inline constexpr bool erases_metadata =
    lvalue_field<R, decltype(field::raw::metadata)>&& requires(R& r, const std::string& k) {
  field::raw::metadata(r).erase(k);
};
template <class R>
inline constexpr bool appends_related =
    lvalue_field<R, decltype(field::raw::related_ids)>&& requires(R& r, std::string s) {
  field::raw::related_ids(r).push_back(s);
};
template <class R>
inline constexpr bool writes_times = time_field<R, decltype(field::raw::created_at)>&&
    time_field<R, decltype(field::raw::updated_at)>;

/// The fields a record type lacks (or cannot write) for fault k, e.g. "claim"; empty when it
/// can take the fault. Duplicating faults also need the id written (the copy's new id).
template <class R>
std::string missing_fields(fault_kind k) {
  std::string out;
  auto need = [&](bool have, std::string_view name) {
    if (have) return;
    if (!out.empty()) out += ", ";
    out += name;
  };
  switch (k) {
    case fault_kind::exact_duplicate:
      need(writes_id<R>, "id");
      break;
    case fault_kind::paraphrased_duplicate:
      need(writes_id<R>, "id");
      need(writes_content<R>, "content");
      need(writes_embedding<R>, "embedding (std::vector<float>)");
      break;
    case fault_kind::conflicting_claim:
      need(writes_id<R>, "id");
      need(writes_content<R>, "content");
      need(writes_claim<R>, "claim (assignable from fact_claim)");
      need(writes_embedding<R>, "embedding (std::vector<float>)");
      need(!kinded_record<R> || writes_kind<R>, "kind");
      break;
    case fault_kind::free_text_conflict:
      need(writes_id<R>, "id");
      need(writes_content<R>, "content");
      need(writes_embedding<R>, "embedding (std::vector<float>)");
      break;
    case fault_kind::dimension_error:
    case fault_kind::nan_vector:
    case fault_kind::zero_padded_vector:
      need(writes_embedding<R>, "embedding (std::vector<float>)");
      break;
    case fault_kind::missing_metadata:
      need(erases_metadata<R>, "metadata (a map with erase(key))");
      break;
    case fault_kind::dangling_link:
      need(appends_related<R>, "related_ids (a list with push_back)");
      break;
    case fault_kind::scope_leak:
      need(writes_id<R>, "id");
      need(writes_scope<R>, "scope");
      break;
    case fault_kind::mixed_embedding_version:
      need(writes_version<R>, "embedding_version");
      break;
    case fault_kind::stale_record:
      need(writes_times<R>, "created_at and updated_at (timestamp, epoch ms or sys_time)");
      break;
    case fault_kind::junk_content:
      need(writes_content<R>, "content");
      break;
  }
  return out;
}

/// What one injection needs from the drill: its random stream, the store's dimension, the
/// sorted distinct scopes, the clock, the stale threshold and curves, a source of new ids, and
/// for the text faults the labelled pair drawn for this injection and the embedder of its text.
template <class NewId, class WeightAt>
struct inject_context {
  rng& g;
  std::size_t d;
  const std::vector<std::string>& scopes;
  std::int64_t now_ms;
  std::string_view required_key;  // the metadata key missing_metadata removes
  std::size_t& serial;            // running number of new ids and junk texts
  NewId new_id;                   // fault_kind -> fresh "drill-..." id
  WeightAt weight_at;             // (record, days back) -> decay weight of its kind's curve
  double stale_threshold;
  // paraphrased_duplicate, free_text_conflict: the pair drawn (a -> target, b -> copy) and the
  // embedder of their text (d floats, the store's way when the drill could reproduce it)
  const drill_text_pair* pair = nullptr;
  std::function<std::vector<float>(std::string_view)> embed{};
};

// Writes text into r's content and its embedding from c.embed; a structured claim, which spoke of
// the old text, is cleared.
template <class R, class Ctx>
void write_text(R& r, const std::string& text, Ctx& c) {
  if constexpr (writes_content<R> && writes_embedding<R>) {
    field::raw::content(r) = text;
    field::raw::embedding(r) = c.embed(text);
    if constexpr (writes_claim<R>) clear_optional(r, field::raw::claim);
  }
}

/// Places fault `kind` on target `t` (a record of the drill's copy). Records it adds go to
/// `added`; returns the ids that carry the fault (see drill_fault::ids). Call only when
/// `missing_fields<R>(kind)` is empty, and for the two text faults with `c.pair` and `c.embed`
/// set.
template <class R, class Ctx>
std::vector<std::string> inject(fault_kind kind, R& t, Ctx& c, std::vector<R>& added) {
  constexpr std::int64_t day_ms = 86'400'000;
  const std::string target_id(field::id(t));
  auto copy_with_new_id = [&] {
    R copy = t;
    if constexpr (writes_id<R>) field::raw::id(copy) = c.new_id(kind);
    return copy;
  };
  // One side of an injected contradiction: an older model-extracted record (side 0) against a
  // newer user-declared one (side 1), unlinked, so the conflict rules decide by time and source.
  [[maybe_unused]] auto add_side = [&](R m, int side, std::vector<std::string>& ids) {
    clear_links(m);
    if constexpr (settable<R, decltype(field::raw::source), std::string>)
      field::raw::source(m) = side == 0 ? "model_extracted" : "user_declared";
    const auto when = timestamp_from_epoch_ms(c.now_ms - (side == 0 ? 10 : 1) * day_ms);
    set_time(m, field::raw::updated_at, when);
    set_time(m, field::raw::created_at, when);
    clear_optional(m, field::raw::last_accessed_at);
    clear_optional(m, field::raw::effective_weight);
    ids.emplace_back(field::id(m));
    added.push_back(std::move(m));
  };
  switch (kind) {
    case fault_kind::exact_duplicate: {
      R copy = copy_with_new_id();
      std::vector<std::string> ids{std::string(field::id(copy)), target_id};
      added.push_back(std::move(copy));
      return ids;
    }
    case fault_kind::paraphrased_duplicate:
      if constexpr (writes_content<R> && writes_embedding<R>) {
        // a real paraphrase pair: the target says a, a copy of it (same scope, kind, source,
        // times, metadata) says b, each embedded from its text
        write_text(t, c.pair->a, c);
        R copy = copy_with_new_id();
        write_text(copy, c.pair->b, c);
        std::vector<std::string> ids{std::string(field::id(copy)), target_id};
        added.push_back(std::move(copy));
        return ids;
      }
      break;
    case fault_kind::conflicting_claim:
      if constexpr (writes_content<R> && writes_claim<R> && writes_embedding<R>) {
        const std::string entity = "drill item " + std::to_string(c.serial);
        std::vector<std::string> ids;
        for (int side = 0; side < 2; ++side) {
          R m = copy_with_new_id();
          const std::string value = side == 0 ? "box " + std::to_string(12 + c.serial)
                                              : "shelf " + std::to_string(40 + c.serial);
          field::raw::content(m) = "The " + entity + " is kept in the " + value;
          if constexpr (writes_kind<R>) field::raw::kind(m) = std::string(kinds::fact);
          field::raw::claim(m) = fact_claim{entity, "location", value};
          field::raw::embedding(m) = random_unit(c.d, c.g);
          add_side(std::move(m), side, ids);
        }
        return ids;
      }
      break;
    case fault_kind::free_text_conflict:
      if constexpr (writes_content<R> && writes_embedding<R>) {
        // a real contradiction pair: the target says a, a copy of it in its scope says b, written
        // a day before the drill's clock (newer than the target, so the newer-wins rule can
        // decide), unlinked; each embedded from its text
        write_text(t, c.pair->a, c);
        R copy = copy_with_new_id();
        write_text(copy, c.pair->b, c);
        clear_links(copy);
        const auto when = timestamp_from_epoch_ms(c.now_ms - day_ms);
        set_time(copy, field::raw::updated_at, when);
        set_time(copy, field::raw::created_at, when);
        clear_optional(copy, field::raw::last_accessed_at);
        clear_optional(copy, field::raw::effective_weight);
        std::vector<std::string> ids{target_id, std::string(field::id(copy))};
        added.push_back(std::move(copy));
        return ids;
      }
      break;
    case fault_kind::dimension_error:
      if constexpr (writes_embedding<R>) {
        const auto e = field::embedding(t);
        field::raw::embedding(t) =
            std::vector<float>(e.begin(), e.begin() + static_cast<std::ptrdiff_t>(c.d / 2));
      }
      break;
    case fault_kind::nan_vector:
      if constexpr (writes_embedding<R>) {
        const auto e = field::embedding(t);
        std::vector<float> v(e.begin(), e.end());
        v[c.d / 3] = std::numeric_limits<float>::quiet_NaN();
        field::raw::embedding(t) = std::move(v);
      }
      break;
    case fault_kind::missing_metadata:
      if constexpr (erases_metadata<R>) field::raw::metadata(t).erase(std::string(c.required_key));
      break;
    case fault_kind::dangling_link:
      if constexpr (appends_related<R>)
        field::raw::related_ids(t).push_back(c.new_id(kind) + "-missing");
      break;
    case fault_kind::scope_leak:
      if constexpr (writes_scope<R>) {
        R copy = copy_with_new_id();
        const std::string scope(field::scope(t));
        auto other = std::upper_bound(c.scopes.begin(), c.scopes.end(), scope);
        field::raw::scope(copy) = other != c.scopes.end()     ? *other
                                  : c.scopes.front() != scope ? c.scopes.front()
                                                              : std::string("drill:other-tenant");
        clear_links(copy);
        std::vector<std::string> ids{std::string(field::id(copy))};
        added.push_back(std::move(copy));
        return ids;
      }
      break;
    case fault_kind::mixed_embedding_version:
      if constexpr (writes_version<R>) {
        const std::string v(field::embedding_version(t));
        field::raw::embedding_version(t) =
            (v.empty() ? std::string("unversioned") : v) + "-drill-other-model";
      }
      break;
    case fault_kind::zero_padded_vector:
      if constexpr (writes_embedding<R>) {
        const std::size_t head = std::max<std::size_t>(2, c.d / 4);
        auto v = random_unit(std::min(head, c.d), c.g);
        v.resize(c.d, 0.0f);
        field::raw::embedding(t) = std::move(v);
      }
      break;
    case fault_kind::stale_record:
      if constexpr (writes_times<R>) {
        // Aged under its own kind's curve: changing the kind (say to episodic) would also make
        // the conflict judge's state-vs-event rule pair it with its untouched neighbours.
        std::int64_t back = 200;
        while (back < 40'000 && !(c.weight_at(t, back) < c.stale_threshold / 2)) back *= 2;
        if (!(c.weight_at(t, back) < c.stale_threshold / 2)) {  // a kind that never decays
          if constexpr (writes_kind<R>) field::raw::kind(t) = std::string(kinds::episodic);
          back = 200;
        }
        const auto when = timestamp_from_epoch_ms(c.now_ms - back * day_ms);
        set_time(t, field::raw::created_at, when);
        set_time(t, field::raw::updated_at, when);
        set_time(t, field::raw::last_accessed_at, when);
        clear_optional(t, field::raw::effective_weight);
      }
      break;
    case fault_kind::junk_content:
      if constexpr (writes_content<R>)
        field::raw::content(t) = "lorem ipsum dolor sit amet " + std::to_string(c.serial++);
      break;
  }
  return {target_id};
}

}  // namespace detail::drill

}  // namespace memhealth
