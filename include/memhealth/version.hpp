#pragma once
/// @file version.hpp
/// The single place where memhealth's version is written. CMake reads the three
/// `MEMHEALTH_VERSION_*` macros from this file; nothing else repeats the number.

#define MEMHEALTH_VERSION_MAJOR 0
#define MEMHEALTH_VERSION_MINOR 1
#define MEMHEALTH_VERSION_PATCH 0

/// The version as one integer, MAJOR * 10000 + MINOR * 100 + PATCH (0.1.0 -> 100).
#define MEMHEALTH_VERSION \
  (MEMHEALTH_VERSION_MAJOR * 10000 + MEMHEALTH_VERSION_MINOR * 100 + MEMHEALTH_VERSION_PATCH)

namespace memhealth {
/// The version as a constant expression, same encoding as `MEMHEALTH_VERSION`.
inline constexpr int version = MEMHEALTH_VERSION;
/// The version as text, "MAJOR.MINOR.PATCH".
inline constexpr const char* version_string = "0.1.0";
}  // namespace memhealth
