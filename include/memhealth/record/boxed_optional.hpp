#pragma once
/// @file boxed_optional.hpp
/// `memhealth::boxed_optional<T>`: an optional value kept on the heap, for record fields that
/// are large and usually absent.
///
/// A `std::optional<T>` holds room for a T inline whether or not it has a value; in a record that
/// a store keeps a million of, a 112-byte `claim` that few records carry costs 112 MB. This type
/// holds one pointer (8 bytes) and allocates the T only when a value is set. It has value
/// semantics (copies copy the value) and the subset of `std::optional`'s interface that code uses
/// on record fields: `has_value`, `operator bool`, `*`, `->`, `value` (throws
/// `std::bad_optional_access` when empty), `value_or`, `emplace`, `reset`, assignment from a T,
/// from anything a T is constructible from, from a `std::optional<T>` and from `std::nullopt`,
/// and equality (two empty values are equal; an empty one equals `std::nullopt`).
/// Allocation failures throw `std::bad_alloc`; moves never allocate or throw.

#include <concepts>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

namespace memhealth {

/// An optional T stored out of line: sizeof is one pointer; the T is allocated when set.
/// @tparam T a copyable value type.
template <class T>
class boxed_optional {
  template <class U>
  static constexpr bool value_like =
      !std::is_same_v<std::remove_cvref_t<U>, boxed_optional> &&
      !std::is_same_v<std::remove_cvref_t<U>, std::nullopt_t> &&
      !std::is_same_v<std::remove_cvref_t<U>, std::optional<T>> && std::is_constructible_v<T, U&&>;

 public:
  using value_type = T;  ///< the held type

  /// Empty.
  constexpr boxed_optional() noexcept = default;
  /// Empty.
  constexpr boxed_optional(std::nullopt_t) noexcept {}  // NOLINT(google-explicit-constructor)
  /// Holds a T made from `v` (implicit, like `std::optional`'s converting constructor).
  template <class U = T>
  requires value_like<U> boxed_optional(U&& v)  // NOLINT(google-explicit-constructor)
      : p_(std::make_unique<T>(std::forward<U>(v))) {}
  /// Holds a copy of `o`'s value, if any.
  boxed_optional(const std::optional<T>& o)  // NOLINT(google-explicit-constructor)
      : p_(o ? std::make_unique<T>(*o) : nullptr) {}
  /// Holds `o`'s value (moved), if any.
  boxed_optional(std::optional<T>&& o)  // NOLINT(google-explicit-constructor)
      : p_(o ? std::make_unique<T>(std::move(*o)) : nullptr) {}
  /// Deep copy.
  boxed_optional(const boxed_optional& o) : p_(o.p_ ? std::make_unique<T>(*o.p_) : nullptr) {}
  /// Takes `o`'s value; `o` is left empty.
  boxed_optional(boxed_optional&&) noexcept = default;
  /// Frees the value.
  ~boxed_optional() = default;

  /// Deep copy (reuses this value's storage when both hold one).
  boxed_optional& operator=(const boxed_optional& o) {
    if (this == &o) return *this;
    if (!o.p_)
      p_.reset();
    else if (p_)
      *p_ = *o.p_;
    else
      p_ = std::make_unique<T>(*o.p_);
    return *this;
  }
  /// Takes `o`'s value; `o` is left empty.
  boxed_optional& operator=(boxed_optional&&) noexcept = default;
  /// Empties.
  boxed_optional& operator=(std::nullopt_t) noexcept {
    p_.reset();
    return *this;
  }
  /// Sets the value from `v`.
  template <class U = T>
  requires value_like<U> boxed_optional& operator=(U&& v) {
    if (p_)
      *p_ = std::forward<U>(v);
    else
      p_ = std::make_unique<T>(std::forward<U>(v));
    return *this;
  }
  /// Sets the value from `o` (empties when `o` is empty).
  boxed_optional& operator=(std::optional<T> o) {
    if (!o)
      p_.reset();
    else
      *this = std::move(*o);
    return *this;
  }

  /// Constructs the value in place from `args` (replacing any value). @return the new value.
  template <class... Args>
  T& emplace(Args&&... args) {
    p_ = std::make_unique<T>(std::forward<Args>(args)...);
    return *p_;
  }
  /// Empties.
  void reset() noexcept { p_.reset(); }

  /// True when a value is held.
  [[nodiscard]] bool has_value() const noexcept { return p_ != nullptr; }
  /// True when a value is held.
  explicit operator bool() const noexcept { return p_ != nullptr; }

  /// The value (undefined when empty, as for `std::optional`).
  T& operator*() & noexcept { return *p_; }
  /// The value (undefined when empty).
  const T& operator*() const& noexcept { return *p_; }
  /// Pointer to the value; null when empty.
  T* operator->() noexcept { return p_.get(); }
  /// Pointer to the value; null when empty.
  const T* operator->() const noexcept { return p_.get(); }

  /// The value. @throws std::bad_optional_access when empty.
  T& value() & {
    if (!p_) throw std::bad_optional_access();
    return *p_;
  }
  /// The value. @throws std::bad_optional_access when empty.
  [[nodiscard]] const T& value() const& {
    if (!p_) throw std::bad_optional_access();
    return *p_;
  }
  /// The value, or `fallback` converted to T when empty.
  template <class U>
  [[nodiscard]] T value_or(U&& fallback) const {
    return p_ ? *p_ : static_cast<T>(std::forward<U>(fallback));
  }

  /// Equal when both are empty or both hold equal values.
  friend bool operator==(const boxed_optional& a, const boxed_optional& b) {
    if (!a.p_ || !b.p_) return !a.p_ && !b.p_;
    return *a.p_ == *b.p_;
  }
  /// True when empty.
  friend bool operator==(const boxed_optional& a, std::nullopt_t) noexcept { return !a.p_; }

 private:
  std::unique_ptr<T> p_;
};

}  // namespace memhealth
