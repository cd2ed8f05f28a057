// Text taken from stores, plans and logs made safe to show: for terminals and Markdown reports.
#pragma once

#include <string>
#include <string_view>

namespace memhealth {

/// `s` with every control character (bytes 0x00-0x1f and 0x7f: NUL, an escape sequence's ESC,
/// BEL, a newline inside a record id or text) written as `\xNN` (two lower-case hex digits);
/// every other byte, UTF-8 included, as it is. For ids, scopes, texts and reasons shown on a
/// terminal or in a Markdown report, where a raw ESC could restyle or clear the screen and a raw
/// newline could forge a line. `keep_line_breaks`: newlines and tabs stay (a message of several
/// lines). Display only: the data itself is never changed. O(|s|); never throws but bad_alloc.
inline std::string printable(std::string_view s, bool keep_line_breaks = false) {
  std::string out;
  out.reserve(s.size());
  for (const char ch : s) {
    const auto b = static_cast<unsigned char>(ch);
    if ((b >= 0x20 && b != 0x7f) || (keep_line_breaks && (ch == '\n' || ch == '\t'))) {
      out += ch;
      continue;
    }
    constexpr char hex[] = "0123456789abcdef";
    out += "\\x";
    out += hex[b >> 4];
    out += hex[b & 15];
  }
  return out;
}

}  // namespace memhealth
