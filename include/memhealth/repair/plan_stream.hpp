#pragma once
/// @file plan_stream.hpp
/// `make_plan_file`: plans repairs straight into a plan file in bounded memory. It makes the plan
/// `make_plan` makes (planner.hpp: the same steps, order, de-duplication, budget and suspension;
/// the file holds the bytes `write_plan(path, make_plan(...))` would write), but takes findings
/// one at a time (e.g. from `pipeline::run_each`) and keeps each finished action as its plan-file
/// line in an anonymous temporary file, with a compact index in memory (plan_order.hpp), until
/// the plan is written in execution order.
///
/// Memory for a million one-record actions: about 100 MB (the index), against about 700 MB for
/// the same plan held as `repair_action`s; the temporary file (the plan's uncompressed size) is
/// removed on return, on error, and by the system if the process dies.

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "memhealth/config.hpp"
#include "memhealth/detect/finding.hpp"
#include "memhealth/repair/plan_file.hpp"
#include "memhealth/repair/planner.hpp"

#include <unistd.h>

namespace memhealth {

/// What `make_plan_file` wrote.
struct plan_file_summary {
  plan_header header;  ///< the file's header (count of actions, suspension, deferred notes, ...)
  std::map<std::pair<int, std::string>, std::size_t>
      by_tier_and_type;                 ///< number of actions per (tier, type)
  std::size_t blast_records = 0;        ///< distinct records the plan's actions edit
  std::size_t blast_index_entries = 0;  ///< index entries its index actions remove or rewrite
};

namespace detail {

// Finished actions as plan-file lines in an anonymous temporary file (`std::tmpfile`, in
// P_tmpdir; unlinked at once, so nothing is left behind). Memory: one write buffer of 1 MiB, and
// 12 bytes per action (where its line starts, its tier and type for the summary).
class file_actions {
 public:
  file_actions() : f_(std::tmpfile()) {
    if (!f_)
      throw error(error_code::io, std::string("make_plan_file: cannot create a temporary file: ") +
                                      std::strerror(errno));
  }
  file_actions(const file_actions&) = delete;
  file_actions& operator=(const file_actions&) = delete;
  ~file_actions() { std::fclose(f_); }

  std::size_t put(repair_action&& a) {
    starts_.push_back(end_ + pending_.size());
    append_plan_action_line(pending_, a);
    auto [it, fresh] =
        kinds_.try_emplace({a.tier, a.type}, static_cast<std::uint32_t>(names_.size()));
    if (fresh) names_.push_back(it->first);
    kind_of_.push_back(it->second);
    if (pending_.size() >= (std::size_t{1} << 20)) write_pending();
    return starts_.size() - 1;
  }
  // The line of action `h` (with its '\n').
  const std::string& line(std::size_t h) {
    write_pending();
    const std::size_t at = starts_[h];
    const std::size_t n = (h + 1 < starts_.size() ? starts_[h + 1] : end_) - at;
    line_.resize(n);
    std::size_t got = 0;
    while (got < n) {
      const ssize_t r =
          ::pread(::fileno(f_), line_.data() + got, n - got, static_cast<off_t>(at + got));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0)
        throw error(error_code::io,
                    std::string("make_plan_file: cannot read the temporary file: ") +
                        std::strerror(r < 0 ? errno : EIO));
      got += static_cast<std::size_t>(r);
    }
    return line_;
  }
  repair_action take(std::size_t h) {
    return parse_plan_action_line(line(h), "/actions/" + std::to_string(h));
  }
  [[nodiscard]] const std::pair<int, std::string>& kind(std::size_t h) const {
    return names_[kind_of_[h]];
  }

 private:
  void write_pending() {
    std::size_t done = 0;
    while (done < pending_.size()) {
      const ssize_t w = ::write(::fileno(f_), pending_.data() + done, pending_.size() - done);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0)
        throw error(error_code::io,
                    std::string("make_plan_file: cannot write the temporary file: ") +
                        std::strerror(w < 0 ? errno : EIO));
      done += static_cast<std::size_t>(w);
    }
    end_ += pending_.size();
    pending_.clear();
  }

  std::FILE* f_;
  std::string pending_, line_;
  std::size_t end_ = 0;               // bytes written to the file
  std::deque<std::uint64_t> starts_;  // per action: offset of its line (the next one ends it)
  std::map<std::pair<int, std::string>, std::uint32_t> kinds_;
  std::vector<std::pair<int, std::string>> names_;
  std::deque<std::uint32_t> kind_of_;  // per action: its (tier, type)
};

}  // namespace detail

/// Plans repairs for the findings `feed` hands over against the current state of `store` (read
/// only) and writes the plan to `path` (a plan file, `write_plan_stream`; ".gz": compressed),
/// atomically, in bounded memory (see the file comment).
///
/// @param feed called once as `feed(add)`; it calls `add(const finding&)` for every finding, in
///        the order a `report` would list them (e.g. from `pipeline::run_each`).
/// @param detection recorded in the plan's header (`repair_plan::detection`).
/// @return the header written and counts for a summary.
/// @throws error(io) when the temporary file or `path` cannot be written (then `path` is
///         untouched); what `feed` throws.
template <record_store S, class Feed, class Rules = default_conflict_rules>
plan_file_summary make_plan_file(const S& store, Feed&& feed, const planner_options& opt,
                                 const std::string& path,
                                 const detection_provenance& detection = {},
                                 const Rules& rules = {}) {
  using R = typename S::record_type;
  static_assert(
      conflict_rule<Rules, R>,
      "memhealth: make_plan_file's Rules must be callable as `rule_verdict operator()(const R&, "
      "const R&) const` for the store's record type (e.g. a conflict_rule_chain).");
  detail::file_actions actions;
  detail::plan_builder<S, Rules, detail::file_actions> b(store, opt, rules, actions);
  b.spill_index();
  feed([&](const finding& f) { b.add(f, find_kind_plan(f.kind)); });
  auto finished = std::move(b).finish();  // not a structured binding: a lambda reads `order`
  repair_plan& plan = finished.first;
  const std::vector<std::size_t>& order = finished.second;
  plan.detection = detection;
  plan_file_summary out;
  out.header = header_of(plan);
  out.header.actions = order.size();
  out.blast_records = b.blast_records();
  out.blast_index_entries = b.blast_index_entries();
  for (std::size_t h : order) ++out.by_tier_and_type[actions.kind(h)];
  write_plan_stream(path, out.header, [&](const auto& emit) {
    for (std::size_t h : order) emit(std::string_view(actions.line(h)));
  });
  return out;
}

}  // namespace memhealth
