#pragma once
/// @file pipeline.hpp
/// The detection pipeline: `pipeline<Ds...>` holds detector policies in a `std::tuple` and runs
/// them over a store with one shared `detection_context` (a C++17 fold, no virtual calls).
/// Detection never mutates the store.
///
/// A **detector** is any type D with
/// - `static constexpr std::string_view name` (e.g. "structural"), and
/// - `template <class Ctx> void run(Ctx& ctx, std::vector<finding>& out) const`,
/// which reads the store through `ctx` and appends findings. A detector gates its entry point
/// with `MEMHEALTH_REQUIRE_CAPABILITY` on the record capabilities it uses.
///
/// **Full and incremental runs.** `detect_options::since` set = incremental: only records
/// changed after that instant (updated_at, else created_at; records with neither count as
/// changed) are *checked*, but a changed record is still compared with unchanged ones (a
/// duplicate of an old record is found when the new copy arrives). Detectors ask
/// `ctx.is_changed(i)` and, for pairs, report a pair when at least one side changed.
///
/// **Streamed runs.** `pipeline::run_each(store, sink)` hands the findings to `sink` instead of
/// collecting them in a `report`: after each detector, and, for a detector that calls
/// `ctx.drain(out)` between parts of its work (the structural scan does, every 16,384 records),
/// part by part. The sink sees the findings of `run` in the same order; a run over a million
/// records with a finding each then holds one part of the findings at a time.

#include <Eigen/Core>

#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "memhealth/config.hpp"
#include "memhealth/detect/finding.hpp"
#include "memhealth/record/time.hpp"
#include "memhealth/record/traits.hpp"
#include "memhealth/store/store.hpp"
#include "memhealth/text/normalize.hpp"

namespace memhealth {

/// Options shared by every detector of a run.
struct detect_options {
  /// The clock for staleness and future-timestamp checks (UTC). Default: now.
  utc_time now =
      std::chrono::time_point_cast<std::chrono::milliseconds>(std::chrono::system_clock::now());
  /// Expected embedding dimension; 0 = the store's `dimension()`.
  std::size_t dimension = 0;
  /// Incremental cursor: when set, only records changed after it are checked.
  std::optional<utc_time> since;
  /// Records to check in an incremental run, by record index (true = changed), e.g. those whose
  /// content fingerprint differs from the last run's (store/sqlite_state.hpp): a change is seen
  /// even when its writer did not set `updated_at`. With `since` too, a record is checked when
  /// either selects it. Null = not used. @throws error(precondition) from the detection context
  /// when its size is not the store's.
  std::shared_ptr<const std::vector<bool>> changed{};
};

/// The normalised texts of a run, one per record, stored end to end in one buffer (no string
/// object or allocation per record: at 1,000,000 records this is about 40 MB less than a
/// `std::vector<std::string>`). `operator[](i)` is a view that stays valid while the column lives.
class text_column {
 public:
  /// Number of texts.
  [[nodiscard]] std::size_t size() const noexcept { return ends_.size(); }
  /// True when there are no texts.
  [[nodiscard]] bool empty() const noexcept { return ends_.empty(); }
  /// Text i (i < size()).
  [[nodiscard]] std::string_view operator[](std::size_t i) const noexcept {
    const std::size_t b = i ? ends_[i - 1] : 0;
    return {data_.data() + b, ends_[i] - b};
  }
  /// Reserves room for `n` texts of `bytes` bytes in all.
  void reserve(std::size_t n, std::size_t bytes) {
    ends_.reserve(n);
    data_.reserve(bytes);
  }
  /// Appends a text.
  void push_back(std::string_view s) {
    data_.append(s);
    ends_.push_back(data_.size());
  }

 private:
  std::string data_;
  std::vector<std::size_t> ends_;
};

/// Work shared by all detectors of one run, computed lazily and at most once: the unit-length
/// embedding matrix (the store's own block when it is one and already of unit length, see
/// `unit_embeddings`) and the normalised texts. Holds a reference to the store: the store must
/// outlive the context and must not change during the run.
///
/// @tparam S a `record_store`. @tparam Normalizer a `text_normalization_policy`.
template <record_store S, text_normalization_policy Normalizer = text_normalizer>
class detection_context {
 public:
  using store_type = S;
  using record_type = typename S::record_type;
  /// Row-major float32 matrix type used for unit embeddings (rows x d).
  using matrix_type = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  /// Read-only view of the unit embeddings (`unit_embeddings()`): the context's copy or the
  /// store's block.
  using unit_matrix_view = Eigen::Map<const matrix_type>;

  /// @param store the store to read; @param options clock, dimension, cursor;
  /// @param normalizer text normalisation policy (copied).
  detection_context(const S& store, detect_options options = {}, Normalizer normalizer = {})
      : store_(store), options_(std::move(options)), normalizer_(std::move(normalizer)) {
    if (options_.dimension == 0) options_.dimension = store_.dimension();
    changed_.assign(store_.size(), true);
    if (options_.since) {
      if constexpr (timestamped_record<record_type>) {
        for (std::size_t i = 0; i < store_.size(); ++i) {
          const auto& r = store_.record(i);
          auto t = field::updated_at(r);
          if (!t) t = field::created_at(r);
          changed_[i] = !t || t->instant > *options_.since;
        }
      }
    }
    if (options_.changed) {
      if (options_.changed->size() != store_.size())
        throw error(error_code::precondition,
                    "detect_options::changed has " + std::to_string(options_.changed->size()) +
                        " entries for a store of " + std::to_string(store_.size()) + " records");
      const bool timed = options_.since && timestamped_record<record_type>;
      for (std::size_t i = 0; i < store_.size(); ++i)
        changed_[i] = (timed && changed_[i]) || (*options_.changed)[i];
    }
  }

  /// The store being checked.
  [[nodiscard]] const S& store() const noexcept { return store_; }
  /// Options of this run (dimension resolved).
  [[nodiscard]] const detect_options& options() const noexcept { return options_; }
  /// Expected embedding dimension d (0 = unknown: the store has no embeddings).
  [[nodiscard]] std::size_t dimension() const noexcept { return options_.dimension; }
  /// The clock of this run.
  [[nodiscard]] utc_time now() const noexcept { return options_.now; }
  /// True when record i is to be checked in this run (always true in a full run).
  [[nodiscard]] bool is_changed(std::size_t i) const noexcept { return changed_[i]; }
  /// Number of records checked in this run.
  [[nodiscard]] std::size_t changed_count() const noexcept {
    std::size_t n = 0;
    for (bool c : changed_) n += c;
    return n;
  }
  /// The text normaliser of this run.
  [[nodiscard]] const Normalizer& normalizer() const noexcept { return normalizer_; }

  /// A streamed run's finding sink (`pipeline::run_each`); empty in a collecting run.
  using finding_sink = std::function<void(std::vector<finding>&)>;
  /// Sets the sink `drain` hands findings to (empty: `drain` does nothing).
  void set_sink(finding_sink sink) { sink_ = std::move(sink); }
  /// In a streamed run, hands the findings in `out` to the sink and clears `out`; otherwise does
  /// nothing (the findings stay in `out`). A detector may call it whenever the findings it has
  /// appended so far are final. Exceptions from the sink propagate.
  void drain(std::vector<finding>& out) {
    if (sink_ && !out.empty()) {
      sink_(out);
      out.clear();
    }
  }

  /// Normalised content of every record (index = record index), computed once.
  [[nodiscard]] const text_column& normalized_texts() {
    if (!texts_) {
      texts_.emplace();
      std::size_t bytes = 0;
      for (std::size_t i = 0; i < store_.size(); ++i)
        bytes += field::content(store_.record(i)).size();
      texts_->reserve(store_.size(), bytes + bytes / 16);
      for (std::size_t i = 0; i < store_.size(); ++i)
        texts_->push_back(normalizer_(field::content(store_.record(i))));
    }
    return *texts_;
  }

  /// Unit-length embeddings, computed once: one row per record whose embedding has length d,
  /// only finite values and a non-zero norm (others are left to the structural check), divided
  /// by its norm unless that is already 1 within `unit_norm_tolerance` (then taken as it is).
  /// Shape: rows() x d, row-major, float32; row r belongs to record `unit_rows()[r]`.
  ///
  /// A view, valid while the context and the (unchanged) store live: of the context's own copy,
  /// or, when the store is a `contiguous_embedding_store` whose usable rows are consecutive rows
  /// of its block in record order and all of unit length, of the store's block itself (no copy:
  /// 1.5 GB less at 10^6 x 384). The values are the same either way. Bind it with `const auto&`
  /// or pass it to a `rows_cref`.
  [[nodiscard]] unit_matrix_view unit_embeddings() {
    build_units();
    if (mapped_)
      return unit_matrix_view(mapped_, static_cast<Eigen::Index>(unit_rows_.size()),
                              static_cast<Eigen::Index>(dimension()));
    return unit_matrix_view(units_.data(), units_.rows(), units_.cols());
  }
  /// Record index of each row of `unit_embeddings()`.
  [[nodiscard]] const std::vector<std::size_t>& unit_rows() {
    build_units();
    return unit_rows_;
  }
  /// Row of record i in `unit_embeddings()`, or -1 when it has no usable embedding.
  [[nodiscard]] std::int64_t unit_row_of(std::size_t i) {
    build_units();
    return row_of_[i];
  }
  /// True when `unit_embeddings()` views the store's own block (no copy was made).
  [[nodiscard]] bool units_in_place() {
    build_units();
    return mapped_ != nullptr;
  }

  /// Largest |norm - 1| of a row taken as unit length without dividing it by its norm. 1e-5
  /// admits rows normalised in float32 (their norms are 1 within about 1e-7 to 1e-6 for d up to
  /// a few thousand) and rows read from decimal text with 6 or more significant digits; it moves
  /// a cosine by at most 2e-5 of its value, the order of the rounding of a float32 dot product of
  /// a few hundred terms.
  static constexpr double unit_norm_tolerance = 1e-5;

 private:
  // Norm of a usable embedding (length d, finite, non-zero), else 0.
  double usable_norm(std::span<const float> e) const {
    if (e.size() != dimension()) return 0;
    double sq = 0;
    bool finite = true;
    for (float x : e) {
      finite = finite && std::isfinite(x);
      sq += static_cast<double>(x) * x;
    }
    return finite && sq > 0 && std::isfinite(sq) ? std::sqrt(sq) : 0;
  }

  void build_units() {
    if (built_) return;
    built_ = true;
    row_of_.assign(store_.size(), -1);
    const std::size_t d = dimension();
    if (d == 0) return;
    std::vector<std::size_t> ok;
    // The store's block is read in place while every usable row so far is of unit length and
    // directly follows the previous usable one (`first`: the first usable row; addresses compared
    // as integers, the rows need not be one array).
    bool in_place = contiguous_embedding_store<S>;
    const float* first = nullptr;
    const std::size_t row_bytes = d * sizeof(float);
    auto addr = [](const float* p) { return reinterpret_cast<std::uintptr_t>(p); };
    for (std::size_t i = 0; i < store_.size(); ++i) {
      auto e = store_.embedding(i);
      const double norm = usable_norm(e);
      if (norm == 0) continue;
      if (in_place) {
        if (ok.empty()) first = e.data();
        in_place = addr(e.data()) == addr(first) + ok.size() * row_bytes &&
                   std::abs(norm - 1) <= unit_norm_tolerance;
      }
      ok.push_back(i);
    }
    if constexpr (contiguous_embedding_store<S>) {
      if (in_place && !ok.empty()) {  // and the run lies inside the block
        const auto block = store_.matrix();
        const std::uintptr_t lo = addr(block.data());
        const std::uintptr_t hi = lo + static_cast<std::size_t>(block.rows()) *
                                           static_cast<std::size_t>(block.cols()) * sizeof(float);
        if (static_cast<std::size_t>(block.cols()) == d && addr(first) >= lo &&
            (addr(first) - lo) % row_bytes == 0 && addr(first) + ok.size() * row_bytes <= hi)
          mapped_ = first;
      }
    }
    if (!mapped_) {
      units_.resize(static_cast<Eigen::Index>(ok.size()), static_cast<Eigen::Index>(d));
      for (std::size_t r = 0; r < ok.size(); ++r) {
        auto e = store_.embedding(ok[r]);
        Eigen::Map<const Eigen::RowVectorXf> v(e.data(), static_cast<Eigen::Index>(d));
        if (std::abs(usable_norm(e) - 1) <= unit_norm_tolerance)
          units_.row(static_cast<Eigen::Index>(r)) = v;
        else
          units_.row(static_cast<Eigen::Index>(r)) = v / v.norm();
      }
    }
    for (std::size_t r = 0; r < ok.size(); ++r) row_of_[ok[r]] = static_cast<std::int64_t>(r);
    unit_rows_ = std::move(ok);
  }

  const S& store_;
  detect_options options_;
  Normalizer normalizer_;
  std::vector<bool> changed_;
  std::optional<text_column> texts_;
  bool built_ = false;
  matrix_type units_;              // the normalised copy (empty when mapped_)
  const float* mapped_ = nullptr;  // the store's block, when read in place
  std::vector<std::size_t> unit_rows_;
  std::vector<std::int64_t> row_of_;
  finding_sink sink_;
};

/// Concept for a detector policy usable with context type Ctx.
template <class D, class Ctx>
concept detector_for = requires(const D& d, Ctx& ctx, std::vector<finding>& out) {
  { D::name } -> std::convertible_to<std::string_view>;
  d.run(ctx, out);
};

/// A compile-time pipeline of detector policies, run in order.
/// @code
/// memhealth::pipeline p{memhealth::structural_detector{}, memhealth::duplicate_detector{}};
/// memhealth::report r = p.run(store, {.now = ...});
/// @endcode
template <class... Ds>
class pipeline {
 public:
  /// Holds the given detectors (by value; they are small aggregates of settings).
  constexpr explicit pipeline(Ds... ds) : detectors_(std::move(ds)...) {}

  /// Runs every detector over `store` and collects the findings. Never mutates the store.
  /// @tparam Normalizer text normalisation policy shared by the detectors.
  template <record_store S, text_normalization_policy Normalizer = text_normalizer>
  [[nodiscard]] report run(const S& store, detect_options options = {},
                           Normalizer normalizer = {}) const {
    detection_context<S, Normalizer> ctx(store, std::move(options), std::move(normalizer));
    return run(ctx);
  }

  /// Runs every detector with an existing context (to share its caches with other work).
  template <class Ctx>
  requires(!record_store<Ctx>) [[nodiscard]] report run(Ctx& ctx) const {
    report r;
    r.records_total = ctx.store().size();
    r.records_checked = ctx.changed_count();
    std::apply([&](const auto&... d) { (run_one(d, ctx, r.findings), ...); }, detectors_);
    return r;
  }

  /// Runs every detector over `store` and hands the findings to `sink(std::vector<finding>&)`
  /// (which may move them out; the vector is cleared after each call) in the order `run` would
  /// collect them, part by part (see "Streamed runs" in the file comment).
  /// @return the report's counts (`records_total`, `records_checked`); its `findings` is empty.
  /// Exceptions from `sink` propagate.
  template <record_store S, class Sink, text_normalization_policy Normalizer = text_normalizer>
  requires std::invocable < Sink&, std::vector<finding>
  & > report run_each(const S& store, Sink&& sink, detect_options options = {},
                      Normalizer normalizer = {}) const {
    detection_context<S, Normalizer> ctx(store, std::move(options), std::move(normalizer));
    ctx.set_sink([&sink](std::vector<finding>& f) { sink(f); });
    report r;
    r.records_total = ctx.store().size();
    r.records_checked = ctx.changed_count();
    std::vector<finding> out;
    std::apply([&](const auto&... d) { ((run_one(d, ctx, out), ctx.drain(out)), ...); },
               detectors_);
    return r;
  }

  /// The detectors, for inspection or tuning.
  [[nodiscard]] const std::tuple<Ds...>& detectors() const noexcept { return detectors_; }
  [[nodiscard]] std::tuple<Ds...>& detectors() noexcept { return detectors_; }

 private:
  template <class D, class Ctx>
  static void run_one(const D& d, Ctx& ctx, std::vector<finding>& out) {
    static_assert(detector_for<D, Ctx>,
                  "memhealth: a pipeline element is not a detector: it needs `static constexpr "
                  "std::string_view name` and `template <class Ctx> void run(Ctx&, "
                  "std::vector<memhealth::finding>&) const`.");
    d.run(ctx, out);
  }

  std::tuple<Ds...> detectors_;
};

/// Deduction guide (needed for clang 14, which has no aggregate CTAD).
template <class... Ds>
pipeline(Ds...) -> pipeline<Ds...>;

}  // namespace memhealth
