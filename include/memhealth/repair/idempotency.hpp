#pragma once
/// @file idempotency.hpp
/// The idempotency key of a repair action: a stable hash of what the action does, so that an
/// action already applied is recognised (executor.hpp) and a plan made twice has the same keys.

#include <bit>
#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "memhealth/record/memory_record.hpp"
#include "memhealth/repair/action.hpp"

namespace memhealth {

// ---------------------------------------------------------------- idempotency keys

/// FNV-1a 64-bit hash of bytes, continuing from `h` (Fowler-Noll-Vo; offset basis
/// 0xcbf29ce484222325, prime 0x100000001b3). Stable across platforms and runs.
constexpr std::uint64_t fnv1a_64(std::string_view bytes,
                                 std::uint64_t h = 0xcbf29ce484222325ULL) noexcept {
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

namespace detail {

inline void put_field(std::string& out, std::string_view s) {
  out += std::to_string(s.size());
  out += ':';
  out += s;
}

inline std::string hex64(std::uint64_t v) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) s[static_cast<std::size_t>(i)] = digits[v & 0xF];
  return s;
}

inline void put_metadata_value(std::string& out, const metadata_value& v) {
  out += metadata_type_name(v);
  out += '=';
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
        } else if constexpr (std::is_same_v<T, bool>) {
          out += x ? "true" : "false";
        } else if constexpr (std::is_same_v<T, std::int64_t>) {
          out += std::to_string(x);
        } else if constexpr (std::is_same_v<T, double>) {
          out += hex64(std::bit_cast<std::uint64_t>(x));
        } else if constexpr (std::is_same_v<T, std::string>) {
          put_field(out, x);
        } else {
          put_field(out, x.text);
        }
      },
      v);
}

/// Canonical, unambiguous text of one edit (length-prefixed strings, floats by bit pattern).
inline void put_edit(std::string& out, const record_edit& e) {
  put_field(out, e.record_id);
  std::visit(
      [&](const auto& op) {
        using T = std::decay_t<decltype(op)>;
        auto ids = [&](const std::vector<std::string>& v) {
          out += std::to_string(v.size());
          for (const auto& s : v) put_field(out, s);
        };
        if constexpr (std::is_same_v<T, edit_set_status>) {
          out += "S";
          put_field(out, op.status);
        } else if constexpr (std::is_same_v<T, edit_set_duplicate_of>) {
          out += "D";
          put_field(out, op.primary_id);
        } else if constexpr (std::is_same_v<T, edit_add_supersedes>) {
          out += "P";
          ids(op.ids);
        } else if constexpr (std::is_same_v<T, edit_append_notes>) {
          out += "N";
          ids(op.notes);
        } else if constexpr (std::is_same_v<T, edit_drop_links>) {
          out += "L";
          ids(op.ids);
        } else if constexpr (std::is_same_v<T, edit_set_weight>) {
          out += "W";
          out += hex64(std::bit_cast<std::uint64_t>(op.weight));
        } else if constexpr (std::is_same_v<T, edit_fill_metadata>) {
          out += "M";
          put_field(out, op.key);
          put_metadata_value(out, op.value);
        } else if constexpr (std::is_same_v<T, edit_normalize_timestamps>) {
          out += "T";
        } else if constexpr (std::is_same_v<T, edit_set_content>) {
          out += "C";
          put_field(out, op.content);
        } else {
          out += "E";
          out += std::to_string(op.embedding.size());
          for (float f : op.embedding) out += hex64(std::bit_cast<std::uint32_t>(f));
          put_field(out, op.version);
        }
      },
      e.op);
  out += ';';
}

}  // namespace detail

/// The idempotency key of an action: 16 lower-case hex digits of FNV-1a 64 over its type, targets
/// and canonically serialised edits (floats by bit pattern). Tier, priority, reasons and blast
/// radius do not enter it. @complexity O(size of the action).
inline std::string compute_idempotency_key(const repair_action& a) {
  std::string buf;
  detail::put_field(buf, a.type);
  buf += std::to_string(a.targets.size());
  for (const auto& t : a.targets) detail::put_field(buf, t);
  buf += std::to_string(a.edits.size());
  for (const auto& e : a.edits) detail::put_edit(buf, e);
  return detail::hex64(fnv1a_64(buf));
}

}  // namespace memhealth
