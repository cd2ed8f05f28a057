#pragma once
/// @file write_gate.hpp
/// `memhealth::write_gate`: checks a record at write time, before a host inserts or updates it,
/// and suggests what to do with it (issue 20, "a write-time gate in the library").
///
/// ## Use
/// @code
/// memhealth::write_gate<my_record> gate;            // or write_gate<my_record>(settings)
/// gate.observe_all(existing_records);               // once, at start-up
/// // the host's write path:
/// auto verdict = gate.inspect(candidate);           // findings + a suggested decision
/// switch (verdict.decision) { ... }                 // store, link, supersede, hold or reject
/// host.write(candidate);
/// gate.observe(candidate);                          // keep the gate's indexes current
/// // a delete: gate.forget(id)
/// @endcode
///
/// ## What `inspect` checks, against the records the gate has observed
/// - **The record itself**: the structural checks (`structural_detector`: empty content, broken
///   vectors, illegal status, missing scope or source, metadata schema, timestamps, references
///   that point at itself), hygiene (`hygiene_detector`) and content hygiene (secrets, mojibake,
///   oversized content, content dates against created_at) on the candidate alone; a link to an
///   id the gate has not observed is a `dangling_reference`; a vector of another model than the
///   one most observed records carry is `mixed_embedding_version`; with `write_kind::insert`, an
///   id already observed is `duplicate_id`; with `write_kind::update`, an id the gate has not
///   observed is a `dangling_reference` (warning, evidence `problem` = "update_of_unknown_id",
///   suggested repair `manual_review`): the update names no record, so the decision is taken as
///   for a new record (usually `store`: store it as new), and the host should check the id (or
///   whether the gate missed an `observe`). Timestamp problems are one `timestamp_inconsistent`
///   finding per candidate (each problem an evidence entry, the worst severity).
/// - **Exact duplicates**: a record of the same scope whose normalised text (`text_normalizer`)
///   is equal, through a hash index (O(1) expected).
/// - **Near duplicates**: cosine of the unit vectors >= `near_duplicate_threshold` within the
///   scope, with the duplicate detector's guards (negation or change cue on one side only, the
///   near-duplicate guards of duplicate_guards.hpp, a pair the judge calls a conflict).
/// - **Conflicts**: the `Judge` (default `claim_conflict_judge<>`, claim_judge.hpp) on the
///   records of the scope whose cosine is >= `conflict_candidate_threshold`, the most similar
///   `max_judged` first; and structured claims of one key (a fact with another value, a
///   preference with the opposite polarity), as `conflict_detector` does. A candidate without a
///   usable vector (or a record type without vectors) gets exact duplicates and structured-claim
///   conflicts only, and a `check_skipped` finding (info) that says so; archived and
///   pending_review records are never compared with.
/// The similarity scan is one pass over the scope's vectors in int8 form (a quarter of the bytes;
/// a proven error bound sends every row that could reach the threshold to an exact float32
/// rescore with `Kernel`, so nothing is missed: see `scan`), so an inspect costs O(scope size x d)
/// for the vectors plus O(max_judged) judge calls; the rest of the store is never read.
///
/// ## The decision (`gate_decision`), first that applies
/// 1. `reject`: the record itself has a finding whose kind is in `reject_kinds` (structurally
///    invalid: empty content, a vector of the wrong length, NaN or zero, an illegal status, no
///    scope, a duplicate id on insert) or holds a credential (`secret_in_content`: a secret must
///    not be stored as a memory; its evidence is masked).
/// 2. `hold_for_review`: it conflicts with a record and the judge says only a person can decide
///    (state against a one-off event, a scene-specific exception), or the conflict rules
///    (`Rules`, default SPEC section 3's `default_conflict_rules`) pick the existing record or
///    cannot decide. `target_id` is that record.
/// 3. `supersede`: it conflicts only with records the rules say it beats (typically it is newer);
///    `superseded_ids` lists them (the host archives them and sets `supersedes`).
/// 4. `store_as_duplicate`: an exact or near duplicate of `target_id` (the existing record stays
///    the primary; the host may store the candidate with `duplicate_of` set, or not at all).
/// 5. `store`.
/// The gate never changes anything itself: it suggests, the host writes.
///
/// ## Threads and errors
/// One writer and many readers: `inspect` takes a shared lock, `observe`, `observe_all` and
/// `forget` an exclusive one (`writer_first_mutex`: a waiting writer goes before new readers,
/// so a stream of inspects never starves the writer), so any number of threads may inspect
/// while one thread writes. Bad records never throw: they become findings (and `reject`). A judge
/// or rule that throws propagates. `observe` of a record whose vector cannot be used (wrong length,
/// NaN, zero) keeps it for the text and claim checks only.
///
/// Memory: per observed record a copy of the record (without its raw vector when the record type
/// lets the gate clear it), its normalised text, its unit vector (d floats) and its int8 form
/// (d bytes) plus index entries; the host's store is never referenced.

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#endif

#include "memhealth/detect/claim_judge.hpp"
#include "memhealth/detect/conflict_judge.hpp"
#include "memhealth/detect/content_size.hpp"
#include "memhealth/detect/content_time.hpp"
#include "memhealth/detect/duplicate_guards.hpp"
#include "memhealth/detect/duplicates.hpp"
#include "memhealth/detect/finding.hpp"
#include "memhealth/detect/hygiene.hpp"
#include "memhealth/detect/mojibake.hpp"
#include "memhealth/detect/pipeline.hpp"
#include "memhealth/detect/secrets.hpp"
#include "memhealth/detect/structural.hpp"
#include "memhealth/detect/vocabulary.hpp"
#include "memhealth/record/traits.hpp"
#include "memhealth/repair/conflict_rules.hpp"
#include "memhealth/similarity/blocking.hpp"
#include "memhealth/similarity/kernels.hpp"
#include "memhealth/store/memory_store.hpp"
#include "memhealth/text/normalize.hpp"

namespace memhealth {

namespace detail {
// sum_k a_k b_k of int8 rows (exact in int32 for d <= 100,000).
inline std::int32_t gate_dot_i8_portable(const std::int8_t* a, const std::int8_t* b,
                                         std::size_t d) noexcept {
  std::int32_t s = 0;
  for (std::size_t k = 0; k < d; ++k)
    s += static_cast<std::int32_t>(static_cast<std::int16_t>(a[k]) *
                                   static_cast<std::int16_t>(b[k]));
  return s;
}
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
// The same with AVX2: 16 values per step, sign-extended to 16 bits, multiplied and added in
// pairs into eight 32-bit sums (vpmaddwd).
__attribute__((target("avx2"))) inline std::int32_t gate_dot_i8_avx2(const std::int8_t* a,
                                                                     const std::int8_t* b,
                                                                     std::size_t d) noexcept {
  __m256i acc = _mm256_setzero_si256();
  std::size_t k = 0;
  for (; k + 16 <= d; k += 16) {
    const __m256i x =
        _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + k)));
    const __m256i y =
        _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + k)));
    acc = _mm256_add_epi32(acc, _mm256_madd_epi16(x, y));
  }
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(acc), _mm256_extracti128_si256(acc, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  std::int32_t r = _mm_cvtsi128_si32(s);
  for (; k < d; ++k) r += static_cast<std::int32_t>(a[k]) * b[k];
  return r;
}
#endif
}  // namespace detail

/// A shared mutex that lets a waiting writer in before new readers: with `std::shared_mutex`
/// (glibc's rwlock prefers readers) a stream of `inspect` calls can keep `observe` waiting for
/// ever. Meets the SharedMutex requirements used here (`std::shared_lock`, `std::unique_lock`).
class writer_first_mutex {
 public:
  /// Exclusive: waits until no reader or writer holds it; new readers wait meanwhile.
  void lock() {
    std::unique_lock l(m_);
    ++writers_waiting_;
    cv_.wait(l, [&] { return !writer_ && readers_ == 0; });
    --writers_waiting_;
    writer_ = true;
  }
  /// Releases exclusive ownership.
  void unlock() {
    {
      std::lock_guard l(m_);
      writer_ = false;
    }
    cv_.notify_all();
  }
  /// Shared: waits while a writer holds it or waits for it.
  void lock_shared() {
    std::unique_lock l(m_);
    cv_.wait(l, [&] { return !writer_ && writers_waiting_ == 0; });
    ++readers_;
  }
  /// Releases shared ownership.
  void unlock_shared() {
    bool last = false;
    {
      std::lock_guard l(m_);
      last = --readers_ == 0;
    }
    if (last) cv_.notify_all();
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  std::size_t readers_ = 0;
  std::size_t writers_waiting_ = 0;
  bool writer_ = false;
};

/// What the gate suggests the host do with a candidate record (see the file comment).
enum class gate_decision : std::uint8_t {
  store,               ///< nothing against it: write it
  store_as_duplicate,  ///< a duplicate of `target_id`: link it (`duplicate_of`) or drop it
  supersede,           ///< it wins conflicts with `superseded_ids`: write it, archive those
  hold_for_review,     ///< it conflicts and a person must decide: write it as pending_review
  reject,              ///< structurally invalid: do not write it
};

/// Text of a decision: "store", "store_as_duplicate", "supersede", "hold_for_review", "reject".
constexpr std::string_view to_string(gate_decision d) noexcept {
  switch (d) {
    case gate_decision::store:
      return "store";
    case gate_decision::store_as_duplicate:
      return "store_as_duplicate";
    case gate_decision::supersede:
      return "supersede";
    case gate_decision::hold_for_review:
      return "hold_for_review";
    case gate_decision::reject:
      return "reject";
  }
  return "";
}

/// Whether the host is about to insert a new record or update one (same id).
enum class write_kind : std::uint8_t {
  upsert,  ///< an id the gate has observed is an update, any other an insert
  insert,  ///< a new record: an id already observed is `duplicate_id` (reject)
  update,  ///< a new version of a record with the same id
};

/// The gate's answer for one candidate.
struct gate_verdict {
  gate_decision decision = gate_decision::store;  ///< the suggestion
  /// The record the decision is about: the primary (store_as_duplicate), the record it conflicts
  /// with (hold_for_review), the first superseded one (supersede); empty otherwise.
  std::string target_id;
  std::vector<std::string> superseded_ids;  ///< supersede: every record it beats
  /// Every finding about the candidate: its own checks, then duplicates, then conflicts. The
  /// candidate's id comes first in `record_ids` of the pair findings.
  std::vector<finding> findings;
  std::string reason;  ///< one line for logs: why this decision
};

/// Settings of a `write_gate`; defaults follow the default pipeline's (SPEC section 2).
struct write_gate_settings {
  float near_duplicate_threshold = 0.92f;     ///< cosine in [-1, 1] for a near duplicate
  float conflict_candidate_threshold = 0.6f;  ///< cosine for a pair to reach the judge
  std::size_t max_judged = 32;                ///< most judge calls per inspect (most similar first)
  bool skip_negation_mismatch = true;         ///< as `duplicate_detector`'s
  bool skip_guarded = true;                   ///< as `duplicate_detector`'s
  bool skip_judged_conflicts = true;          ///< as `duplicate_detector`'s
  std::size_t dimension = 0;                  ///< expected d; 0 = the first usable vector's
  structural_detector structural{};           ///< the record's own checks
  hygiene_detector hygiene{};                 ///< junk-content checks
  secret_detector secrets{};                  ///< credentials in the content (critical)
  mojibake_detector mojibake{};               ///< text decoded with the wrong encoding
  content_size_detector content_size{};       ///< oversized content
  content_time_detector content_time{};       ///< content dates that contradict created_at
  /// Finding kinds of the record's own checks that make the decision `reject`.
  std::vector<std::string> reject_kinds = {std::string(finding_kinds::content_empty),
                                           std::string(finding_kinds::embedding_dim_mismatch),
                                           std::string(finding_kinds::embedding_non_finite),
                                           std::string(finding_kinds::embedding_zero_norm),
                                           std::string(finding_kinds::embedding_zero_padded),
                                           std::string(finding_kinds::illegal_status),
                                           std::string(finding_kinds::missing_scope),
                                           std::string(finding_kinds::duplicate_id),
                                           std::string(finding_kinds::reference_cycle),
                                           std::string(finding_kinds::secret_in_content)};
};

/// The write-time gate over record type R (see the file comment).
/// @tparam R a record type with id, content and scope (`scoped_record`); vectors, status,
///         claims and timestamps are used when R maps them.
/// @tparam Judge conflict judge for text pairs (conflict_judge.hpp's signature).
/// @tparam Rules conflict-resolution rules (conflict_rules.hpp) that pick the winner of a conflict.
/// @tparam Kernel similarity kernel on unit rows (kernels.hpp).
template <class R = memory_record, class Judge = claim_conflict_judge<>,
          class Rules = default_conflict_rules, class Kernel = cosine_kernel>
class write_gate {
 public:
  using record_type = R;  ///< the record type it checks

  /// An empty gate. @param settings thresholds and checks; @param judge, @param rules, @param
  /// kernel the policies (copied).
  explicit write_gate(write_gate_settings settings = {}, Judge judge = {}, Rules rules = {},
                      Kernel kernel = {})
      : settings_(std::move(settings)),
        judge_(std::move(judge)),
        rules_(std::move(rules)),
        kernel_(std::move(kernel)),
        dim_(settings_.dimension) {
    MEMHEALTH_REQUIRE_CAPABILITY(scoped_record, R, "write_gate", "scope");
  }

  /// Checks `candidate` against the observed records and suggests a decision. Thread safe with
  /// other `inspect` calls; never throws on bad data (see the file comment).
  /// @param now the clock for the timestamp checks (UTC).
  [[nodiscard]] gate_verdict inspect(
      const R& candidate, write_kind kind = write_kind::upsert,
      utc_time now = std::chrono::time_point_cast<std::chrono::milliseconds>(
          std::chrono::system_clock::now())) const {
    std::shared_lock lock(mu_);
    gate_verdict v;
    const std::string id(field::id(candidate));
    const auto self = by_id_.find(id);
    const bool exists = self != by_id_.end();
    own_checks(candidate, kind, exists, now, v.findings);
    for (const auto& f : v.findings)
      if (std::find(settings_.reject_kinds.begin(), settings_.reject_kinds.end(), f.kind) !=
          settings_.reject_kinds.end()) {
        v.decision = gate_decision::reject;
        v.reason = "invalid: " + f.kind;
        return v;
      }
    if (!detail::semantic_is_active(candidate)) {
      v.reason = "not active: not compared with other records";
      return v;
    }
    const std::size_t skip = exists ? self->second : npos;
    const std::string norm = normalizer_(field::content(candidate));
    const std::string scope(detail::semantic_scope_of(candidate));
    const auto sc = scopes_.find(scope);
    if (sc == scopes_.end()) {
      v.reason = "first record of its scope";
      return v;
    }
    const scope_index& si = sc->second;

    // exact duplicate: same normalised text in the scope
    std::string exact_of;
    const auto [lo, hi] = si.by_text.equal_range(std::hash<std::string_view>{}(norm));
    for (auto it = lo; it != hi && exact_of.empty(); ++it)
      if (it->second != skip && entries_[it->second]->norm == norm && entries_[it->second]->active)
        exact_of = entries_[it->second]->id;

    // similar records: one pass over the scope's unit vectors
    std::vector<std::pair<float, std::size_t>> similar;  // (cosine, entry)
    std::vector<float> unit;
    const bool has_unit = unit_of(candidate, unit);
    if (!has_unit) {
      // only exact duplicates and structured claims can be found without a vector: say so
      finding f;
      f.kind = std::string(finding_kinds::check_skipped);
      f.severity = severity::info;
      f.detector = "write_gate";
      f.record_ids = {id};
      f.with("check", std::string("near_duplicate,conflict"))
          .with(evidence_keys::reason,
                std::string("no usable vector: near duplicates and text conflicts are not "
                            "checked (embed the record first)"));
      v.findings.push_back(std::move(f));
    }
    if (has_unit && si.rows > 0) {
      const float t =
          std::min(settings_.near_duplicate_threshold, settings_.conflict_candidate_threshold);
      scan(si, unit, t, skip, similar);
    }
    std::sort(similar.begin(), similar.end(),
              [](const auto& a, const auto& b) { return a.first > b.first; });

    // structured claims of one key decide their pairs
    std::vector<std::pair<std::size_t, conflict_verdict>> conflicts;  // (entry, verdict)
    std::vector<std::size_t> decided;
    if constexpr (claimed_record<R>) claim_pairs(candidate, si, skip, conflicts, decided);

    // judge the most similar, and find the best near duplicate (the candidate's negation cue is
    // read once, when a near pair first needs it)
    std::optional<bool> cand_negated;
    const auto candidate_negated = [&] {
      if (!cand_negated) cand_negated = negated(norm, candidate);
      return *cand_negated;
    };
    std::string near_of;
    float near_cos = 0;
    std::size_t judged = 0;
    for (const auto& [cos, e] : similar) {
      const entry& x = *entries_[e];
      if (!x.active || x.norm == norm) continue;
      if (std::find(decided.begin(), decided.end(), e) != decided.end()) continue;
      std::optional<conflict_verdict> jv;
      if (cos >= settings_.conflict_candidate_threshold && judged < settings_.max_judged) {
        ++judged;
        jv = judge_(candidate, norm, x.record, x.norm, cos);
        if (jv->conflict) {
          conflicts.emplace_back(e, *jv);
          continue;
        }
      }
      if (cos < settings_.near_duplicate_threshold || !near_of.empty()) continue;
      if (settings_.skip_negation_mismatch && candidate_negated() != x.negated) continue;
      if (settings_.skip_guarded && near_duplicate_guard(norm, x.norm) != duplicate_guard::none)
        continue;
      if (settings_.skip_judged_conflicts) {
        if (jv ? keeps_apart(*jv) : keeps_apart(judge_(candidate, norm, x.record, x.norm, cos)))
          continue;
      }
      near_of = x.id;
      near_cos = cos;
    }

    if (!exact_of.empty()) {
      finding f = pair_finding(finding_kinds::exact_duplicate, severity::warning, "duplicates", id,
                               exact_of, "merge_duplicates");
      v.findings.push_back(std::move(f));
    } else if (!near_of.empty()) {
      finding f = pair_finding(finding_kinds::near_duplicate, severity::warning, "duplicates", id,
                               near_of, "merge_duplicates");
      f.with("cosine", static_cast<double>(near_cos));
      v.findings.push_back(std::move(f));
    }
    bool hold = false;
    std::string hold_on, hold_why;
    for (const auto& [e, jv] : conflicts) {
      const entry& x = *entries_[e];
      finding f = pair_finding(finding_kinds::conflict, severity::error, "conflicts", id, x.id,
                               jv.needs_human ? "manual_review" : "resolve_conflict");
      f.with(evidence_keys::reason, jv.reason).with(evidence_keys::needs_human, jv.needs_human);
      std::string winner = "undecided";
      if (!jv.needs_human) {
        const rule_verdict rv = rules_(candidate, x.record);
        winner = rv == rule_verdict::winner_a   ? "candidate"
                 : rv == rule_verdict::winner_b ? "existing"
                                                : "undecided";
      }
      f.with("winner", winner);
      v.findings.push_back(std::move(f));
      if (winner == "candidate") {
        v.superseded_ids.push_back(x.id);
      } else if (!hold) {
        hold = true;
        hold_on = x.id;
        hold_why = jv.needs_human
                       ? "conflicts with " + x.id + " (" + jv.reason + "): only a person can decide"
                       : "conflicts with " + x.id + " (" + jv.reason + "): the rules " +
                             (winner == "existing" ? "keep the existing record" : "cannot decide");
      }
    }
    if (hold) {
      v.decision = gate_decision::hold_for_review;
      v.target_id = hold_on;
      v.reason = hold_why;
    } else if (!v.superseded_ids.empty()) {
      v.decision = gate_decision::supersede;
      v.target_id = v.superseded_ids.front();
      v.reason = "newer or stronger than " + std::to_string(v.superseded_ids.size()) +
                 " conflicting record(s)";
    } else if (!exact_of.empty() || !near_of.empty()) {
      v.decision = gate_decision::store_as_duplicate;
      v.target_id = exact_of.empty() ? near_of : exact_of;
      v.reason = (exact_of.empty() ? "near duplicate of " : "exact duplicate of ") + v.target_id;
    } else {
      v.reason = "no duplicate or conflict in its scope";
    }
    return v;
  }

  /// Records `r` as written (an insert, or an update of the record with its id): the gate's
  /// indexes now include it. Call it after the host's write succeeded.
  void observe(const R& r) {
    std::unique_lock lock(mu_);
    add(r);
  }

  /// Observes every record of a range (at start-up: the host's existing records). When the
  /// dimension is not set yet, it becomes the most common vector length of the range (as
  /// `memory_store` picks it), so a few stray vectors do not decide it.
  template <class Range>
  void observe_all(const Range& records) {
    std::unique_lock lock(mu_);
    if constexpr (embedded_record<R>) {
      if (dim_ == 0) {
        std::map<std::size_t, std::size_t> lengths;
        for (const auto& r : records)
          if (const auto e = field::embedding(r); !e.empty()) ++lengths[e.size()];
        std::size_t best = 0;
        for (const auto& [d, n] : lengths)
          if (n > best) dim_ = d, best = n;
      }
    }
    for (const auto& r : records) add(r);
  }

  /// Forgets the record with this id (the host deleted it). @return false when it was not known.
  bool forget(std::string_view id) {
    std::unique_lock lock(mu_);
    const auto it = by_id_.find(std::string(id));
    if (it == by_id_.end()) return false;
    remove(it->second);
    return true;
  }

  /// Number of records observed (and not forgotten).
  [[nodiscard]] std::size_t size() const {
    std::shared_lock lock(mu_);
    return by_id_.size();
  }
  /// Expected embedding dimension (0 until a usable vector was seen, unless set).
  [[nodiscard]] std::size_t dimension() const {
    std::shared_lock lock(mu_);
    return dim_;
  }
  /// The settings.
  [[nodiscard]] const write_gate_settings& settings() const noexcept { return settings_; }

 private:
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);

  struct entry {
    R record;
    std::string id;
    std::string norm;
    std::string scope;
    std::string version;     // embedding_version, "" when none
    std::size_t row = npos;  // row in the scope's vectors
    bool active = true;
    bool negated = false;
  };
  struct scope_index {
    std::vector<float> units;            // rows x d, row-major
    std::vector<std::int8_t> q8;         // rows x d: round(unit / scale), in [-127, 127]
    std::vector<float> q8_scale;         // per row: max |unit_k| / 127 (0 for a freed row)
    std::vector<float> q8_err;           // per row: ||unit - scale * q8|| rounded up
    std::vector<std::size_t> row_entry;  // entry of each row (npos: a freed row)
    std::vector<std::size_t> free_rows;  // rows to reuse
    std::size_t rows = 0;
    std::unordered_multimap<std::size_t, std::size_t> by_text;  // hash of norm -> entry
    std::map<std::string, std::vector<std::size_t>> by_claim;   // claim key -> entries
  };

  bool negated(std::string_view norm, const R& r) const {
    const auto a = detail::cue::analyse(norm, field::content(r), {});
    return a.negation || a.change;
  }

  // The unit vector of r in `out` when r has a usable one (length d, finite, non-zero).
  bool unit_of(const R& r, std::vector<float>& out) const {
    if constexpr (embedded_record<R>) {
      const auto e = field::embedding(r);
      if (e.empty() || (dim_ != 0 && e.size() != dim_)) return false;
      double sq = 0;
      for (float x : e) {
        if (!std::isfinite(x)) return false;
        sq += static_cast<double>(x) * x;
      }
      if (!(sq > 0) || !std::isfinite(sq)) return false;
      const double inv = 1.0 / std::sqrt(sq);
      out.resize(e.size());
      for (std::size_t k = 0; k < e.size(); ++k) out[k] = static_cast<float>(e[k] * inv);
      return true;
    } else {
      (void)r;
      (void)out;
      return false;
    }
  }

  // Quantises a unit vector u (d floats) to int8 `q` (d values): q_k = round(u_k / s) with
  // s = max |u_k| / 127. @return (s, e) with e >= ||u - s q|| (computed in double, rounded up).
  static std::pair<float, float> quantize(const float* u, std::size_t d, std::int8_t* q) {
    float m = 0;
    for (std::size_t k = 0; k < d; ++k) m = std::max(m, std::abs(u[k]));
    if (!(m > 0)) {
      std::fill_n(q, d, std::int8_t{0});
      return {0.0f, 1.0f};
    }
    const float s = m / 127.0f;
    double err = 0;
    for (std::size_t k = 0; k < d; ++k) {
      const float v = std::clamp(std::nearbyint(u[k] / s), -127.0f, 127.0f);
      q[k] = static_cast<std::int8_t>(v);
      const double diff = static_cast<double>(u[k]) - static_cast<double>(s) * v;
      err += diff * diff;
    }
    return {s, static_cast<float>(std::sqrt(err) * (1 + 1e-6) + 1e-7)};
  }

  // Exact integer dot product of two int8 rows of length d (|sum| <= 127^2 d < 2^31 for
  // d <= 100,000): the AVX2 kernel when the CPU has it, else a loop compilers vectorise.
  static std::int32_t dot_i8(const std::int8_t* a, const std::int8_t* b, std::size_t d) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    static const bool avx2 = __builtin_cpu_supports("avx2");
    if (avx2) return detail::gate_dot_i8_avx2(a, b, d);
#endif
    return detail::gate_dot_i8_portable(a, b, d);
  }

  // Cosines of `unit` with the scope's live rows, keeping those >= t (not entry `skip`).
  // A filter on int8 forms first: with x = s_x x' + e_x and u = s_u u' + e_u (x, u unit, ' the
  // int8 forms, e the rounding errors), |u.x - s_u s_x (u'.x')| <= |e_u.x| + |s_u u'.e_x|
  // <= ||e_u|| + (1 + ||e_u||) ||e_x||; a row whose estimate plus that bound (and 1e-4 for the
  // float rounding of the rescore) is below t cannot reach t and is skipped; the others are
  // scored exactly on the float32 rows with `Kernel`. For d = 384 the bound is about 0.02, so
  // almost every row is decided on a quarter of the bytes. Above d = 100,000 (int32 sums could
  // overflow) every row is scored in float32.
  void scan(const scope_index& si, const std::vector<float>& unit, float t, std::size_t skip,
            std::vector<std::pair<float, std::size_t>>& out) const {
    const std::size_t d = dim_;
    const auto exact = [&](std::size_t r) {
      return kernel_(std::span<const float>(unit.data(), d),
                     std::span<const float>(si.units.data() + r * d, d));
    };
    const auto keep = [&](std::size_t r, float c) {
      const std::size_t e = si.row_entry[r];
      if (c >= t && e != npos && e != skip) out.emplace_back(c, e);
    };
    if (d > 100000) {
      for (std::size_t r = 0; r < si.rows; ++r) keep(r, exact(r));
      return;
    }
    std::vector<std::int8_t> qu(d);
    const auto [su, eu] = quantize(unit.data(), d, qu.data());
    for (std::size_t r = 0; r < si.rows; ++r) {
      const float sx = si.q8_scale[r];
      if (sx == 0.0f) continue;  // a freed row
      const double est = static_cast<double>(su) * sx * dot_i8(qu.data(), si.q8.data() + r * d, d);
      const double bound = eu + (1.0 + eu) * static_cast<double>(si.q8_err[r]) + 1e-4;
      if (est + bound < t) continue;
      keep(r, exact(r));
    }
  }

  // The key of a structured claim, as conflict_detector forms it ("" = none).
  std::string claim_key(const claim* c) const {
    if (const auto* f = std::get_if<fact_claim>(c))
      return "f\x1f" + normalizer_(f->entity) + "\x1f" + normalizer_(f->attribute);
    if (const auto* p = std::get_if<preference_claim>(c))
      return "p\x1f" + normalizer_(p->holder_or_user()) + "\x1f" + normalizer_(p->scene) + "\x1f" +
             normalizer_(p->preference);
    return {};
  }

  // Pairs decided by structured claims of one key: conflicts when the values differ (facts) or
  // the polarities are opposite (preferences); every record of the key is `decided`.
  void claim_pairs(const R& candidate, const scope_index& si, std::size_t skip,
                   std::vector<std::pair<std::size_t, conflict_verdict>>& conflicts,
                   std::vector<std::size_t>& decided) const {
    const claim* c = field::claim(candidate);
    if (!c) return;
    const auto it = si.by_claim.find(claim_key(c));
    if (it == si.by_claim.end()) return;
    for (std::size_t e : it->second) {
      if (e == skip || !entries_[e]->active) continue;
      decided.push_back(e);
      const claim* o = field::claim(entries_[e]->record);
      if (const auto* f = std::get_if<fact_claim>(c)) {
        const auto* g = std::get_if<fact_claim>(o);
        if (g && normalizer_(f->value) != normalizer_(g->value))
          conflicts.emplace_back(e, conflict_verdict{true, false, "fact_value_differs"});
      } else if (const auto* p = std::get_if<preference_claim>(c)) {
        const auto* q = std::get_if<preference_claim>(o);
        if (q && static_cast<int>(p->polarity) * static_cast<int>(q->polarity) < 0)
          conflicts.emplace_back(e, conflict_verdict{true, false, "opposite_polarity"});
      }
    }
  }

  static finding pair_finding(std::string_view kind, severity sev, std::string_view detector,
                              const std::string& a, const std::string& b, std::string_view repair) {
    finding f;
    f.kind = std::string(kind);
    f.severity = sev;
    f.detector = std::string(detector);
    f.record_ids = {a, b};
    f.suggested_repair = std::string(repair);
    return f;
  }

  // The candidate's own checks: structural and hygiene on a one-record store, then what needs
  // the observed records (links, duplicate id, embedding version).
  void own_checks(const R& candidate, write_kind kind, bool exists, utc_time now,
                  std::vector<finding>& out) const {
    std::vector<R> one{candidate};
    const auto store = memory_store<R>::from_records(std::move(one), dim_);
    detect_options o;
    o.now = now;
    o.dimension = dim_;
    detection_context<memory_store<R>> ctx(store, o);
    std::vector<finding> own;
    settings_.structural.run(ctx, own);
    settings_.hygiene.run(ctx, own);
    settings_.secrets.run(ctx, own);
    settings_.mojibake.run(ctx, own);
    settings_.content_size.run(ctx, own);
    settings_.content_time.run(ctx, own);
    const std::string_view id = field::id(candidate);
    std::size_t timestamps = npos;  // index in `out` of the candidate's timestamp finding
    for (auto& f : own) {
      if (f.kind == finding_kinds::dangling_reference) continue;
      if (f.kind == finding_kinds::timestamp_inconsistent && timestamps != npos) {
        finding& t = out[timestamps];  // a second problem: into the first, at the worse severity
        t.severity = std::max(t.severity, f.severity);
        for (auto& e : f.evidence) t.evidence.push_back(std::move(e));
        continue;
      }
      if (f.kind == finding_kinds::timestamp_inconsistent) timestamps = out.size();
      out.push_back(std::move(f));
    }
    // links: to itself or to an observed record
    std::vector<std::string> missing;
    const auto check = [&](std::string_view target) {
      if (!target.empty() && target != id && !by_id_.contains(std::string(target)))
        missing.emplace_back(target);
    };
    if constexpr (linked_record<R>) {
      check(field::duplicate_of(candidate));
      for (const auto& t : field::related_ids(candidate)) check(t);
      for (const auto& t : field::supersedes(candidate)) check(t);
    }
    if (!missing.empty()) {
      finding f;
      f.kind = std::string(finding_kinds::dangling_reference);
      f.severity = severity::error;
      f.detector = "structural";
      f.record_ids = {std::string(id)};
      f.suggested_repair = "drop_dangling_links";
      for (const auto& m : missing) f.with(evidence_keys::target, m);
      out.push_back(std::move(f));
    }
    if (kind == write_kind::update && !exists) {
      finding f;
      f.kind = std::string(finding_kinds::dangling_reference);
      f.severity = severity::warning;
      f.detector = "write_gate";
      f.record_ids = {std::string(id)};
      f.suggested_repair = "manual_review";
      f.with(evidence_keys::problem, std::string("update_of_unknown_id"))
          .with(evidence_keys::target, std::string(id))
          .with(evidence_keys::reason,
                std::string("an update of a record the gate has not observed: stored as a new "
                            "record unless the id is corrected"));
      out.push_back(std::move(f));
    }
    if (kind == write_kind::insert && exists) {
      finding f;
      f.kind = std::string(finding_kinds::duplicate_id);
      f.severity = severity::critical;
      f.detector = "structural";
      f.record_ids = {std::string(id)};
      f.suggested_repair = "manual_review";
      f.with(evidence_keys::reason, std::string("an insert with an id the store already holds"));
      out.push_back(std::move(f));
    }
    if constexpr (versioned_embedding_record<R>) {
      const std::string_view ver = field::embedding_version(candidate);
      const std::string major = majority_version();
      if (!ver.empty() && !major.empty() && ver != major && !field::embedding(candidate).empty()) {
        finding f;
        f.kind = std::string(finding_kinds::mixed_embedding_version);
        f.severity = severity::error;
        f.detector = "structural";
        f.record_ids = {std::string(id)};
        f.suggested_repair = "reembed";
        f.with(evidence_keys::expected, major).with(evidence_keys::actual, std::string(ver));
        out.push_back(std::move(f));
      }
    }
  }

  std::string majority_version() const {
    std::string best;
    std::size_t n = 0;
    for (const auto& [v, c] : versions_)
      if (c > n) best = v, n = c;
    return best;
  }

  void add(const R& r) {
    const std::string id(field::id(r));
    if (const auto it = by_id_.find(id); it != by_id_.end()) remove(it->second);
    entry x{r,  id,   normalizer_(field::content(r)), std::string(detail::semantic_scope_of(r)),
            {}, npos, detail::semantic_is_active(r),  false};
    // the copy's raw vector is not needed (the unit vector is kept in the scope's rows): free it
    // when the record type lets us assign an empty one
    if constexpr (requires { field::raw::embedding(x.record) = {}; })
      field::raw::embedding(x.record) = {};
    x.negated = negated(x.norm, r);
    std::vector<float> unit;
    if (dim_ == 0) {
      if constexpr (embedded_record<R>) {
        std::vector<float> probe;
        if (unit_of(r, probe)) dim_ = probe.size();
      }
    }
    const bool has_unit = dim_ != 0 && unit_of(r, unit);
    if constexpr (versioned_embedding_record<R>) {
      if (has_unit) x.version = std::string(field::embedding_version(r));
    }
    std::size_t e;
    if (!free_entries_.empty()) {
      e = free_entries_.back();
      free_entries_.pop_back();
    } else {
      e = entries_.size();
      entries_.emplace_back();
    }
    scope_index& si = scopes_[x.scope];
    si.by_text.emplace(std::hash<std::string_view>{}(x.norm), e);
    if constexpr (claimed_record<R>) {
      if (const claim* c = field::claim(r)) si.by_claim[claim_key(c)].push_back(e);
    }
    if (has_unit) {
      std::size_t row;
      if (!si.free_rows.empty()) {
        row = si.free_rows.back();
        si.free_rows.pop_back();
      } else {
        row = si.rows++;
        si.units.resize(si.rows * dim_);
        si.q8.resize(si.rows * dim_);
        si.q8_scale.push_back(0.0f);
        si.q8_err.push_back(0.0f);
        si.row_entry.push_back(npos);
      }
      std::copy(unit.begin(), unit.end(),
                si.units.begin() + static_cast<std::ptrdiff_t>(row * dim_));
      const auto [sx, ex] = quantize(unit.data(), dim_, si.q8.data() + row * dim_);
      si.q8_scale[row] = sx;
      si.q8_err[row] = ex;
      si.row_entry[row] = e;
      x.row = row;
    }
    if (!x.version.empty()) ++versions_[x.version];
    by_id_[id] = e;
    entries_[e] = std::move(x);
  }

  void remove(std::size_t e) {
    entry& x = *entries_[e];
    scope_index& si = scopes_[x.scope];
    const auto [lo, hi] = si.by_text.equal_range(std::hash<std::string_view>{}(x.norm));
    for (auto it = lo; it != hi; ++it)
      if (it->second == e) {
        si.by_text.erase(it);
        break;
      }
    if constexpr (claimed_record<R>) {
      if (const claim* c = field::claim(x.record)) {
        const auto k = si.by_claim.find(claim_key(c));
        if (k != si.by_claim.end()) {
          std::erase(k->second, e);
          if (k->second.empty()) si.by_claim.erase(k);
        }
      }
    }
    if (x.row != npos) {
      si.row_entry[x.row] = npos;
      std::fill_n(si.units.begin() + static_cast<std::ptrdiff_t>(x.row * dim_), dim_, 0.0f);
      si.q8_scale[x.row] = 0.0f;
      si.free_rows.push_back(x.row);
    }
    if (!x.version.empty())
      if (--versions_[x.version] == 0) versions_.erase(x.version);
    by_id_.erase(x.id);
    entries_[e].reset();
    free_entries_.push_back(e);
  }

  write_gate_settings settings_;
  Judge judge_;
  Rules rules_;
  Kernel kernel_;
  text_normalizer normalizer_{};
  std::size_t dim_ = 0;
  std::vector<std::optional<entry>> entries_;
  std::vector<std::size_t> free_entries_;
  std::unordered_map<std::string, std::size_t> by_id_;
  std::unordered_map<std::string, scope_index> scopes_;
  std::map<std::string, std::size_t> versions_;
  mutable writer_first_mutex mu_;
};

}  // namespace memhealth
