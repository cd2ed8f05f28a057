#pragma once
/// @file read_file.hpp
/// Reading a whole (small) input file into memory, shared by the importers.

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "memhealth/config.hpp"

namespace memhealth::detail {

/// The bytes of `file`. @throws memhealth::error(io) when it cannot be opened or read, or is a
/// directory (which a stream would read as empty).
inline std::string read_whole_file(const std::filesystem::path& file) {
  std::error_code ec;
  if (std::filesystem::is_directory(file, ec))
    throw error(error_code::io, file.string() + ": is a directory, not a file");
  std::ifstream in(file, std::ios::binary);
  if (!in) throw error(error_code::io, "cannot open " + file.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw error(error_code::io, "cannot read " + file.string());
  return std::move(ss).str();
}

}  // namespace memhealth::detail
