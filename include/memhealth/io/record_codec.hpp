#pragma once
/// @file record_codec.hpp
/// The record codec of the JSONL format: one `memory_record` <-> one JSON object. Decoding
/// (`detail::jsonl::reader`, which the parallel loader in jsonl_read.hpp runs over the pieces of
/// jsonl_lines.hpp) and canonical encoding (`append_json`, `to_json`). The format is specified in
/// docs/format.md.
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
/// Decoding lives in record_decode.hpp (simdjson), encoding in record_encode.hpp (no parser):
/// include one of them for one direction, this header for both.

#include "memhealth/io/record_decode.hpp"
#include "memhealth/io/record_encode.hpp"
