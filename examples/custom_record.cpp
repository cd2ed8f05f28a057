// Plugging your own record type into memhealth.
//
// `crm_note` is a record type from an imaginary host system: its fields have other names than
// memhealth's, timestamps are std::chrono::sys_seconds, the owner is split into tenant + user,
// and it has no claim, no links, no source and no kind. A record_traits specialisation maps what it has;
// the detectors then run unchanged, and each skips (at compile time) the checks that need a
// field the type does not have. The program checks its own results and exits non-zero when they
// are not what the comments say.
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "memhealth/memhealth.hpp"

namespace crm {

struct crm_note {
  std::string note_id;
  std::string body;
  std::vector<float> vector;     // float32 embedding from the host's model
  std::string model;             // which model made `vector`
  std::chrono::sys_seconds created;
  std::chrono::sys_seconds modified;
  std::string owner;             // "tenant:<t>/user:<u>", memhealth's hierarchical scope
  std::string state;             // "active" / "archived" / ...
};

}  // namespace crm

// The mapping: member pointers for renamed fields. A callable works too, as long as it returns a
// reference (accessors return views into the record).
template <>
struct memhealth::record_traits<crm::crm_note> {
  static constexpr auto id = &crm::crm_note::note_id;
  static constexpr auto content = &crm::crm_note::body;
  static constexpr auto embedding = &crm::crm_note::vector;
  static constexpr auto embedding_version = &crm::crm_note::model;
  static constexpr auto created_at = &crm::crm_note::created;
  static constexpr auto updated_at = &crm::crm_note::modified;
  static constexpr auto status = &crm::crm_note::state;
  static constexpr auto scope = [](const crm::crm_note& n) -> const std::string& { return n.owner; };
};

int main() {
  using namespace std::chrono;
  using crm::crm_note;
  static_assert(memhealth::embedded_record<crm_note>);
  static_assert(memhealth::timestamped_record<crm_note>);
  static_assert(memhealth::scoped_record<crm_note>);
  static_assert(!memhealth::claimed_record<crm_note>);  // no claim: claim-based conflicts are skipped

  const sys_seconds t0 = sys_days{2024y / March / 1};
  // Rows of a 4 x 4 Hadamard matrix / 2: unit vectors, mutually orthogonal (cosine 0).
  const std::vector<float> h1{0.5f, 0.5f, 0.5f, 0.5f}, h2{0.5f, -0.5f, 0.5f, -0.5f},
      h3{0.5f, 0.5f, -0.5f, -0.5f}, h4{0.5f, -0.5f, -0.5f, 0.5f};
  std::vector<crm_note> notes = {
      {"n1", "Prefers invoices in PDF.", h1, "emb-v1", t0, t0, "tenant:acme/user:7", "active"},
      {"n2", "prefers invoices in pdf", h2, "emb-v1", t0 + days{3}, t0 + days{3}, "tenant:acme/user:7", "active"},
      {"n3", "Works from the Lyon office.", h3, "emb-v1", t0, t0 - days{1}, "tenant:acme/user:7", "active"},
      {"n4", "Prefers invoices in PDF.", h1, "emb-v1", t0, t0, "tenant:acme/user:8", "active"},
      {"n5", "Asked about the renewal date.", h4, "emb-v1", t0, t0, "tenant:acme/user:8", "acitve"},
  };

  auto store = memhealth::memory_store<crm_note>::from_records(std::move(notes));
  memhealth::detect_options options;
  options.now = time_point_cast<milliseconds>(t0 + days{10});
  const memhealth::pipeline checks{memhealth::structural_detector{}, memhealth::duplicate_detector<>{}};
  const memhealth::report r = checks.run(store, options);

  for (const auto& f : r.findings) {
    std::printf("%-24s %-9s", f.kind.c_str(), std::string(memhealth::to_string(f.severity)).c_str());
    for (const auto& id : f.record_ids) std::printf(" %s", id.c_str());
    std::printf("\n");
  }
  // Expected, worked out by hand:
  // - n1/n2: same normalised text in tenant:acme/user:7 -> one exact_duplicate cluster, even
  //   though their vectors are orthogonal;
  // - n1/n4: same text in two users' scopes -> one cross_scope_duplicate (possible leak);
  // - n3: updated one day before it was created -> timestamp_inconsistent;
  // - n5: status "acitve" -> illegal_status.
  const bool ok = r.count(memhealth::finding_kinds::exact_duplicate) == 1 &&
                  r.count(memhealth::finding_kinds::cross_scope_duplicate) == 1 &&
                  r.count(memhealth::finding_kinds::timestamp_inconsistent) == 1 &&
                  r.count(memhealth::finding_kinds::illegal_status) == 1 && r.findings.size() == 4;
  std::printf("%s: %zu findings over %zu records\n", ok ? "ok" : "UNEXPECTED", r.findings.size(), store.size());
  return ok ? 0 : 1;
}
