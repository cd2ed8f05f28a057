// Tests of repair/checksum.hpp, repair/apply_edit.hpp, repair/wal.hpp, repair/executor.hpp.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include <memhealth/io/jsonl.hpp>
#include <memhealth/repair/apply_edit.hpp>
#include <memhealth/repair/checksum.hpp>
#include <memhealth/repair/executor.hpp>
#include <memhealth/repair/plan_file.hpp>
#include <memhealth/repair/record_image.hpp>
#include <memhealth/repair/rollback.hpp>
#include <memhealth/repair/run_ledger.hpp>
#include <memhealth/repair/store_identity.hpp>
#include <memhealth/repair/wal.hpp>
#include <memhealth/store/memory_store.hpp>

#include "repair_test_support.hpp"
#include "sim_file_io.hpp"
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

namespace repair_wal_test {
namespace fs = std::filesystem;
using namespace memhealth;

namespace {

using store_t = memory_store<memory_record>;

memory_record make_record(int i) {
  memory_record r;
  r.id = "r" + std::to_string(i);
  r.content = "memory number " + std::to_string(i);
  r.embedding = {0.5f + float(i), -1.25f, 0.0f, 3.0f};
  r.embedding_version = "m1";
  r.metadata.emplace("topic", std::string("t") + std::to_string(i % 3));
  r.created_at = parse_timestamp("2024-03-01T17:30:00.000+08:00");
  r.updated_at = parse_timestamp("2024-03-02T09:00:00.000Z");
  r.source = "user_declared";
  r.scope = "user:7";
  r.status = "active";
  r.kind = "fact";
  r.links.related_ids = {"r" + std::to_string((i + 1) % 50)};
  return r;
}

store_t make_store(int n) {
  std::vector<memory_record> v;
  for (int i = 0; i < n; ++i) v.push_back(make_record(i));
  return store_t::from_records(std::move(v));
}

std::vector<std::string> images(const store_t& s) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < s.size(); ++i) out.push_back(to_json(s.extract(i)));
  return out;
}

repair_action action(std::string key, std::vector<record_edit> edits,
                     automation a = automation::automatic) {
  repair_action act;
  act.type = "test";
  act.automation = a;
  act.tier = a == automation::automatic ? 1 : a == automation::confirm ? 2 : 3;
  for (const auto& e : edits)
    if (std::find(act.targets.begin(), act.targets.end(), e.record_id) == act.targets.end())
      act.targets.push_back(e.record_id);
  act.edits = std::move(edits);
  act.idempotency_key = std::move(key);
  return act;
}

// A plan of n actions over a store of >= 30 records; action k touches 1-3 records, never
// returns a record to an earlier image (weights fall, notes and metadata keys are new).
repair_plan test_plan(int n) {
  repair_plan p;
  for (int k = 0; k < n; ++k) {
    std::vector<record_edit> e;
    const std::string a = "r" + std::to_string(k % 30), b = "r" + std::to_string((k * 7 + 3) % 30);
    e.push_back({a, edit_set_weight{1.0 - 0.01 * (k + 1)}});
    e.push_back({a, edit_append_notes{{"note of action " + std::to_string(k)}}});
    if (k % 2 == 0) e.push_back({b, edit_fill_metadata{"k" + std::to_string(k), std::int64_t{k}}});
    if (k % 3 == 0)
      e.push_back({"r" + std::to_string((k + 11) % 30), edit_set_status{"pending_review"}});
    p.actions.push_back(action("key" + std::to_string(k), std::move(e)));
  }
  return p;
}

// Reference: the store after the first m actions, computed with plain apply_edit on copies.
std::vector<std::string> prefix_images(const store_t& original, const repair_plan& plan,
                                       std::size_t m) {
  std::vector<memory_record> recs;
  for (std::size_t i = 0; i < original.size(); ++i) recs.push_back(original.extract(i));
  for (std::size_t k = 0; k < m; ++k)
    for (const auto& e : plan.actions[k].edits) {
      auto& r = *std::find_if(recs.begin(), recs.end(),
                              [&](const memory_record& x) { return x.id == e.record_id; });
      apply_edit(r, e.op);
    }
  std::vector<std::string> out;
  for (const auto& r : recs) out.push_back(to_json(r));
  return out;
}

struct scratch_dir : test::scratch_dir {
  explicit scratch_dir(const std::string& name) : test::scratch_dir(name, "memhealth-wal-test") {}
};
using test::slurp;

using test::flaky_store;

}  // namespace

TEST_CASE("crc32c: RFC 3720 check values") {
  CHECK(crc32c(std::string_view("123456789")) == 0xE3069283u);
  CHECK(crc32c(std::string(32, '\0')) == 0x8A9136AAu);    // RFC 3720 B.4: 32 bytes of zeros
  CHECK(crc32c(std::string(32, '\xFF')) == 0x62A8AB43u);  // 32 bytes of ones
  std::string inc;
  for (int i = 0; i < 32; ++i) inc.push_back(static_cast<char>(i));
  CHECK(crc32c(inc) == 0x46DD794Eu);  // incrementing 00..1f
  CHECK(crc32c(std::string_view()) == 0u);
  // the instruction path (where the CPU has SSE4.2) and the table agree at every length and
  // alignment: lengths 0..300 at offsets 0..7 of pseudo-random bytes
  std::string bytes;
  std::uint32_t x = 12345;
  for (int i = 0; i < 320; ++i)
    bytes.push_back(static_cast<char>((x = x * 1103515245u + 12345u) >> 24));
  for (std::size_t off = 0; off < 8; ++off)
    for (std::size_t n = 0; n + off <= 308; ++n)
      REQUIRE(crc32c(bytes.data() + off, n) == crc32c_table(bytes.data() + off, n));
}

TEST_CASE("wal frame: encode layout and decode") {
  std::string out;
  append_wal_frame(out, R"({"a":1})");
  REQUIRE(out.size() == 15);
  CHECK(out.substr(0, 4) == std::string("\x07\x00\x00\x00", 4));
  CHECK(out.substr(4, 4) == std::string("\x6a\xd5\xf7\xcf", 4));  // 0xCFF7D56A little-endian
  CHECK(out.substr(8) == R"({"a":1})");
  CHECK_THROWS_AS(append_wal_frame(out, ""), error);

  // A header frame followed by a commit decodes; a file without a header does not.
  std::string file;
  append_wal_frame(
      file, R"({"type":"header","magic":"MHWAL1","version":1,"seq":0,"run":"x","created_at":"t"})");
  append_wal_frame(
      file,
      R"({"type":"commit","seq":4,"run":"x","intent":3,"action":2,"idempotency_key":"k","future":[1]})");
  auto c = read_wal(file);
  CHECK(c.clean());
  CHECK(c.run == "x");
  REQUIRE(c.entries.size() == 1);
  CHECK(c.entries[0].type == wal_frame_type::commit);
  CHECK(c.entries[0].seq == 4);
  CHECK(c.entries[0].intent == 3);
  CHECK(c.entries[0].action == 2);
  CHECK(c.entries[0].idempotency_key == "k");
  CHECK(c.valid_bytes == file.size());

  std::string no_header;
  append_wal_frame(no_header, R"({"type":"commit","seq":1})");
  auto d = read_wal(no_header);
  REQUIRE(d.problem);
  CHECK(d.problem->kind == wal_problem_kind::bad_header);
  CHECK(d.problem->offset == 0);

  std::string bad_type = file.substr(0, file.find("{\"type\":\"commit") - 8);
  append_wal_frame(bad_type, R"({"type":"delete","seq":1})");
  auto e = read_wal(bad_type);
  REQUIRE(e.problem);
  CHECK(e.problem->kind == wal_problem_kind::bad_payload);
}

TEST_CASE("apply_edit: each edit as documented, idempotent") {
  memory_record r = make_record(1);
  r.links.duplicate_of = "r9";
  r.links.supersedes = {"r4"};
  apply_edit(r, edit_set_status{"archived"});
  CHECK(r.status == "archived");
  apply_edit(r, edit_add_supersedes{{"r4", "r5", "r5"}});
  CHECK(r.links.supersedes == std::vector<std::string>{"r4", "r5"});
  apply_edit(r, edit_append_notes{{"n1", "n2"}});
  apply_edit(r, edit_append_notes{{"n2", "n3"}});
  CHECK(r.links.related_notes == std::vector<std::string>{"n1", "n2", "n3"});
  apply_edit(r, edit_drop_links{{"r9", "r2", "r5"}});
  CHECK(r.links.duplicate_of.empty());
  CHECK(r.links.related_ids.empty());  // make_record(1) relates to r2
  CHECK(r.links.supersedes == std::vector<std::string>{"r4"});
  CHECK(r.links.related_notes.size() == 3);
  apply_edit(r, edit_set_duplicate_of{"r0"});
  CHECK(r.links.duplicate_of == "r0");
  apply_edit(r, edit_set_weight{0.25});
  CHECK(r.effective_weight == 0.25);
  CHECK_THROWS_AS(apply_edit(r, edit_set_weight{1.5}), error);
  CHECK_THROWS_AS(apply_edit(r, edit_set_weight{std::nan("")}), error);
  CHECK(r.effective_weight == 0.25);
  apply_edit(r, edit_fill_metadata{"topic", std::string("other")});
  apply_edit(r, edit_fill_metadata{"lang", std::string("en")});
  CHECK(std::get<std::string>(r.metadata.at("topic")) == "t1");
  CHECK(std::get<std::string>(r.metadata.at("lang")) == "en");
  apply_edit(r, edit_normalize_timestamps{});
  CHECK(r.created_at->utc_offset_minutes == 0);
  CHECK(format_timestamp(*r.created_at) == "2024-03-01T09:30:00.000Z");  // 17:30+08:00 is 09:30Z
  CHECK(!r.last_accessed_at);
  CHECK_THROWS_AS(apply_edit(r, edit_replace_embedding{{}, "m2"}), error);
  apply_edit(r, edit_replace_embedding{{1.f, 2.f}, "m2"});
  CHECK(r.embedding == std::vector<float>{1.f, 2.f});
  CHECK(r.embedding_version == "m2");
  CHECK_THROWS_AS(apply_edit(r, edit_set_content{""}), error);
  CHECK(r.content == "memory number 1");
  apply_edit(r, edit_set_content{"User moved to Lyon in 2024."});
  CHECK(r.content == "User moved to Lyon in 2024.");
  CHECK(r.embedding == std::vector<float>{1.f, 2.f});  // the text only: the vector is its own edit
  const memory_record once = r;
  apply_edit(r, edit_add_supersedes{{"r5"}});
  apply_edit(r, edit_add_supersedes{{"r5"}});
  CHECK(r.links.supersedes == std::vector<std::string>{"r4", "r5"});
}

namespace {
// A record whose content is read-only (no edit_set_content), and crm::note's is writable.
struct ro_note {
  std::string id;
  const std::string content;
};
}  // namespace

TEST_CASE(
    "edit_set_content: new text and its vector in one action, embedded after every edit, "
    "rollback restores the old text and vector byte for byte, a second apply changes nothing") {
  static_assert(edit_supported<memory_record, edit_set_content>);
  static_assert(!edit_supported<ro_note, edit_set_content>);
  scratch_dir dir("set-content");
  store_t store = make_store(3);
  const auto before = images(store);
  // the embedder an executor calls: the record's text, as the app's model would see it
  std::vector<std::string> embedded_texts;
  apply_options ao;
  ao.embed_version = "toy-v2";
  ao.embed = [&](const memory_record& r) {
    embedded_texts.push_back(r.content);
    return std::vector<float>{float(r.content.size()), 1.f, 0.f, 0.f};
  };
  repair_plan plan;
  // the re-embedding is listed before the new text: the vector must still be of the new text
  plan.actions.push_back(action("edit-r1", {{"r1", edit_replace_embedding{{}, {}}},
                                            {"r1", edit_set_content{"User lives in Lyon."}},
                                            {"r1", edit_add_supersedes{{"r2"}}},
                                            {"r2", edit_set_status{"archived"}}}));
  {
    wal_writer wal(dir.path / "run.wal", wal_sync::none);
    const auto res = apply_plan(store, plan, wal, ao);
    REQUIRE(res.outcomes.size() == 1);
    CHECK(res.outcomes[0].status == action_status::applied);
    CHECK(res.outcomes[0].records_changed == 2);
  }
  CHECK(embedded_texts == std::vector<std::string>{"User lives in Lyon."});
  const auto r1 = store.extract(*store.find("r1"));  // the record with its vector
  CHECK(r1.content == "User lives in Lyon.");
  CHECK(r1.embedding == std::vector<float>{19.f, 1.f, 0.f, 0.f});  // 19 bytes of new text
  CHECK(r1.embedding_version == "toy-v2");
  CHECK(r1.links.supersedes == std::vector<std::string>{"r2"});
  CHECK(store.record(*store.find("r2")).status == "archived");
  CHECK(store.record(*store.find("r0")).content == "memory number 0");
  // the same action again: every record already holds its after-image
  {
    wal_writer wal(dir.path / "again.wal", wal_sync::none);
    const auto res = apply_plan(store, plan, wal, ao);
    CHECK(res.outcomes[0].status == action_status::already_applied);
  }
  const auto after = images(store);
  // rollback of the first log: the old text and the old vector, byte for byte
  const auto log = read_wal_file(dir.path / "run.wal");
  const auto rb = rollback(store, log);
  CHECK(rb.conflicts.empty());
  CHECK(images(store) == before);
  CHECK(store.record(*store.find("r1")).content == "memory number 1");
  CHECK(store.extract(*store.find("r1")).embedding == std::vector<float>{1.5f, -1.25f, 0.f, 3.f});
  CHECK(store.record(*store.find("r1")).embedding_version == "m1");
  CHECK(after != before);
  // an empty text fails the action (manual queue after its attempts), the store untouched
  repair_plan empty;
  empty.actions.push_back(action("empty-r0", {{"r0", edit_set_content{""}}}));
  {
    wal_writer wal(dir.path / "empty.wal", wal_sync::none);
    const auto res = apply_plan(store, empty, wal, ao);
    CHECK(res.outcomes[0].status == action_status::failed);
  }
  CHECK(images(store) == before);
}

TEST_CASE("apply_plan then rollback gives back the original store exactly") {
  scratch_dir dir("rollback");
  store_t store = make_store(30);
  const auto before = images(store);
  const std::string jsonl_before = to_jsonl(store);
  const repair_plan plan = test_plan(12);
  {
    wal_writer wal(dir.path / "run.wal", wal_sync::none);
    auto res = apply_plan(store, plan, wal);
    CHECK(res.applied.size() == 12);
    CHECK(res.failed.empty());
    // Action k edits r(k%30) and, for even k, r((7k+3)%30), for k%3==0 r((k+11)%30): for
    // k = 0..11 that is 12 + 6 + 4 records, all distinct per action (k=0: r0, r3, r11).
    CHECK(res.records_changed == 22);
  }
  CHECK(images(store) == prefix_images(make_store(30), plan, 12));
  const auto log = read_wal_file(dir.path / "run.wal");
  CHECK(log.clean());
  auto rb = rollback(store, log);
  CHECK(rb.conflicts.empty());
  CHECK(rb.records_restored == 22);
  CHECK(rb.rolled_back.size() == 12);
  CHECK(rb.rolled_back.front() == "key11");
  CHECK(images(store) == before);
  CHECK(to_jsonl(store) == jsonl_before);
  // A second rollback finds every record already restored and writes nothing.
  auto again = rollback(store, log);
  CHECK(again.records_restored == 0);
  CHECK(again.already_restored == 22);
}

TEST_CASE(
    "rollback: a record changed since is a conflict, left alone unless forced, rollback logs "
    "itself") {
  scratch_dir dir("conflict");
  store_t store = make_store(30);
  const auto original = images(store);
  repair_plan plan;
  plan.actions.push_back(
      action("a", {{"r1", edit_set_status{"archived"}}, {"r2", edit_set_status{"archived"}}}));
  {
    wal_writer wal(dir.path / "run.wal", wal_sync::none);
    apply_plan(store, plan, wal);
  }
  {
    auto r2 = store.extract(2);  // someone edits r2 afterwards
    r2.effective_weight = 0.5;
    store.restore(2, r2);
  }
  const std::string r2_edited = to_json(store.extract(2));
  const auto log = read_wal_file(dir.path / "run.wal");
  {
    wal_writer rlog(dir.path / "rollback.wal", wal_sync::none);
    auto rb = rollback(store, log, {false, &rlog});
    REQUIRE(rb.conflicts.size() == 1);
    CHECK(rb.conflicts[0].id == "r2");
    CHECK(rb.records_restored == 1);
  }
  CHECK(to_json(store.extract(1)) == original[1]);
  CHECK(to_json(store.extract(2)) == r2_edited);
  // The rollback's own log: one intent (r1: archived -> active) and its commit.
  const auto rlog = read_wal_file(dir.path / "rollback.wal");
  CHECK(rlog.clean());
  const auto acts = logged_actions(rlog);
  REQUIRE(acts.size() == 1);
  CHECK(acts[0].state == logged_state::committed);
  REQUIRE(acts[0].intent->records.size() == 1);
  CHECK(acts[0].intent->records[0].after.status == "active");
  auto forced = rollback(store, log, {true, nullptr});
  CHECK(forced.records_restored == 1);
  CHECK(images(store) == original);
}

TEST_CASE("apply_plan: idempotent (a second run skips everything as already applied)") {
  scratch_dir dir("idem");
  store_t store = make_store(30);
  const repair_plan plan = test_plan(6);
  wal_writer wal(dir.path / "run.wal", wal_sync::none);
  auto first = apply_plan(store, plan, wal);
  CHECK(first.applied.size() == 6);
  const auto after_first = images(store);
  const auto bytes_after_first = wal.bytes_written();
  auto second = apply_plan(store, plan, wal);
  CHECK(second.applied.empty());
  CHECK(second.skipped_already_applied.size() == 6);
  CHECK(second.records_changed == 0);
  CHECK(images(store) == after_first);
  // Only run_begin and run_end frames were added: no intent.
  const auto log = read_wal_file(dir.path / "run.wal");
  CHECK(log.clean());
  CHECK(logged_actions(log).size() == 6);
  CHECK(wal.bytes_written() > bytes_after_first);
}

TEST_CASE("apply_plan: loop detection sends the back-and-forth action to the manual queue") {
  scratch_dir dir("loop");
  store_t store = make_store(5);
  repair_plan plan;
  plan.actions.push_back(action("archive", {{"r1", edit_set_status{"archived"}}}));
  plan.actions.push_back(action("other", {{"r2", edit_set_weight{0.5}}}));
  plan.actions.push_back(action("unarchive", {{"r1", edit_set_status{"active"}}}));
  wal_writer wal(dir.path / "run.wal", wal_sync::none);
  auto res = apply_plan(store, plan, wal);
  CHECK(res.applied == std::vector<std::string>{"archive", "other"});
  CHECK(res.failed == std::vector<std::string>{"unarchive"});
  CHECK(res.outcomes[2].reason.find("loop") != std::string::npos);
  CHECK(store.record(1).status == "archived");
}

TEST_CASE("apply_plan: failures are undone, retried up to 3 times, then manual queue") {
  scratch_dir dir("retry");
  repair_plan plan;
  plan.actions.push_back(action("a0", {{"r0", edit_set_status{"archived"}}}));
  plan.actions.push_back(
      action("a1", {{"r1", edit_set_weight{0.5}}, {"r3", edit_set_status{"archived"}}}));
  plan.actions.push_back(action("a2", {{"r2", edit_set_status{"archived"}}}));
  plan.actions.push_back(action("gone", {{"r404", edit_set_status{"archived"}}}));
  plan.actions.push_back(action("bad_weight", {{"r4", edit_set_weight{7.0}}}));

  SUBCASE("two failures, then success") {
    flaky_store s{make_store(5), 3, 2};
    wal_writer wal(dir.path / "run.wal", wal_sync::none);
    auto res = apply_plan(s, plan, wal);
    CHECK(res.applied == std::vector<std::string>{"a0", "a1", "a2"});
    CHECK(res.outcomes[1].attempts == 3);
    CHECK(s.inner.record(1).effective_weight == 0.5);
    CHECK(res.failed == std::vector<std::string>{"gone", "bad_weight"});
    CHECK(res.outcomes[3].attempts == 0);  // a missing id is not retried
    CHECK(res.outcomes[4].attempts == 4);  // an edit that throws: 1 + 3 retries
    const auto log = read_wal_file(dir.path / "run.wal");
    const auto acts = logged_actions(log);
    // a0 committed, a1 aborted twice then committed, a2 committed.
    REQUIRE(acts.size() == 5);
    CHECK(acts[1].state == logged_state::aborted);
    CHECK(acts[2].state == logged_state::aborted);
    CHECK(acts[3].state == logged_state::committed);
    CHECK(acts[3].intent->attempt == 3);
  }
  SUBCASE("always failing: undone each time, manual queue after 4 attempts") {
    flaky_store s{make_store(5), 3, 100};
    const auto original = images(s.inner);
    wal_writer wal(dir.path / "run.wal", wal_sync::none, "run-x");
    auto res = apply_plan(s, plan, wal);
    CHECK(res.applied == std::vector<std::string>{"a0", "a2"});
    CHECK(res.failed == std::vector<std::string>{"a1", "gone", "bad_weight"});
    CHECK(res.outcomes[1].attempts == 4);
    // r1 was written before r3 failed each time, and was put back.
    CHECK(to_json(s.inner.extract(1)) == original[1]);
    CHECK(to_json(s.inner.extract(3)) == original[3]);
    const auto log = read_wal_file(dir.path / "run.wal");
    const auto acts = logged_actions(log);
    REQUIRE(acts.size() == 6);
    for (int k = 1; k <= 4; ++k) CHECK(acts[k].state == logged_state::aborted);
    CHECK(acts[1].intent->run == "run-x");
  }
  SUBCASE("a failure inside a group-commit batch re-runs the rest of the batch") {
    flaky_store s{make_store(5), 3, 1};
    wal_writer wal(dir.path / "run.wal", wal_sync::none);
    apply_options opt;
    opt.batch_size = 3;
    auto res = apply_plan(s, plan, wal, opt);
    CHECK(res.applied == std::vector<std::string>{"a0", "a1", "a2"});
    CHECK(res.outcomes[1].attempts == 2);
    CHECK(res.outcomes[2].attempts == 1);
    const auto log = read_wal_file(dir.path / "run.wal");
    const auto acts = logged_actions(log);
    // batch 1: a0 committed, a1 aborted, a2 aborted (re-run); batch 2: a1, a2 committed.
    REQUIRE(acts.size() == 5);
    CHECK(acts[2].state == logged_state::aborted);
    CHECK(acts[2].intent->idempotency_key == "a2");
    CHECK(acts[4].state == logged_state::committed);
  }
}

TEST_CASE("apply_plan: approvals, suspension, record budget, dry run") {
  scratch_dir dir("guards");
  repair_plan plan;
  plan.actions.push_back(action("t1", {{"r0", edit_set_status{"archived"}}}));
  plan.actions.push_back(action("t2", {{"r1", edit_set_weight{0.5}}}, automation::confirm));
  plan.actions.push_back(
      action("t3", {{"r2", edit_set_status{"pending_review"}}}, automation::manual));
  plan.actions.push_back(
      action("t1b", {{"r3", edit_set_status{"archived"}}, {"r4", edit_set_status{"archived"}}}));
  plan.actions.push_back(action("t1c", {{"r4", edit_set_weight{0.1}}}));
  plan.actions.push_back(action("none", {}));
  wal_writer wal(dir.path / "run.wal", wal_sync::none);

  SUBCASE("tier 2 and 3 need approval") {
    store_t s = make_store(5);
    auto res = apply_plan(s, plan, wal);
    CHECK(res.applied == std::vector<std::string>{"t1", "t1b", "t1c"});
    CHECK(res.skipped_unapproved == std::vector<std::string>{"t2", "t3"});
    CHECK(res.skipped_noop == std::vector<std::string>{"none"});
    CHECK(!s.record(1).effective_weight);
    apply_options opt;
    opt.approve_tier2 = true;
    auto res2 = apply_plan(s, plan, wal, opt);
    CHECK(res2.applied == std::vector<std::string>{"t2"});
    CHECK(res2.skipped_unapproved == std::vector<std::string>{"t3"});
    CHECK(s.record(1).effective_weight == 0.5);
  }
  SUBCASE("suspended plan runs nothing") {
    store_t s = make_store(5);
    const auto original = images(s);
    repair_plan p = plan;
    p.suspended = true;
    p.suspend_reason = "blast radius";
    auto res = apply_plan(s, p, wal);
    CHECK(res.skipped_unapproved.size() == 6);
    CHECK(images(s) == original);
  }
  SUBCASE("max_records defers the action that would exceed it and all after it") {
    store_t s = make_store(5);
    apply_options opt;
    opt.approve_tier2 = opt.approve_tier3 = true;
    opt.max_records = 4;  // t1, t2, t3 = 3 records; t1b would make 5
    auto res = apply_plan(s, plan, wal, opt);
    CHECK(res.applied == std::vector<std::string>{"t1", "t2", "t3"});
    CHECK(res.deferred == std::vector<std::string>{"t1b", "t1c"});
    CHECK(res.records_changed == 3);
  }
  SUBCASE("dry run changes nothing and writes nothing") {
    store_t s = make_store(5);
    const auto original = images(s);
    const auto bytes = wal.bytes_written();
    apply_options opt;
    opt.dry_run = true;
    auto res = apply_plan(s, plan, wal, opt);
    CHECK(res.dry_run);
    CHECK(res.applied == std::vector<std::string>{"t1", "t1b", "t1c"});
    CHECK(res.records_changed == 4);
    CHECK(images(s) == original);
    CHECK(wal.bytes_written() == bytes);
  }
}

TEST_CASE("apply_plan_stream: the same run as apply_plan, read action by action from a file") {
  scratch_dir dir("stream");
  // test_plan(40): 40 actions of priority 0 (file order = execution order), failures and
  // retries included through a flaky record, and the budget cutting the run after 60 records
  const repair_plan plan = test_plan(40);
  write_plan((dir.path / "plan.jsonl.gz").string(), plan);
  for (const std::size_t budget : {std::size_t{1000}, std::size_t{60}}) {
    CAPTURE(budget);
    apply_options opt;
    opt.batch_size = 4;
    opt.max_records = budget;
    flaky_store a{make_store(30), 3, 2};  // r3 fails twice: an abort, a re-run of its batch
    flaky_store b{make_store(30), 3, 2};
    wal_writer wa(dir.path / ("a" + std::to_string(budget) + ".wal"), wal_sync::none, "run-a");
    wal_writer wb(dir.path / ("b" + std::to_string(budget) + ".wal"), wal_sync::none, "run-a");
    const apply_result whole = apply_plan(a, plan, wa, opt);
    plan_reader reader((dir.path / "plan.jsonl.gz").string());
    std::vector<action_outcome> seen;
    const apply_counts c = apply_plan_stream(
        b, reader, wb, opt, [&](const action_outcome& o, const repair_action& act) {
          CHECK(act.idempotency_key == o.idempotency_key);
          seen.push_back(o);
        });
    CHECK(images(a.inner) == images(b.inner));
    CHECK(c.actions == 40);
    CHECK(c.applied == whole.applied.size());
    CHECK(c.deferred == whole.deferred.size());
    CHECK(c.records_changed == whole.records_changed);
    REQUIRE(seen.size() == 40);  // every action settled exactly once
    std::sort(seen.begin(), seen.end(),
              [](const action_outcome& x, const action_outcome& y) { return x.action < y.action; });
    for (std::size_t k = 0; k < 40; ++k) {
      CHECK(seen[k].action == k);
      CHECK(seen[k].status == whole.outcomes[k].status);
      CHECK(seen[k].attempts == whole.outcomes[k].attempts);
      CHECK(seen[k].records_changed == whole.outcomes[k].records_changed);
    }
    if (budget == 60) CHECK(c.deferred > 0);
    // the two logs hold the same frames but for their time stamps
    wa.flush();
    wb.flush();
    const auto la = read_wal_file(dir.path / ("a" + std::to_string(budget) + ".wal"));
    const auto lb = read_wal_file(dir.path / ("b" + std::to_string(budget) + ".wal"));
    REQUIRE(la.entries.size() == lb.entries.size());
    for (std::size_t k = 0; k < la.entries.size(); ++k) {
      CHECK(la.entries[k].type == lb.entries[k].type);
      CHECK(la.entries[k].action == lb.entries[k].action);
    }
  }
}

TEST_CASE("apply_plan_stream: a plan out of execution order stops at the first action out of it") {
  scratch_dir dir("stream-order");
  repair_plan plan;
  plan.actions.push_back(action("low", {{"r0", edit_set_status{"archived"}}}));
  plan.actions.push_back(action("high", {{"r1", edit_set_status{"archived"}}}));
  plan.actions[1].priority = 400;  // after an action of priority 0
  write_plan((dir.path / "plan.jsonl").string(), plan);
  store_t s = make_store(5);
  wal_writer w(dir.path / "run.wal", wal_sync::none);
  plan_reader reader((dir.path / "plan.jsonl").string());
  std::size_t settled = 0;
  CHECK_THROWS_WITH_AS(
      apply_plan_stream(s, reader, w, {},
                        [&](const action_outcome&, const repair_action&) { ++settled; }),
      doctest::Contains("not in execution order"), error);
  // batch_size 1: "low" ran before "high" was read; "high" did not run
  CHECK(settled == 1);
  CHECK(s.record(0).status == "archived");
  CHECK(s.record(1).status == "active");
}

TEST_CASE("wal_writer: group commit syncs once per batch") {
  scratch_dir dir("sync");
  const repair_plan plan = test_plan(10);
  {
    store_t s = make_store(30);
    wal_writer wal(dir.path / "b1.wal");  // per_batch (default)
    CHECK(wal.syncs() == 1);              // the header
    apply_plan(s, plan, wal);
    // run_begin + 10 intents + run_end (commit frames ride on the next sync).
    CHECK(wal.syncs() == 1 + 1 + 10 + 1);
  }
  {
    store_t s = make_store(30);
    wal_writer wal(dir.path / "b5.wal");
    apply_options opt;
    opt.batch_size = 5;
    apply_plan(s, plan, wal, opt);
    CHECK(wal.syncs() == 1 + 1 + 2 + 1);
    CHECK(images(s) == prefix_images(make_store(30), plan, 10));
  }
  // Reopening continues the file: sequence numbers go on, the header is not repeated.
  {
    store_t s = make_store(30);
    wal_writer wal(dir.path / "b5.wal");
    CHECK(wal.syncs() == 0);
    apply_plan(s, test_plan(1), wal);
  }
  const auto log = read_wal_file(dir.path / "b5.wal");
  CHECK(log.clean());
  for (std::size_t i = 1; i < log.entries.size(); ++i)
    CHECK(log.entries[i].seq == log.entries[i - 1].seq + 1);
  CHECK(logged_actions(log).size() == 11);
}

TEST_CASE(
    "wal: a cut at every byte offset keeps exactly the whole frames, recover gives whole actions") {
  scratch_dir dir("cut");
  const store_t original = make_store(30);
  const repair_plan plan = test_plan(5);
  {
    store_t s = make_store(30);
    wal_writer wal(dir.path / "run.wal", wal_sync::none);
    apply_plan(s, plan, wal);
  }
  const std::string bytes = slurp(dir.path / "run.wal");
  const auto full = read_wal(bytes);
  REQUIRE(full.clean());
  // header, run_begin, 5 x (intent, commit), run_end
  REQUIRE(full.entries.size() == 12);
  std::vector<std::size_t> ends;  // end offset of each frame, header first
  for (const auto& e : full.entries) ends.push_back(e.offset);
  ends.push_back(bytes.size());  // ends[k] = end of frame k (k=0 header)
  std::vector<std::vector<std::string>> prefix;
  for (std::size_t m = 0; m <= 5; ++m) prefix.push_back(prefix_images(original, plan, m));

  std::size_t last_whole = static_cast<std::size_t>(-1);
  for (std::size_t cut = 0; cut <= bytes.size(); ++cut) {
    const auto c = read_wal(std::string_view(bytes).substr(0, cut));
    std::size_t whole = 0;  // frames wholly before the cut, header included
    while (whole < ends.size() && ends[whole] <= cut) ++whole;
    const bool boundary = cut == 0 || (whole > 0 && ends[whole - 1] == cut);
    REQUIRE(c.entries.size() == (whole > 0 ? whole - 1 : 0));
    for (std::size_t k = 0; k < c.entries.size(); ++k)
      CHECK(c.entries[k].payload == full.entries[k].payload);
    if (boundary) {
      REQUIRE(c.clean());
    } else {
      REQUIRE(c.problem);
      CHECK(c.problem->kind == wal_problem_kind::truncated);
      CHECK(c.problem->offset == (whole > 0 ? ends[whole - 1] : 0));
      CHECK(!c.problem->valid_frames_follow);
    }
    // Recovery depends only on the whole frames: check it once per count of whole frames.
    if (whole == last_whole) continue;
    last_whole = whole;
    // The crash state: committed actions applied, an open intent half applied (first record).
    const auto acts = logged_actions(c);
    std::size_t commits = 0;
    for (const auto& a : acts) commits += a.state == logged_state::committed;
    store_t crashed = make_store(30);
    for (const auto& a : acts) {
      if (a.state == logged_state::committed)
        for (const auto& r : a.intent->records) crashed.restore(r.index, r.after);
      else
        crashed.restore(a.intent->records.front().index, a.intent->records.front().after);
    }
    auto rec = recover(crashed, c);
    CHECK(rec.conflicts.empty());
    CHECK(images(crashed) == prefix[commits]);
    // The original store (a snapshot from before the run) is brought forward the same way.
    store_t old = make_store(30);
    recover(old, c);
    CHECK(images(old) == prefix[commits]);
    // Recovering twice changes nothing.
    CHECK(recover(old, c).records_restored == 0);
    // A store that commits each action before its commit frame (committed_in_store, pg_store):
    // only the open action is undone, and committed actions whose records hold their
    // before-images (rolled back on purpose; here the snapshot from before the run) stay so.
    recover_options in_store;
    in_store.committed_in_store = true;
    store_t crashed2 = make_store(30);
    std::size_t open_records = 0;
    for (const auto& a : acts) {
      if (a.state == logged_state::committed)
        for (const auto& r : a.intent->records) crashed2.restore(r.index, r.after);
      else {
        crashed2.restore(a.intent->records.front().index, a.intent->records.front().after);
        ++open_records;
      }
    }
    const auto rec_in = recover(crashed2, c, in_store);
    CHECK(rec_in.conflicts.empty());
    CHECK(rec_in.records_restored == open_records);
    CHECK(images(crashed2) == prefix[commits]);
    store_t rolled_back = make_store(30);
    CHECK(recover(rolled_back, c, in_store).records_restored == 0);
    CHECK(images(rolled_back) == prefix[0]);
  }
}

TEST_CASE("wal: a flipped byte in the middle is detected and reported, later frames untrusted") {
  scratch_dir dir("flip");
  {
    store_t s = make_store(30);
    wal_writer wal(dir.path / "run.wal", wal_sync::none);
    apply_plan(s, test_plan(5), wal);
  }
  std::string bytes = slurp(dir.path / "run.wal");
  const auto full = read_wal(bytes);
  const auto& intent2 = full.entries[3];  // run_begin, intent0, commit0, intent1, ...
  REQUIRE(intent2.type == wal_frame_type::intent);
  const std::size_t pos = intent2.offset + 8 + intent2.payload.size() / 2;
  bytes[pos] = static_cast<char>(bytes[pos] ^ 0x20);
  const auto c = read_wal(bytes);
  REQUIRE(c.problem);
  CHECK(c.problem->kind == wal_problem_kind::bad_checksum);
  CHECK(c.problem->offset == intent2.offset);
  CHECK(c.problem->valid_frames_follow);
  CHECK(c.problem->next_valid_offset == full.entries[4].offset);
  CHECK(c.entries.size() == 3);
  // The writer refuses to append after corruption in the middle.
  std::ofstream(dir.path / "bad.wal", std::ios::binary) << bytes;
  CHECK_THROWS_AS(wal_writer(dir.path / "bad.wal", wal_sync::none), error);
  // A torn tail is cut off on reopen.
  std::ofstream(dir.path / "torn.wal", std::ios::binary)
      << slurp(dir.path / "run.wal").substr(0, full.entries[5].offset + 11);
  { wal_writer w(dir.path / "torn.wal", wal_sync::none); }
  CHECK(fs::file_size(dir.path / "torn.wal") == full.entries[5].offset);
}

TEST_CASE("recover: redo policy finishes open actions") {
  const store_t original = make_store(30);
  const repair_plan plan = test_plan(3);
  scratch_dir dir("redo");
  {
    store_t s = make_store(30);
    wal_writer wal(dir.path / "run.wal", wal_sync::none);
    apply_options opt;
    int calls = 0;
    opt.crash_hook = [&](std::string_view p) {
      if (p == "before_commit" && ++calls == 2) throw std::runtime_error("stop");  // the 2nd action
    };
    opt.retry_limit = 0;
    auto res = apply_plan(s, plan, wal, opt);
    CHECK(res.applied == std::vector<std::string>{"key0", "key2"});
  }
  // Drop the abort frame of key1 (as if the process had died before writing it) by rebuilding
  // the log without it.
  auto log = read_wal_file(dir.path / "run.wal");
  std::erase_if(log.entries, [](const wal_entry& e) { return e.type == wal_frame_type::abort; });
  store_t s = make_store(30);
  auto rec = recover(s, log, {open_action_policy::redo, false});
  REQUIRE(rec.actions.size() == 3);
  CHECK(rec.actions[1].status == recovery_status::redone);
  CHECK(images(s) == prefix_images(original, plan, 3));
  store_t u = make_store(30);
  auto rec2 = recover(u, log);
  CHECK(rec2.actions[1].status == recovery_status::undone);
  auto expect = prefix_images(original, plan, 3);
  const auto without1 = prefix_images(original, plan, 1);
  // key1 changes r1 only (k=1: odd, not a multiple of 3): r1 keeps its state after key0.
  expect[1] = without1[1];
  CHECK(images(u) == expect);
}

TEST_CASE(
    "crash test: 200 forked runs killed at random points recover to a prefix of whole actions") {
  // Model: the store is durable as a JSONL snapshot file rewritten (write + atomic rename) after
  // every record write, so a crash can leave an action half applied on disk. After the child
  // dies, the parent loads the snapshot (or the original if none was written), reads the WAL and
  // recovers. It also recovers the ORIGINAL store from the same WAL (the JSONL-store model: the
  // file on disk is the old one until a final atomic write), which must give the same state.
  scratch_dir dir("crash");
  const store_t original = make_store(30);
  const repair_plan plan = test_plan(20);
  std::vector<std::vector<std::string>> prefix;
  for (std::size_t m = 0; m <= 20; ++m) prefix.push_back(prefix_images(original, plan, m));
  std::mt19937 rng(20240601);
  int finished = 0, killed = 0;
  for (int it = 0; it < 200; ++it) {
    const fs::path wal_path = dir.path / "run.wal";
    for (const auto& f : fs::directory_iterator(dir.path)) fs::remove(f.path());
    const int crash_at = static_cast<int>(rng() % 110);  // hook calls: ~1 + 20*(4..6) + 1
    const std::size_t batch = rng() % 2 ? 1 : 4;
    const bool use_sigkill = it % 10 == 9;
    const bool real_sync = it % 50 == 0;
    const unsigned delay_us = rng() % 3000;
    std::fflush(nullptr);
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      try {
        store_t s = make_store(30);
        wal_writer wal(wal_path, real_sync ? wal_sync::per_batch : wal_sync::none);
        apply_options opt;
        opt.batch_size = batch;
        int calls = 0, snaps = 0;
        opt.crash_hook = [&](std::string_view point) {
          if (point == "after_apply_record") {  // make the store durable: snapshot k+1 replaces k
            // (a rename to a new name, then unlink: renaming over an existing file makes ext4
            // flush the data, which would only slow the test down)
            const fs::path tmp = dir.path / "snap.tmp";
            std::ofstream(tmp, std::ios::binary) << to_jsonl(s);
            fs::rename(tmp, dir.path / ("store." + std::to_string(++snaps)));
            fs::remove(dir.path / ("store." + std::to_string(snaps - 1)));
          }
          if (!use_sigkill && ++calls == crash_at) ::_exit(3);
        };
        apply_plan(s, plan, wal, opt);
      } catch (...) {
        ::_exit(4);
      }
      ::_exit(0);
    }
    if (use_sigkill) {
      ::usleep(delay_us);
      ::kill(pid, SIGKILL);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (use_sigkill) {
      CHECK((WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) == 0)));
    } else {
      REQUIRE(WIFEXITED(status));
      CHECK((WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 3));
      finished += WEXITSTATUS(status) == 0;
    }
    killed += WIFSIGNALED(status);

    const auto log = fs::exists(wal_path) ? read_wal_file(wal_path)
                                          : wal_contents{};  // killed before creating it
    const auto acts = logged_actions(log);
    std::size_t commits = 0;
    for (std::size_t k = 0; k < acts.size(); ++k) {
      if (acts[k].state != logged_state::committed) continue;
      CHECK(acts[k].intent->action ==
            static_cast<std::int64_t>(commits));  // committed in plan order
      ++commits;
    }
    int last = 0;  // the newest complete snapshot (two may exist if the child died between rename
                   // and unlink)
    for (const auto& f : fs::directory_iterator(dir.path))
      if (f.path().filename().string().rfind("store.", 0) == 0)
        last = std::max(last, std::stoi(f.path().extension().string().substr(1)));
    store_t disk = last ? store_t::from_records(
                              read_jsonl(dir.path / ("store." + std::to_string(last))).records)
                        : make_store(30);
    auto rec = recover(disk, log);
    CHECK(rec.conflicts.empty());
    CHECK(images(disk) == prefix[commits]);
    store_t old = make_store(30);
    recover(old, log);
    CHECK(images(old) == prefix[commits]);
  }
  CHECK(finished > 0);
  MESSAGE("crash test: " << finished << " runs finished, " << killed << " killed by SIGKILL");
}

// ---------------------------------------------------------------- a user's own record type

namespace crm {

// A CRM note as a user's system stores it: memhealth's fields under other names, no embedding
// and no metadata. Its image is its own canonical JSON object (record_image.hpp, ADL pair).
struct note {
  std::string key, body, status = "active";
  double weight = 1.0;
  std::vector<std::string> notes;
  friend bool operator==(const note&, const note&) = default;
};

std::string json_str(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out + "\"";
}

std::string memhealth_encode_image(const note& n) {
  char w[32];
  std::snprintf(w, sizeof w, "%.17g", n.weight);
  std::string out = "{\"key\":" + json_str(n.key) + ",\"body\":" + json_str(n.body) +
                    ",\"status\":" + json_str(n.status) + ",\"weight\":" + w + ",\"notes\":[";
  for (std::size_t i = 0; i < n.notes.size(); ++i) out += (i ? "," : "") + json_str(n.notes[i]);
  return out + "]}";
}

note memhealth_decode_image(std::string_view json, std::type_identity<note>) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json);
    return {j.at("key").get<std::string>(), j.at("body").get<std::string>(),
            j.at("status").get<std::string>(), j.at("weight").get<double>(),
            j.at("notes").get<std::vector<std::string>>()};
  } catch (const nlohmann::json::exception&) {
    throw error(error_code::parse, "crm note image is not a crm note");
  }
}

}  // namespace crm

}  // namespace repair_wal_test
template <>
struct memhealth::record_traits<repair_wal_test::crm::note> {
  static constexpr auto id = &repair_wal_test::crm::note::key;
  static constexpr auto content = &repair_wal_test::crm::note::body;
  static constexpr auto effective_weight = &repair_wal_test::crm::note::weight;
  static constexpr auto related_notes = &repair_wal_test::crm::note::notes;
};

namespace repair_wal_test {
namespace {

using crm_store = memory_store<crm::note>;

crm_store crm_notes() {
  return crm_store::from_records({{"n1", "prefers email", "active", 1.0, {}},
                                  {"n2", "renewal due in May", "active", 1.0, {}},
                                  {"n3", "call back \"Tuesday\"", "active", 0.75, {"from n1"}}});
}

std::vector<std::string> crm_images(const crm_store& s) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < s.size(); ++i) out.push_back(encode_image(s.extract(i)));
  return out;
}

repair_plan crm_plan() {
  repair_plan p;
  p.actions.push_back(action("archive-n1", {{"n1", edit_set_status{"archived"}}}));
  p.actions.push_back(action(
      "fade-n2", {{"n2", edit_set_weight{0.25}}, {"n2", edit_append_notes{{"superseded"}}}}));
  p.actions.push_back(
      action("meta-n3", {{"n3", edit_fill_metadata{"topic", std::string("crm")}}}));  // no metadata
  return p;
}

}  // namespace

TEST_CASE("record image: memory_record images are its canonical JSON, a user type's round-trips") {
  static_assert(imaged_record<memory_record> && imaged_record<crm::note>);
  static_assert(mutable_record_store<crm_store>);
  static_assert(edit_supported<crm::note, edit_set_weight> &&
                !edit_supported<crm::note, edit_fill_metadata>);
  const memory_record r = make_record(3);
  CHECK(encode_image(r) == to_json(r));
  CHECK(to_json(decode_image<memory_record>(to_json(r))) == to_json(r));
  const crm::note n{"n3", "call back \"Tuesday\"", "active", 0.1, {"a", "b\\c"}};
  CHECK(
      encode_image(n) ==
      R"({"key":"n3","body":"call back \"Tuesday\"","status":"active","weight":0.10000000000000001,"notes":["a","b\\c"]})");
  CHECK(decode_image<crm::note>(encode_image(n)) == n);
  CHECK_THROWS_AS((void)decode_image<memory_record>("not json"), error);
}

TEST_CASE("apply_plan, rollback and recover on a user's record type restore it byte for byte") {
  scratch_dir dir("crm");
  crm_store store = crm_notes();
  const auto original = crm_images(store);
  {
    wal_writer wal(dir.path / "run.wal", wal_sync::none);
    auto res = apply_plan(store, crm_plan(), wal);
    CHECK(res.applied == std::vector<std::string>{"archive-n1", "fade-n2"});
    REQUIRE(res.failed == std::vector<std::string>{"meta-n3"});
    CHECK(res.outcomes[2].reason ==
          "the record type has no writable metadata (field metadata) for this edit");
    CHECK(res.outcomes[2].attempts == 0);
    CHECK(res.records_changed == 2);
  }
  CHECK(store.record(0).status == "archived");
  CHECK(store.record(1).weight == 0.25);
  CHECK(store.record(1).notes == std::vector<std::string>{"superseded"});
  CHECK(crm_images(store)[2] == original[2]);  // the failed action wrote nothing

  const auto log = read_wal_file(dir.path / "run.wal");
  REQUIRE(log.clean());
  const auto acts = logged_actions(log);
  REQUIRE(acts.size() == 2);
  // The log holds the user's images verbatim.
  CHECK(acts[0].intent->records[0].before_json == original[0]);
  CHECK(
      acts[1].intent->records[0].after_json ==
      R"({"key":"n2","body":"renewal due in May","status":"active","weight":0.25,"notes":["superseded"]})");

  auto rb = rollback(store, log);
  CHECK(rb.conflicts.empty());
  CHECK(rb.records_restored == 2);
  CHECK(crm_images(store) == original);

  // Simulated crash: fade-n2's record was written but its commit frame never reached the log.
  auto crashed_log = log;
  std::erase_if(crashed_log.entries, [](const wal_entry& e) {
    return e.type == wal_frame_type::commit && e.idempotency_key == "fade-n2";
  });
  crm_store crashed = crm_notes();
  for (const auto& a : logged_actions(crashed_log))
    for (const auto& r : a.intent->records)
      crashed.restore(r.index, decode_image<crm::note>(r.after_json));
  auto rec = recover(crashed, crashed_log);  // default: undo open actions
  REQUIRE(rec.actions.size() == 2);
  CHECK(rec.actions[0].status == recovery_status::committed);
  CHECK(rec.actions[1].status == recovery_status::undone);
  CHECK(rec.records_restored == 1);
  auto expect = original;
  expect[0] = R"({"key":"n1","body":"prefers email","status":"archived","weight":1,"notes":[]})";
  CHECK(crm_images(crashed) == expect);
}

// ---------------------------------------------------------------- identity, store, chain, lock

namespace {

std::vector<memory_record> records_of(const store_t& s) {
  std::vector<memory_record> v;
  for (std::size_t i = 0; i < s.size(); ++i) v.push_back(s.extract(i));
  return v;
}

std::string image_of(const std::vector<memory_record>& v, const std::string& id) {
  for (const auto& r : v)
    if (r.id == id) return to_json(r);
  return {};
}

}  // namespace

TEST_CASE("crc64: CRC-64/XZ check value, hex16") {
  CHECK(crc64("123456789") == 0x995DC9BBDF1939FAULL);
  CHECK(crc64("") == 0);
  CHECK(hex16(0x995DC9BBDF1939FAULL) == "995dc9bbdf1939fa");
  CHECK(hex16(1) == "0000000000000001");
}

TEST_CASE("store identity: the fingerprint is the id set's, independent of order and content") {
  store_t a = make_store(5);
  auto v = records_of(a);
  std::reverse(v.begin(), v.end());
  v[0].content = "edited";
  const auto ia = identify_store(a), ib = identify_store(store_t::from_records(v));
  CHECK(ia.fingerprint == ib.fingerprint);
  CHECK(ia.records == 5);
  // By definition: CRC-64/XZ of "r0\nr1\nr2\nr3\nr4\n".
  CHECK(ia.fingerprint == hex16(crc64("r0\nr1\nr2\nr3\nr4\n")));
  v.push_back(make_record(9));
  CHECK(identify_store(store_t::from_records(v)).fingerprint != ia.fingerprint);
}

TEST_CASE(
    "rollback and recover find records by id after inserts, deletes, re-sorts and edits (property, "
    "300 seeds)") {
  const repair_plan plan = test_plan(12);
  const store_t original = make_store(30);
  const auto orig = records_of(original);
  std::size_t relocated_total = 0, missing_total = 0, edited_total = 0;
  for (unsigned seed = 1; seed <= 300; ++seed) {
    CAPTURE(seed);
    scratch_dir dir("shift" + std::to_string(seed));
    store_t store = make_store(30);
    wal_writer_options wo;
    wo.policy = wal_sync::none;
    wo.store = identify_store(store, "s.jsonl");
    std::set<std::string> changed;  // ids the run changed
    {
      wal_writer wal(dir.path / "run.wal", wo);
      auto res = apply_plan(store, plan, wal);
      REQUIRE(res.applied.size() == 12);
    }
    const auto after = records_of(store);
    for (const auto& r : orig)
      if (image_of(after, r.id) != to_json(r)) changed.insert(r.id);
    // Distinct ids of key0..key11: r0..r11, r(7k+3) for even k adds r13 r15 r17 r29, r(k+11) for
    // k%3==0 adds r14 r20: 18 records (22 record writes).
    REQUIRE(changed.size() == 18);
    // A live agent's edits: inserts (new ids), deletes, edits of any record, then a re-sort.
    std::mt19937 rng(seed);
    auto v = after;
    std::set<std::string> deleted, edited;
    const int ops = 1 + static_cast<int>(rng() % 8);
    for (int k = 0; k < ops; ++k) {
      switch (rng() % 3) {
        case 0: {  // insert a new record at a random position
          memory_record n = make_record(100 + k);
          n.id = "new" + std::to_string(seed) + "-" + std::to_string(k);
          v.insert(v.begin() + static_cast<std::ptrdiff_t>(rng() % (v.size() + 1)), n);
          break;
        }
        case 1: {  // delete one (at most 3, so at least half of the changed records stay)
          if (deleted.size() >= 3) break;
          const std::size_t i = rng() % v.size();
          if (v[i].id.starts_with("new")) break;
          deleted.insert(v[i].id);
          v.erase(v.begin() + static_cast<std::ptrdiff_t>(i));
          break;
        }
        default: {  // edit one
          const std::size_t i = rng() % v.size();
          v[i].content += " (edited by the agent)";
          edited.insert(v[i].id);
        }
      }
    }
    std::shuffle(v.begin(), v.end(), rng);
    const auto mutated = v;
    const auto log = read_wal_file(dir.path / "run.wal");
    REQUIRE(log.clean());
    REQUIRE(log.store.has_value());
    // Rollback: every changed record restored or reported by id, nothing else touched.
    for (bool force : {false, true}) {
      CAPTURE(force);
      store_t s = store_t::from_records(mutated);
      rollback_options ro;
      ro.force = force;
      const auto rb = rollback(s, log, ro);
      const auto now = records_of(s);
      REQUIRE(now.size() == mutated.size());
      std::map<std::string, std::set<conflict_kind>> reported;
      for (const auto& c : rb.conflicts) reported[c.id].insert(c.kind);
      for (std::size_t i = 0; i < now.size(); ++i) {
        const std::string& id = now[i].id;
        CHECK(id == mutated[i].id);  // never an image onto a record with another id
        const bool was_changed = changed.count(id) > 0;
        if (!was_changed) {
          CHECK(to_json(now[i]) == to_json(mutated[i]));  // no other record changes
        } else if (edited.count(id)) {
          CHECK(reported[id].count(conflict_kind::changed) == 1);
          if (force)
            CHECK(to_json(now[i]) == image_of(orig, id));
          else
            CHECK(to_json(now[i]) == to_json(mutated[i]));
        } else {
          CHECK(to_json(now[i]) == image_of(orig, id));  // restored by identity
        }
      }
      for (const auto& id : deleted)
        if (changed.count(id)) CHECK(reported[id].count(conflict_kind::missing) == 1);
      std::set<std::string> ids_now;
      for (const auto& r : now) ids_now.insert(r.id);
      CHECK(ids_now.size() == now.size());  // no duplicate id appeared
      CHECK(rb.complete() == rb.conflicts.empty());
      relocated_total += rb.records_relocated;
      if (!force) {
        for (const auto& [id, kinds] : reported) {
          missing_total += kinds.count(conflict_kind::missing);
          edited_total += kinds.count(conflict_kind::changed);
        }
      }
    }
    // Recover (undo policy, everything committed): the same store as the run left it, by id.
    {
      store_t s = store_t::from_records(mutated);
      const auto rc = recover(s, log);
      const auto now = records_of(s);
      for (std::size_t i = 0; i < now.size(); ++i) {
        const std::string& id = now[i].id;
        CHECK(id == mutated[i].id);
        if (changed.count(id) && !edited.count(id))
          CHECK(to_json(now[i]) == image_of(after, id));
        else
          CHECK(to_json(now[i]) == to_json(mutated[i]));
      }
      for (const auto& c : rc.conflicts)
        CHECK((changed.count(c.id) && (edited.count(c.id) || deleted.count(c.id))));
    }
  }
  MESSAGE("position shifts: " << relocated_total << " records found at another index, "
                              << missing_total << " reported missing, " << edited_total
                              << " reported changed (300 seeds)");
  CHECK(relocated_total > 1000);  // the shifts really moved the records
  CHECK(missing_total > 50);
  CHECK(edited_total > 50);
}

// Found by fuzz/fuzz_wal.cpp (libFuzzer, a one-hour run), minimized: an open action whose
// after-image is not in canonical form ("2024-06-09T12:00Z", no seconds). recover --open redo
// wrote it, the store re-encoded it canonically ("12:00:00.000Z"), and every later recovery saw
// "not the target" and restored it again: recovery was not idempotent. Images are now compared as
// records (decoded and encoded again) when their bytes differ.
TEST_CASE("recover: fuzz regression: a non-canonical image is recognised once restored") {
  const std::string before =
      R"({"id":"m1","content":"x","created_at":"2024-06-09T12:00:00.000Z","updated_at":"2024-06-09T12:00:00.000Z"})";
  const std::string after =
      R"({"id":"m1","content":"x","created_at":"2024-06-09T12:00Z","updated_at":"2024-06-09T13:00Z"})";
  std::string log_bytes;
  append_wal_frame(log_bytes, R"({"type":"header","magic":"MHWAL1","version":1})");
  append_wal_frame(log_bytes, R"({"type":"intent","records":[{"index":0,"id":"m1","before":)" +
                                  before + R"(,"after":)" + after + "}]}");
  const wal_contents log = read_wal(log_bytes);
  REQUIRE(logged_actions(log).size() == 1);
  for (auto policy : {open_action_policy::redo, open_action_policy::undo}) {
    CAPTURE(static_cast<int>(policy));
    auto s = store_t::from_records({decode_image<memory_record>(before)});
    recover_options o;
    o.check_store = false;
    o.open_actions = policy;
    const auto r1 = recover(s, log, o);
    CHECK(r1.records_restored == (policy == open_action_policy::redo ? 1u : 0u));
    CHECK(r1.conflicts.empty());
    const auto r2 = recover(s, log, o);
    CHECK(r2.records_restored == 0);
    CHECK(r2.conflicts.empty());
    const auto hour = std::chrono::duration_cast<std::chrono::hours>(
        s.extract(0).updated_at->instant - s.extract(0).created_at->instant);
    CHECK(hour.count() == (policy == open_action_policy::redo ? 1 : 0));
  }
}

// Found by fuzz/fuzz_wal.cpp (libFuzzer), minimized: a frame whose CRC checks out but whose image
// holds a malformed number (the fuzzer's token "-0.14305170.10206208", two floats run together).
// read_wal keeps the raw image; rollback and recover threw error(parse) from decode_image halfway
// through, after restoring other records, and returned nothing. Now that record is a bad_image
// conflict, left alone (force too), and everything else is done.
TEST_CASE(
    "rollback and recover: fuzz regression: an image that does not decode is a bad_image conflict, "
    "not a throw") {
  const std::string bad_before = R"({"id":"a","content":"x","embedding":[-0.14305170.10206208]})";
  std::string log_bytes;
  append_wal_frame(
      log_bytes,
      R"({"type":"header","magic":"MHWAL1","version":1,"seq":0,"run":"f","created_at":"t"})");
  append_wal_frame(log_bytes,
                   R"({"type":"run_begin","seq":1,"run":"f","started_at":"t","actions":3})");
  append_wal_frame(
      log_bytes,
      R"({"type":"intent","seq":2,"run":"f","action":0,"idempotency_key":"k0","attempt":1,"records":[{"index":1,"id":"b","before":{"id":"b","content":"b0"},"after":{"id":"b","content":"b1"}}]})");
  append_wal_frame(
      log_bytes,
      R"({"type":"commit","seq":3,"run":"f","intent":2,"action":0,"idempotency_key":"k0"})");
  append_wal_frame(
      log_bytes,
      R"({"type":"intent","seq":4,"run":"f","action":1,"idempotency_key":"k1","attempt":1,"records":[{"index":0,"id":"a","before":)" +
          bad_before + R"(,"after":{"id":"a","content":"y"}}]})");
  append_wal_frame(
      log_bytes,
      R"({"type":"commit","seq":5,"run":"f","intent":4,"action":1,"idempotency_key":"k1"})");
  append_wal_frame(
      log_bytes,
      R"({"type":"intent","seq":6,"run":"f","action":2,"idempotency_key":"k2","attempt":1,"records":[{"index":2,"id":"c","before":{"id":"c","content":"c0"},"after":{"id":"c","content":"c1"}}]})");
  const wal_contents log = read_wal(log_bytes);
  REQUIRE(log.clean());
  REQUIRE(log.entries.size() == 6);
  CHECK(log.entries[3].records[0].before_json == bad_before);
  CHECK_THROWS_AS((void)decode_image<memory_record>(bad_before), error);

  auto rec = [](std::string id, std::string content) {
    memory_record r;
    r.id = std::move(id);
    r.content = std::move(content);
    return r;
  };
  for (bool force : {false, true}) {  // after the run: a, b, c hold their after-images
    auto s = store_t::from_records({rec("a", "y"), rec("b", "b1"), rec("c", "c1")});
    rollback_options o;
    o.force = force;
    rollback_result r;
    REQUIRE_NOTHROW(r = rollback(s, log, o));
    CHECK(s.extract(0).content == "y");  // left alone: the log cannot give its before-image back
    CHECK(s.extract(1).content == "b0");
    CHECK(s.extract(2).content == "c0");
    CHECK(r.records_restored == 2);
    REQUIRE(r.conflicts.size() == 1);
    CHECK(r.conflicts[0].id == "a");
    CHECK(r.conflicts[0].kind == conflict_kind::bad_image);
    CHECK(!r.conflicts[0].overwritten);
    CHECK(to_string(conflict_kind::bad_image) == "bad_image");
    CHECK(!r.complete());
  }
  {  // recovery: a's target is its after-image (committed), fine; undo of the open k2 on c
    auto s = store_t::from_records({rec("a", "y"), rec("b", "b1"), rec("c", "c1")});
    recover_result r;
    REQUIRE_NOTHROW(r = recover(s, log));
    CHECK(r.conflicts.empty());
    CHECK(s.extract(2).content == "c0");
  }
  {  // a log that ends with k1 open: undoing it needs the bad before-image
    const std::size_t cut = static_cast<std::size_t>(log.entries[4].offset);  // before k1's commit
    const wal_contents open_log = read_wal(std::string_view(log_bytes).substr(0, cut));
    auto s = store_t::from_records({rec("a", "y"), rec("b", "b1")});
    recover_result r;
    REQUIRE_NOTHROW(r = recover(s, open_log));
    CHECK(s.extract(0).content == "y");
    CHECK(s.extract(1).content == "b1");  // k0 committed
    REQUIRE(r.conflicts.size() == 1);
    CHECK(r.conflicts[0].id == "a");
    CHECK(r.conflicts[0].kind == conflict_kind::bad_image);
    REQUIRE(r.actions.size() == 2);
    CHECK(r.actions[1].conflict);
    CHECK(!r.complete());
  }
}

// A store that says which records it read with a load issue and refuses writes to others, as
// pg_store does (`read_with_issue`; error(busy) for a row another writer changed since the read).
struct refusing_store : store_t {
  std::set<std::string> issue, busy;
  [[nodiscard]] bool read_with_issue(std::size_t i) const { return issue.count(record(i).id) > 0; }
  memory_record restore(std::size_t i, const memory_record& image) {
    if (busy.count(record(i).id))
      throw error(error_code::busy, "row changed by another writer since it was read");
    return store_t::restore(i, image);
  }
};

TEST_CASE(
    "rollback and recover: a record the store may not write is an unwritable conflict, the rest "
    "is done (force too)") {
  std::string log_bytes;
  append_wal_frame(
      log_bytes,
      R"({"type":"header","magic":"MHWAL1","version":1,"seq":0,"run":"u","created_at":"t"})");
  append_wal_frame(log_bytes,
                   R"({"type":"run_begin","seq":1,"run":"u","started_at":"t","actions":3})");
  std::uint64_t seq = 2;
  for (const std::string id : {"a", "b", "c"}) {  // one committed action per record: X0 -> X1
    append_wal_frame(log_bytes, R"({"type":"intent","seq":)" + std::to_string(seq) +
                                    R"(,"run":"u","action":0,"idempotency_key":"k)" + id +
                                    R"(","attempt":1,"records":[{"index":0,"id":")" + id +
                                    R"(","before":{"id":")" + id + R"(","content":")" + id +
                                    R"(0"},"after":{"id":")" + id + R"(","content":")" + id +
                                    R"(1"}}]})");
    append_wal_frame(log_bytes, R"({"type":"commit","seq":)" + std::to_string(seq + 1) +
                                    R"(,"run":"u","intent":)" + std::to_string(seq) +
                                    R"(,"action":0,"idempotency_key":"k)" + id + R"("})");
    seq += 2;
  }
  const wal_contents log = read_wal(log_bytes);
  REQUIRE(log.clean());
  auto rec = [](std::string id, std::string content) {
    memory_record r;
    r.id = std::move(id);
    r.content = std::move(content);
    return r;
  };
  auto after_run = [&] {
    refusing_store s{
        store_t::from_records({rec("a", "a1"), rec("b", "b1"), rec("c", "c1")}), {"b"}, {"c"}};
    return s;
  };
  for (const bool force : {false, true}) {
    auto s = after_run();
    rollback_options o;
    o.force = force;
    rollback_result r;
    REQUIRE_NOTHROW(r = rollback(s, log, o));
    CHECK(s.extract(0).content == "a0");
    CHECK(s.extract(1).content == "b1");  // read with a load issue: never written
    CHECK(s.extract(2).content == "c1");  // its write refused
    CHECK(r.records_restored == 1);
    CHECK(r.rolled_back == std::vector<std::string>{"ka"});
    REQUIRE(r.conflicts.size() == 2);
    CHECK(r.conflicts[0].id == "c");  // newest first
    CHECK(r.conflicts[0].kind == conflict_kind::unwritable);
    CHECK(r.conflicts[0].reason.find("row changed by another writer since it was read") !=
          std::string::npos);
    CHECK(r.conflicts[0].reason.starts_with("the store refused the write: "));
    CHECK(r.conflicts[1].id == "b");
    CHECK(r.conflicts[1].kind == conflict_kind::unwritable);
    CHECK(r.conflicts[1].reason.starts_with("read with a load issue"));
    CHECK(!r.conflicts[0].overwritten);
    CHECK(!r.conflicts[1].overwritten);
    CHECK(to_string(conflict_kind::unwritable) == "unwritable");
    CHECK(!r.complete());
  }
  {  // the log cut before c's commit: recovery would undo c, which was read with a load issue
    const wal_contents open_log = read_wal(
        std::string_view(log_bytes).substr(0, static_cast<std::size_t>(log.entries[6].offset)));
    auto s = after_run();
    s.busy.clear();
    s.issue = {"c"};
    recover_options o;
    o.force = true;
    recover_result r;
    REQUIRE_NOTHROW(r = recover(s, open_log, o));
    CHECK(s.extract(2).content == "c1");
    REQUIRE(r.conflicts.size() == 1);
    CHECK(r.conflicts[0].id == "c");
    CHECK(r.conflicts[0].kind == conflict_kind::unwritable);
    REQUIRE(r.actions.size() == 3);
    CHECK(r.actions[2].status == recovery_status::undone);
    CHECK(r.actions[2].conflict);
    CHECK(!r.actions[0].conflict);
  }
}

TEST_CASE(
    "rollback: a duplicate id inserted after the run is told apart by the image the log knows") {
  scratch_dir dir("dupid");
  store_t store = make_store(30);
  const auto orig = records_of(store);
  {
    wal_writer wal(dir.path / "run.wal", wal_sync::none);
    REQUIRE(apply_plan(store, test_plan(1), wal).applied.size() == 1);  // key0: r0, r3, r11
  }
  auto v = records_of(store);
  memory_record copy = make_record(0);
  copy.content = "another record that reuses id r0";
  v.insert(v.begin(), copy);
  store_t s = store_t::from_records(v);
  const auto log = read_wal_file(dir.path / "run.wal");
  const auto rb = rollback(s, log);
  CHECK(rb.conflicts.empty());
  CHECK(rb.records_restored == 3);
  CHECK(to_json(s.extract(0)) == to_json(copy));     // the newcomer is left alone
  CHECK(to_json(s.extract(1)) == to_json(orig[0]));  // the run's r0 restored
  // Two records holding the after-image: ambiguous, never guessed.
  auto w = records_of(store);
  w.push_back(w[0]);
  store_t t = store_t::from_records(w);
  const auto rb2 = rollback(t, log);
  REQUIRE(rb2.conflicts.size() == 1);
  CHECK(rb2.conflicts[0].id == "r0");
  CHECK(rb2.conflicts[0].kind == conflict_kind::ambiguous);
  CHECK(rb2.conflicts[0].index == no_index);
  CHECK_FALSE(rb2.complete());
  CHECK(to_json(t.extract(0)) == to_json(w[0]));
  CHECK(to_json(t.extract(30)) == to_json(w[0]));
}

TEST_CASE(
    "one store per log: another store's log is refused by append, rollback and recover (force "
    "too)") {
  scratch_dir dir("onestore");
  store_t a = make_store(30);
  wal_writer_options wo;
  wo.policy = wal_sync::none;
  wo.store = identify_store(a, "a.jsonl");
  {
    wal_writer wal(dir.path / "run.wal", wo);
    REQUIRE(apply_plan(a, test_plan(4), wal).applied.size() == 4);
  }
  // Store b: other ids (another user's store) but the same shape.
  std::vector<memory_record> bv;
  for (int i = 0; i < 30; ++i) {
    auto r = make_record(i);
    r.id = "b" + std::to_string(i);
    bv.push_back(r);
  }
  store_t b = store_t::from_records(bv);
  const auto before_b = images(b);
  wal_writer_options wb = wo;
  wb.store = identify_store(b, "b.jsonl");
  CHECK_THROWS_WITH_AS(wal_writer(dir.path / "run.wal", wb),
                       doctest::Contains("made for another store"), error);
  // The same store (as the run left it) may append another run.
  { wal_writer again(dir.path / "run.wal", wo); }
  const auto log = read_wal_file(dir.path / "run.wal");
  REQUIRE(log.store);
  CHECK(log.store->path == "a.jsonl");
  CHECK(log.store->fingerprint == wo.store->fingerprint);
  CHECK(log.runs() == 1);
  const auto chk = check_log_store(log, b);
  CHECK_FALSE(chk.same_store);
  CHECK(chk.logged_ids == 7);  // key0..key3: r0 r3 r11 / r1 / r2 r17 / r3 r14
  CHECK(chk.found_ids == 0);
  for (bool force : {false, true}) {
    rollback_options ro;
    ro.force = force;
    CHECK_THROWS_WITH_AS(rollback(b, log, ro), doctest::Contains("another store"), error);
    recover_options rc;
    rc.force = force;
    CHECK_THROWS_AS(recover(b, log, rc), error);
  }
  CHECK(images(b) == before_b);
  // Store a with records inserted since: still its store, matched by id.
  auto av = records_of(a);
  av.push_back(make_record(77));
  store_t a2 = store_t::from_records(av);
  const auto chk2 = check_log_store(log, a2);
  CHECK(chk2.same_store);
  CHECK(chk2.store_changed);
  CHECK(chk2.found_ids == 7);
  CHECK(rollback(a2, log).complete());
}

TEST_CASE(
    "wal_writer: one writer per log (flock), a header-only log is a valid log with zero runs") {
  scratch_dir dir("lock");
  const auto path = dir.path / "run.wal";
  {
    std::optional<wal_writer> first;
    first.emplace(path, wal_sync::none, "first");
    wal_writer_options o;
    o.policy = wal_sync::none;
    o.run_id = "second";
    CHECK_THROWS_WITH_AS(wal_writer(path, o), doctest::Contains("locked by another process"),
                         error);
    try {
      wal_writer second(path, o);
      FAIL("a second writer opened a locked log");
    } catch (const error& e) {
      CHECK(e.code() == error_code::busy);
    }
    // A waiting writer gets the lock once the first one closes.
    o.lock_timeout = std::chrono::milliseconds(5000);
    const std::string first_run = first->run_id();
    CHECK(first_run == "first");
    std::thread closer([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      first.reset();
    });
    wal_writer waited(path, o);
    closer.join();
    CHECK(waited.run_id() != first_run);
  }
  const auto log = read_wal_file(path);
  CHECK(log.clean());
  CHECK(log.has_header());
  CHECK(log.runs() == 0);
  CHECK(log.entries.empty());
  CHECK(log.chained);
  store_t s = make_store(3);
  const auto rb = rollback(s, log);
  CHECK(rb.complete());
  CHECK(rb.records_restored == 0);
  CHECK(recover(s, log).complete());
}

TEST_CASE(
    "hash chain: a frame removed, reordered or edited (CRC recomputed) is found at the next "
    "frame") {
  scratch_dir dir("chain");
  store_t store = make_store(30);
  {
    wal_writer wal(dir.path / "run.wal", wal_sync::none);
    REQUIRE(apply_plan(store, test_plan(6), wal).applied.size() == 6);
  }
  const std::string bytes = slurp(dir.path / "run.wal");
  const auto log = read_wal(bytes);
  REQUIRE(log.clean());
  REQUIRE(log.chained);
  // Frames: header, run_begin, 6 x (intent, commit), run_end = 15; cut the file into frames.
  std::vector<std::string> frames;
  for (std::size_t pos = 0; pos < bytes.size();) {
    const auto* u = reinterpret_cast<const unsigned char*>(bytes.data() + pos);
    const std::size_t len = u[0] | u[1] << 8 | u[2] << 16 | std::size_t(u[3]) << 24;
    frames.push_back(bytes.substr(pos, 8 + len));
    pos += 8 + len;
  }
  REQUIRE(frames.size() == 15);
  auto join = [](const std::vector<std::string>& f) {
    std::string s;
    for (const auto& x : f) s += x;
    return s;
  };
  auto offset_of = [&](const std::vector<std::string>& f, std::size_t k) {
    std::size_t o = 0;
    for (std::size_t i = 0; i < k; ++i) o += f[i].size();
    return o;
  };
  {  // remove frame 5 (an intent): frame 6 no longer links
    auto f = frames;
    f.erase(f.begin() + 5);
    const auto r = read_wal(join(f));
    REQUIRE(r.problem);
    CHECK(r.problem->kind == wal_problem_kind::bad_chain);
    CHECK(r.problem->offset == offset_of(f, 5));
    CHECK(r.problem->valid_frames_follow);
    CHECK(r.entries.size() == 4);  // run_begin + 3 frames before the removed one
  }
  {  // swap frames 7 and 8
    auto f = frames;
    std::swap(f[7], f[8]);
    const auto r = read_wal(join(f));
    REQUIRE(r.problem);
    CHECK(r.problem->kind == wal_problem_kind::bad_chain);
    CHECK(r.problem->offset == offset_of(f, 7));
  }
  {  // edit the first intent's payload and recompute its CRC-32C: the CRC passes, the next link
     // fails
    auto f = frames;
    std::size_t k = 0;
    while (k < f.size() && f[k].find("\"type\":\"intent\"") == std::string::npos) ++k;
    REQUIRE(k + 1 < f.size());
    std::string payload = f[k].substr(8);
    const auto at = payload.find("\"attempt\":1");
    REQUIRE(at != std::string::npos);
    payload.replace(at, 11, "\"attempt\":2");
    std::string re;
    append_wal_frame(re, payload);
    f[k] = re;
    const auto r = read_wal(join(f));
    REQUIRE(r.problem);
    CHECK(r.problem->kind == wal_problem_kind::bad_chain);
    CHECK(r.problem->offset == offset_of(f, k + 1));
    CHECK(r.entries.size() == k);  // the edited frame decodes; nothing from the broken link on
  }
  // Appending continues the chain; compaction rebuilds it over the frames kept.
  {
    wal_writer wal(dir.path / "run.wal", wal_sync::none);
    REQUIRE(apply_plan(store, test_plan(8), wal).applied.size() == 2);
  }
  CHECK(read_wal_file(dir.path / "run.wal").clean());
}

TEST_CASE(
    "wal_writer: a log path that is not a regular file is refused before anything is written") {
  scratch_dir dir("notregular");
  // /dev/full would fail every write (and read as endless zeros): it is refused up front.
  if (!fs::exists("/dev/full")) return;
  fs::create_symlink("/dev/full", dir.path / "full.wal");
  wal_writer_options o;
  o.policy = wal_sync::none;
  CHECK_THROWS_WITH_AS(wal_writer(dir.path / "full.wal", o), doctest::Contains("cannot read"),
                       error);
  CHECK_THROWS_WITH_AS(wal_writer(dir.path, o), doctest::Contains("cannot open"),
                       error);  // a directory
}

TEST_CASE(
    "run ledger: give_back_run returns a run counted today, never below zero or on another day") {
  scratch_dir dir("ledger");
  const auto path = dir.path / "runs.json";
  const utc_time t = parse_timestamp("2024-07-15T10:00:00Z")->instant;
  CHECK(take_run(path, 2, t).allowed);
  CHECK(take_run(path, 2, t).allowed);
  CHECK_FALSE(take_run(path, 2, t).allowed);
  CHECK(give_back_run(path, t));
  CHECK(load_run_ledger(path).count == 1);
  CHECK(take_run(path, 2, t).allowed);
  CHECK_FALSE(
      give_back_run(path, t + std::chrono::hours(24)));  // another day: nothing to give back
  CHECK(give_back_run(path, t));
  CHECK(give_back_run(path, t));
  CHECK_FALSE(give_back_run(path, t));
  CHECK(load_run_ledger(path).count == 0);
}

// ---------------------------------------------------------------- power loss and I/O errors

namespace {

// The stores after the first m actions, m = 0..n.
std::vector<std::vector<std::string>> all_prefixes(const store_t& original,
                                                   const repair_plan& plan) {
  std::vector<std::vector<std::string>> out;
  for (std::size_t m = 0; m <= plan.actions.size(); ++m)
    out.push_back(prefix_images(original, plan, m));
  return out;
}

// The m for which `got` equals the store after the first m actions, or -1.
int whole_prefix(const std::vector<std::string>& got,
                 const std::vector<std::vector<std::string>>& prefixes) {
  for (std::size_t m = 0; m < prefixes.size(); ++m)
    if (got == prefixes[m]) return static_cast<int>(m);
  return -1;
}

std::size_t committed_in(const std::string& bytes) {
  const auto log = read_wal(bytes);
  std::size_t n = 0;
  for (const auto& a : logged_actions(log)) n += a.state == logged_state::committed;
  return n;
}

}  // namespace

TEST_CASE(
    "power loss: after any operation, with unsynced writes kept, dropped, torn or reordered, "
    "recovery gives whole actions and keeps every synced commit") {
  using test::sim_file_io;
  const store_t original = make_store(30);
  const repair_plan plan = test_plan(24);
  const auto prefixes = all_prefixes(original, plan);
  std::size_t crashes = 0, with_problem = 0;
  std::map<int, std::size_t> reached;
  for (wal_sync policy : {wal_sync::per_batch, wal_sync::each_frame}) {
    for (std::size_t batch : {std::size_t{1}, std::size_t{4}, std::size_t{16}}) {
      CAPTURE(static_cast<int>(policy));
      CAPTURE(batch);
      sim_file_io io;
      store_t store = make_store(30);
      wal_writer_options wo;
      wo.policy = policy;
      wo.io = &io;
      apply_options ao;
      ao.batch_size = batch;
      {
        wal_writer wal("sim/run.wal", wo);
        REQUIRE(apply_plan(store, plan, wal, ao).applied.size() == 24);
      }
      std::mt19937 rng(static_cast<unsigned>(batch * 7 + static_cast<unsigned>(policy)));
      for (std::size_t n = 0; n <= io.ops.size(); ++n) {
        for (auto how : {sim_file_io::loss::keep_all, sim_file_io::loss::drop_unsynced,
                         sim_file_io::loss::torn, sim_file_io::loss::reorder}) {
          const int tries =
              how == sim_file_io::loss::torn || how == sim_file_io::loss::reorder ? 4 : 1;
          for (int t = 0; t < tries; ++t) {
            CAPTURE(n);
            CAPTURE(static_cast<int>(how));
            const std::string disk = io.after_power_loss("sim/run.wal", n, how, rng);
            const std::string synced =
                io.after_power_loss("sim/run.wal", n, sim_file_io::loss::drop_unsynced, rng);
            const auto log = read_wal(disk);
            with_problem += log.problem.has_value();
            store_t s = make_store(30);  // the store on disk is the one from before the run
            const auto rc = recover(s, log);
            CHECK(rc.conflicts.empty());
            const int m = whole_prefix(images(s), prefixes);
            CHECK(m >= 0);                                       // whole actions, in order
            CHECK(m >= static_cast<int>(committed_in(synced)));  // every durable commit kept
            ++reached[m];
            ++crashes;
          }
        }
      }
    }
  }
  MESSAGE("power loss: " << crashes << " simulated crashes, " << with_problem
                         << " of them leaving a torn or damaged log, " << reached.size()
                         << " distinct recovered prefixes");
  CHECK(crashes >= 1000);
  CHECK(reached.size() == 25);  // every prefix 0..24 is reached somewhere
}

TEST_CASE(
    "I/O errors: a failed write or fdatasync stops the run with error(io), the log is not trusted "
    "again, recovery gives whole actions") {
  using test::sim_file_io;
  const store_t original = make_store(30);
  const repair_plan plan = test_plan(12);
  const auto prefixes = all_prefixes(original, plan);
  // A clean run to count the writer's writes and syncs.
  sim_file_io probe;
  {
    wal_writer_options wo;
    wo.io = &probe;
    store_t s = make_store(30);
    wal_writer wal("sim/run.wal", wo);
    apply_options ao;
    ao.batch_size = 3;
    REQUIRE(apply_plan(s, plan, wal, ao).applied.size() == 12);
  }
  const std::size_t total_writes = probe.writes, total_syncs = probe.syncs;
  REQUIRE(total_writes > 5);
  REQUIRE(total_syncs > 5);
  std::size_t failures = 0;
  for (int which = 0; which < 2; ++which) {
    const std::size_t count = which == 0 ? total_writes : total_syncs;
    for (std::size_t k = 0; k < count; ++k) {
      for (int err : {EIO, ENOSPC}) {
        CAPTURE(which);
        CAPTURE(k);
        sim_file_io io;
        (which == 0 ? io.fail_write_at : io.fail_sync_at) = k;
        io.fail_errno = err;
        wal_writer_options wo;
        wo.io = &io;
        store_t s = make_store(30);
        apply_options ao;
        ao.batch_size = 3;
        std::optional<wal_writer> wal;
        try {
          wal.emplace("sim/run.wal", wo);
          (void)apply_plan(s, plan, *wal, ao);
          FAIL("the run did not stop at the failed " << (which == 0 ? "write" : "fdatasync"));
        } catch (const error& e) {
          CHECK(e.code() == error_code::io);
          CHECK(std::string(e.what()).find(err == EIO ? "Input/output error" : "No space left") !=
                std::string::npos);
        }
        ++failures;
        if (wal) {
          CHECK(wal->failed());
          CHECK_THROWS_AS(wal->append_run_end(0, 0, 0, 0), error);  // never trusted again
        }
        std::mt19937 rng(static_cast<unsigned>(k));
        // The store in memory, recovered with the log as written: whole actions.
        const std::string written =
            io.after_power_loss("sim/run.wal", io.ops.size(), sim_file_io::loss::keep_all, rng);
        const auto rc = recover(s, read_wal(written));
        CHECK(rc.conflicts.empty());
        CHECK(whole_prefix(images(s), prefixes) >= 0);
        // Power lost right after the failure (a failed fsync may have dropped the dirty pages):
        // the store from before the run and what was synced also recover to whole actions.
        store_t from_disk = make_store(30);
        const std::string synced = io.after_power_loss("sim/run.wal", io.ops.size(),
                                                       sim_file_io::loss::drop_unsynced, rng);
        CHECK(recover(from_disk, read_wal(synced)).conflicts.empty());
        CHECK(whole_prefix(images(from_disk), prefixes) >= 0);
      }
    }
  }
  MESSAGE("I/O errors: "
          << failures
          << " runs with a failed write or fdatasync, each stopped with error(io) and recovered");
}

TEST_CASE(
    "hash chain: logs chained with CRC-64 links (written before CRC-32C links) are read, checked "
    "and continued") {
  scratch_dir dir("chain64");
  // A header and a run_begin linked by hand the old way: "prev" = CRC-64/XZ of the previous
  // payload.
  const std::string header =
      R"({"type":"header","magic":"MHWAL1","version":1,"seq":0,"run":"old","created_at":"2026-12-01T00:00:00.000Z","chain":"crc64"})";
  const std::string begin =
      R"({"type":"run_begin","seq":1,"run":"old","started_at":"2026-12-01T00:00:00.000Z","actions":0,"prev":")" +
      hex16(crc64(header)) + "\"}";
  std::string bytes;
  append_wal_frame(bytes, header);
  append_wal_frame(bytes, begin);
  auto log = read_wal(bytes);
  CHECK(log.clean());
  CHECK(log.chain == "crc64");
  CHECK(log.runs() == 1);
  // A wrong CRC-64 link is a broken chain.
  std::string bad;
  append_wal_frame(bad, header);
  append_wal_frame(
      bad,
      R"({"type":"run_begin","seq":1,"run":"old","started_at":"x","actions":0,"prev":"0000000000000000"})");
  const auto b = read_wal(bad);
  REQUIRE(b.problem);
  CHECK(b.problem->kind == wal_problem_kind::bad_chain);
  // A writer continues such a log with CRC-64 links, and the result reads clean.
  {
    std::ofstream(dir.path / "old.wal", std::ios::binary) << bytes;
    wal_writer w(dir.path / "old.wal", wal_sync::none, "new");
    w.append_run_begin(0);
    w.append_run_end(0, 0, 0, 0);
  }
  const auto cont = read_wal_file(dir.path / "old.wal");
  CHECK(cont.clean());
  CHECK(cont.chain == "crc64");
  CHECK(cont.runs() == 2);
  CHECK(cont.entries.back().prev.size() == 16);
  // New logs link by CRC-32C: 8 hex digits naming the previous frame's checksum.
  {
    wal_writer w(dir.path / "new.wal", wal_sync::none, "n");
    w.append_run_begin(0);
  }
  const std::string nb = slurp(dir.path / "new.wal");
  const auto nl = read_wal(nb);
  CHECK(nl.clean());
  CHECK(nl.chain == "crc32c");
  REQUIRE(nl.entries.size() == 1);
  const auto* u =
      reinterpret_cast<const unsigned char*>(nb.data() + 4);  // the header frame's CRC-32C
  const std::uint32_t header_crc = u[0] | u[1] << 8 | u[2] << 16 | std::uint32_t(u[3]) << 24;
  CHECK(nl.entries[0].prev == hex16(header_crc).substr(8));
}

// ---------------------------------------------------------------------------------------------
// Format 2: after-images written as one edit of the before-image ("after_edit").

namespace {
struct logged_pair {
  std::size_t index = 0;
  std::string id, before_json, after_json;
};
bool utf8_start(unsigned char c) {
  return (c & 0xC0) != 0x80;
}
// The images of make_record(i) before and after `change`, as an intent logs them.
template <class F>
logged_pair logged_change(int i, F change) {
  memory_record r = make_record(i);
  logged_pair p{static_cast<std::size_t>(i), r.id, to_json(r), {}};
  change(r);
  p.after_json = to_json(r);
  return p;
}
}  // namespace

TEST_CASE("wal format 2: diff_image keeps the common prefix and suffix, on character boundaries") {
  using detail::wal::apply_image_edit;
  using detail::wal::diff_image;
  // ASCII: prefix `{"a":"a` (7 bytes), suffix `","b":1}` (8 bytes), before is 20 bytes.
  {
    const std::string b = R"({"a":"active","b":1})", a = R"({"a":"archived","b":1})";
    const auto e = diff_image(b, a);
    CHECK(e.at == 7);
    CHECK(e.cut == 5);  // "ctive"
    CHECK(e.put == "rchived");
    CHECK(apply_image_edit(b, e) == a);
  }
  // é (C3 A9) -> è (C3 A8): the shared lead byte C3 is not split off; the edit is the character.
  {
    const std::string b = "\"\xC3\xA9\"", a = "\"\xC3\xA8\"";
    const auto e = diff_image(b, a);
    CHECK(e.at == 1);
    CHECK(e.cut == 2);
    CHECK(e.put == "\xC3\xA8");
  }
  // é (C3 A9) -> © (C2 A9): the shared trailing byte A9 is a continuation byte, not kept apart.
  {
    const std::string b = "\xC3\xA9", a = "\xC2\xA9";
    const auto e = diff_image(b, a);
    CHECK(e.at == 0);
    CHECK(e.cut == 2);
    CHECK(e.put == "\xC2\xA9");
  }
  // Equal texts: an empty edit. One a prefix of the other: no overlap of prefix and suffix.
  CHECK(diff_image("abc", "abc").put.empty());
  CHECK(diff_image("abc", "abc").cut == 0);
  {
    const auto e = diff_image("aaa", "aaaaa");
    CHECK(e.at + e.cut <= 3);
    CHECK(apply_image_edit("aaa", e) == "aaaaa");
    CHECK(e.put == "aa");
  }
  // An edit that does not fit the before-image is refused.
  CHECK_THROWS_AS(apply_image_edit("abc", {2, 2, ""}), detail::wal::bad_frame);
  CHECK_THROWS_AS(apply_image_edit("abc", {4, 0, ""}), detail::wal::bad_frame);
}

TEST_CASE("wal format 2: diff_image round-trips random edits of multi-byte text, blocks included") {
  std::mt19937 rng(20261205);
  const std::vector<std::string> alphabet{
      "a", "b", "\"", "\\", "\xC3\xA9", "\xE4\xB8\xAD", "\xF0\x9F\x98\x80", "0", ","};
  auto pick = [&] { return alphabet[rng() % alphabet.size()]; };
  for (int round = 0; round < 2000; ++round) {
    std::vector<std::string> chars;
    const std::size_t n = rng() % 300;
    for (std::size_t k = 0; k < n; ++k) chars.push_back(pick());
    std::vector<std::string> edited = chars;
    const int edits = static_cast<int>(rng() % 4);
    for (int k = 0; k < edits; ++k) {
      const std::size_t at = edited.empty() ? 0 : rng() % (edited.size() + 1);
      switch (rng() % 3) {
        case 0:
          edited.insert(edited.begin() + static_cast<std::ptrdiff_t>(at), pick());
          break;
        case 1:
          if (at < edited.size()) edited.erase(edited.begin() + static_cast<std::ptrdiff_t>(at));
          break;
        default:
          if (at < edited.size()) edited[at] = pick();
      }
    }
    std::string b, a;
    for (const auto& c : chars) b += c;
    for (const auto& c : edited) a += c;
    const auto e = detail::wal::diff_image(b, a);
    CAPTURE(round);
    REQUIRE(detail::wal::apply_image_edit(b, e) == a);
    CHECK(e.at + e.cut <= b.size());
    if (!e.put.empty()) CHECK(utf8_start(static_cast<unsigned char>(e.put.front())));
    if (e.at + e.put.size() < a.size())  // the kept suffix starts on a character
      CHECK(utf8_start(static_cast<unsigned char>(a[e.at + e.put.size()])));
    if (e.at < b.size()) CHECK(utf8_start(static_cast<unsigned char>(b[e.at])));
  }
}

TEST_CASE("wal format 2: a status change is logged as a short edit and read back byte for byte") {
  scratch_dir dir("fmt2");
  // p: a status and link change (late fields of the canonical JSON): a short edit.
  memory_record r = make_record(3);
  logged_pair p{3, r.id, to_json(r), {}};
  r.status = "archived";
  r.links.duplicate_of = "r1";
  p.after_json = to_json(r);
  // q: the content (an early field) rewritten with quotes, a backslash and a multi-byte dash: the
  // edit spans most of the record; whichever form the writer picks must read back exactly.
  memory_record s = make_record(4);
  logged_pair q{4, s.id, to_json(s), {}};
  s.content = "memory number 4 \xE2\x80\x94 with \"quotes\" and a \\ backslash";
  s.status = "archived";
  q.after_json = to_json(s);
  {
    wal_writer wal(dir.path / "run.wal", wal_sync::none);
    wal.append_run_begin(2);
    auto seq = wal.append_intent(0, "k0", 1, std::vector<logged_pair>{p});
    wal.append_commit(seq, 0, "k0");
    seq = wal.append_intent(1, "k1", 1, std::vector<logged_pair>{q});
    wal.append_commit(seq, 1, "k1");
  }
  const wal_contents log = read_wal_file(dir.path / "run.wal");
  REQUIRE(log.clean());
  CHECK(log.version == 2);
  REQUIRE(log.entries.size() == 5);
  const wal_entry& in = log.entries[1];
  REQUIRE(in.records.size() == 1);
  CHECK(in.records[0].before_json == p.before_json);
  CHECK(in.records[0].after_json == p.after_json);
  CHECK(in.records[0].after.status == "archived");
  CHECK(in.records[0].after.links.duplicate_of == "r1");
  CHECK(in.payload.find("\"after_edit\":") != std::string::npos);
  CHECK(in.payload.find("\"after\":") == std::string::npos);
  // The frame holds one image and the edit of the changed middle, not a second image: before
  // `..."status":"a|ctive","kind":"fact|","related_ids":["r4"]}` and after
  // `..."status":"a|rchived","kind":"fact","duplicate_of":"r1|","related_ids":["r4"]}` share
  // the parts outside the bars.
  CHECK(in.payload.find(p.after_json) == std::string::npos);
  CHECK(in.payload.find(R"("cut":19,"put":"rchived\",\"kind\":\"fact\",\"duplicate_of\":\"r1")") !=
        std::string::npos);
  CHECK(in.payload.size() < p.before_json.size() + 280);
  const wal_entry& in2 = log.entries[3];
  REQUIRE(in2.records.size() == 1);
  CHECK(in2.records[0].before_json == q.before_json);
  CHECK(in2.records[0].after_json == q.after_json);
  CHECK(in2.records[0].after.content == s.content);
  // Rolled back from the log, both records get their before-images back.
  auto st = store_t::from_records({make_record(0), make_record(1), make_record(2), r, s});
  const auto rb = rollback(st, log, rollback_options{});
  CHECK(rb.records_restored == 2);
  CHECK(to_json(st.extract(3)) == p.before_json);
  CHECK(to_json(st.extract(4)) == q.before_json);
}

TEST_CASE("wal format 2: a version-1 log is read and continued with whole after-images") {
  scratch_dir dir("fmt1");
  std::string bytes;
  append_wal_frame(
      bytes,
      R"({"type":"header","magic":"MHWAL1","version":1,"seq":0,"run":"old","created_at":"t"})");
  {
    std::ofstream out(dir.path / "old.wal", std::ios::binary);
    out << bytes;
  }
  const logged_pair p = logged_change(1, [](memory_record& r) { r.status = "archived"; });
  {
    wal_writer wal(dir.path / "old.wal", wal_sync::none);
    const auto seq = wal.append_intent(0, "k", 1, std::vector<logged_pair>{p});
    wal.append_commit(seq, 0, "k");
  }
  const wal_contents log = read_wal_file(dir.path / "old.wal");
  REQUIRE(log.clean());
  CHECK(log.version == 1);
  REQUIRE(log.entries.size() == 2);
  CHECK(log.entries[0].payload.find("\"after_edit\"") == std::string::npos);
  CHECK(log.entries[0].records[0].after_json == p.after_json);
}

TEST_CASE("wal format 2: a bad after_edit or an unknown version stops the reader") {
  const std::string header2 =
      R"({"type":"header","magic":"MHWAL1","version":2,"seq":0,"run":"x","created_at":"t"})";
  auto intent = [](const std::string& edit) {
    return R"({"type":"intent","seq":1,"run":"x","action":0,"idempotency_key":"k","attempt":1,"records":[{"index":0,"id":"a","before":{"id":"a"},"after_edit":)" +
           edit + "}]}";
  };
  {
    std::string bytes;
    append_wal_frame(bytes, header2);
    append_wal_frame(bytes, intent(R"({"at":9,"cut":0,"put":",\"content\":\"x\""})"));
    const auto log = read_wal(bytes);
    REQUIRE(log.clean());
    CHECK(log.entries[0].records[0].after_json == R"({"id":"a","content":"x"})");
  }
  for (const std::string bad :
       {R"({"at":12,"cut":0,"put":""})", R"({"at":5,"cut":9,"put":""})",
        R"({"at":-1,"cut":0,"put":""})", R"({"at":0,"put":""})", R"("text")"}) {
    CAPTURE(bad);
    std::string bytes;
    append_wal_frame(bytes, header2);
    append_wal_frame(bytes, intent(bad));
    const auto log = read_wal(bytes);
    REQUIRE(log.problem);
    CHECK(log.problem->kind == wal_problem_kind::bad_payload);
    CHECK(log.entries.empty());
  }
  std::string v3;
  append_wal_frame(v3, R"({"type":"header","magic":"MHWAL1","version":3,"seq":0})");
  const auto log3 = read_wal(v3);
  REQUIRE(log3.problem);
  CHECK(log3.problem->kind == wal_problem_kind::bad_header);
  CHECK(log3.problem->reason.find("version 3") != std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// Preallocation: the writer grows the log with zeros ahead of the frames.

TEST_CASE("wal preallocation: zeros ahead of the frames while open, cut off at a clean close") {
  scratch_dir dir("prealloc");
  const fs::path path = dir.path / "run.wal";
  const logged_pair p = logged_change(2, [](memory_record& r) { r.status = "archived"; });
  std::string open_bytes;
  {
    wal_writer wal(path, wal_sync::per_batch);
    wal.append_run_begin(3);
    for (int k = 0; k < 3; ++k) {
      const auto seq =
          wal.append_intent(k, "k" + std::to_string(k), 1, std::vector<logged_pair>{p});
      wal.append_commit(seq, k, "k" + std::to_string(k));
    }
    wal.sync();
    open_bytes = slurp(path);
    // 64 KiB of zeros at least after the frames, the file a whole number of 4 KiB blocks.
    CHECK(open_bytes.size() % 4096 == 0);
    CHECK(open_bytes.size() >= wal.bytes_written() + (64u << 10));
    CHECK(open_bytes.find_first_not_of('\0', wal.bytes_written()) == std::string::npos);
    const wal_contents c = read_wal(open_bytes);  // what a crash now would leave
    CHECK(c.clean());
    CHECK(c.valid_bytes == wal.bytes_written());
    CHECK(c.preallocated_bytes == open_bytes.size() - wal.bytes_written());
    CHECK(logged_actions(c).size() == 3);
  }
  const std::string closed = slurp(path);
  CHECK(closed == open_bytes.substr(0, closed.size()));
  const wal_contents c = read_wal(closed);
  CHECK(c.clean());
  CHECK(c.preallocated_bytes == 0);
  CHECK(c.valid_bytes == closed.size());
  CHECK(c.entries.size() == 7);  // run_begin, 3 x (intent, commit)
}

TEST_CASE("wal preallocation: a log left with its zeros is continued after its last frame") {
  scratch_dir dir("prealloc2");
  const fs::path path = dir.path / "run.wal";
  const logged_pair p = logged_change(5, [](memory_record& r) { r.kind = "preference"; });
  std::string crashed;
  {
    wal_writer wal(path, wal_sync::per_batch);
    wal.append_run_begin(1);
    const auto seq = wal.append_intent(0, "a", 1, std::vector<logged_pair>{p});
    wal.append_commit(seq, 0, "a");
    wal.sync();
    crashed = slurp(path);
  }
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);  // the state after a crash
    out << crashed;
  }
  {
    wal_writer wal(path, wal_sync::per_batch);
    wal.append_run_begin(1);
    const auto seq = wal.append_intent(0, "b", 1, std::vector<logged_pair>{p});
    wal.append_commit(seq, 0, "b");
  }
  const wal_contents c = read_wal_file(path);
  CHECK(c.clean());
  CHECK(c.runs() == 2);
  const auto acts = logged_actions(c);
  REQUIRE(acts.size() == 2);
  CHECK(acts[0].intent->idempotency_key == "a");
  CHECK(acts[1].intent->idempotency_key == "b");
  CHECK(acts[1].state == logged_state::committed);
  // A file of zeros only (the header never reached the disk) is started afresh.
  {
    std::ofstream out(dir.path / "zeros.wal", std::ios::binary);
    out << std::string(8192, '\0');
  }
  { wal_writer wal(dir.path / "zeros.wal", wal_sync::none); }
  const wal_contents z = read_wal_file(dir.path / "zeros.wal");
  CHECK(z.clean());
  CHECK(z.has_header());
  CHECK(z.entries.empty());
}

TEST_CASE("wal preallocation: an append cut short in the zeros is a torn tail, not damage") {
  scratch_dir dir("prealloc3");
  const fs::path path = dir.path / "run.wal";
  memory_record r = make_record(1);
  logged_pair p{1, r.id, to_json(r), {}};
  r.status = "archived";
  p.after_json = to_json(r);
  std::string full;
  std::uint64_t before_last = 0, after_last = 0;
  {
    wal_writer wal(path, wal_sync::per_batch);
    wal.append_run_begin(2);
    auto seq = wal.append_intent(0, "a", 1, std::vector<logged_pair>{p});
    wal.append_commit(seq, 0, "a");
    wal.sync();
    before_last = wal.bytes_written();
    seq = wal.append_intent(1, "b", 1, std::vector<logged_pair>{p});
    after_last = wal.bytes_written();
    full = slurp(path);
  }
  REQUIRE(after_last > before_last + 100);
  // Keep the first half of the last intent frame; zeros where the rest would be (a lost sector).
  std::string torn = full;
  const std::uint64_t half = before_last + (after_last - before_last) / 2;
  std::fill(torn.begin() + static_cast<std::ptrdiff_t>(half),
            torn.begin() + static_cast<std::ptrdiff_t>(after_last), '\0');
  const wal_contents c = read_wal(torn);
  REQUIRE(c.problem);
  CHECK(c.problem->kind == wal_problem_kind::truncated);
  CHECK(c.problem->offset == before_last);
  CHECK(!c.problem->valid_frames_follow);
  CHECK(logged_actions(c).size() == 1);
  auto s = store_t::from_records({make_record(0), r});
  recover_options o;
  o.check_store = false;
  const auto rr = recover(s, c, o);
  CHECK(rr.complete());
  // One sector inside the last frame never written (zeros), the rest of it and the zeros after
  // it in place: also a torn append.
  {
    std::string sector = full;
    REQUIRE(after_last - before_last > 40);
    std::fill(sector.begin() + static_cast<std::ptrdiff_t>(before_last + 20),
              sector.begin() + static_cast<std::ptrdiff_t>(before_last + 40), '\0');
    const wal_contents t = read_wal(sector);
    REQUIRE(t.problem);
    CHECK(t.problem->kind == wal_problem_kind::truncated);
    CHECK(t.problem->offset == before_last);
  }
  // The same cut with a frame that checks out after it is damage in the middle.
  std::string damaged = full.substr(0, after_last);
  std::fill(damaged.begin() + static_cast<std::ptrdiff_t>(before_last + 20),
            damaged.begin() + static_cast<std::ptrdiff_t>(before_last + 40), 'x');
  std::string extra;
  append_wal_frame(extra, R"({"type":"run_end","seq":99,"run":"x"})");
  damaged += extra + std::string(4096, '\0');
  const wal_contents d = read_wal(damaged);
  REQUIRE(d.problem);
  CHECK(d.problem->kind == wal_problem_kind::bad_checksum);
  CHECK(d.problem->valid_frames_follow);
}

// ---------------------------------------------------------------- repair history across runs

TEST_CASE("apply_plan history: one failure per run over three runs ends in the manual queue") {
  scratch_dir dir("hist-fail");
  flaky_store s{make_store(5), 1, 100};  // r1's writes always fail
  const auto original = images(s.inner);
  repair_plan plan;
  plan.actions.push_back(action("w1", {{"r1", edit_set_weight{0.5}}}));
  memory_repair_history history(3);  // retry_limit 2: 3 failures in all
  apply_options opt;
  opt.retry_limit = 2;
  opt.history = &history;
  // Each run dies right after its first failed attempt (the hook stands for a crash there).
  opt.crash_hook = [](std::string_view point) {
    if (point == "after_abort") throw std::runtime_error("the run died");
  };
  for (int run = 1; run <= 3; ++run) {
    wal_writer wal(dir.path / ("run" + std::to_string(run) + ".wal"), wal_sync::none);
    CHECK_THROWS_AS((void)apply_plan(s, plan, wal, opt), std::runtime_error);
    const auto h = history.attempts("w1");
    REQUIRE(h);
    CHECK(h->failures == run);
    CHECK(h->manual == (run == 3));
  }
  CHECK(s.failures == 97);  // three writes tried, one per run
  CHECK(history.manual_queue() == std::set<std::string>{"w1"});
  // Run 4: straight to the manual queue, not tried again (the store is not written).
  opt.crash_hook = nullptr;
  wal_writer wal(dir.path / "run4.wal", wal_sync::none);
  const auto res = apply_plan(s, plan, wal, opt);
  CHECK(res.failed == std::vector<std::string>{"w1"});
  CHECK(res.outcomes[0].attempts == 0);
  CHECK(res.outcomes[0].reason.find("manual queue since an earlier run (3 failures") !=
        std::string::npos);
  CHECK(s.failures == 97);
  CHECK(images(s.inner) == original);
  // Without the history the same run would try it again (3 attempts, then the manual queue).
  apply_options fresh;
  fresh.retry_limit = 2;
  wal_writer wal2(dir.path / "run5.wal", wal_sync::none);
  CHECK(apply_plan(s, plan, wal2, fresh).outcomes[0].attempts == 3);
  CHECK(s.failures == 94);
}

TEST_CASE("apply_plan history: earlier failures count against the next run's retries") {
  scratch_dir dir("hist-budget");
  flaky_store s{make_store(5), 1, 100};
  repair_plan plan;
  plan.actions.push_back(action("w1", {{"r1", edit_set_weight{0.5}}}));
  memory_repair_history history;
  history.note_attempt("w1", false, "EIO");  // an earlier run failed once
  apply_options opt;                         // retry_limit 3: 4 attempts in all, 3 left
  opt.history = &history;
  wal_writer wal(dir.path / "run.wal", wal_sync::none);
  const auto res = apply_plan(s, plan, wal, opt);
  CHECK(res.failed == std::vector<std::string>{"w1"});
  CHECK(res.outcomes[0].attempts == 3);
  CHECK(history.attempts("w1")->failures == 4);
  CHECK(history.manual_queue() == std::set<std::string>{"w1"});
}

TEST_CASE("apply_plan history: a loop across two runs goes to the manual queue") {
  scratch_dir dir("hist-loop");
  store_t store = make_store(5);
  store_t control = store;  // the same runs without a history
  repair_plan run1, run2;
  run1.actions.push_back(action("archive", {{"r1", edit_set_status{"archived"}}}));
  run2.actions.push_back(action("unarchive", {{"r1", edit_set_status{"active"}}}));
  memory_repair_history history;
  apply_options opt;
  opt.history = &history;
  {
    wal_writer wal(dir.path / "run1.wal", wal_sync::none);
    CHECK(apply_plan(store, run1, wal, opt).applied == std::vector<std::string>{"archive"});
    CHECK(history.attempts("archive")->done);
  }
  wal_writer wal(dir.path / "run2.wal", wal_sync::none);
  const auto res = apply_plan(store, run2, wal, opt);
  CHECK(res.failed == std::vector<std::string>{"unarchive"});
  CHECK(res.outcomes[0].reason.find("repair loop across runs: record r1") != std::string::npos);
  CHECK(store.record(1).status == "archived");
  CHECK(history.manual_queue() == std::set<std::string>{"unarchive"});
  // a third run holds it without looking at the store
  wal_writer wal3(dir.path / "run3.wal", wal_sync::none);
  CHECK(apply_plan(store, run2, wal3, opt).outcomes[0].attempts == 0);
  // without the history each run only sees its own images: the change back is applied
  wal_writer c1(dir.path / "c1.wal", wal_sync::none), c2(dir.path / "c2.wal", wal_sync::none);
  (void)apply_plan(control, run1, c1);
  CHECK(apply_plan(control, run2, c2).applied == std::vector<std::string>{"unarchive"});
  CHECK(control.record(1).status == "active");
}

TEST_CASE("apply_plan history: an action done in an earlier run is not applied again") {
  scratch_dir dir("hist-done");
  store_t store = make_store(5);
  const memory_record r2_before = store.extract(2);
  repair_plan plan;
  plan.actions.push_back(action("w2", {{"r2", edit_set_weight{0.25}}}));
  memory_repair_history history;
  apply_options opt;
  opt.history = &history;
  wal_writer wal1(dir.path / "run1.wal", wal_sync::none);
  CHECK(apply_plan(store, plan, wal1, opt).applied == std::vector<std::string>{"w2"});
  CHECK(store.record(2).effective_weight == 0.25);
  // the store still holds the after-image: already applied, as without a history
  wal_writer wal2(dir.path / "run2.wal", wal_sync::none);
  auto res = apply_plan(store, plan, wal2, opt);
  CHECK(res.skipped_already_applied == std::vector<std::string>{"w2"});
  CHECK(res.outcomes[0].reason == "every record already holds its after-image");
  // another writer puts r2 back: the done action is not applied again, and not called applied
  // either: a person decides (manual queue)
  (void)store.restore(2, r2_before);
  wal_writer wal3(dir.path / "run3.wal", wal_sync::none);
  res = apply_plan(store, plan, wal3, opt);
  CHECK(res.applied.empty());
  CHECK(res.skipped_already_applied.empty());
  CHECK(res.failed == std::vector<std::string>{"w2"});
  CHECK(res.outcomes[0].attempts == 0);
  CHECK(res.outcomes[0].reason.find("done in an earlier run") != std::string::npos);
  CHECK(to_json(store.extract(2)) == to_json(r2_before));
  CHECK(history.attempts("w2")->attempts == 1);  // one attempt in all: run 1's
}
}  // namespace repair_wal_test
