#pragma once
/// @file store.hpp
/// The store policy: what memhealth needs from a backend that holds records.
///
/// A store is a random-access sequence of records (index 0..size()-1, stable between mutations),
/// with lookup by id and the embeddings of its records. Detection only reads (`record_store`);
/// repairs also need `mutable_record_store`: a copy of a whole record (`extract`) and writing a
/// whole record back (`restore`, which returns the record it replaced), so the write-ahead log
/// can undo every change exactly.
///
/// Backends: `memory_store` (in memory, Boost.Container), and adapters users write for their
/// own stores (satisfy these concepts; see README "Plug in your own store").

#include <concepts>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "memhealth/record/memory_record.hpp"
#include "memhealth/record/traits.hpp"

namespace memhealth {

/// Read access to a store of records.
/// - `S::record_type`: the record type (a `basic_record`).
/// - `s.size()`: number of records, duplicates and malformed records included.
/// - `s.record(i)`: the record at index i in [0, size()).
/// - `s.embedding(i)`: its embedding as d floats (empty span = missing).
/// - `s.find(id)`: index of the first record with that id, or nullopt.
/// - `s.dimension()`: the embedding dimension the store's index expects (0 = unknown).
template <class S>
concept record_store = requires(const S& s, std::size_t i, std::string_view id) {
  typename S::record_type;
  requires basic_record<typename S::record_type>;
  { s.size() } -> std::convertible_to<std::size_t>;
  { s.record(i) } -> std::convertible_to<const typename S::record_type&>;
  { s.embedding(i) } -> std::convertible_to<std::span<const float>>;
  { s.find(id) } -> std::same_as<std::optional<std::size_t>>;
  { s.dimension() } -> std::convertible_to<std::size_t>;
};

/// A store repairs can change: exactly the two operations the repair executor (`apply_plan`,
/// `rollback`, `recover`, repair/executor.hpp) calls.
/// - `s.extract(i)`: a complete copy of the record at index i (its before-image, embedding
///   included);
/// - `s.restore(i, image)`: replaces the record at index i by `image` (a whole record: the
///   executor computes after-images with `apply_edit` on copies and writes them with `restore`;
///   rollback writes before-images the same way) and returns the record it replaced.
/// Neither deletes or adds a record. Out-of-range indices throw `memhealth::error`
/// (`error_code::not_found`).
template <class S>
concept mutable_record_store = record_store<S> &&
    requires(S& s, std::size_t i, const typename S::record_type& image) {
  { s.extract(i) } -> std::same_as<typename S::record_type>;
  { s.restore(i, image) } -> std::same_as<typename S::record_type>;
};

/// Whether record i of `store` has a vector: `store.vector_length(i) > 0` when the store offers
/// `vector_length` (a store that holds the vectors' element counts without the vectors, such as
/// a `pg_store` opened with `pg_store_options::vectors` false), else `!store.embedding(i).empty()`.
/// Detectors and the planner ask this, never `embedding(i)`, when only presence matters.
template <record_store S>
[[nodiscard]] bool has_vector(const S& store, std::size_t i) {
  if constexpr (requires {
                  { store.vector_length(i) } -> std::convertible_to<std::size_t>;
                })
    return store.vector_length(i) > 0;
  else
    return !store.embedding(i).empty();
}

/// Optional capability of a `mutable_record_store`: grouping mutations into one atomic action.
/// - `s.begin_action()`: the following mutations form one action (throws when one is open);
/// - `s.commit_action()`: they become durable together;
/// - `s.rollback_action()`: none of them stays (never throws; a no-op without an open action).
/// `apply_plan`, `rollback` and `recover` detect it with `if constexpr` and bracket each repair
/// action's record writes with it (begin after the action's log intent is durable, commit before
/// its commit frame, rollback on an exception), so a crash leaves every action all or nothing in
/// the store itself. Stores without it (`memory_store`) are written record by record.
/// A store may also offer `bool s.in_action()` (true between begin and commit/rollback): when a
/// write fails inside an open action, `apply_plan` then drops the action whole instead of writing
/// before-images back (which would overwrite what a concurrent writer stored; see `sqlite_store`).
/// Implemented by `sqlite_store` (one SQLite transaction per action).
template <class S>
concept transactional_record_store = mutable_record_store<S> && requires(S& s) {
  s.begin_action();
  s.commit_action();
  s.rollback_action();
};

/// Optional capability of a `transactional_record_store` shared with other writers:
/// - `s.verify_unchanged(i)`: inside the open action, checks (and holds, until the action ends)
///   that record i is still what the store read, without writing it; throws error(busy) when
///   another writer changed or removed it (the action's rollback then reads it again).
/// `apply_plan` calls it for every record an action names but does not write (a merge's
/// primary, a conflict's winner left as it is), so an action never commits over records that
/// changed after the store was read; the retry then finds the action stale.
/// Implemented by `sqlite_store` and `pg_store`.
template <class S>
concept verifiable_record_store = transactional_record_store<S> && requires(S& s, std::size_t i) {
  s.verify_unchanged(i);
};

/// Optional capability: a key of the store's own for each record (SQLite's rowid, a primary key),
/// stable while the record exists and independent of its position.
/// - `s.store_key(i)`: the key of the record at index i, as text (empty = none).
/// `apply_plan` writes it beside the record id in every image of the write-ahead log, and
/// `rollback` and `recover` prefer the record with that key when several carry the same id; the
/// id stays the identity (a record is never restored onto one with another id).
template <class S>
concept keyed_record_store = record_store<S> && requires(const S& s, std::size_t i) {
  { s.store_key(i) } -> std::convertible_to<std::string>;
};

/// Optional capability: the store keeps its embeddings in one contiguous row-major float32 block
/// that stays where it is while the store is not mutated (`memory_store` does; `sqlite_store`,
/// whose embeddings live in evicted read blocks, does not).
/// - `s.matrix()`: the block, an object with `data()` (const float*), `rows()` and `cols()`; row
///   r is at `data() + r * cols()` (e.g. an `Eigen::Map` of a row-major matrix).
/// The detection context (detect/pipeline.hpp) detects it with `if constexpr` and reads the
/// block in place instead of copying it into a unit-normalised matrix when the usable embeddings
/// (length d, finite, non-zero) are consecutive rows of it in record order (checked through
/// `s.embedding(i).data()`) and all already unit length (see
/// `detection_context::unit_norm_tolerance`).
template <class S>
concept contiguous_embedding_store = record_store<S> && requires(const S& s) {
  { s.matrix().data() } -> std::convertible_to<const float*>;
  { s.matrix().rows() } -> std::convertible_to<std::ptrdiff_t>;
  { s.matrix().cols() } -> std::convertible_to<std::ptrdiff_t>;
};

}  // namespace memhealth
