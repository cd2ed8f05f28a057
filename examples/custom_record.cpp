// Plugging your own record type into memhealth.
//
// `crm_note` is a record type from an imaginary host system: its fields have other names than
// memhealth's, timestamps are std::chrono::sys_seconds, the owner is split into tenant + user,
// and it has no claim, no links, no source and no kind. A record_traits specialisation maps what it
// has; the detectors then run unchanged, and each skips (at compile time) the checks that need a
// field the type does not have. The program checks its own results and exits non-zero when they
// are not what the comments say.
//
// It then goes on to repair: make a plan from the findings, apply it under the write-ahead log,
// roll it back (byte-exact), and recover after a simulated crash. For that crm_note provides an
// *image* (a lossless JSON text of the whole record, memhealth/repair/record_image.hpp) and the
// two fields the planned edits write besides the status: a merge target and a history of notes.
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "memhealth/memhealth.hpp"

namespace crm {

struct crm_note {
  std::string note_id;
  std::string body;
  std::vector<float> vector;  // float32 embedding from the host's model
  std::string model;          // which model made `vector`
  std::chrono::sys_seconds created;
  std::chrono::sys_seconds modified;
  std::string owner;                 // "tenant:<t>/user:<u>", memhealth's hierarchical scope
  std::string state;                 // "active" / "archived" / ...
  std::string merged_into;           // id of the note this one was merged into (empty = none)
  std::vector<std::string> history;  // notes the host keeps about the record
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
  static constexpr auto scope = [](const crm::crm_note& n) -> const std::string& {
    return n.owner;
  };
  // Written by repairs: merges set duplicate_of on the merged note and append related notes to
  // the kept one.
  static constexpr auto duplicate_of = &crm::crm_note::merged_into;
  static constexpr auto related_notes = &crm::crm_note::history;

  // The image for the write-ahead log: one JSON object, canonical (same note, same bytes) and
  // lossless (%.9g round-trips a float). Rollback and recovery compare and restore these bytes.
  static std::string encode_image(const crm::crm_note& n) {
    auto str = [](const std::string& s) {
      std::string out = "\"";
      for (char c : s) {
        if (c == '"' || c == '\\') out.push_back('\\');
        out.push_back(c);
      }
      return out + "\"";
    };
    auto list = [&](const auto& v, auto item) {
      std::string out = "[";
      for (std::size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + item(v[i]);
      return out + "]";
    };
    auto num = [](float f) {
      char b[32];
      std::snprintf(b, sizeof b, "%.9g", static_cast<double>(f));
      return std::string(b);
    };
    return "{\"id\":" + str(n.note_id) + ",\"body\":" + str(n.body) +
           ",\"vector\":" + list(n.vector, num) + ",\"model\":" + str(n.model) +
           ",\"created\":" + std::to_string(n.created.time_since_epoch().count()) +
           ",\"modified\":" + std::to_string(n.modified.time_since_epoch().count()) +
           ",\"owner\":" + str(n.owner) + ",\"state\":" + str(n.state) +
           ",\"merged_into\":" + str(n.merged_into) + ",\"history\":" + list(n.history, str) + "}";
  }
  static crm::crm_note decode_image(std::string_view json) {
    const auto j = nlohmann::json::parse(json);  // throws on bad JSON
    crm::crm_note n;
    n.note_id = j.at("id").get<std::string>();
    n.body = j.at("body").get<std::string>();
    n.vector = j.at("vector").get<std::vector<float>>();
    n.model = j.at("model").get<std::string>();
    n.created = std::chrono::sys_seconds{std::chrono::seconds{j.at("created").get<std::int64_t>()}};
    n.modified =
        std::chrono::sys_seconds{std::chrono::seconds{j.at("modified").get<std::int64_t>()}};
    n.owner = j.at("owner").get<std::string>();
    n.state = j.at("state").get<std::string>();
    n.merged_into = j.at("merged_into").get<std::string>();
    n.history = j.at("history").get<std::vector<std::string>>();
    return n;
  }
};

namespace {

struct simulated_crash {};  // not a std::exception: apply_plan does not catch it, like a kill

std::vector<std::string> images(const memhealth::memory_store<crm::crm_note>& s) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < s.size(); ++i) out.push_back(memhealth::encode_image(s.extract(i)));
  return out;
}

// Plans the findings, applies the plan, rolls it back, then applies it again with a crash after
// the first record write and recovers. @return true when every step gave the expected store.
bool repair(memhealth::memory_store<crm::crm_note> store, const memhealth::report& r) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "memhealth-custom-record";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const auto original = images(store);

  const memhealth::repair_plan plan = memhealth::make_plan(store, r, memhealth::planner_options{});
  memhealth::apply_options opt;
  opt.approve_tier2 = true;  // the merge is a tier-2 action (confirm)
  std::vector<std::string> repaired;
  {
    memhealth::wal_writer wal(dir / "run.wal");
    const auto res = memhealth::apply_plan(store, plan, wal, opt);
    std::printf("plan: %zu actions, %zu applied, %zu records changed\n", plan.actions.size(),
                res.applied.size(), res.records_changed);
    repaired = images(store);
  }
  const bool merged = store.record(1).merged_into == "n1" && store.record(1).state == "archived" &&
                      store.record(4).state == "pending_review";

  const auto rb = memhealth::rollback(store, memhealth::read_wal_file(dir / "run.wal"));
  const bool rolled_back = rb.conflicts.empty() && images(store) == original;
  std::printf("rollback: %zu records restored, byte-exact: %s\n", rb.records_restored,
              rolled_back ? "yes" : "no");

  // The same plan again on the original store, killed right after its first record write.
  int writes = 0;
  opt.crash_hook = [&](std::string_view point) {
    if (point == "after_apply_record" && ++writes == 1) throw simulated_crash{};
  };
  try {
    memhealth::wal_writer wal(dir / "crash.wal");
    (void)memhealth::apply_plan(store, plan, wal, opt);
  } catch (const simulated_crash&) {
  }
  const auto rec = memhealth::recover(store, memhealth::read_wal_file(dir / "crash.wal"));
  // The crashed action had no commit frame: recovery undoes it, so the store holds exactly the
  // actions committed before the crash (here none: the crash hit the first action).
  const bool recovered = images(store) == original && rec.conflicts.empty();
  std::printf("recover: %zu records restored, store as before the run: %s\n", rec.records_restored,
              recovered ? "yes" : "no");
  fs::remove_all(dir);
  return merged && repaired != original && rolled_back && recovered;
}

}  // namespace

int main() {
  using namespace std::chrono;
  using crm::crm_note;
  static_assert(memhealth::embedded_record<crm_note>);
  static_assert(memhealth::timestamped_record<crm_note>);
  static_assert(memhealth::scoped_record<crm_note>);
  static_assert(
      !memhealth::claimed_record<crm_note>);  // no claim: claim-based conflicts are skipped

  const sys_seconds t0 = sys_days{2024y / March / 1};
  // Rows of a 4 x 4 Hadamard matrix / 2: unit vectors, mutually orthogonal (cosine 0).
  const std::vector<float> h1{0.5f, 0.5f, 0.5f, 0.5f}, h2{0.5f, -0.5f, 0.5f, -0.5f},
      h3{0.5f, 0.5f, -0.5f, -0.5f}, h4{0.5f, -0.5f, -0.5f, 0.5f};
  std::vector<crm_note> notes = {
      {"n1",
       "Prefers invoices in PDF.",
       h1,
       "emb-v1",
       t0,
       t0,
       "tenant:acme/user:7",
       "active",
       {},
       {}},
      {"n2",
       "prefers invoices in pdf",
       h2,
       "emb-v1",
       t0 + days{3},
       t0 + days{3},
       "tenant:acme/user:7",
       "active",
       {},
       {}},
      {"n3",
       "Works from the Lyon office.",
       h3,
       "emb-v1",
       t0,
       t0 - days{1},
       "tenant:acme/user:7",
       "active",
       {},
       {}},
      {"n4",
       "Prefers invoices in PDF.",
       h1,
       "emb-v1",
       t0,
       t0,
       "tenant:acme/user:8",
       "active",
       {},
       {}},
      {"n5",
       "Asked about the renewal date.",
       h4,
       "emb-v1",
       t0,
       t0,
       "tenant:acme/user:8",
       "acitve",
       {},
       {}},
  };

  auto store = memhealth::memory_store<crm_note>::from_records(std::move(notes));
  memhealth::detect_options options;
  options.now = time_point_cast<milliseconds>(t0 + days{10});
  const memhealth::pipeline checks{memhealth::structural_detector{},
                                   memhealth::duplicate_detector<>{}};
  const memhealth::report r = checks.run(store, options);

  for (const auto& f : r.findings) {
    std::printf("%-24s %-9s", f.kind.c_str(),
                std::string(memhealth::to_string(f.severity)).c_str());
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
  std::printf("%s: %zu findings over %zu records\n", ok ? "ok" : "UNEXPECTED", r.findings.size(),
              store.size());
  const bool repaired = repair(store, r);
  std::printf("%s: plan, apply, rollback and recovery on crm_note\n",
              repaired ? "ok" : "UNEXPECTED");
  return ok && repaired ? 0 : 1;
}
