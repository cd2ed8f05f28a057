#pragma once
/// @file checksum.hpp
/// CRC-32C (Castagnoli), the checksum of write-ahead-log frames.
///
/// Parameters: polynomial 0x1EDC6F41 (reflected 0x82F63B78), initial value 0xFFFFFFFF, input and
/// output reflected, final XOR 0xFFFFFFFF; check value `crc32c("123456789") == 0xE3069283`.
/// Source: RFC 3720 (iSCSI), section 12.1 and appendix B.4 (test vectors). The same CRC guards
/// ext4 metadata, LevelDB/RocksDB log blocks and SCTP.
///
/// The computation is Boost.CRC's table-driven `boost::crc_optimal` (header-only, libboost-dev),
/// one table lookup per byte: a well-kept library rather than our own table.

#include <boost/crc.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace memhealth {

/// Boost.CRC engine configured as CRC-32C (see the file comment). Feed it with
/// `process_bytes(p, n)`, read with `checksum()`; copyable, so a running CRC can be resumed.
using crc32c_engine = boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true>;

/// CRC-32C of `n` bytes at `data`. @complexity O(n), one table lookup per byte.
[[nodiscard]] inline std::uint32_t crc32c(const void* data, std::size_t n) noexcept {
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

}  // namespace memhealth
