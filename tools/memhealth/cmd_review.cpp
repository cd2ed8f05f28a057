// memhealth review list|show|approve|reject|defer|resolve|release: works the review queue that
// `memhealth watch` fills in the state database (live/sqlite_review.hpp), and releases actions the
// repair history holds; memhealth history: repair success by recurrence and uptime from the
// findings history (store/run_history.hpp). Built with SQLite only.
#include "cli.hpp"

#if MEMHEALTH_CLI_HAVE_SQLITE

#include <charconv>
#include <memory>
#include <optional>
#include <set>

#include "memhealth/live/sqlite_review.hpp"
#include "memhealth/repair/store_identity.hpp"

namespace memhealth::cli {

namespace {

struct review_cli_options {
  std::string store;
  std::string state;
  std::string wal;
  std::vector<std::string> ids;
  std::string status = "pending";
  std::string type;
  std::string scope;
  std::string older_than;
  std::string format = "text";
  std::string reviewer;
  std::string reason;
  std::string until = "7d";
  std::string keep;                   // resolve --keep
  std::optional<std::string> text;    // resolve --text (nullopt: not given)
  std::string text_value;             // what --text gave
  detection_cli_options models;       // resolve --embedder, --embedding-model, --model-cache
  history_window_cli history_window;  // history --recur-for, --recur-runs, --uptime-window
  std::string now;                    // history --now ("" = the wall clock)
  mutable std::string scope_memo;     // the store's name in the state database, once computed
};

utc_time now_ms() {
  return std::chrono::floor<std::chrono::milliseconds>(std::chrono::system_clock::now());
}
std::int64_t ms_of(utc_time t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

// The store's name in the repair and findings histories and the review queue, as `apply` and
// `watch` write it: the absolute path ("sqlite:" kept for a database; a JSONL store has no
// prefix), or for a postgresql:// store its table on its server (pg_history_scope: connects).
std::string any_history_scope(const review_cli_options& o) {
  if (!o.scope_memo.empty()) return o.scope_memo;
  if (is_pg_store(o.store)) {
#if MEMHEALTH_CLI_HAVE_PG
    o.scope_memo = pg_history_scope(o.store);
#else
    no_pg_support();
#endif
  } else {
    const std::string file =
        std::filesystem::absolute(store_file_path(o.store)).lexically_normal().string();
    o.scope_memo = is_sqlite_store(o.store) ? "sqlite:" + file : file;
  }
  return o.scope_memo;
}

// The state database named by --state, which a postgresql:// store needs (there is no file
// beside which it could live). @throws error(invalid_argument) without --state.
std::filesystem::path state_path_for(const review_cli_options& o) {
  if (!o.state.empty()) return o.state;
  if (is_pg_store(o.store))
    throw error(error_code::invalid_argument,
                "--state: a postgresql:// store keeps its repair history and review queue in a "
                "state database file; name it with --state FILE (apply's is memhealth-state.db "
                "next to its --wal)");
  return default_state_path(o.store);
}

// The write-ahead log of approve and resolve: --wal, else STORE.memhealth-watch.wal beside an
// sqlite: store. @throws error(invalid_argument) for a postgresql:// store without --wal.
std::string review_wal_path(const review_cli_options& o) {
  if (!o.wal.empty()) return o.wal;
  if (is_pg_store(o.store))
    throw error(error_code::invalid_argument,
                "--wal: a postgresql:// store has no file beside which the log could live; name "
                "the write-ahead log with --wal FILE");
  return store_file_path(o.store) + ".memhealth-watch.wal";
}

// Runs f(live store, its name in logs) on the store the queue belongs to: an sqlite: store, or
// a postgresql:// store (--mapping; its repairs run one transaction per action through the
// same log). @return what f returns.
template <class F>
int on_live_store(const review_cli_options& o, bool read_only, F&& f) {
  if (is_pg_store(o.store)) {
#if MEMHEALTH_CLI_HAVE_PG
    auto live = open_pg_store(o.store, read_only);
    const std::string label = live.description();
    return f(live, label);
#else
    no_pg_support();
#endif
  }
  auto live = open_sqlite_store(o.store, read_only);
  return f(live, std::filesystem::absolute(store_file_path(o.store)).lexically_normal().string());
}

// An item's id as people type it: its idempotency key without the store scope.
std::string short_id(const std::string& key) {
  const auto p = key.rfind('\x1f');
  return p == std::string::npos ? key : key.substr(p + 1);
}

sqlite_state open_review_state(const review_cli_options& o) {
  if (!is_sqlite_store(o.store) && !is_pg_store(o.store))
    throw error(error_code::invalid_argument,
                "review: the queue belongs to an sqlite: store (the one `memhealth watch "
                "--repair` checks) or a postgresql:// store with --state; got " +
                    o.store);
  if (is_sqlite_store(o.store) && !std::filesystem::exists(store_file_path(o.store)))
    throw error(error_code::io, "store " + o.store + ": no such file");
  const auto path = state_path_for(o);
  if (!std::filesystem::exists(path))
    throw error(error_code::io, "state database " + path.string() +
                                    ": no such file (no watch has queued anything for this "
                                    "store; --state names another)");
  auto state = sqlite_state::open(path);
  // the state database of another store is refused, as `check --since` and `watch` refuse it (a
  // tester's `review list` of another table showed an empty queue, exit 0): a postgresql://
  // store by its table on its server, a file by its absolute path
  state.bind_store(
      is_pg_store(o.store)
          ? any_history_scope(o)
          : std::filesystem::absolute(store_file_path(o.store)).lexically_normal().string());
  return state;
}

// The items of this store, filtered as asked.
std::vector<review_item> select_items(const sqlite_state& state, const review_cli_options& o) {
  const std::string scope = any_history_scope(o) + '\x1f';
  std::optional<std::chrono::milliseconds> older;
  if (!o.older_than.empty()) {
    older = parse_duration(o.older_than);
    if (!older) throw error(error_code::invalid_argument, "--older-than: expected e.g. 7d, 12h");
  }
  const auto now = ms_of(now_ms());
  std::vector<review_item> out;
  for (auto& it : state.review_items(o.status == "all" ? "" : o.status, now)) {
    if (!it.key.starts_with(scope)) continue;
    if (!o.type.empty() && it.type != o.type) continue;
    if (older && now - it.queued_ms < older->count()) continue;
    if (!o.scope.empty()) {
      const auto a = review_item_action(it);
      if (std::find(a.blast.scopes.begin(), a.blast.scopes.end(), o.scope) == a.blast.scopes.end())
        continue;
    }
    out.push_back(std::move(it));
  }
  return out;
}

// The items named by ids (a unique prefix of at least 6 characters each), in the order given.
std::vector<review_item> named_items(const sqlite_state& state, const review_cli_options& o) {
  if (o.ids.empty()) throw error(error_code::invalid_argument, "name at least one item ID");
  const std::string scope = any_history_scope(o) + '\x1f';
  const auto all = state.review_items("", 0);
  std::vector<review_item> out;
  std::set<std::string> seen;
  for (const auto& id : o.ids) {
    if (id.size() < 6)
      throw error(error_code::invalid_argument, "item ID '" + id + "': give at least 6 characters");
    std::vector<const review_item*> hits;
    for (const auto& it : all)
      if (it.key.starts_with(scope) && short_id(it.key).starts_with(id)) hits.push_back(&it);
    if (hits.empty())
      throw error(error_code::not_found, "no review item " + id + " for store " +
                                             store_label(o.store) +
                                             " (memhealth review list shows them)");
    if (hits.size() > 1)
      throw error(error_code::invalid_argument, "item ID '" + id + "' is ambiguous (" +
                                                    std::to_string(hits.size()) +
                                                    " items): give more characters");
    if (seen.insert(hits[0]->key).second) out.push_back(*hits[0]);
  }
  return out;
}

nlohmann::ordered_json item_json(const review_item& it) {
  nlohmann::ordered_json j;
  j["id"] = short_id(it.key);
  j["type"] = it.type;
  j["tier"] = it.tier;
  j["status"] = it.status;
  j["targets"] = nlohmann::json::parse(it.targets, nullptr, false);
  j["reason"] = it.reason;
  j["queued_at"] = time_text(it.queued_ms);
  if (it.decided_ms) {
    j["decided_by"] = it.decided_by;
    j["decided_at"] = time_text(it.decided_ms);
    j["decision_note"] = it.decision_note;
  }
  if (it.status == "deferred") j["deferred_until"] = time_text(it.defer_until_ms);
  // tier 2 under the watch's veto window: applied then unless rejected or deferred
  if (it.apply_after_ms && it.status == "pending") j["applies_at"] = time_text(it.apply_after_ms);
  j["action"] = nlohmann::json::parse(it.action_json, nullptr, false);
  return j;
}

std::string targets_text(const review_item& it) {
  const auto t = nlohmann::json::parse(it.targets, nullptr, false);
  std::string s;
  if (t.is_array())
    for (const auto& x : t) s += (s.empty() ? "" : ", ") + x.get<std::string>();
  return s;
}

// The action types a review item can hold (`--type` names one of them).
const std::vector<std::string_view>& review_action_types() {
  static const std::vector<std::string_view> types{action_types::fill_metadata_defaults,
                                                   action_types::set_status_pending_review,
                                                   action_types::normalize_timestamps,
                                                   action_types::drop_dangling_links,
                                                   action_types::archive_merged,
                                                   action_types::rebuild_index,
                                                   action_types::merge_duplicates,
                                                   action_types::resolve_conflict,
                                                   action_types::downweight,
                                                   action_types::send_to_review,
                                                   action_types::reembed,
                                                   action_types::clean_index,
                                                   action_types::check_rebuild_index,
                                                   action_types::start_migration};
  return types;
}

// A critical item (the planner's critical review, e.g. a scope leak: reasons "critical: ..."),
// which a person sees before the other reviews.
bool critical_item(const review_item& it) {
  const auto a = nlohmann::json::parse(it.action_json, nullptr, false);
  if (!a.is_object() || !a.contains("reasons") || !a["reasons"].is_array()) return false;
  return std::any_of(a["reasons"].begin(), a["reasons"].end(), [](const auto& r) {
    return r.is_string() && r.template get<std::string>().starts_with("critical:");
  });
}

int run_list(const review_cli_options& o) {
  if (!o.type.empty() && std::find(review_action_types().begin(), review_action_types().end(),
                                   o.type) == review_action_types().end()) {
    std::string names;
    for (const auto t : review_action_types())
      names += (names.empty() ? "" : ", ") + std::string(t);
    throw error(error_code::invalid_argument,
                "--type: unknown action type '" + o.type + "' (one of: " + names + ")");
  }
  static const std::set<std::string> statuses{"pending",    "approved", "rejected", "deferred",
                                              "superseded", "obsolete", "all"};
  if (!statuses.count(o.status))
    throw error(error_code::invalid_argument,
                "--status: pending, approved, rejected, deferred, superseded, obsolete or all");
  auto state = open_review_state(o);
  auto items = select_items(state, o);
  // critical items (a scope leak) first: a person sees them before the other reviews
  std::stable_partition(items.begin(), items.end(), critical_item);
  if (o.format == "json") {
    nlohmann::ordered_json j;
    j["store"] = store_label(o.store);
    j["status"] = o.status;
    j["items"] = nlohmann::ordered_json::array();
    for (const auto& it : items) {
      auto one = item_json(it);
      one["critical"] = critical_item(it);
      j["items"].push_back(std::move(one));
    }
    std::cout << j.dump(2) << "\n";
  } else {
    for (const auto& it : items)
      std::cout << short_id(it.key) << "  " << (critical_item(it) ? "CRITICAL  " : "") << it.status
                << "  tier " << it.tier << "  " << it.type << "  [" << targets_text(it)
                << "]  queued " << time_text(it.queued_ms) << "  " << it.reason << "\n";
    std::cerr << "memhealth review: " << items.size() << " items (" << o.status << ")\n";
  }
  return exit_ok;
}

int run_show(const review_cli_options& o) {
  auto state = open_review_state(o);
  const auto items = named_items(state, o);
  nlohmann::ordered_json all = nlohmann::ordered_json::array();
  return on_live_store(o, true, [&](const auto& store, const std::string&) {
    for (const auto& it : items) {
      auto j = item_json(it);
      // the records as they are now, so the reviewer sees what the action would change
      nlohmann::ordered_json recs = nlohmann::ordered_json::object();
      for (const auto& id : review_item_action(it).targets) {
        const auto i = store.find(id);
        if (!i) {
          recs[id] = nullptr;
          continue;
        }
        const auto& r = store.record(*i);
        nlohmann::ordered_json rj;
        rj["content"] = mask_secrets(r.content);  // a secret is never printed in full
        rj["scope"] = r.scope;
        rj["status"] = r.status;
        if (r.updated_at) rj["updated_at"] = format_timestamp(*r.updated_at);
        recs[id] = rj;
      }
      j["records_now"] = recs;
      all.push_back(j);
    }
    std::cout << (o.format == "json" || items.size() != 1 ? all.dump(2) : all[0].dump(2)) << "\n";
    return static_cast<int>(exit_ok);
  });
}

// A superseded item (a newer proposal for its records replaced it) is not decided: the current
// one is.
void refuse_superseded(const review_item& it) {
  if (it.status == "superseded" || it.status == "obsolete")
    throw error(error_code::invalid_argument,
                "item " + short_id(it.key) + " was " + it.decision_note +
                    ": decide the current item (memhealth review list)");
}

void require_decision(const review_cli_options& o) {
  if (o.reviewer.empty() || o.reason.empty())
    throw error(error_code::invalid_argument,
                "a decision needs --reviewer NAME and --reason TEXT (both are recorded)");
}

int run_approve(const review_cli_options& o) {
  require_decision(o);
  auto state = open_review_state(o);
  const auto items = named_items(state, o);
  for (const auto& it : items) {
    refuse_superseded(it);
    if (it.status == "approved")
      throw error(error_code::invalid_argument,
                  "item " + short_id(it.key) + " is already approved (by " + it.decided_by + ")");
    if (is_index_action(it.type))
      throw error(error_code::invalid_argument,
                  "item " + short_id(it.key) + " is an index action (" + it.type +
                      "): review has no index policy to run it (run it with memhealth apply "
                      "--index, or in the host, then reject or defer the item with a reason)");
    if (it.type == action_types::reembed)
      throw error(error_code::invalid_argument,
                  "item " + short_id(it.key) +
                      " re-embeds records, and review approve has no embedder: re-embed them "
                      "with memhealth migrate start STORE --to VERSION --embedder E, then "
                      "memhealth migrate run STORE --embedder E (see `review show` for the "
                      "records and version), then reject or defer the item with a reason");
    if (it.type == action_types::start_migration)
      throw error(error_code::invalid_argument,
                  "item " + short_id(it.key) +
                      " proposes an embedding-model migration: start it with memhealth migrate "
                      "start (see `review show`), then reject or defer the item with a reason");
  }
  const std::string wal_path = review_wal_path(o);
  const std::string scope = any_history_scope(o);
  return on_live_store(o, false, [&](auto& live, const std::string& name) {
    wal_writer_options wo;
    wo.store = identify_store(live, name);
    wo.store->database_id = live.database_id();
    wal_writer w(wal_path, wo);
    const auto res =
        approve_review_items(live, items, w, state, scope, o.reviewer, o.reason, now_ms());
    w.sync();
    std::size_t ok = 0, failed = 0;
    for (const auto& r : res) {
      const bool took = r.status == action_status::applied ||
                        r.status == action_status::already_applied ||
                        r.status == action_status::noop;
      (took ? ok : failed) += 1;
      std::cerr << "memhealth review: " << short_id(r.key) << " " << to_string(r.status)
                << (r.records_changed ? " (" + std::to_string(r.records_changed) + " records)" : "")
                << (took ? "" : ", still pending: " + r.reason) << "\n";
    }
    std::cerr << "memhealth review: " << ok << " approved and applied through " << wal_path << ", "
              << failed << " not applied\n";
    return static_cast<int>(failed ? exit_incomplete : exit_ok);
  });
}

int run_decide(const review_cli_options& o, const std::string& status) {
  require_decision(o);
  auto state = open_review_state(o);
  const auto items = named_items(state, o);
  const auto now = ms_of(now_ms());
  std::int64_t until = 0;
  if (status == "deferred") {
    const auto d = parse_duration(o.until);
    if (!d || d->count() <= 0)
      throw error(error_code::invalid_argument, "--for: expected a duration > 0 such as 7d");
    until = now + d->count();
  }
  for (const auto& it : items) {
    refuse_superseded(it);
    if (it.status == "approved")
      throw error(error_code::invalid_argument,
                  "item " + short_id(it.key) + " was approved and applied (by " + it.decided_by +
                      "); undo it with memhealth rollback, not " + status);
  }
  for (const auto& it : items)
    state.decide_review(it.key, status, o.reviewer, o.reason, now, until);
  std::cerr << "memhealth review: " << items.size() << " items " << status
            << (status == "deferred" ? " until " + time_text(until) : std::string()) << "\n";
  return exit_ok;
}

// The built-in lexical embedder's settings from an embedding_version it wrote
// ("lexical-v1-d<d>-s<seed>", without a synonym table); nullopt for any other version.
std::optional<std::pair<std::size_t, std::uint64_t>> lexical_setup(std::string_view v) {
  constexpr std::string_view head = "lexical-v1-d";
  if (!v.starts_with(head)) return std::nullopt;
  v.remove_prefix(head.size());
  std::size_t d = 0;
  std::uint64_t seed = 0;
  auto r = std::from_chars(v.data(), v.data() + v.size(), d);
  if (r.ec != std::errc() || d == 0 || r.ptr == v.data() + v.size() || *r.ptr != '-' ||
      r.ptr + 1 == v.data() + v.size() || r.ptr[1] != 's')
    return std::nullopt;
  const char* s = r.ptr + 2;
  r = std::from_chars(s, v.data() + v.size(), seed);
  if (r.ec != std::errc() || r.ptr != v.data() + v.size()) return std::nullopt;
  return std::pair{d, seed};
}

// The embedder a new text goes through (--text): --embedder when given, else the one the kept
// record's own vector came from when the tool can run it (the built-in lexical embedder, as
// `import --embed lexical` and `check --embed lexical` tag it). Sets `ao.embed` and
// `ao.embed_version`. @throws error(invalid_argument) when neither applies.
void set_text_embedder(const review_cli_options& o, const memory_record& kept, apply_options& ao) {
  if (o.models.embedder.empty()) {
    const auto lex = lexical_setup(kept.embedding_version);
    if (!lex)
      throw error(error_code::invalid_argument,
                  "--text: the new text is re-embedded, and record " + kept.id +
                      "'s vector was made by '" + kept.embedding_version +
                      "', which the tool cannot run: give --embedder openai:URL "
                      "--embedding-model MODEL (the store's model)");
    const auto e = std::make_shared<lexical_embedder>(lex->first, lex->second);
    ao.embed_version = std::string(e->version());
    ao.embed = [e](const memory_record& r) {
      std::vector<float> v(e->dimension());
      e->embed(r.content, v);
      return v;
    };
    return;
  }
  const std::string url = openai_option_url(o.models.embedder, o.models.embedding_model,
                                            "--embedder", "--embedding-model");
#if MEMHEALTH_CLI_HAVE_HTTP
  // the store's dimension (0: the server's)
  const openai_embedder_options eo =
      openai_embedder_options_from(o.models, url, kept.embedding.size());
  const auto e = std::make_shared<openai_embedder>(eo);
  ao.embed_version = std::string(e->version());
  ao.embed = [e](const memory_record& r) {
    std::vector<float> v(e->dimension());
    e->embed(r.content, v);
    return v;
  };
#else
  (void)url;
  (void)ao;
  throw error(error_code::invalid_argument,
              "--embedder: this build has no HTTP client (libcurl4-openssl-dev, libssl-dev)");
#endif
}

int run_resolve(const review_cli_options& o) {
  require_decision(o);
  if (o.keep.empty())
    throw error(error_code::invalid_argument, "--keep: name the record that wins");
  auto state = open_review_state(o);
  const auto items = named_items(state, o);
  if (items.size() != 1)
    throw error(error_code::invalid_argument,
                "resolve: name one item (got " + std::to_string(items.size()) + ")");
  const review_item& it = items.front();
  const std::string scope = any_history_scope(o);
  return on_live_store(o, false, [&](auto& live, const std::string& name) {
    apply_options ao;
    ao.batch_size = 1;
    // the item, the winner and the text are checked before any embedder is reached
    (void)check_review_resolution(live, it, o.keep, std::nullopt, ao, o.reviewer, o.reason,
                                  now_ms());
    check_resolution_text(o.text);
    if (o.text) {
      const auto i = live.find(o.keep);
      if (!i)
        throw error(error_code::not_found,
                    "record " + o.keep + " is not in the store " + store_label(o.store));
      set_text_embedder(o, live.extract(*i), ao);
    }
    const std::string wal_path = review_wal_path(o);
    // the checks of resolve_review_item, before the log is opened (nothing changes on a refusal)
    (void)check_review_resolution(live, it, o.keep, o.text, ao, o.reviewer, o.reason, now_ms());
    wal_writer_options wo;
    wo.store = identify_store(live, name);
    wo.store->database_id = live.database_id();
    wal_writer w(wal_path, wo);
    const auto r = resolve_review_item(live, it, o.keep, o.text, w, state, scope, o.reviewer,
                                       o.reason, now_ms(), std::move(ao));
    w.sync();
    const bool took = r.status == action_status::applied ||
                      r.status == action_status::already_applied || r.status == action_status::noop;
    std::cerr << "memhealth review: " << short_id(r.key) << " resolved: " << o.keep << " kept"
              << (o.text ? " with a new text (re-embedded)" : "") << ", " << to_string(r.status)
              << (r.records_changed ? " (" + std::to_string(r.records_changed) + " records)" : "")
              << (took ? " through " + wal_path : ", still pending: " + r.reason) << "\n";
    return static_cast<int>(took ? exit_ok : exit_incomplete);
  });
}

// The state database of any store (JSONL or sqlite:), which must exist.
sqlite_state open_history_state(const review_cli_options& o, bool read_only) {
  const auto path = state_path_for(o);
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw error(error_code::io, "state database " + path.string() +
                                    ": is a directory, not a state database file (--state names "
                                    "the file, e.g. DIR/memhealth-state.db)");
  if (!std::filesystem::is_regular_file(path, ec))
    throw error(error_code::io, "state database " + path.string() +
                                    ": no such file (memhealth apply keeps it next to its --wal "
                                    "as memhealth-state.db unless --state names it; the watch "
                                    "beside the store: name it with --state)");
  return sqlite_state::open(path, {.read_only = read_only});
}

// review release: the held actions named (a unique prefix of 6+ characters of their id) get
// their attempts back; the release is recorded with reviewer, reason and time.
int run_release(const review_cli_options& o) {
  require_decision(o);
  if (o.ids.empty()) throw error(error_code::invalid_argument, "name at least one action ID");
  auto state = open_history_state(o, false);
  const std::string scope = any_history_scope(o) + '\x1f';
  const auto rows = state.repair_attempts_with_prefix(scope);
  std::vector<repair_attempt_state> chosen;
  for (const auto& id : o.ids) {
    if (id.size() < 6)
      throw error(error_code::invalid_argument,
                  "action ID '" + id + "': give at least 6 characters");
    std::vector<const repair_attempt_state*> hits;
    for (const auto& r : rows)
      if (short_id(r.action_key).starts_with(id)) hits.push_back(&r);
    if (hits.empty())
      throw error(error_code::not_found, "the repair history of " + store_label(o.store) + " (" +
                                             state.path() + ") holds no action " + id);
    if (hits.size() > 1)
      throw error(error_code::invalid_argument, "action ID '" + id + "' is ambiguous (" +
                                                    std::to_string(hits.size()) +
                                                    " actions): give more characters");
    if (std::none_of(chosen.begin(), chosen.end(), [&](const repair_attempt_state& c) {
          return c.action_key == hits[0]->action_key;
        }))
      chosen.push_back(*hits[0]);
  }
  // only an action the history holds is released: one in the manual queue (failed every
  // attempt, a repair loop, proposed a third time) or one done in an earlier run (applied, then
  // rolled back on purpose: released, it may be applied again); one in state "retry" has its
  // attempts already
  for (const auto& c : chosen)
    if (c.state != "manual" && c.state != "done")
      throw error(error_code::precondition,
                  "action " + short_id(c.action_key) + " is not held (state " + c.state + ", " +
                      std::to_string(c.attempts) + " attempts, " + std::to_string(c.failures) +
                      " failures): nothing to release; release is for an action the repair "
                      "history holds in the manual queue (failed every attempt, a repair loop, "
                      "or proposed a third time) or as done in an earlier run; nothing was "
                      "recorded");
  const auto now = ms_of(now_ms());
  for (const auto& c : chosen) {
    const auto before = state.release_action(c.action_key, o.reviewer, o.reason, now);
    std::cerr << "memhealth review: released " << short_id(c.action_key) << " (was " << before.state
              << ", " << before.attempts << " attempts, " << before.failures << " failures"
              << (before.last_error.empty() ? "" : "; last: " + before.last_error)
              << "): the next run may try it again\n";
  }
  return exit_ok;
}

// memhealth history: repair success and uptime of one store from the findings history.
int run_history(const review_cli_options& o) {
  const recurrence_window w = o.history_window.recurrence();
  const auto span = o.history_window.uptime();
  utc_time at = now_ms();
  if (!o.now.empty()) {
    const auto t = parse_timestamp(o.now);
    if (!t) throw error(error_code::invalid_argument, "--now: not an RFC 3339 time: " + o.now);
    at = t->instant;
  }
  auto state = open_history_state(o, true);
  const auto h = state.history_figures_of(any_history_scope(o), w, span, at);
  if (o.format == "json") {
    std::cout << history_json(h).dump(2) << "\n";
    return exit_ok;
  }
  for (const auto& line : history_sentences(h)) std::cout << line << "\n";
  for (std::size_t k = 0; k < h.faults.size() && k < 20; ++k)
    std::cout << "  " << format_timestamp(timestamp{h.faults[k].repaired_at, 0}) << "  "
              << h.faults[k].kind << "  " << to_string(h.verdicts[k]) << "\n";
  if (h.faults.size() > 20)
    std::cout << "  (" << h.faults.size() - 20 << " older repaired faults not listed)\n";
  return exit_ok;
}

// --mapping on a command that takes a postgresql:// store (the table whose history or queue
// it is; pg_mapping_option).
void add_review_mapping_option(CLI::App* c) {
  c->add_option("--mapping", pg_mapping_option(),
                "postgresql:// stores: the column mapping, a JSON file or a built-in name (mem0, "
                "langgraph; default: memhealth's own schema)");
}

}  // namespace

void add_history(CLI::App& app, int& rc) {
  auto o = std::make_shared<review_cli_options>();
  auto* c = app.add_subcommand(
      "history",
      "Repair success (repaired faults that held, recurred, or are too early to say) and uptime "
      "(time and full check runs without an open error or critical finding) from the findings "
      "history that watch and apply keep in the state database");
  c->add_option("store", o->store,
                "The store (JSONL, sqlite:PATH or postgresql://...) as watch or apply named it")
      ->required();
  c->add_option("--state", o->state,
                "State database (default: STORE.memhealth-state.db beside the store, the "
                "watch's; apply's is memhealth-state.db next to its --wal; a postgresql:// "
                "store needs it)");
  add_review_mapping_option(c);
  o->history_window.add_to(c);
  c->add_option("--now", o->now,
                "Judge as of this time (RFC 3339; default: now), e.g. the --now of runs replayed "
                "at a fixed time");
  c->add_option("--format", o->format, "text or json")->check(CLI::IsMember({"text", "json"}));
  c->callback([o, &rc] { rc = run_history(*o); });
}

void add_review(CLI::App& app, int& rc) {
  auto* cmd =
      app.add_subcommand("review",
                         "Work the review queue that `memhealth watch --repair` fills: list, show, "
                         "approve (applied through the log), reject, defer, resolve (a "
                         "conflict's winner), release (an action the repair history holds)");
  cmd->require_subcommand(1);
  const auto common = [](CLI::App* c, review_cli_options& o) {
    c->add_option("store", o.store,
                  "The store the queue belongs to: sqlite:PATH, or postgresql://... with --state")
        ->required();
    c->add_option("--state", o.state,
                  "State database (default: STORE.memhealth-state.db beside an sqlite: store; a "
                  "postgresql:// store needs it)");
    add_review_mapping_option(c);
  };
  const auto decision = [](CLI::App* c, review_cli_options& o) {
    c->add_option("ids", o.ids, "Item IDs (a unique prefix of 6+ characters)")->required();
    c->add_option("--reviewer", o.reviewer, "Who decides (recorded)")->required();
    c->add_option("--reason", o.reason, "Why (recorded)")->required();
  };
  {
    auto o = std::make_shared<review_cli_options>();
    auto* c = cmd->add_subcommand("list", "List the queue's items (oldest first)");
    common(c, *o);
    c->add_option("--status", o->status,
                  "pending (default; deferred items whose time came included), approved, "
                  "rejected, deferred, superseded (replaced by a newer proposal for the same "
                  "records, which changed since) or all");
    c->add_option("--type", o->type, "Only this action type (e.g. merge_duplicates)");
    c->add_option("--scope", o->scope, "Only actions touching this scope");
    c->add_option("--older-than", o->older_than, "Only items queued at least this long ago")
        ->transform(duration(false, true));
    c->add_option("--format", o->format, "text or json")->check(CLI::IsMember({"text", "json"}));
    c->callback([o, &rc] { rc = run_list(*o); });
  }
  {
    auto o = std::make_shared<review_cli_options>();
    auto* c = cmd->add_subcommand("show", "Show items with their records as they are now (JSON)");
    common(c, *o);
    c->add_option("ids", o->ids, "Item IDs (a unique prefix of 6+ characters)")->required();
    c->add_option("--format", o->format, "json (default: one object, or an array for several)");
    c->callback([o, &rc] { rc = run_show(*o); });
  }
  {
    auto o = std::make_shared<review_cli_options>();
    auto* c = cmd->add_subcommand(
        "approve", "Approve items: their actions are applied now, through the write-ahead log");
    common(c, *o);
    decision(c, *o);
    c->add_option("--wal", o->wal, "Write-ahead log (default: STORE.memhealth-watch.wal)");
    c->callback([o, &rc] { rc = run_approve(*o); });
  }
  {
    auto o = std::make_shared<review_cli_options>();
    auto* c = cmd->add_subcommand("reject",
                                  "Reject items: not proposed again until their records change");
    common(c, *o);
    decision(c, *o);
    c->callback([o, &rc] { rc = run_decide(*o, "rejected"); });
  }
  {
    auto o = std::make_shared<review_cli_options>();
    auto* c = cmd->add_subcommand("defer", "Defer items: pending again after --for (default 7d)");
    common(c, *o);
    decision(c, *o);
    c->add_option("--for", o->until, "How long (e.g. 2d, 12h)")->transform(duration(true));
    c->callback([o, &rc] { rc = run_decide(*o, "deferred"); });
  }
  {
    auto o = std::make_shared<review_cli_options>();
    auto* c = cmd->add_subcommand(
        "release",
        "Release actions the repair history holds (failed 1 + retry-limit times, a repair loop, "
        "or proposed a third time over the same records): the next run may try them again; the "
        "release is recorded with reviewer, reason and time");
    c->add_option("store", o->store,
                  "The store the actions were held for (JSONL, sqlite:PATH or postgresql://...; "
                  "apply: its input)")
        ->required();
    c->add_option("--state", o->state,
                  "State database (default: STORE.memhealth-state.db; apply keeps "
                  "memhealth-state.db next to its --wal; a postgresql:// store needs it)");
    add_review_mapping_option(c);
    decision(c, *o);
    c->callback([o, &rc] { rc = run_release(*o); });
  }
  {
    auto o = std::make_shared<review_cli_options>();
    auto* c = cmd->add_subcommand(
        "resolve",
        "Resolve a conflict's item: --keep wins, the other records are archived (optionally with "
        "a new --text for the winner, re-embedded), applied now through the write-ahead log");
    common(c, *o);
    c->add_option("ids", o->ids, "The item's ID (a unique prefix of 6+ characters)")->required();
    c->add_option("--reviewer", o->reviewer, "Who decides (recorded)")->required();
    c->add_option("--reason", o->reason, "Why (recorded)")->required();
    c->add_option("--keep", o->keep, "The record that wins (one of the item's records)")
        ->required();
    auto* text =
        c->add_option("--text", o->text_value,
                      "The winner's new text (re-embedded through the store's embedder, or "
                      "--embedder; never a secret, never empty)");
    c->add_option("--wal", o->wal, "Write-ahead log (default: STORE.memhealth-watch.wal)");
    add_embedder_options(c, o->models, true);
    c->callback([o, text, &rc] {
      if (text->count()) o->text = o->text_value;
      rc = run_resolve(*o);
    });
  }
}

}  // namespace memhealth::cli

#endif  // MEMHEALTH_CLI_HAVE_SQLITE
