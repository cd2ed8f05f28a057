#pragma once
/// @file config.hpp
/// Error conventions shared by the whole library.
///
/// memhealth uses one error mechanism, documented here:
/// 1. **Bad data is a finding, never an error.** Detectors and loaders report what is wrong with
///    a record as data (findings, load issues) and keep going.
/// 2. **Fallible I/O and misuse of an API throw `memhealth::error`** (derived from
///    `std::runtime_error`) carrying a stable `error_code`. Codes never change meaning between
///    versions; new codes are only added.
/// 3. **Internal preconditions** are checked with `MEMHEALTH_ASSERT(cond, msg)`, which a user may
///    redefine before including any memhealth header (for example to route to their own logger or
///    to compile it out). The default throws `memhealth::error` with `error_code::precondition`.

#include <stdexcept>
#include <string>

namespace memhealth {

/// Stable error codes carried by `memhealth::error`. Values are part of the ABI of the JSON
/// outputs and the command-line tool; never renumber them.
enum class error_code : int {
  io = 1,     ///< a file could not be opened, read, written or renamed
  parse = 2,  ///< input is not in the expected format at all (not one bad line: the whole input)
  precondition = 3,      ///< an API was called against its documented preconditions
  not_found = 4,         ///< an id or key that must exist does not
  invalid_argument = 5,  ///< an argument value is out of its documented range
  schema = 6,            ///< a database or file has a foreign or incompatible schema
  busy = 7,              ///< another process holds the lock on a file (a write-ahead log, a store)
};

/// Name of an error code as printed in messages ("io", "parse", ...).
constexpr const char* to_string(error_code c) noexcept {
  switch (c) {
    case error_code::io:
      return "io";
    case error_code::parse:
      return "parse";
    case error_code::precondition:
      return "precondition";
    case error_code::not_found:
      return "not_found";
    case error_code::invalid_argument:
      return "invalid_argument";
    case error_code::schema:
      return "schema";
    case error_code::busy:
      return "busy";
  }
  return "unknown";
}

/// The one exception type memhealth throws. `what()` is "<code>: <message>".
class error : public std::runtime_error {
 public:
  /// @param code stable error code; @param message what went wrong and, where possible, what to do.
  error(error_code code, const std::string& message)
      : std::runtime_error(std::string(to_string(code)) + ": " + message), code_(code) {}
  /// The stable error code.
  [[nodiscard]] error_code code() const noexcept { return code_; }

 private:
  error_code code_;
};

}  // namespace memhealth

#ifndef MEMHEALTH_ASSERT
/// Precondition check; redefine before including memhealth to change what a failure does.
/// Default: throws `memhealth::error(error_code::precondition, msg)`.
#define MEMHEALTH_ASSERT(cond, msg)                                                    \
  do {                                                                                 \
    if (!(cond)) throw ::memhealth::error(::memhealth::error_code::precondition, msg); \
  } while (false)
#endif
