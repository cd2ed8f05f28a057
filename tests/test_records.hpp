// Test support shared by the test files: one active, user-declared record built from its id,
// content, embedding and the fields the tests vary (embedding version, scope, kind, timestamps).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "memhealth/record/memory_record.hpp"
#include "memhealth/record/time.hpp"

namespace memhealth::test {

/// The fields `make_record` takes besides id, content and embedding.
struct record_fields {
  std::string embedding_version;
  std::string scope;
  std::string kind;
  std::string_view created_at;  ///< ISO 8601, parsed with `parse_timestamp`
  std::string_view updated_at;  ///< ISO 8601; empty = `created_at`
};

/// A record with status "active" and source "user_declared".
inline memory_record make_record(std::string id, std::string content, std::vector<float> embedding,
                                 record_fields f) {
  memory_record r;
  r.id = std::move(id);
  r.content = std::move(content);
  r.embedding = std::move(embedding);
  r.embedding_version = std::move(f.embedding_version);
  r.scope = std::move(f.scope);
  r.status = "active";
  r.source = "user_declared";
  r.kind = std::move(f.kind);
  r.created_at = parse_timestamp(f.created_at);
  r.updated_at = f.updated_at.empty() ? r.created_at : parse_timestamp(f.updated_at);
  return r;
}

}  // namespace memhealth::test
