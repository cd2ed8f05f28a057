#pragma once
/// @file default_pipeline.hpp
/// The default detection pipeline (what `memhealth check` runs) and its settings in one place.
///
/// Order: structural, duplicates, conflicts, staleness, scope, hygiene, then the content hygiene
/// checks of SPEC section 6 (secrets, mojibake, content_size, content_time). Each element is an
/// ordinary detector value: build your own `pipeline{...}` to drop, reorder, re-parameterise or
/// add detectors (see README "Compose your own pipeline").

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>

#include "memhealth/detect/conflicts.hpp"
#include "memhealth/detect/content_size.hpp"
#include "memhealth/detect/content_time.hpp"
#include "memhealth/detect/duplicates.hpp"
#include "memhealth/detect/hygiene.hpp"
#include "memhealth/detect/metadata_schema.hpp"
#include "memhealth/detect/mojibake.hpp"
#include "memhealth/detect/pipeline.hpp"
#include "memhealth/detect/scope.hpp"
#include "memhealth/detect/secrets.hpp"
#include "memhealth/detect/staleness.hpp"
#include "memhealth/detect/structural.hpp"
#include "memhealth/similarity/kmeans_blocking.hpp"

namespace memhealth {

/// Settings of the default pipeline; defaults follow SPEC section 2.
struct default_check_settings {
  float near_duplicate_threshold = 0.92f;  ///< cosine in [-1,1] for near duplicates
  std::optional<std::chrono::milliseconds>
      near_duplicate_window{};  ///< created_at window; nullopt = any
  float conflict_candidate_threshold =
      0.6f;                      ///< cosine for a text pair to reach the conflict judge
  metadata_schema schema{};      ///< user metadata schema; empty = not checked
  bool expect_unit_norm = true;  ///< the index expects unit vectors
  kind_decay decay{};            ///< decay curve per kind
  double stale_threshold = 0.2;  ///< effective weight below this is stale, in [0,1]
  /// Most similar pairs per scope for the duplicate and conflict checks (0 = no limit); a scope
  /// above it gets a check_skipped warning instead (bounds time and memory).
  std::size_t max_pairs_per_scope = 1'000'000;
  /// Largest scope, in records with a usable embedding, that the duplicate and conflict checks
  /// compare by the exact join (every similar pair); a larger scope's candidate pairs come from
  /// k-means blocking with multi-probe (`scope_size_blocking`, kmeans_blocking.hpp: IVF
  /// partitions as in Jegou et al. 2011, multi-probe as in Lv et al. 2007), seeded, so that a
  /// scope of 10^6 records is checked (no check_skipped) instead of needing an exact join of
  /// 5 x 10^11 pairs: 36 s for the whole pipeline on two threads (load 1.8), peak RSS 3.7 GB
  /// with the store (bench/bench_check.cpp, check1m/one_scope). Its pairs are a subset of the
  /// exact join's: 0.4% of the planted pairs at cosine 0.93-0.99 were missed at 10^6 random
  /// 384-d vectors, 0.1% at 10^5; clustered real embeddings should lose fewer.
  /// 0 = never (always the exact join).
  std::size_t block_scopes_above = 50'000;
  /// Worker threads (>= 1) for the structural scan (stores with `concurrent_reads`, from 32,768
  /// records) and for the duplicate and conflict joins. 1 = the calling thread only, the
  /// default: the library starts no thread unless asked; 0 counts as 1. The findings do not
  /// depend on it.
  unsigned threads = 1;
  /// The user's claim lexicon for the conflict judge (claim_lexicon::load_tsv: cue words,
  /// synonyms, antonyms, is-a pairs); null = the built-in one.
  std::shared_ptr<const claim_lexicon> lexicon{};
  /// The duplicate detector's guards (`duplicate_detector::skip_guarded` and
  /// `skip_judged_conflicts`): a near pair whose numbers, dates or times differ, whose roles are
  /// swapped or whose polarity is opposite, or that the conflict judge calls a conflict, is never
  /// a near duplicate. On by default; false = cosine and the negation cue alone decide.
  bool duplicate_guards = true;
  /// A model asked about the text pairs the conflict rules leave open (conflict_judge.hpp's
  /// `model_judge`; net/openai_judge.hpp); null = rules only.
  std::shared_ptr<const model_judge> conflict_model{};
  /// Content hygiene, each detector as configured here (see its header): junk and model
  /// boilerplate (hygiene.hpp: pattern lists), secrets (secrets.hpp: `secrets.rules`, critical),
  /// mojibake (mojibake.hpp), oversized content (content_size.hpp: `content_size.max_bytes`,
  /// default 8192 bytes, and per-record metadata limits) and content dates that contradict
  /// created_at (content_time.hpp). Each but hygiene has `enabled`.
  hygiene_detector hygiene{};
  secret_detector secrets{};             ///< secret_in_content, critical
  mojibake_detector mojibake{};          ///< mojibake, warning
  content_size_detector content_size{};  ///< oversized_content, warning
  content_time_detector content_time{};  ///< content_time_mismatch, warning
  /// Target version of a declared embedding-model migration ("" = none): the structural
  /// detector's `migration_to` (mixed versions reported as progress, severity info).
  std::string migration_to{};
};

/// Builds the default pipeline from settings.
/// @return `pipeline<structural_detector, duplicate_detector<scope_size_blocking>,
///          conflict_detector<claim_conflict_judge<>, scope_size_blocking>, staleness_detector,
///          scope_detector, hygiene_detector, secret_detector, mojibake_detector,
///          content_size_detector, content_time_detector>`: the duplicate and conflict checks join
///          each scope exactly up to `s.block_scopes_above` records and by k-means blocking above
///          (one partitioned join per large scope, shared by the two through `share`).
inline auto make_default_pipeline(const default_check_settings& s = {}) {
  structural_detector structural;
  structural.schema = s.schema;
  structural.expect_unit_norm = s.expect_unit_norm;
  structural.migration_to = s.migration_to;
  const unsigned threads = std::max(1u, s.threads);  // 0 means 1, as in the structural scan
  structural.threads = threads;
  scope_size_blocking candidates;
  candidates.block_above = s.block_scopes_above;
  candidates.join.threads = threads;
  candidates.kmeans.threads = threads;
  // one partitioning and join per large scope and run, shared by the two detectors
  candidates.share = std::make_shared<detail::kmeans_scope_cache>();
  candidates.share_threshold = std::min(s.near_duplicate_threshold, s.conflict_candidate_threshold);
  duplicate_detector<scope_size_blocking> duplicates;
  duplicates.candidates = candidates;
  duplicates.threshold = s.near_duplicate_threshold;
  duplicates.window = s.near_duplicate_window;
  duplicates.max_pairs_per_scope = s.max_pairs_per_scope;
  duplicates.skip_guarded = s.duplicate_guards;
  duplicates.skip_judged_conflicts = s.duplicate_guards;
  duplicates.lexicon = s.lexicon;
  conflict_detector<claim_conflict_judge<>, scope_size_blocking> conflicts;
  conflicts.candidate_threshold = s.conflict_candidate_threshold;
  conflicts.max_pairs_per_scope = s.max_pairs_per_scope;
  conflicts.candidates = candidates;
  conflicts.judge.lexicon = s.lexicon;
  conflicts.judge.model = s.conflict_model;
  staleness_detector staleness;
  staleness.curves = s.decay;
  staleness.threshold = s.stale_threshold;
  return pipeline{structural, duplicates, conflicts,  staleness,      scope_detector{},
                  s.hygiene,  s.secrets,  s.mojibake, s.content_size, s.content_time};
}

/// The type of the default pipeline.
using default_pipeline = decltype(make_default_pipeline());

}  // namespace memhealth
