#pragma once
/// @file structural.hpp
/// Detector "structural": the level-1 checks of SPEC section 2 (empty content, broken vectors,
/// illegal status, missing source/scope, metadata schema, duplicate ids, dangling and cyclic
/// references, merged-but-active records, timestamps, mixed embedding versions).
///
/// ## Checks, the finding each emits, and the capability each needs
/// Every sub-check is compiled in only when the record type has the fields it reads
/// (`if constexpr`), so a user type with just id and content runs the content and duplicate-id
/// checks and silently skips the rest. Only `basic_record` (id, content) is required.
/// | finding kind | severity | repair | needs |
/// |---|---|---|---|
/// | content_empty (empty, or only whitespace / control / format code points) | error |
/// manual_review | basic_record | | embedding_missing | error | reembed | embedded_record | |
/// embedding_dim_mismatch (length != ctx.dimension()) | error | reembed | embedded_record | |
/// embedding_non_finite (NaN / inf) | error | reembed | embedded_record | | embedding_zero_norm
/// (all zeros) | error | reembed | embedded_record | | embedding_not_normalized (abs(norm - 1) >
/// norm_tolerance) | warning | reembed | embedded_record, `expect_unit_norm` | |
/// embedding_zero_padded (see below) | error | reembed | embedded_record | | illegal_status (not
/// active / archived / pending_review; empty too) | error | set_status_pending_review |
/// status_record | | missing_source (empty or blank) | warning | fill_metadata_defaults |
/// sourced_record | | missing_scope (empty or blank) | error | manual_review | scoped_record | |
/// metadata_schema_violation | warning | fill_metadata_defaults | metadata_record, non-empty
/// `schema` | | duplicate_id | critical | manual_review | basic_record | | dangling_reference |
/// error | drop_dangling_links | any link field | | reference_cycle | error | manual_review |
/// duplicate_of or supersedes | | merged_but_active (status "active" and duplicate_of set, or named
/// in any record's supersedes) | error | archive_merged | status_record + duplicate_of or
/// supersedes | | timestamp_inconsistent | warning (error for future) | normalize_timestamps | the
/// time fields involved | | mixed_embedding_version | error (info during a declared migration,
/// `migration_to`) | reembed | versioned_embedding_record |
///
/// ## Zero-padding rule
/// Let t be the number of trailing coordinates that are exactly 0 (either sign) in a vector of
/// length m that has some non-zero coordinate. The vector is zero-padded when
/// `t >= min(zero_tail_min, max(2, m / 4))`. Rationale: a float32 model output is essentially
/// never exactly 0; even int8-quantised vectors hit 0 with probability about 1/256 per coordinate,
/// so 8 trailing zeros happen by chance with probability about 2^-64. The `m / 4` term keeps
/// the rule meaningful for tiny dimensions (a 4-d vector needs 2 trailing zeros). A 384-d model
/// padded to 1536 has 1152 trailing zeros; its likely original dimension (m - t) is in evidence.
/// A second condition keeps *sparse* embeddings (hashed features, SPLADE-like models, the
/// built-in lexical embedder) from being reported: zeros scattered through the head mean the
/// tail is not padding, so the head (the first m - t coordinates) must have at most
/// `max_head_zero_fraction` (default 1/8) exact zeros. A padded dense vector has none.
///
/// ## Timestamps
/// All comparisons are on UTC instants (`timestamp::instant`), never on text, so a local-offset
/// time that sorts later as a string is not "out of order". Problems (evidence `problem`):
/// `updated_before_created`, `accessed_before_created`, `missing_updated_at` (when
/// `require_updated_at`), `in_future` (any of the three after `ctx.now() + future_tolerance`,
/// when `check_future`).
///
/// ## Graph checks
/// Links are resolved against the whole store with `store.find`. Cycles are searched in the
/// graph whose edges point from the record that lost to the one that won: `a.duplicate_of = b`
/// gives a -> b, and `b.supersedes` containing `a` also gives a -> b. So "a is a duplicate of b"
/// together with "b supersedes a" agree (no cycle), while "a duplicate_of b, b duplicate_of a" or
/// "a supersedes b, b supersedes a" (or a record naming itself) are cycles. Strongly connected
/// components are found with Tarjan's algorithm (R. Tarjan, "Depth-first search and linear graph
/// algorithms", SIAM J. Computing 1(2), 1972), iteratively (no recursion-depth limit); each
/// component with more than one record, or one record with a self-edge, is one finding.
///
/// ## Incremental runs
/// Only changed records (`ctx.is_changed`) are checked, but references are resolved against the
/// whole store; a duplicate-id group, a cycle, a supersession or a version mix is reported when
/// any record involved changed.
///
/// ## Threads
/// `threads` > 1 splits the per-record pass into consecutive ranges, one per thread, for stores
/// whose const reads may run concurrently (`concurrent_reads<S>`: `memory_store`); the findings
/// and the facts gathered for the store-wide checks are merged in range order, so the report is
/// identical to the one-thread report. The store-wide checks run on the calling thread.
///
/// @complexity one pass over the n x d embedding block (no allocation per record), plus
/// O(n log n) for duplicate ids (a sort of 64-bit id hashes) and O(n + L log n) for L links.

#include <Eigen/Core>
#include <boost/container/flat_map.hpp>
#include <utf8proc.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "memhealth/detect/finding.hpp"
#include "memhealth/detect/metadata_schema.hpp"
#include "memhealth/detect/scope.hpp"
#include "memhealth/record/memory_record.hpp"
#include "memhealth/record/time.hpp"
#include "memhealth/record/traits.hpp"
#include "memhealth/store/store.hpp"
#include "memhealth/worker_thread.hpp"

namespace memhealth {

template <class R>
class memory_store;

/// Whether concurrent const reads (`record`, `embedding`, `find`, `size`) of store type S are
/// safe, which `structural_detector::threads` > 1 needs. True for `memory_store`; specialise it
/// (derive from std::true_type) for your own store when it is. False otherwise (`sqlite_store`
/// fills caches on read): such stores are always scanned on one thread.
template <class S>
struct concurrent_reads : std::false_type {};
/// `memory_store` allows concurrent reads (its documentation).
template <class R>
struct concurrent_reads<memory_store<R>> : std::true_type {};

namespace detail {

/// True when s has no code point other than whitespace, control or format characters.
inline bool is_blank_text(std::string_view s) noexcept {
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(s.data());
  utf8proc_ssize_t left = static_cast<utf8proc_ssize_t>(s.size());
  while (left > 0) {
    const unsigned char c = *p;
    if (c < 0x80) {
      if (c != ' ' && (c < '\t' || c > '\r') && c >= 0x20 && c != 0x7f) return false;
      ++p;
      --left;
      continue;
    }
    utf8proc_int32_t cp = -1;
    const auto len = utf8proc_iterate(p, left, &cp);
    if (len <= 0) return false;  // invalid bytes are content, not blank
    const auto cat = utf8proc_category(cp);
    if (cat != UTF8PROC_CATEGORY_ZS && cat != UTF8PROC_CATEGORY_ZL && cat != UTF8PROC_CATEGORY_ZP &&
        cat != UTF8PROC_CATEGORY_CC && cat != UTF8PROC_CATEGORY_CF)
      return false;
    p += len;
    left -= len;
  }
  return true;
}

/// What one pass over a vector tells: squared norm, non-finite count, exact-zero tail length.
struct vector_scan {
  double squared_norm = 0;           ///< sum of squares (double; inf/NaN when non_finite > 0)
  std::size_t non_finite = 0;        ///< NaN / inf coordinates
  std::size_t first_non_finite = 0;  ///< index of the first one (when non_finite > 0)
  std::size_t trailing_zeros = 0;    ///< exact zeros at the end
};

// Hot path: one vectorised float reduction (Eigen) over the row; the exact non-finite count is
// only computed when that reduction is not finite (rare). No allocation.
inline vector_scan scan_vector(std::span<const float> e) noexcept {
  vector_scan s;
  const auto m = static_cast<Eigen::Index>(e.size());
  const float sq = Eigen::Map<const Eigen::VectorXf>(e.data(), m).squaredNorm();
  if (std::isfinite(sq)) {
    s.squared_norm = sq;
  } else {  // NaN/inf present, or finite values whose float squares overflow: redo in double
    double acc = 0;
    for (std::size_t k = 0; k < e.size(); ++k) {
      if (!std::isfinite(e[k])) {
        if (s.non_finite++ == 0) s.first_non_finite = k;
      } else {
        acc += static_cast<double>(e[k]) * e[k];
      }
    }
    s.squared_norm = s.non_finite ? std::numeric_limits<double>::quiet_NaN() : acc;
  }
  std::size_t k = e.size();
  while (k > 0 && e[k - 1] == 0.0f) --k;
  s.trailing_zeros = e.size() - k;
  return s;
}

// True when at most `max_fraction` of the coordinates of `head` are exactly zero (a dense
// vector). Only called for vectors that already have a long zero tail, so its cost is rare.
inline bool head_is_dense(std::span<const float> head, double max_fraction) noexcept {
  std::size_t zeros = 0;
  for (float x : head) zeros += x == 0.0f;
  return static_cast<double>(zeros) <= max_fraction * static_cast<double>(head.size());
}

inline std::int64_t to_evidence_int(std::size_t v) noexcept {
  return static_cast<std::int64_t>(v);
}

using memhealth::has_vector;  // store/store.hpp

// What the single record pass of structural_detector gathers for the store-wide checks.
struct structural_scan {
  std::vector<std::pair<std::size_t, std::size_t>> keyed;  // (id hash, record index), all records
  std::vector<std::pair<std::size_t, std::size_t>> edges;  // loser -> winner, resolved links
  std::vector<std::size_t> dup_active;  // changed active records with duplicate_of
  std::vector<std::pair<std::size_t, std::size_t>> superseded;  // (active loser, winner)
  boost::container::flat_map<std::string_view, std::size_t>
      versions;  // version -> records with embeddings
  std::string_view last_version;
  std::size_t* last_count = nullptr;
  bool version_changed = false;  // some record with an embedding is checked in this run
};

}  // namespace detail

/// Detector "structural" (level 1). An aggregate of settings; see the file comment for the
/// checks, their findings, severities, repairs and needed capabilities.
struct structural_detector {
  static constexpr std::string_view name = "structural";

  bool expect_unit_norm = true;  ///< report embeddings whose L2 norm is not 1
  float norm_tolerance = 1e-3f;  ///< allowed abs(norm - 1)
  std::size_t zero_tail_min =
      8;  ///< trailing exact zeros that always mean padding (see rule above)
  double max_head_zero_fraction =
      0.125;               ///< more exact zeros than this in the head: a sparse vector, not padding
  metadata_schema schema;  ///< required metadata keys and types; empty = no schema check
  bool check_future = true;  ///< report timestamps after ctx.now() + future_tolerance
  std::chrono::milliseconds future_tolerance{std::chrono::minutes{5}};  ///< clock-skew allowance
  bool require_updated_at = true;   ///< report a missing updated_at (R must map updated_at)
  std::size_t max_listed_ids = 20;  ///< cap on record ids listed in one store-wide finding
  /// The target version of a declared embedding-model migration (live/sqlite_migration.hpp,
  /// `current_migration`; the `memhealth` tool sets it from the store's state database), "" =
  /// none. While set, mixed versions are the migration's progress, not a fault: the
  /// mixed_embedding_version finding has severity info, suggested repair "migrate_run", evidence
  /// `migration_to`, `migrated` (records with a vector on the target) and `left` (records with a
  /// vector off it), and lists the records left (up to `max_listed_ids`) instead of the minority.
  std::string migration_to{};
  /// Threads for the per-record pass (>= 1; 1 = the calling thread only, the default). Used only
  /// when `concurrent_reads<store>` holds and there are at least 2 x 16,384 records; the records
  /// are cut into `threads` consecutive ranges and the findings are concatenated in range
  /// order, so the output is identical for every value.
  unsigned threads = 1;
  /// Which checks a run makes (see `part`).
  enum class part_kind {
    all,         ///< every check (the default)
    per_record,  ///< each changed record's own fields only (see `part`)
    store_wide   ///< the rest: dangling links, duplicate ids, supersession, cycles, versions
  };
  /// `per_record`: only the checks of one record's own fields (content, embedding, status,
  /// source, scope, metadata, timestamps), whose findings name that record and depend on it, the
  /// run's clock and its dimension alone; `store_wide`: the rest, which need every record's id,
  /// links, status, embedding version and whether it has a vector, but neither its text nor the
  /// vector (`detail::has_vector` asks a store's `vector_length(i)` when it has one). The
  /// findings of `all` are those of the two, interleaved: record by record, its own checks then
  /// its dangling links; then the store-wide findings. detect/pg_workers.hpp runs the two parts
  /// in different processes (per scope in the workers, store-wide in the coordinator).
  part_kind part = part_kind::all;

  /// Appends structural findings; never mutates the store.
  /// One pass over the records does the per-record checks (changed records only) and gathers,
  /// for every record, what the store-wide checks need (id hashes, link edges, versions).
  template <class Ctx>
  void run(Ctx& ctx, std::vector<finding>& out) const {
    using R = typename Ctx::record_type;
    MEMHEALTH_REQUIRE_CAPABILITY(basic_record, R, "structural_detector", "id, content");
    const auto& store = ctx.store();
    const std::size_t n = store.size();
    detail::structural_scan st;
    st.keyed.resize(n);
    constexpr std::size_t min_per_thread = 16384;
    std::size_t workers = 1;
    if constexpr (concurrent_reads<std::remove_cvref_t<decltype(store)>>::value)
      workers = std::clamp<std::size_t>(n / min_per_thread, 1, std::max(1u, threads));
    // The per-record pass in blocks of `block` records, each block's findings handed on with
    // ctx.drain (a streamed run, pipeline.hpp) before the next: findings in record order, and a
    // streamed run holds one block's findings at a time.
    constexpr std::size_t block = std::size_t{1} << 14;
    for (std::size_t b0 = 0; b0 < n; b0 += block) {
      const std::size_t b1 = std::min(n, b0 + block);
      const std::size_t m = b1 - b0;
      const std::size_t w_here = std::min<std::size_t>(workers, std::max<std::size_t>(1, m / 2));
      if (w_here == 1) {
        scan_range(ctx, b0, b1, st, out);
      } else {
        // Consecutive ranges, one per thread; findings and gathered facts merged in range order.
        std::vector<detail::structural_scan> parts(w_here);
        std::vector<std::vector<finding>> found(w_here);
        detail::run_workers(w_here, [&](std::size_t w) {
          scan_range(ctx, b0 + m * w / w_here, b0 + m * (w + 1) / w_here, parts[w], found[w],
                     &st.keyed);
        });
        for (std::size_t w = 0; w < w_here; ++w) {
          for (auto& f : found[w]) out.push_back(std::move(f));
          auto& p = parts[w];
          st.edges.insert(st.edges.end(), p.edges.begin(), p.edges.end());
          st.dup_active.insert(st.dup_active.end(), p.dup_active.begin(), p.dup_active.end());
          st.superseded.insert(st.superseded.end(), p.superseded.begin(), p.superseded.end());
          for (const auto& [v, c] : p.versions) st.versions[v] += c;
          st.version_changed = st.version_changed || p.version_changed;
        }
      }
      if constexpr (requires { ctx.drain(out); }) ctx.drain(out);
    }
    if (part == part_kind::per_record) return;
    report_duplicate_ids(ctx, st, out);
    if constexpr (detail::field_duplicate_of::available<const R> ||
                  detail::field_supersedes::available<const R>) {
      if constexpr (status_record<R>) report_merged_but_active(ctx, st, out);
      report_cycles(ctx, st, out);
    }
    if constexpr (versioned_embedding_record<R>) report_versions(ctx, st, out);
  }

 private:
  // The per-record pass over records [i0, i1): per-record checks of changed records into `out`,
  // facts for the store-wide checks into `st` (id hashes into `*keyed`, default st.keyed).
  template <class Ctx>
  void scan_range(Ctx& ctx, std::size_t i0, std::size_t i1, detail::structural_scan& st,
                  std::vector<finding>& out,
                  std::vector<std::pair<std::size_t, std::size_t>>* keyed = nullptr) const {
    using R = typename Ctx::record_type;
    const auto& store = ctx.store();
    auto& ids = keyed ? *keyed : st.keyed;
    const std::hash<std::string_view> hash;
    for (std::size_t i = i0; i < i1; ++i) {
#if defined(__GNUC__) || defined(__clang__)
      // The text of a record usually lives on the heap: fetch it a few records ahead (only for
      // stores that hand out references, where looking ahead costs nothing). Measured 2.3x on
      // 1M memory_records.
      if constexpr (std::is_reference_v<decltype(store.record(i))>)
        if (i + 8 < i1) __builtin_prefetch(field::content(store.record(i + 8)).data());
#endif
      const R& r = store.record(i);
      const bool changed = ctx.is_changed(i);
      ids[i] = {hash(field::id(r)), i};
      if (changed && part != part_kind::store_wide) check_record(ctx, i, r, out);
      if (part == part_kind::per_record) continue;
      if constexpr (detail::has_any_link_field<R>) scan_links(ctx, i, r, changed, st, out);
      if constexpr (versioned_embedding_record<R>)
        count_version(detail::has_vector(store, i), field::embedding_version(r), changed, st);
    }
  }

  static finding make(std::string_view kind, severity sev, std::string_view id,
                      std::string_view repair) {
    finding f;
    f.kind = std::string(kind);
    f.severity = sev;
    f.detector = std::string(name);
    f.record_ids.emplace_back(id);
    f.suggested_repair = std::string(repair);
    return f;
  }

  // ---------------------------------------------------------------- per record
  // Field checks of one changed record; no allocation unless a finding is emitted.
  template <class Ctx, class R>
  void check_record(Ctx& ctx, std::size_t i, const R& r, std::vector<finding>& out) const {
    const auto& store = ctx.store();
    const std::string_view id = field::id(r);

    if (detail::is_blank_text(field::content(r)))
      out.push_back(make(finding_kinds::content_empty, severity::error, id, "manual_review")
                        .with(evidence_keys::field, std::string("content"))
                        .with("length", detail::to_evidence_int(field::content(r).size())));

    if constexpr (embedded_record<R>) check_embedding(store.embedding(i), ctx.dimension(), id, out);

    if constexpr (status_record<R>) {
      const std::string_view st = field::status(r);
      if (!parse_status(st))
        out.push_back(
            make(finding_kinds::illegal_status, severity::error, id, "set_status_pending_review")
                .with(evidence_keys::field, std::string("status"))
                .with("value", std::string(st)));
    }
    if constexpr (sourced_record<R>)
      if (detail::is_blank_text(field::source(r)))
        out.push_back(
            make(finding_kinds::missing_source, severity::warning, id, "fill_metadata_defaults")
                .with(evidence_keys::field, std::string("source"))
                .with("value", std::string(field::source(r))));
    if constexpr (scoped_record<R>)
      if (detail::is_blank_text(field::scope(r)))
        out.push_back(make(finding_kinds::missing_scope, severity::error, id, "manual_review")
                          .with(evidence_keys::field, std::string("scope"))
                          .with("value", std::string(field::scope(r))));
    if constexpr (metadata_record<R>)
      if (!schema.empty()) {
        const auto v = check_metadata(schema, field::metadata(r));
        if (!v.empty()) {
          finding f = make(finding_kinds::metadata_schema_violation, severity::warning, id,
                           "fill_metadata_defaults");
          f.with(evidence_keys::field, std::string("metadata"));
          for (const auto& k : v.missing) f.with(evidence_keys::missing, k);
          for (const auto& w : v.wrong_type)
            f.with(evidence_keys::wrong_type, w.key)
                .with(evidence_keys::expected, w.expected)
                .with(evidence_keys::actual, w.actual);
          out.push_back(std::move(f));
        }
      }
    check_timestamps(ctx, r, id, out);
  }

  // Resolves every link of record i once: dangling links of changed records are findings; the
  // others become graph edges (loser -> winner) and supersession facts for the store-wide checks.
  template <class Ctx, class R>
  void scan_links(Ctx& ctx, std::size_t i, const R& r, bool changed, detail::structural_scan& st,
                  std::vector<finding>& out) const {
    const auto& store = ctx.store();
    detail::for_each_link(r, [&](std::string_view link_field, std::string_view target) {
      const auto j = store.find(target);
      if (!j) {
        if (changed)
          out.push_back(make(finding_kinds::dangling_reference, severity::error, field::id(r),
                             "drop_dangling_links")
                            .with(evidence_keys::field, std::string(link_field))
                            .with(evidence_keys::target, std::string(target)));
        return;
      }
      if (link_field == "duplicate_of") {
        st.edges.emplace_back(i, *j);
      } else if (link_field == "supersedes") {
        st.edges.emplace_back(*j, i);
        if constexpr (status_record<R>)
          if (*j != i && (changed || ctx.is_changed(*j)) &&
              field::status(store.record(*j)) == "active")
            st.superseded.emplace_back(*j, i);
      }
    });
    if constexpr (status_record<R> && detail::field_duplicate_of::available<const R>)
      if (changed && !field::duplicate_of(r).empty() && field::status(r) == "active")
        st.dup_active.push_back(i);
  }

  // Counts records with an embedding per embedding_version; consecutive records usually share
  // a version, so the last counter is reused without a lookup.
  static void count_version(bool with_vector, std::string_view v, bool changed,
                            detail::structural_scan& st) {
    if (!with_vector) return;
    st.version_changed = st.version_changed || changed;
    if (st.last_count && v == st.last_version) {
      ++*st.last_count;
      return;
    }
    auto it = st.versions.try_emplace(v, 0).first;  // may move other counts: re-take the pointer
    ++it->second;
    st.last_version = v;
    st.last_count = &it->second;
  }

  // Numeric checks on one vector, in order: missing | dimension, then non-finite | zero norm |
  // (not normalised, zero-padded). One scan (detail::scan_vector), no allocation.
  void check_embedding(std::span<const float> e, std::size_t d, std::string_view id,
                       std::vector<finding>& out) const {
    if (e.empty()) {
      out.push_back(make(finding_kinds::embedding_missing, severity::error, id, "reembed")
                        .with(evidence_keys::field, std::string("embedding")));
      return;
    }
    if (d != 0 && e.size() != d)
      out.push_back(make(finding_kinds::embedding_dim_mismatch, severity::error, id, "reembed")
                        .with(evidence_keys::field, std::string("embedding"))
                        .with("dimension", detail::to_evidence_int(e.size()))
                        .with("expected_dimension", detail::to_evidence_int(d)));
    const auto s = detail::scan_vector(e);
    if (s.non_finite) {
      out.push_back(make(finding_kinds::embedding_non_finite, severity::error, id, "reembed")
                        .with(evidence_keys::field, std::string("embedding"))
                        .with("non_finite_count", detail::to_evidence_int(s.non_finite))
                        .with("first_index", detail::to_evidence_int(s.first_non_finite)));
      return;
    }
    if (s.squared_norm == 0) {
      out.push_back(make(finding_kinds::embedding_zero_norm, severity::error, id, "reembed")
                        .with(evidence_keys::field, std::string("embedding"))
                        .with("norm", 0.0));
      return;
    }
    const double norm = std::sqrt(s.squared_norm);
    if (expect_unit_norm && std::abs(norm - 1.0) > static_cast<double>(norm_tolerance))
      out.push_back(make(finding_kinds::embedding_not_normalized, severity::warning, id, "reembed")
                        .with(evidence_keys::field, std::string("embedding"))
                        .with("norm", norm)
                        .with("tolerance", static_cast<double>(norm_tolerance)));
    const std::size_t m = e.size();
    const std::size_t need = std::min(zero_tail_min, std::max<std::size_t>(2, m / 4));
    if (s.trailing_zeros >= std::max<std::size_t>(need, 1) &&
        detail::head_is_dense(e.first(m - s.trailing_zeros), max_head_zero_fraction))
      out.push_back(make(finding_kinds::embedding_zero_padded, severity::error, id, "reembed")
                        .with(evidence_keys::field, std::string("embedding"))
                        .with("trailing_zeros", detail::to_evidence_int(s.trailing_zeros))
                        .with("likely_dimension", detail::to_evidence_int(m - s.trailing_zeros))
                        .with("dimension", detail::to_evidence_int(m)));
  }

  template <class Ctx, class R>
  void check_timestamps(Ctx& ctx, const R& r, std::string_view id,
                        std::vector<finding>& out) const {
    std::optional<timestamp> created, updated, accessed;
    if constexpr (detail::field_created_at::available<const R>) created = field::created_at(r);
    if constexpr (detail::field_updated_at::available<const R>) updated = field::updated_at(r);
    if constexpr (detail::field_last_accessed_at::available<const R>)
      accessed = field::last_accessed_at(r);
    auto problem = [&](std::string_view what, severity sev, std::string_view fld,
                       const std::optional<timestamp>& t) {
      finding f = make(finding_kinds::timestamp_inconsistent, sev, id, "normalize_timestamps");
      f.with(evidence_keys::problem, std::string(what))
          .with(evidence_keys::field, std::string(fld));
      if (t) f.with("value", format_timestamp(*t));
      return f;
    };
    if (created && updated && updated->instant < created->instant)
      out.push_back(problem("updated_before_created", severity::warning, "updated_at", updated)
                        .with("created_at", format_timestamp(*created)));
    if (created && accessed && accessed->instant < created->instant)
      out.push_back(
          problem("accessed_before_created", severity::warning, "last_accessed_at", accessed)
              .with("created_at", format_timestamp(*created)));
    if constexpr (detail::field_updated_at::available<const R>)
      if (require_updated_at && !updated)
        out.push_back(problem("missing_updated_at", severity::warning, "updated_at", std::nullopt));
    if (check_future) {
      const utc_time limit = ctx.now() + future_tolerance;
      auto future = [&](std::string_view fld, const std::optional<timestamp>& t) {
        if (t && t->instant > limit)
          out.push_back(problem("in_future", severity::error, fld, t)
                            .with("ahead_seconds",
                                  std::chrono::duration<double>(t->instant - ctx.now()).count()));
      };
      future("created_at", created);
      future("updated_at", updated);
      future("last_accessed_at", accessed);
    }
  }

  // ---------------------------------------------------------------- store-wide
  // Groups equal ids by sorting (hash, index) pairs: O(n log n) on 16-byte keys, then id
  // comparisons only inside runs of equal hashes.
  template <class Ctx>
  void report_duplicate_ids(Ctx& ctx, detail::structural_scan& st,
                            std::vector<finding>& out) const {
    const auto& store = ctx.store();
    auto& keyed = st.keyed;
    const std::size_t n = keyed.size();
    constexpr std::size_t taken = static_cast<std::size_t>(-1);
    std::sort(keyed.begin(), keyed.end());
    std::vector<std::size_t> group;
    for (std::size_t a = 0; a < n;) {
      std::size_t b = a + 1;
      while (b < n && keyed[b].first == keyed[a].first) ++b;
      // A run of equal hashes (size >= 2 only for duplicated ids or collisions): split by id.
      for (std::size_t x = a; x + 1 < b; ++x) {
        if (keyed[x].second == taken) continue;
        const std::string_view id = field::id(store.record(keyed[x].second));
        group.assign(1, keyed[x].second);
        for (std::size_t y = x + 1; y < b; ++y)
          if (keyed[y].second != taken && field::id(store.record(keyed[y].second)) == id) {
            group.push_back(keyed[y].second);
            keyed[y].second = taken;
          }
        if (group.size() < 2) continue;
        std::sort(group.begin(), group.end());
        if (!std::any_of(group.begin(), group.end(),
                         [&](std::size_t i) { return ctx.is_changed(i); }))
          continue;
        finding f = make(finding_kinds::duplicate_id, severity::critical, id, "manual_review");
        f.with("count", detail::to_evidence_int(group.size()));
        for (std::size_t i : group) f.with("index", detail::to_evidence_int(i));
        out.push_back(std::move(f));
      }
      a = b;
    }
  }

  // Merges the two sorted lists (active duplicates, active superseded records): one finding per
  // record with every reason in evidence.
  template <class Ctx>
  void report_merged_but_active(Ctx& ctx, detail::structural_scan& st,
                                std::vector<finding>& out) const {
    using R = typename Ctx::record_type;
    const auto& store = ctx.store();
    auto& sup = st.superseded;
    std::sort(sup.begin(), sup.end());
    sup.erase(std::unique(sup.begin(), sup.end()), sup.end());
    const auto& dup = st.dup_active;  // ascending by construction
    constexpr std::size_t none = static_cast<std::size_t>(-1);
    std::size_t a = 0, b = 0;
    while (a < dup.size() || b < sup.size()) {
      const std::size_t i =
          std::min(a < dup.size() ? dup[a] : none, b < sup.size() ? sup[b].first : none);
      const R& r = store.record(i);
      finding f =
          make(finding_kinds::merged_but_active, severity::error, field::id(r), "archive_merged");
      f.with("status", std::string("active"));
      if (a < dup.size() && dup[a] == i) {
        if constexpr (detail::field_duplicate_of::available<const R>)
          f.with("duplicate_of", std::string(field::duplicate_of(r)));
        ++a;
      }
      for (; b < sup.size() && sup[b].first == i; ++b)
        f.with("superseded_by", std::string(field::id(store.record(sup[b].second))));
      out.push_back(std::move(f));
    }
  }

  // Tarjan SCC over the loser -> winner edges (see "Graph checks" above).
  template <class Ctx>
  void report_cycles(Ctx& ctx, const detail::structural_scan& st, std::vector<finding>& out) const {
    const auto& store = ctx.store();
    const auto& edges = st.edges;
    if (edges.empty()) return;
    const std::size_t n = store.size();
    // CSR adjacency (loser -> winner)
    std::vector<std::size_t> off(n + 1, 0), adj(edges.size());
    for (const auto& e : edges) ++off[e.first + 1];
    for (std::size_t v = 0; v < n; ++v) off[v + 1] += off[v];
    {
      std::vector<std::size_t> pos(off.begin(), off.end() - 1);
      for (const auto& e : edges) adj[pos[e.first]++] = e.second;
    }
    // Iterative Tarjan SCC.
    constexpr std::size_t unvisited = static_cast<std::size_t>(-1);
    std::vector<std::size_t> index(n, unvisited), low(n, 0), stack, comp;
    std::vector<char> on_stack(n, 0);
    std::vector<std::pair<std::size_t, std::size_t>> call;  // (node, next edge position)
    std::size_t counter = 0;
    auto visit = [&](std::size_t v) {
      index[v] = low[v] = counter++;
      stack.push_back(v);
      on_stack[v] = 1;
      call.emplace_back(v, off[v]);
    };
    auto has_self_edge = [&](std::size_t v) {
      for (std::size_t k = off[v]; k < off[v + 1]; ++k)
        if (adj[k] == v) return true;
      return false;
    };
    for (std::size_t s = 0; s < n; ++s) {
      if (index[s] != unvisited || off[s] == off[s + 1]) continue;
      visit(s);
      while (!call.empty()) {
        const std::size_t v = call.back().first;
        if (call.back().second < off[v + 1]) {
          const std::size_t w = adj[call.back().second++];
          if (index[w] == unvisited)
            visit(w);
          else if (on_stack[w])
            low[v] = std::min(low[v], index[w]);
          continue;
        }
        call.pop_back();
        if (!call.empty()) {
          const std::size_t u = call.back().first;
          low[u] = std::min(low[u], low[v]);
        }
        if (low[v] != index[v]) continue;
        comp.clear();
        std::size_t w;
        do {
          w = stack.back();
          stack.pop_back();
          on_stack[w] = 0;
          comp.push_back(w);
        } while (w != v);
        if (comp.size() < 2 && !has_self_edge(v)) continue;
        if (!std::any_of(comp.begin(), comp.end(),
                         [&](std::size_t c) { return ctx.is_changed(c); }))
          continue;
        std::sort(comp.begin(), comp.end());
        finding f;
        f.kind = std::string(finding_kinds::reference_cycle);
        f.severity = severity::error;
        f.detector = std::string(name);
        for (std::size_t c : comp) f.record_ids.emplace_back(field::id(store.record(c)));
        f.with("length", detail::to_evidence_int(comp.size()));
        f.with("edges", std::string("duplicate_of,supersedes"));
        f.suggested_repair = "manual_review";
        out.push_back(std::move(f));
      }
    }
  }

  template <class Ctx>
  void report_versions(Ctx& ctx, const detail::structural_scan& st,
                       std::vector<finding>& out) const {
    const auto& counts = st.versions;
    if (counts.size() < 2 || !st.version_changed) return;
    const auto& store = ctx.store();
    const std::size_t n = store.size();
    auto majority = counts.begin();  // highest count; ties: the smaller version text
    for (auto it = counts.begin(); it != counts.end(); ++it)
      if (it->second > majority->second) majority = it;
    finding f;
    f.kind = std::string(finding_kinds::mixed_embedding_version);
    f.severity = severity::error;
    f.detector = std::string(name);
    f.suggested_repair = "reembed";
    if (!migration_to.empty()) {  // a declared migration: progress, not a fault
      f.severity = severity::info;
      f.suggested_repair = "migrate_run";
      f.with("migration_to", migration_to);
      std::size_t migrated = 0, left = 0;
      for (const auto& [v, c] : counts) (v == migration_to ? migrated : left) += c;
      for (const auto& [v, c] : counts)
        f.with("version:" + std::string(v), detail::to_evidence_int(c));
      for (std::size_t i = 0; i < n && f.record_ids.size() < max_listed_ids; ++i)
        if (detail::has_vector(store, i) &&
            field::embedding_version(store.record(i)) != migration_to)
          f.record_ids.emplace_back(field::id(store.record(i)));
      f.with("migrated", detail::to_evidence_int(migrated));
      f.with("left", detail::to_evidence_int(left));
      f.with("listed", detail::to_evidence_int(f.record_ids.size()));
      out.push_back(std::move(f));
      return;
    }
    f.with("majority_version", std::string(majority->first));
    for (const auto& [v, c] : counts)
      f.with("version:" + std::string(v), detail::to_evidence_int(c));
    std::size_t minority = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (!detail::has_vector(store, i)) continue;
      const auto& r = store.record(i);
      if (field::embedding_version(r) == majority->first) continue;
      if (minority++ < max_listed_ids) f.record_ids.emplace_back(field::id(r));
    }
    f.with(evidence_keys::minority_count, detail::to_evidence_int(minority));
    f.with("listed", detail::to_evidence_int(f.record_ids.size()));
    out.push_back(std::move(f));
  }
};

}  // namespace memhealth
