#pragma once
/// @file monitor_json.hpp
/// The retrieval monitor's per-window metrics as JSON: the `windows` array of `memhealth monitor
/// --format json` and of the Python module's `monitor`, one object per partition x window, keys
/// in the order below (nlohmann::ordered_json).

#include <nlohmann/json.hpp>

#include <vector>

#include "memhealth/monitor/retrieval_monitor.hpp"
#include "memhealth/record/time.hpp"

namespace memhealth {

/// The windows as a JSON array: partition, start and end (RFC 3339, UTC), retrievals,
/// empty_rate, mean_top1_similarity and mean_topk_similarity (cosine), p50/p95/p99_latency_ms
/// (milliseconds), duplicate_share, feedback (events), negative_feedback_rate, ghost_results,
/// scope_leaks and version_mismatches (counts). Never throws beyond std::bad_alloc.
inline nlohmann::ordered_json windows_json(const std::vector<window_metrics>& windows) {
  auto ws = nlohmann::ordered_json::array();
  for (const auto& m : windows)
    ws.push_back({{"partition", m.partition},
                  {"start", format_timestamp(m.start)},
                  {"end", format_timestamp(m.end)},
                  {"retrievals", m.retrievals},
                  {"empty_rate", m.empty_rate},
                  {"mean_top1_similarity", m.mean_top1_similarity},
                  {"mean_topk_similarity", m.mean_topk_similarity},
                  {"p50_latency_ms", m.p50_latency_ms},
                  {"p95_latency_ms", m.p95_latency_ms},
                  {"p99_latency_ms", m.p99_latency_ms},
                  {"duplicate_share", m.duplicate_share},
                  {"feedback", m.feedback_total},
                  {"negative_feedback_rate", m.negative_feedback_rate},
                  {"ghost_results", m.ghost_results},
                  {"scope_leaks", m.scope_leaks},
                  {"version_mismatches", m.version_mismatches}});
  return ws;
}

}  // namespace memhealth
