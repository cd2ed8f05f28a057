#pragma once
/// @file memhealth.hpp
/// Umbrella header: includes every public header of memhealth.
///
/// Architecture (one folder per layer):
/// - record/: the record model, timestamps, customization points and capability concepts
/// - store/: the store policy and the in-memory backend
/// - io/: the JSONL format and importers (LoCoMo, mem0)
/// - text/, embed/: text normalisation, the English lexicon (WordNet 3.0) and claims read from
///   free text (claims.hpp); the embedder
/// concept and the lexical stand-in model
/// - similarity/: kernels, the tiled threshold join, blocking and LSH candidate generation
/// - detect/: findings, the pipeline and the detectors
/// - monitor/, drift/: level 3: retrieval events and windowed alerts; embedding drift and the
/// migration gate
/// - repair/: the action model, planner, conflict rules, guardrails, write-ahead log, executor
///
/// Compile cost: every TU that includes this header parses all of the library, and the body of
/// every non-template inline function is instantiated (with the templates it calls) in each of
/// them. A few large, rarely called entry points whose bodies pull in heavy template code (Eigen
/// double products, nlohmann::json readers/writers, the fault drill's pipeline/plan/apply chain)
/// are therefore declared `template <class = void>` (marked "deferred instantiation"): they are
/// called exactly like plain functions, and their bodies are compiled only in the TUs that call
/// them.

#include "memhealth/audit/drill.hpp"
#include "memhealth/audit/report.hpp"
#include "memhealth/audit/snapshot_diff.hpp"
#include "memhealth/audit/tune.hpp"
#include "memhealth/audit/tune_judge.hpp"
#include "memhealth/config.hpp"
#include "memhealth/detect/claim_judge.hpp"
#include "memhealth/detect/conflict_judge.hpp"
#include "memhealth/detect/conflicts.hpp"
#include "memhealth/detect/content_size.hpp"
#include "memhealth/detect/content_time.hpp"
#include "memhealth/detect/decay.hpp"
#include "memhealth/detect/default_pipeline.hpp"
#include "memhealth/detect/duplicates.hpp"
#include "memhealth/detect/finding.hpp"
#include "memhealth/detect/hygiene.hpp"
#include "memhealth/detect/incremental.hpp"
#include "memhealth/detect/information_score.hpp"
#include "memhealth/detect/metadata_schema.hpp"
#include "memhealth/detect/mojibake.hpp"
#include "memhealth/detect/pipeline.hpp"
#include "memhealth/detect/report_json.hpp"
#include "memhealth/detect/scope.hpp"
#include "memhealth/detect/secrets.hpp"
#include "memhealth/detect/staleness.hpp"
#include "memhealth/detect/structural.hpp"
#include "memhealth/detect/union_find.hpp"
#include "memhealth/drift/drift.hpp"
#include "memhealth/drift/migration_gate.hpp"
#include "memhealth/embed/embedder.hpp"
#include "memhealth/embed/lexical_embedder.hpp"
#include "memhealth/io/import_locomo.hpp"
#include "memhealth/io/import_mem0.hpp"
#include "memhealth/io/import_prefeval.hpp"
#include "memhealth/io/import_sniff.hpp"
#include "memhealth/io/jsonl.hpp"
#include "memhealth/io/load_issue.hpp"
#include "memhealth/io/metadata_schema_json.hpp"
#include "memhealth/io/read_file.hpp"
#include "memhealth/io/temp_files.hpp"
#include "memhealth/monitor/events.hpp"
#include "memhealth/monitor/latency_sketch.hpp"
#include "memhealth/monitor/retrieval_monitor.hpp"
#include "memhealth/record/memory_record.hpp"
#include "memhealth/record/time.hpp"
#include "memhealth/record/traits.hpp"
#include "memhealth/repair/action.hpp"
#include "memhealth/repair/apply_edit.hpp"
#include "memhealth/repair/checksum.hpp"
#include "memhealth/repair/conflict_rules.hpp"
#include "memhealth/repair/executor.hpp"
#include "memhealth/repair/finding_identity.hpp"
#include "memhealth/repair/guardrails.hpp"
#include "memhealth/repair/index_policy.hpp"
#include "memhealth/repair/plan_file.hpp"
#include "memhealth/repair/plan_json.hpp"
#include "memhealth/repair/plan_stream.hpp"
#include "memhealth/repair/planner.hpp"
#include "memhealth/repair/repair_history.hpp"
#include "memhealth/repair/rollback.hpp"
#include "memhealth/repair/run_ledger.hpp"
#include "memhealth/repair/store_identity.hpp"
#include "memhealth/repair/wal.hpp"
#include "memhealth/repair/wal_compact.hpp"
#include "memhealth/similarity/blocking.hpp"
#include "memhealth/similarity/gemm_backend.hpp"
#include "memhealth/similarity/join.hpp"
#include "memhealth/similarity/kernels.hpp"
#include "memhealth/similarity/kmeans_blocking.hpp"
#include "memhealth/similarity/lsh.hpp"
#include "memhealth/similarity/quantized_join.hpp"
#include "memhealth/store/memory_store.hpp"
#include "memhealth/store/run_history.hpp"
#include "memhealth/store/store.hpp"
#include "memhealth/store/subset_store.hpp"
#include "memhealth/text/claims.hpp"
#include "memhealth/text/lexicon.hpp"
#include "memhealth/text/normalize.hpp"
#include "memhealth/version.hpp"
