#pragma once
/// @file load_issue.hpp
/// Problems met while loading or importing: reported per line and field, never fatal.

#include <cstddef>
#include <string>
#include <vector>

namespace memhealth {

/// One problem in an input file. Loading keeps going after it: the record is kept when it can
/// be (with the wrong-but-parseable value), and skipped only when the line is not JSON at all.
struct load_issue {
  std::string file;         ///< path or name of the input
  std::size_t line = 0;     ///< 1-based line number (JSONL), or 0 when not line-based
  std::string field;        ///< the JSON field concerned, or empty for the whole line
  std::string reason;       ///< what is wrong, in words
  bool record_kept = true;  ///< false when the record was skipped (e.g. the line is not JSON)
};

/// Records loaded or imported, with the problems met.
template <class R>
struct basic_load_result {
  std::vector<R> records;          ///< every record that could be kept, in input order
  std::vector<load_issue> issues;  ///< problems, in input order
  std::size_t lines_read = 0;      ///< non-empty input lines (JSONL) or entries seen (importers)
};

}  // namespace memhealth
