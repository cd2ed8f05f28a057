#pragma once
/// @file plan_file.hpp
/// Plan files: `write_plan` streams a plan to a file as JSON Lines (schema_version 2), and
/// `plan_reader` / `read_plan` read one back, one action at a time. A plan of a million actions
/// is written and read without ever holding its text or a JSON tree of it in memory.
///
/// ## Format (schema_version 2, JSON Lines)
/// Line 1 is the header; then exactly `actions` lines follow, one action each, in execution
/// order; every line is minified JSON ending in `\n`:
/// @code{.json}
/// {"schema_version":2,"format":"memhealth-plan","actions":2,"suspended":false,"suspend_reason":"","deferred":[],"detection":{"now":"2024-07-15T00:00:00.000Z"}}
/// {"type":"fill_metadata_defaults","tier":1,"automation":"auto","priority":400,"targets":["m1"],"edits":[{"record_id":"m1","op":"fill_metadata","key":"topic","value":{"type":"string","value":"unknown"}}],"blast_radius":{"records":1,"scopes":["user:7"]},"rollback_method":"restore_before_images","idempotency_key":"be46f5c7d4a10e7e","reasons":["metadata_schema_violation:
/// m1 (structural)"]}
/// {"type":"merge_duplicates","tier":2,...}
/// @endcode
/// The header may also hold `blast_radius_threshold` (the planner's threshold) and `store` (the
/// fingerprint of the store the plan was made from: counts, a digest and a sample of the record
/// ids, `store_fingerprint_to_json`); `make_plan` and `make_plan_file` write both, and a plan
/// without them (an older one) still reads.
/// An action line has the fields of an action of the schema_version 1 document (plan_json.hpp:
/// the same names, edit ops and metadata value forms, non-finite numbers as "nan", "inf", "-inf"),
/// written in the order above; a reader accepts them in any order. `detection` is written only
/// when not empty. The header's `actions` count makes a cut file an error, not a shorter plan.
///
/// Reading also accepts a schema_version 1 document (one JSON object with an "actions" array,
/// what memhealth 0.1 wrote): `plan_reader` detects the form from the first line.
///
/// ## Compressed plan files
/// A plan file whose name ends in ".gz" is written as gzip (RFC 1952, zlib level 1): the same
/// lines, compressed. Readers recognise gzip by its first two bytes (1f 8b), whatever the name,
/// and read it as they read a plain file, line by line. A million one-record actions: 409 MB of
/// lines, 26.9 MB compressed (README, "Measured").
///
/// ## Errors
/// Readers throw `memhealth::error(error_code::parse)` naming the line and the JSON pointer of
/// the bad field inside it ("line 4: /actions/2/edits/0/op: unknown edit op 'delete'": the
/// pointer is the one the action would have in a schema_version 1 document), a file that ends
/// before its header's count of actions or has lines after it, and text that is not JSON; a
/// schema_version other than 1 or 2 is `error_code::schema`. `error(error_code::io)` when the
/// file cannot be opened, is a directory, or cannot be written (see `atomic_write`).

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <istream>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "memhealth/config.hpp"
#include "memhealth/io/atomic_write.hpp"
#include "memhealth/io/detail_json_text.hpp"
#include "memhealth/io/gzip_stream.hpp"
#include "memhealth/repair/action.hpp"
#include "memhealth/repair/plan_json.hpp"

namespace memhealth {

/// Version of the plan file format `write_plan` writes (JSON Lines).
inline constexpr int plan_file_version = 2;

/// Everything of a plan but its actions: what the header line of a plan file holds.
struct plan_header {
  int schema_version = plan_file_version;             ///< 2 (JSON Lines) or 1 (a 0.1 JSON document)
  std::size_t actions = 0;                            ///< number of actions that follow
  bool suspended = false;                             ///< see `repair_plan::suspended`
  std::string suspend_reason;                         ///< see `repair_plan::suspend_reason`
  std::vector<std::string> deferred;                  ///< see `repair_plan::deferred`
  detection_provenance detection;                     ///< see `repair_plan::detection`
  std::optional<std::size_t> blast_radius_threshold;  ///< see `repair_plan::blast_radius_threshold`
  std::optional<plan_store_fingerprint> store;        ///< see `repair_plan::store`
  friend bool operator==(const plan_header&, const plan_header&) = default;
};

/// The header of `p` (its fields but the actions; `actions` = `p.actions.size()`).
inline plan_header header_of(const repair_plan& p) {
  plan_header h;
  h.actions = p.actions.size();
  h.suspended = p.suspended;
  h.suspend_reason = p.suspend_reason;
  h.deferred = p.deferred;
  h.detection = p.detection;
  h.blast_radius_threshold = p.blast_radius_threshold;
  h.store = p.store;
  return h;
}

namespace detail::plan_lines {

namespace jt = detail::json_text;

inline void append_double(std::string& out, double x) {
  if (std::isnan(x))
    out += "\"nan\"";
  else if (std::isinf(x))
    out += x > 0 ? "\"inf\"" : "\"-inf\"";
  else
    jt::append_number(out, x, true);  // "1.0", "-0.0": read back as doubles, the sign of 0 kept
}

inline void append_strings(std::string& out, const std::vector<std::string>& v) {
  out.push_back('[');
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) out.push_back(',');
    jt::append_escaped(out, v[i]);
  }
  out.push_back(']');
}

inline void append_metadata(std::string& out, const metadata_value& v) {
  out += "{\"type\":";
  jt::append_escaped(out, metadata_type_name(v));
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
        } else if constexpr (std::is_same_v<T, bool>) {
          out += x ? ",\"value\":true" : ",\"value\":false";
        } else if constexpr (std::is_same_v<T, std::int64_t>) {
          out += ",\"value\":";
          jt::append_int(out, x);
        } else if constexpr (std::is_same_v<T, double>) {
          out += ",\"value\":";
          append_double(out, x);
        } else if constexpr (std::is_same_v<T, raw_json>) {
          out += ",\"value\":";
          jt::append_escaped(out, x.text);
        } else {
          out += ",\"value\":";
          jt::append_escaped(out, x);
        }
      },
      v);
  out.push_back('}');
}

inline void append_edit(std::string& out, const record_edit& e) {
  out += "{\"record_id\":";
  jt::append_escaped(out, e.record_id);
  std::visit(
      [&](const auto& op) {
        using T = std::decay_t<decltype(op)>;
        if constexpr (std::is_same_v<T, edit_set_status>) {
          out += ",\"op\":\"set_status\",\"status\":";
          jt::append_escaped(out, op.status);
        } else if constexpr (std::is_same_v<T, edit_set_duplicate_of>) {
          out += ",\"op\":\"set_duplicate_of\",\"primary_id\":";
          jt::append_escaped(out, op.primary_id);
        } else if constexpr (std::is_same_v<T, edit_add_supersedes>) {
          out += ",\"op\":\"add_supersedes\",\"ids\":";
          append_strings(out, op.ids);
        } else if constexpr (std::is_same_v<T, edit_append_notes>) {
          out += ",\"op\":\"append_notes\",\"notes\":";
          append_strings(out, op.notes);
        } else if constexpr (std::is_same_v<T, edit_drop_links>) {
          out += ",\"op\":\"drop_links\",\"ids\":";
          append_strings(out, op.ids);
        } else if constexpr (std::is_same_v<T, edit_set_weight>) {
          out += ",\"op\":\"set_weight\",\"weight\":";
          append_double(out, op.weight);
        } else if constexpr (std::is_same_v<T, edit_fill_metadata>) {
          out += ",\"op\":\"fill_metadata\",\"key\":";
          jt::append_escaped(out, op.key);
          out += ",\"value\":";
          append_metadata(out, op.value);
        } else if constexpr (std::is_same_v<T, edit_normalize_timestamps>) {
          out += ",\"op\":\"normalize_timestamps\"";
        } else if constexpr (std::is_same_v<T, edit_set_content>) {
          out += ",\"op\":\"set_content\",\"content\":";
          jt::append_escaped(out, op.content);
        } else {
          out += ",\"op\":\"replace_embedding\",\"embedding\":[";
          for (std::size_t i = 0; i < op.embedding.size(); ++i) {
            if (i) out.push_back(',');
            // the float widened to double, shortest text: reads back to the same float exactly
            append_double(out, static_cast<double>(op.embedding[i]));
          }
          out += "],\"version\":";
          jt::append_escaped(out, op.version);
        }
      },
      e.op);
  out.push_back('}');
}

}  // namespace detail::plan_lines

/// Appends the header line of a plan file (minified JSON and `\n`) to `out`.
template <class = void>  // deferred instantiation, see memhealth.hpp
void append_plan_header_line(std::string& out, const plan_header& h) {
  namespace pl = detail::plan_lines;
  out += "{\"schema_version\":2,\"format\":\"memhealth-plan\",\"actions\":";
  detail::json_text::append_int(out, static_cast<std::int64_t>(h.actions));
  out += h.suspended ? ",\"suspended\":true" : ",\"suspended\":false";
  out += ",\"suspend_reason\":";
  detail::json_text::append_escaped(out, h.suspend_reason);
  out += ",\"deferred\":";
  pl::append_strings(out, h.deferred);
  if (!h.detection.empty()) {
    out += ",\"detection\":";
    out += detection_to_json(h.detection).dump();
  }
  if (h.blast_radius_threshold) {
    out += ",\"blast_radius_threshold\":";
    detail::json_text::append_int(out, static_cast<std::int64_t>(*h.blast_radius_threshold));
  }
  if (h.store) {
    out += ",\"store\":";
    out += store_fingerprint_to_json(*h.store).dump();
  }
  out += "}\n";
}

/// Appends one action as a plan-file line (minified JSON and `\n`) to `out`.
/// @complexity O(size of the action).
inline void append_plan_action_line(std::string& out, const repair_action& a) {
  namespace pl = detail::plan_lines;
  namespace jt = detail::json_text;
  out += "{\"type\":";
  jt::append_escaped(out, a.type);
  out += ",\"tier\":";
  jt::append_int(out, a.tier);
  out += ",\"automation\":";
  jt::append_escaped(out, to_string(a.automation));
  out += ",\"priority\":";
  jt::append_int(out, a.priority);
  out += ",\"targets\":";
  pl::append_strings(out, a.targets);
  out += ",\"edits\":[";
  for (std::size_t i = 0; i < a.edits.size(); ++i) {
    if (i) out.push_back(',');
    pl::append_edit(out, a.edits[i]);
  }
  out += "],\"blast_radius\":{\"records\":";
  jt::append_int(out, static_cast<std::int64_t>(a.blast.records));
  if (a.blast.index_entries) {
    out += ",\"index_entries\":";
    jt::append_int(out, static_cast<std::int64_t>(a.blast.index_entries));
  }
  out += ",\"scopes\":";
  pl::append_strings(out, a.blast.scopes);
  out += "},\"rollback_method\":";
  jt::append_escaped(out, a.rollback_method);
  out += ",\"idempotency_key\":";
  jt::append_escaped(out, a.idempotency_key);
  out += ",\"reasons\":";
  pl::append_strings(out, a.reasons);
  if (!a.seen.empty()) {  // optional: id -> record_decision_digest, 16 hex digits
    out += ",\"seen\":{";
    bool first = true;
    for (const auto& [id, h] : a.seen) {
      if (!first) out.push_back(',');
      first = false;
      jt::append_escaped(out, id);
      out += ":\"";
      for (int sh = 60; sh >= 0; sh -= 4) out.push_back("0123456789abcdef"[(h >> sh) & 0xF]);
      out.push_back('"');
    }
    out.push_back('}');
  }
  out += "}\n";
}

/// Reads one action line of a plan file (what `append_plan_action_line` writes). `pointer` is the
/// JSON pointer used in errors (e.g. "/actions/3").
/// @throws error(parse) for text that is not JSON or not an action, naming the bad field.
template <class = void>  // deferred instantiation, see memhealth.hpp
repair_action parse_plan_action_line(std::string_view line, const std::string& pointer) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(line);
  } catch (const nlohmann::json::exception& e) {
    throw error(error_code::parse, "plan line " + pointer + ": not JSON: " + e.what());
  }
  return detail::plan_read_action(j, pointer);
}

/// Writes a plan file from a header and the actions a generator yields, atomically and durably
/// (`atomic_write`: temporary file in the target's directory, fsync, rename, directory fsync),
/// in chunks of about 1 MiB: memory is one chunk plus whatever `next` holds. A `path` ending in
/// ".gz" is written gzip-compressed (zlib level 1, io/gzip_stream.hpp; `plan_reader` reads it).
/// `next(const auto& emit)` calls `emit(const repair_action&)`, or `emit(line)` with a line that
/// `append_plan_action_line` wrote (a `std::string_view` ending in `\n`), once per action, in
/// execution order; it must emit exactly `h.actions` actions.
/// @throws error(io) naming the path when the file cannot be created, written, synced or
///         renamed; error(invalid_argument) when `next` emitted another number of actions than
///         `h.actions` (nothing is written then); `path` is untouched on every error.
template <class Generate>
void write_plan_stream(const std::string& path, const plan_header& h, Generate&& next) {
  const bool gz = gzip_name(path);
  std::optional<gzip_writer> z;
  if (gz) z.emplace(1);
  atomic_write(std::filesystem::path(path), [&](std::string& buf, auto& flush) {
    constexpr std::size_t chunk = std::size_t{1} << 20;
    std::string text;  // a chunk of plain text, compressed into `buf` (.gz names)
    std::string& t = gz ? text : buf;
    t.reserve(chunk + 4096);
    auto spill = [&](bool last) {
      if (gz) {
        z->write(text, buf, last);
        text.clear();
      }
      flush();
    };
    append_plan_header_line(t, h);
    std::size_t n = 0;
    next([&](const auto& action_or_line) {
      if constexpr (std::is_convertible_v<decltype(action_or_line), std::string_view>)
        t += std::string_view(action_or_line);  // a line `append_plan_action_line` wrote
      else
        append_plan_action_line(t, action_or_line);
      ++n;
      if (t.size() >= chunk) spill(false);
    });
    if (n != h.actions)
      throw error(error_code::invalid_argument,
                  "write_plan: the header says " + std::to_string(h.actions) +
                      " actions, the generator gave " + std::to_string(n));
    spill(true);
  });
}

/// Writes `p` as a plan file (schema_version 2, JSON Lines; see the file comment), atomically and
/// durably. Memory: about 1 MiB beyond the plan itself (no JSON tree, no whole text).
/// @throws error(io) naming the path when the file cannot be created, written, synced or
///         renamed; `path` is then untouched.
template <class = void>  // deferred instantiation, see memhealth.hpp
void write_plan(const std::string& path, const repair_plan& p) {
  write_plan_stream(path, header_of(p), [&](const auto& emit) {
    for (const auto& a : p.actions) emit(a);
  });
}

/// The text of `p` as a plan file (what `write_plan` writes), in memory.
template <class = void>  // deferred instantiation, see memhealth.hpp
std::string plan_to_text(const repair_plan& p) {
  std::string out;
  append_plan_header_line(out, header_of(p));
  for (const auto& a : p.actions) append_plan_action_line(out, a);
  return out;
}

/// Reads a plan file one action at a time: the header first (`header()`), then `next()` until it
/// returns false. Reads schema_version 2 (JSON Lines, what `write_plan` writes) line by line in
/// bounded memory, and schema_version 1 (a JSON document) whole.
/// @throws error(io) when the file cannot be opened or is a directory; error(parse) for text that
///         is not a plan (naming the line and the JSON pointer), a file cut before its header's
///         count of actions or with lines after it; error(schema) for another schema_version.
template <class = void>  // deferred instantiation, see memhealth.hpp
class basic_plan_reader {
 public:
  /// Opens the plan file at `path` and reads its header.
  explicit basic_plan_reader(const std::string& path) : name_(path) {
    if (std::error_code ec; std::filesystem::is_directory(path, ec))
      throw error(error_code::io, "read_plan: '" + path + "' is a directory, not a plan file");
    auto f = std::make_unique<std::ifstream>(path, std::ios::binary);
    if (!*f) throw error(error_code::io, "read_plan: cannot open '" + path + "'");
    open(std::move(f));
  }
  /// Reads a plan from text in memory (`name` goes into error messages); gzip-compressed text
  /// is read too.
  basic_plan_reader(std::string_view text, std::string_view name) : name_(name) {
    open(std::make_unique<std::istringstream>(std::string(text)));
  }

  /// The plan's header (its fields but the actions, and how many actions follow).
  [[nodiscard]] const plan_header& header() const noexcept { return header_; }

  /// Reads the next action into `out`; false once every action was read (the file was then
  /// checked to end there).
  /// @throws error(parse) for a bad line, a file cut before the header's count, or more lines.
  bool next(repair_action& out) {
    if (v1_) {
      if (v1_next_ >= v1_->actions.size()) return false;
      out = std::move(v1_->actions[v1_next_++]);
      return true;
    }
    if (read_ == header_.actions) {
      while (std::getline(*in_, line_)) {
        ++line_no_;
        if (!detail::json_text::trim(line_).empty())
          fail("has more lines than the " + std::to_string(header_.actions) +
               " actions its header announces");
      }
      return false;
    }
    if (!next_line())
      fail("ends after " + std::to_string(read_) + " of the " + std::to_string(header_.actions) +
           " actions its header announces (a cut file?)");
    const nlohmann::json j = parse_line();
    try {
      out = detail::plan_read_action(j, "/actions/" + std::to_string(read_));
    } catch (const error& e) {
      rethrow_here(e);
    }
    ++read_;
    return true;
  }

 private:
  // `e` again with this reader's position in front of its message (its code prefix dropped).
  [[noreturn]] void rethrow_here(const error& e) const {
    std::string_view m = e.what();
    const std::string prefix = std::string(to_string(e.code())) + ": ";
    if (m.starts_with(prefix)) m.remove_prefix(prefix.size());
    throw error(e.code(), at() + std::string(m));
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw error(error_code::parse, "read_plan: '" + name_ + "' " + what);
  }
  std::string at() const {
    return "read_plan: '" + name_ + "' line " + std::to_string(line_no_) + ": ";
  }

  bool next_line() {
    while (std::getline(*in_, line_)) {
      ++line_no_;
      if (!detail::json_text::trim(line_).empty()) return true;
    }
    return false;
  }

  nlohmann::json parse_line() const {
    try {
      return nlohmann::json::parse(line_);
    } catch (const nlohmann::json::exception& e) {  // parse_error; out_of_range for 1e999
      throw error(error_code::parse, at() + "not JSON: " + e.what());
    }
  }

  // The integer "schema_version" of a JSON object, if it has one.
  static std::optional<std::int64_t> version_of(const nlohmann::json& j) {
    if (!j.is_object()) return std::nullopt;
    const auto it = j.find("schema_version");
    if (it == j.end() || !it->is_number_integer()) return std::nullopt;
    return it->get<std::int64_t>();
  }
  [[noreturn]] void unsupported(const nlohmann::json& j) const {
    throw error(error_code::schema, "read_plan: '" + name_ + "': /schema_version: version " +
                                        j["schema_version"].dump() +
                                        " is not supported (expected 1 or 2)");
  }

  // Reads from `raw`, through gzip when it starts with gzip's magic bytes; then the header.
  void open(std::unique_ptr<std::istream> raw) {
    char head[2] = {0, 0};
    raw->read(head, 2);
    const auto got = static_cast<std::size_t>(raw->gcount());
    raw->clear();
    raw->seekg(0);
    if (is_gzip(std::string_view(head, got)))
      in_ = std::make_unique<gzip_istream>(std::move(raw), name_);
    else
      in_ = std::move(raw);
    start();
  }

  void start() {
    if (!next_line()) fail("is empty, not a plan");
    std::optional<nlohmann::json> first;
    try {
      first = nlohmann::json::parse(line_);
    } catch (const nlohmann::json::exception&) {
      // not a whole JSON value on the first line: a schema_version 1 document (indented)
    }
    const std::optional<std::int64_t> version = first ? version_of(*first) : std::nullopt;
    if (version != plan_file_version) {
      if (version && *version != 1) unsupported(*first);
      read_v1(first);
      return;
    }
    const nlohmann::json& j = *first;
    try {
      const auto& n = detail::plan_member(j, "", "actions");
      if (!n.is_number_unsigned()) detail::plan_fail("/actions", "expected a count of actions");
      header_.actions = n.get<std::size_t>();
      header_.suspended = detail::plan_bool(detail::plan_member(j, "", "suspended"), "/suspended");
      header_.suspend_reason = detail::plan_string_member(j, "", "suspend_reason");
      header_.deferred = detail::plan_strings(detail::plan_member(j, "", "deferred"), "/deferred");
      if (auto it = j.find("detection"); it != j.end())
        header_.detection = detection_from_json(*it);
      if (auto it = j.find("blast_radius_threshold"); it != j.end()) {
        const std::int64_t t = detail::plan_integer(*it, "/blast_radius_threshold");
        if (t < 0) detail::plan_fail("/blast_radius_threshold", "expected a count >= 0");
        header_.blast_radius_threshold = static_cast<std::size_t>(t);
      }
      if (auto it = j.find("store"); it != j.end())
        header_.store = store_fingerprint_from_json(*it);
    } catch (const error& e) {
      rethrow_here(e);
    }
  }

  // nlohmann's message without its "[json.exception.parse_error.101] " tag.
  static std::string json_reason(const nlohmann::json::exception& e) {
    std::string_view m = e.what();
    if (m.starts_with("[json.exception.")) {
      const auto p = m.find("] ");
      if (p != std::string_view::npos) m.remove_prefix(p + 2);
    }
    return std::string(m);
  }

  // A schema_version 1 document: the whole text (the first line already read, then the rest).
  void read_v1(const std::optional<nlohmann::json>& first) {
    // a JSON object on the first line without "actions" or "schema_version" is no plan of
    // either version (a memory record: a store given as the plan)
    if (first && (!first->is_object() ||
                  (!first->contains("actions") && !first->contains("schema_version"))))
      throw error(error_code::parse,
                  "read_plan: '" + name_ + "' is not a plan file (its first line is " +
                      (first->is_object() && first->contains("id") && first->contains("content")
                           ? std::string("a memory record: is it a store? memhealth plan makes a "
                                         "plan from a store")
                           : std::string("JSON without \"actions\" or \"schema_version\"")) +
                      ")");
    std::string text = line_;
    text.push_back('\n');
    std::ostringstream rest_stream;
    rest_stream << in_->rdbuf();
    const std::string rest = rest_stream.str();
    text += rest;
    nlohmann::json j;
    try {
      j = first && first->is_object() && detail::json_text::trim(rest).empty()
              ? *first
              : nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
      throw error(error_code::parse, "read_plan: '" + name_ +
                                         "' is not a plan file (not JSON: " + json_reason(e) + ")");
    }
    if (const auto v = version_of(j); v && *v != 1) unsupported(j);
    if (!j.is_object() || !j.contains("actions"))
      throw error(error_code::parse, "read_plan: '" + name_ +
                                         "' is not a plan file (a JSON document without "
                                         "\"actions\")");
    try {
      v1_ = plan_from_json(j);
    } catch (const nlohmann::json::exception& e) {  // a member of the wrong JSON type
      throw error(error_code::parse,
                  "read_plan: '" + name_ + "' is not a plan file (" + json_reason(e) + ")");
    }
    header_ = header_of(*v1_);
    header_.schema_version = 1;
  }

  std::string name_;
  std::unique_ptr<std::istream> in_;
  plan_header header_;
  std::optional<repair_plan> v1_;  // a schema_version 1 document, read whole
  std::size_t v1_next_ = 0;
  std::string line_;
  std::size_t line_no_ = 0;
  std::size_t read_ = 0;
};

/// The plan file reader (see `basic_plan_reader`).
using plan_reader = basic_plan_reader<>;

namespace detail {
template <class Reader>
repair_plan read_whole_plan(Reader& r) {
  repair_plan p;
  const plan_header& h = r.header();
  p.suspended = h.suspended;
  p.suspend_reason = h.suspend_reason;
  p.deferred = h.deferred;
  p.detection = h.detection;
  p.blast_radius_threshold = h.blast_radius_threshold;
  p.store = h.store;
  // the header's count is not trusted for a reservation (a damaged file could claim 2^60)
  p.actions.reserve(std::min<std::size_t>(h.actions, std::size_t{1} << 16));
  repair_action a;
  while (r.next(a)) p.actions.push_back(std::move(a));
  return p;
}
}  // namespace detail

/// Reads a whole plan from text (a plan file's content, either schema version). `name` goes into
/// error messages. @throws as `plan_reader`. @complexity O(size of the text).
template <class = void>  // deferred instantiation, see memhealth.hpp
repair_plan parse_plan(std::string_view text, std::string_view name = "<memory>") {
  basic_plan_reader<> r(text, name);
  return detail::read_whole_plan(r);
}

/// Reads a whole plan file (either schema version) into memory, line by line: memory is the plan
/// itself plus one line. @throws as `plan_reader`.
template <class = void>  // deferred instantiation, see memhealth.hpp
repair_plan read_plan(const std::string& path) {
  basic_plan_reader<> r(path);
  return detail::read_whole_plan(r);
}

}  // namespace memhealth
