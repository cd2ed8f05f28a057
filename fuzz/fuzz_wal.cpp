// libFuzzer target: the write-ahead log reader (read_wal, repair/wal.hpp) and what the log
// drives: logged_actions, rollback and recover (repair/rollback.hpp) on small in-memory stores.
//
// Each input is used twice: (1) as WAL bytes; (2) as frame payloads, one JSON object per line,
// framed here with correct lengths and CRC-32C (and, when the first payload declares the hash
// chain, correct "prev" links), so the fuzzer reaches the payload decoder and the repair logic
// without forging checksums. Documented: read_wal never throws on bad data; rollback/recover
// throw only error(precondition) for another store's log (check_store); recover is idempotent.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "memhealth/repair/checksum.hpp"
#include "memhealth/repair/rollback.hpp"
#include "memhealth/repair/wal.hpp"
#include "memhealth/store/memory_store.hpp"

#include "fuzz_support.hpp"

namespace {
namespace mh = memhealth;

std::string frame_lines(std::string_view in) {
  std::string out,
      chain;  // chain: the header's link kind ("crc32c", "crc64"), empty when unchained
  std::uint64_t prev = 0;
  bool first = true;
  while (!in.empty()) {
    const std::size_t nl = in.find('\n');
    std::string p(in.substr(0, nl));
    in = nl == std::string_view::npos ? std::string_view{} : in.substr(nl + 1);
    if (p.empty()) continue;
    if (first) {
      chain = p.find("\"chain\":\"crc64\"") != std::string::npos ? "crc64"
              : p.find("\"chain\"") != std::string::npos         ? "crc32c"
                                                                 : "";
    } else if (!chain.empty() && p.size() >= 2 && p.front() == '{' && p.back() == '}') {
      p = mh::detail::wal::relink(p, mh::detail::wal::link_text(chain, prev));
    }
    first = false;
    const std::uint32_t crc = mh::append_wal_frame(out, p);
    prev = mh::detail::wal::link_value(chain, p, crc);
  }
  return out;
}

// The records the log names, as the store held them before (or after) the logged actions.
mh::memory_store<> store_from(const mh::wal_contents& log, bool after) {
  std::vector<mh::memory_record> recs;
  for (const auto& e : log.entries)
    for (const auto& img : e.records) {
      recs.push_back(after ? img.after : img.before);
      if (recs.back().id.empty()) recs.back().id = img.id;
    }
  recs.push_back(mh::memory_record{});
  recs.back().id = "fuzz-bystander";
  recs.back().content = "a record no log names";
  return mh::memory_store<>::from_records(std::move(recs));
}

void drive(const mh::wal_contents& log) {
  MEMHEALTH_FUZZ_CHECK(log.valid_bytes <= log.file_bytes);
  MEMHEALTH_FUZZ_CHECK(log.clean() == (log.valid_bytes + log.preallocated_bytes == log.file_bytes));
  const auto acts = mh::logged_actions(log);
  (void)log.runs();
  if (acts.empty()) return;
  for (bool after : {false, true}) {
    {
      auto s = store_from(log, after);
      try {
        (void)mh::rollback(s, log);  // check_store on
      } catch (const mh::error& e) {
        MEMHEALTH_FUZZ_CHECK(e.code() == mh::error_code::precondition);
      }
    }
    {
      auto s = store_from(log, after);
      mh::rollback_options ro;
      ro.check_store = false;
      (void)mh::rollback(s, log, ro);
      ro.force = true;
      (void)mh::rollback(s, log, ro);
    }
    for (auto policy : {mh::open_action_policy::undo, mh::open_action_policy::redo}) {
      auto s = store_from(log, after);
      mh::recover_options o;
      o.check_store = false;
      o.open_actions = policy;
      const auto r1 = mh::recover(s, log, o);
      MEMHEALTH_FUZZ_CHECK(r1.actions.size() == acts.size());
      const auto r2 = mh::recover(s, log, o);  // idempotent
      MEMHEALTH_FUZZ_CHECK(r2.records_restored == 0);
    }
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto in = memhealth_fuzz::text(data, size);
  drive(mh::read_wal(in));
  const std::string framed = frame_lines(in);
  if (!framed.empty()) drive(mh::read_wal(framed));
  return 0;
}
