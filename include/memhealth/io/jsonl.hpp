#pragma once
/// @file jsonl.hpp
/// The JSONL record format: one JSON object per line, one `memory_record` per object. Reading
/// (`parse_jsonl`, `read_jsonl`) and canonical, atomic writing (`append_json`, `to_json`,
/// `to_jsonl`, `write_jsonl`). The format is specified in docs/format.md.
///
/// `read_jsonl_each` streams records to a callback instead of keeping them.
///
/// Reading never aborts on bad data. Every problem becomes a `load_issue` (file, 1-based line,
/// field, reason) and loading goes on:
/// - a line that is not a JSON object (or not JSON) is skipped (`record_kept = false`);
/// - a field of the wrong JSON type, a timestamp that does not parse, a malformed claim: the field
///   is left empty and the original value is kept verbatim (minified) in `memory_record::extra`
///   under the field's own name, so writing the record back reproduces it;
/// - a number outside the target type's range (1e300 in a float32 embedding) is stored as
///   +-infinity (or 0 on underflow) and reported;
/// - values that parse but are wrong for the domain (empty content, unknown status, a dimension
///   other than the model's, NaN/Infinity in an embedding) are kept as they are **without** an
///   issue: the structural check reports them as findings.
///
/// Writing is canonical: fixed key order, shortest round-trip numbers, timestamps through
/// `format_timestamp` (original offset kept), RFC 8259 escaping. Reading a file memhealth wrote
/// and writing it again gives the same bytes.
///
/// Reading uses simdjson's On-Demand API (one document per line over a padded buffer);
/// embedding numbers are parsed from their raw tokens (an exact fast path, else
/// `std::from_chars<float>`), so a float written shortest-round-trip reads back bit-exactly.
/// Large inputs are parsed in pieces on several threads (`load_options`), with the same result
/// as one thread. Link with `-lsimdjson` and the platform's threads library (`-pthread`).
///
/// This header is the umbrella of the four one-job headers of the format, kept so existing
/// includes work: record_codec.hpp (memory_record <-> JSON object), jsonl_lines.hpp (the line
/// reader), jsonl_read.hpp (the parallel loader) and jsonl_write.hpp (the writers, through
/// atomic_write.hpp). The store overloads of `to_jsonl`/`write_jsonl` take any store with a
/// record block (`memory_record_block_store`); include store/memory_store.hpp for `memory_store`.

#include "memhealth/io/atomic_write.hpp"
#include "memhealth/io/jsonl_lines.hpp"
#include "memhealth/io/jsonl_read.hpp"
#include "memhealth/io/jsonl_write.hpp"
#include "memhealth/io/record_codec.hpp"
