// A host's write path with memhealth's write-time gate (live/write_gate.hpp).
//
// `note` is the host's own record type (mapped with member names memhealth knows, plus a
// record_traits entry for the renamed ones); `note_db` stands for the host's database. Every
// write goes: gate.inspect(candidate) -> act on the decision -> write -> gate.observe(written).
// The program checks its own results and exits 1 when one is not what the comments say.
#include "memhealth/live/write_gate.hpp"

#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace host {

struct note {
  std::string id;
  std::string content;
  std::vector<float> embedding;  // the host model's vector (4-d here, to keep it short)
  std::string model;             // which model made it
  std::string scope;             // "user:<id>"
  std::string status = "active";
  std::string source = "user_declared";
  std::chrono::sys_seconds written{};
  std::string duplicate_of;                // set when stored as a duplicate
  std::vector<std::string> supersedes;     // ids this note replaces
  std::vector<std::string> related_ids;    // not used here
  std::vector<std::string> related_notes;  // not used here
};

// The host's database: id -> note.
struct note_db {
  std::map<std::string, note> rows;
};

}  // namespace host

template <>
struct memhealth::record_traits<host::note> {
  static constexpr auto embedding_version = &host::note::model;
  static constexpr auto updated_at = &host::note::written;
  static constexpr auto created_at = &host::note::written;
};

namespace {

int failures = 0;
void expect(bool ok, const char* what) {
  std::printf("%s %s\n", ok ? "ok  " : "FAIL", what);
  if (!ok) ++failures;
}

host::note make(std::string id, std::string text, std::vector<float> e, int day) {
  host::note n;
  n.id = std::move(id);
  n.content = std::move(text);
  n.embedding = std::move(e);
  n.model = "host-embed-v2";
  n.scope = "user:7";
  n.written = std::chrono::sys_days{std::chrono::year{2024} / 3 / day};
  return n;
}

// The write path: what a host does with each decision.
memhealth::gate_verdict write(host::note_db& db, memhealth::write_gate<host::note>& gate,
                              host::note n) {
  auto v = gate.inspect(n);
  std::printf("%-4s %-18s %s\n", n.id.c_str(),
              std::string(memhealth::to_string(v.decision)).c_str(), v.reason.c_str());
  switch (v.decision) {
    case memhealth::gate_decision::reject:
      return v;  // not written
    case memhealth::gate_decision::store_as_duplicate:
      n.duplicate_of = v.target_id;  // kept for provenance, archived at once
      n.status = "archived";
      break;
    case memhealth::gate_decision::supersede:
      for (const auto& old : v.superseded_ids) {
        db.rows[old].status = "archived";
        gate.observe(db.rows[old]);
      }
      n.supersedes = v.superseded_ids;
      break;
    case memhealth::gate_decision::hold_for_review:
      n.status = "pending_review";  // a person decides; retrieval does not see it yet
      break;
    case memhealth::gate_decision::store:
      break;
  }
  db.rows[n.id] = n;
  gate.observe(n);
  return v;
}

}  // namespace

int main() {
  host::note_db db;
  memhealth::write_gate<host::note> gate;
  using D = memhealth::gate_decision;
  // unit vectors: A.B = 0.80 (similar enough to be judged), A.C = 0.983 (a near duplicate)
  const std::vector<float> A{0.5f, 0.5f, 0.5f, 0.5f}, B{0.7f, 0.1f, 0.1f, 0.7f},
      C{0.6f, 0.4f, 0.4f, 0.565685425f}, U{0.5f, -0.5f, 0.5f, -0.5f};

  expect(write(db, gate, make("n1", "User loves jazz", A, 1)).decision == D::store,
         "the first note of a scope is stored");
  expect(write(db, gate, make("n2", "User's sister lives in Lyon", U, 2)).decision == D::store,
         "an unrelated note is stored");
  const auto dup = write(db, gate, make("n3", "User really loves jazz", C, 3));
  expect(dup.decision == D::store_as_duplicate && dup.target_id == "n1",
         "a reworded note with a near vector is a duplicate of n1");
  const auto newer = write(db, gate, make("n4", "User can't stand jazz", B, 20));
  expect(newer.decision == D::supersede && db.rows["n1"].status == "archived",
         "a later contradiction supersedes n1, which the host archives");
  const auto older = write(db, gate, make("n5", "User adores jazz", B, 4));
  expect(older.decision == D::hold_for_review && db.rows["n5"].status == "pending_review",
         "an older note contradicting n4 is held for review");
  const auto bad = write(db, gate, make("n6", "User drinks tea", {0.6f, 0.8f}, 21));
  expect(bad.decision == D::reject && !db.rows.count("n6"),
         "a vector of the wrong length is rejected and not written");
  expect(gate.size() == 5, "the gate indexes the five written notes");
  return failures == 0 ? 0 : 1;
}
