#pragma once
/// @file checksum.hpp
/// CRC-32C (Castagnoli), the checksum of write-ahead-log frames and the link of their hash chain,
/// and CRC-64/XZ, the store fingerprint (and the chain link of logs written before CRC-32C links).
///
/// Parameters: polynomial 0x1EDC6F41 (reflected 0x82F63B78), initial value 0xFFFFFFFF, input and
/// output reflected, final XOR 0xFFFFFFFF; check value `crc32c("123456789") == 0xE3069283`.
/// Source: RFC 3720 (iSCSI), section 12.1 and appendix B.4 (test vectors). The same CRC guards
/// ext4 metadata, LevelDB/RocksDB log blocks and SCTP.
///
/// CRC-64/XZ (also "CRC-64/GO-ECMA"): polynomial 0x42F0E1EBA9EA3693 (ECMA-182), initial value and
/// final XOR all ones, reflected; check value `crc64("123456789") == 0x995DC9BBDF1939FA` (the
/// catalogue of parametrised CRC algorithms, reveng.sourceforge.io; the xz file format's check).
///
/// CRC-32C uses the x86 SSE4.2 CRC32 instruction when the CPU has it (the instruction computes
/// CRC-32C), else Boost.CRC's table-driven `boost::crc_optimal` (header-only, libboost-dev), one
/// table lookup per byte; CRC-64 is always Boost.CRC's.

#include <boost/crc.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

namespace memhealth {

/// Boost.CRC engine configured as CRC-32C (see the file comment). Feed it with
/// `process_bytes(p, n)`, read with `checksum()`; copyable, so a running CRC can be resumed.
using crc32c_engine = boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true>;

namespace detail {
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
// CRC-32C with the SSE4.2 CRC32 instruction (Intel SDM, "CRC32 -- Accumulate CRC32 Value": it
// computes exactly this CRC, reflected, polynomial 0x1EDC6F41), 8 bytes per instruction: about
// 10x the table-driven rate. `crc` is the running value before the final XOR.
__attribute__((target("sse4.2"))) inline std::uint32_t crc32c_sse42(std::uint32_t crc,
                                                                    const unsigned char* p,
                                                                    std::size_t n) noexcept {
#if defined(__x86_64__)
  std::uint64_t c = crc;
  for (; n >= 8; n -= 8, p += 8) {
    std::uint64_t v;
    std::memcpy(&v, p, sizeof v);
    c = __builtin_ia32_crc32di(c, v);
  }
  crc = static_cast<std::uint32_t>(c);
#endif
  for (; n > 0; --n, ++p) crc = __builtin_ia32_crc32qi(crc, *p);
  return crc;
}
inline bool cpu_has_sse42() noexcept {
  static const bool has = __builtin_cpu_supports("sse4.2");
  return has;
}
#define MEMHEALTH_CRC32C_SSE42 1
#endif
}  // namespace detail

/// CRC-32C of `n` bytes at `data`: the SSE4.2 CRC32 instruction where the CPU has it (checked at
/// run time), else Boost.CRC's table (one lookup per byte). Both give the same value (tests
/// compare them). @complexity O(n).
[[nodiscard]] inline std::uint32_t crc32c(const void* data, std::size_t n) noexcept {
#if defined(MEMHEALTH_CRC32C_SSE42)
  if (detail::cpu_has_sse42())
    return ~detail::crc32c_sse42(0xFFFFFFFFu, static_cast<const unsigned char*>(data), n);
#endif
  crc32c_engine e;
  e.process_bytes(data, n);
  return e.checksum();
}

/// CRC-32C of `n` bytes by the table (Boost.CRC) alone: the reference the tests hold the
/// instruction path to.
[[nodiscard]] inline std::uint32_t crc32c_table(const void* data, std::size_t n) noexcept {
  crc32c_engine e;
  e.process_bytes(data, n);
  return e.checksum();
}

/// CRC-32C of a byte span.
[[nodiscard]] inline std::uint32_t crc32c(std::span<const std::byte> bytes) noexcept {
  return crc32c(bytes.data(), bytes.size());
}

/// CRC-32C of the bytes of a string (no terminator). `crc32c("123456789") == 0xE3069283`.
[[nodiscard]] inline std::uint32_t crc32c(std::string_view bytes) noexcept {
  return crc32c(bytes.data(), bytes.size());
}

/// Boost.CRC engine configured as CRC-64/XZ (see the file comment); copyable, so it can be resumed.
using crc64_engine = boost::crc_optimal<64, 0x42F0E1EBA9EA3693ULL, 0xFFFFFFFFFFFFFFFFULL,
                                        0xFFFFFFFFFFFFFFFFULL, true, true>;

/// CRC-64/XZ of the bytes of a string. `crc64("123456789") == 0x995DC9BBDF1939FA`.
/// @complexity O(n), one table lookup per byte.
[[nodiscard]] inline std::uint64_t crc64(std::string_view bytes) noexcept {
  crc64_engine e;
  e.process_bytes(bytes.data(), bytes.size());
  return e.checksum();
}

/// `v` as 16 lower-case hex digits, most significant first.
[[nodiscard]] inline std::string hex16(std::uint64_t v) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) s[static_cast<std::size_t>(i)] = digits[v & 0xF];
  return s;
}

}  // namespace memhealth
