#pragma once
/// @file events.hpp
/// Retrieval and feedback events: what a host system feeds to the retrieval monitor (SPEC
/// section 2, level 3), in memory and as JSONL (one event per line, docs/format.md "Retrieval
/// events").
///
/// Times are `memhealth::timestamp` (UTC instant, ms precision; the JSON `time` is ISO-8601 with
/// any offset or integer epoch milliseconds, as in the record format). Latency is in
/// milliseconds (`double`, >= 0). Similarity is the store's score for the result, larger = more
/// similar (a cosine in [-1, 1] for cosine stores).
///
/// Reading never throws on bad lines: a line that is not JSON, has an unknown `type` or lacks
/// `time` is skipped with a `load_issue` (`record_kept` = false); a bad optional field is
/// dropped with an issue and the event kept.

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "memhealth/config.hpp"
#include "memhealth/io/load_issue.hpp"
#include "memhealth/io/read_file.hpp"
#include "memhealth/record/time.hpp"

namespace memhealth {

/// One result served by a retrieval: the record id, its similarity score and its rank
/// (1 = best; ranks need not be contiguous, the monitor sorts by rank).
struct retrieved_item {
  std::string id;          ///< record id
  double similarity = 0;   ///< score as the store computed it (cosine in [-1, 1] for cosine stores)
  std::uint32_t rank = 0;  ///< 1-based rank in the result list
};

/// One retrieval (a query and what it returned).
struct retrieval_event {
  timestamp time;                             ///< when the query was answered (UTC instant)
  std::string partition;                      ///< scope / tenant partition the query ran in
  std::vector<std::string> requested_scopes;  ///< scopes the caller may read; empty = {partition}
  std::string
      query_embedding_version;  ///< model/normalisation that embedded the query ("" = unknown)
  double latency_ms = 0;        ///< end-to-end latency, milliseconds, >= 0
  std::vector<retrieved_item> results;  ///< results (empty = an empty result)
};

/// Kinds of user feedback on a memory. memory_edited, memory_deleted and rejected count as
/// negative feedback on what retrieval served; accepted as positive.
enum class feedback_kind : std::uint8_t { memory_edited, memory_deleted, accepted, rejected };

/// Text of a feedback kind: "memory_edited", "memory_deleted", "accepted", "rejected".
constexpr std::string_view to_string(feedback_kind k) noexcept {
  switch (k) {
    case feedback_kind::memory_edited:
      return "memory_edited";
    case feedback_kind::memory_deleted:
      return "memory_deleted";
    case feedback_kind::accepted:
      return "accepted";
    case feedback_kind::rejected:
      return "rejected";
  }
  return "";
}

/// Parses a feedback kind name. @return nullopt for unknown text.
constexpr std::optional<feedback_kind> parse_feedback_kind(std::string_view s) noexcept {
  if (s == "memory_edited") return feedback_kind::memory_edited;
  if (s == "memory_deleted") return feedback_kind::memory_deleted;
  if (s == "accepted") return feedback_kind::accepted;
  if (s == "rejected") return feedback_kind::rejected;
  return std::nullopt;
}

/// True for the feedback kinds that mean retrieval served something wrong (edited, deleted,
/// rejected).
constexpr bool is_negative(feedback_kind k) noexcept {
  return k != feedback_kind::accepted;
}

/// One user feedback event on a memory.
struct feedback_event {
  timestamp time;                                    ///< when the user acted (UTC instant)
  std::string partition;                             ///< scope / tenant partition
  feedback_kind feedback = feedback_kind::accepted;  ///< what the user did
  std::string id;                                    ///< the memory concerned ("" = not given)
};

/// Events read from a JSONL file, in input order per type, with the problems met.
struct event_load_result {
  std::vector<retrieval_event> retrievals;  ///< retrieval events, input order
  std::vector<feedback_event> feedback;     ///< feedback events, input order
  std::vector<load_issue> issues;           ///< bad lines and fields
  std::size_t lines_read = 0;               ///< non-empty lines
};

namespace detail {
template <class = void>  // deferred instantiation, see memhealth.hpp
std::optional<timestamp> event_time(const nlohmann::json& t) {
  if (t.is_string()) return parse_timestamp(t.get_ref<const std::string&>());
  if (t.is_number_integer()) return timestamp_from_epoch_ms(t.get<std::int64_t>());
  return std::nullopt;
}
}  // namespace detail

/// Parses JSONL event text (see docs/format.md). Never throws for bad content.
/// @param file_name name used in load issues. @complexity O(size of text).
template <class = void>  // deferred instantiation, see memhealth.hpp
event_load_result parse_events_jsonl(std::string_view text,
                                     std::string_view file_name = "<memory>") {
  event_load_result out;
  std::size_t line_no = 0, pos = 0;
  auto issue = [&](std::string field, std::string reason, bool kept) {
    out.issues.push_back(
        {std::string(file_name), line_no, std::move(field), std::move(reason), kept});
  };
  while (pos <= text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t'))
      line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) {
      if (end == text.size()) break;
      continue;
    }
    ++out.lines_read;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      issue("", "not a JSON object", false);
      continue;
    }
    // A string member's text; another JSON value's text (cut), which names no known value.
    // (json::value(key, std::string{}) throws type_error for a value that is not a string.)
    auto text_of = [&j](const char* key) -> std::string {
      const auto it = j.find(key);
      if (it == j.end()) return {};
      return it->is_string() ? it->get<std::string>() : it->dump().substr(0, 80);
    };
    const auto type = text_of("type");
    if (type != "retrieval" && type != "feedback") {
      issue("type", "unknown event type '" + type + "' (expected retrieval or feedback)", false);
      continue;
    }
    std::optional<timestamp> t = j.contains("time") ? detail::event_time(j["time"]) : std::nullopt;
    if (!t) {
      issue("time", "missing or not an ISO-8601 time / epoch milliseconds", false);
      continue;
    }
    std::string partition;
    if (j.contains("partition")) {
      if (j["partition"].is_string())
        partition = j["partition"].get<std::string>();
      else
        issue("partition", "not a string; ignored", true);
    }
    if (type == "feedback") {
      feedback_event e;
      e.time = *t;
      e.partition = std::move(partition);
      const auto fb = text_of("feedback");
      const auto k = parse_feedback_kind(fb);
      if (!k) {
        issue("feedback",
              "unknown feedback '" + fb + "' (memory_edited, memory_deleted, accepted, rejected)",
              false);
        continue;
      }
      e.feedback = *k;
      if (j.contains("id") && j["id"].is_string()) e.id = j["id"].get<std::string>();
      out.feedback.push_back(std::move(e));
      continue;
    }
    retrieval_event e;
    e.time = *t;
    e.partition = std::move(partition);
    if (j.contains("requested_scopes")) {
      const auto& a = j["requested_scopes"];
      if (a.is_array()) {
        for (const auto& s : a)
          if (s.is_string())
            e.requested_scopes.push_back(s.get<std::string>());
          else
            issue("requested_scopes", "an entry is not a string; ignored", true);
      } else {
        issue("requested_scopes", "not an array; ignored", true);
      }
    }
    if (j.contains("query_embedding_version") && j["query_embedding_version"].is_string())
      e.query_embedding_version = j["query_embedding_version"].get<std::string>();
    if (j.contains("latency_ms")) {
      const auto& l = j["latency_ms"];
      if (l.is_number() && std::isfinite(l.get<double>()) && l.get<double>() >= 0)
        e.latency_ms = l.get<double>();
      else
        issue("latency_ms", "not a non-negative number; taken as 0", true);
    }
    if (j.contains("results")) {
      const auto& rs = j["results"];
      if (!rs.is_array()) {
        issue("results", "not an array; taken as empty", true);
      } else {
        std::uint32_t next_rank = 1;
        for (const auto& r : rs) {
          if (!r.is_object() || !r.contains("id") || !r["id"].is_string()) {
            issue("results", "a result without a string id; ignored", true);
            continue;
          }
          retrieved_item it;
          it.id = r["id"].get<std::string>();
          if (r.contains("similarity") && r["similarity"].is_number())
            it.similarity = r["similarity"].get<double>();
          else
            issue("results.similarity", "missing or not a number for '" + it.id + "'; taken as 0",
                  true);
          if (r.contains("rank") && r["rank"].is_number_unsigned())
            it.rank = r["rank"].get<std::uint32_t>();
          else
            it.rank = next_rank;
          next_rank = it.rank + 1;
          e.results.push_back(std::move(it));
        }
      }
    }
    out.retrievals.push_back(std::move(e));
  }
  return out;
}

/// Reads a JSONL event file. @throws memhealth::error(io) when it cannot be read; bad lines
/// become load issues.
template <class = void>  // deferred instantiation, see memhealth.hpp
event_load_result read_events_jsonl(const std::filesystem::path& path) {
  const std::string text = detail::read_whole_file(path);
  return parse_events_jsonl(text, path.string());
}

/// One JSONL line (no trailing newline) for a retrieval event, in the documented format.
template <class = void>  // deferred instantiation, see memhealth.hpp
std::string to_jsonl(const retrieval_event& e) {
  nlohmann::ordered_json j;
  j["type"] = "retrieval";
  j["time"] = format_timestamp(e.time);
  j["partition"] = e.partition;
  j["requested_scopes"] = e.requested_scopes;
  j["query_embedding_version"] = e.query_embedding_version;
  j["latency_ms"] = e.latency_ms;
  j["results"] = nlohmann::ordered_json::array();
  for (const auto& r : e.results)
    j["results"].push_back({{"id", r.id}, {"similarity", r.similarity}, {"rank", r.rank}});
  return j.dump();
}

/// One JSONL line (no trailing newline) for a feedback event.
template <class = void>  // deferred instantiation, see memhealth.hpp
std::string to_jsonl(const feedback_event& e) {
  nlohmann::ordered_json j;
  j["type"] = "feedback";
  j["time"] = format_timestamp(e.time);
  j["partition"] = e.partition;
  j["feedback"] = std::string(to_string(e.feedback));
  j["id"] = e.id;
  return j.dump();
}

}  // namespace memhealth
