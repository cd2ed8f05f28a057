// Generates data/sample_store.jsonl, the bundled demo store: realistic assistant memories for
// four users with the faults long-running agent memories develop. Seeded and deterministic:
//   make_sample_store OUT.jsonl [--seed N] [--events EVENTS.jsonl]
// With --events it also writes data/sample_events.jsonl, the retrieval log the incident replay
// (examples/incident_replay.cpp) monitors; the store's bytes do not depend on that flag.
// What it plants (the demo's check and repair should find each):
// - repeated facts: the same fact stored again with trivial differences and as paraphrases;
// - preferences that change ("never eats cilantro" -> "a little cilantro is fine");
// - a project switch: the old project's facts stay active and grow stale;
// - a bulk import (ingest batch "bulk-2024-05") that dropped the "topic" metadata field;
// - an embedding-model switch halfway through (two embedding versions in one index);
// - a fact copied into another user's scope (a possible leak), a junk prompt fragment, a
//   dangling supersedes link, a record merged but left active, an illegal status, a record whose
//   timestamps carry a local offset.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "memhealth/memhealth.hpp"

namespace {

using memhealth::memory_record;

struct generator {
  std::mt19937_64 rng;
  std::vector<memory_record> out;
  std::int64_t clock_ms = 0;
  int counter = 0;

  memory_record& add(const std::string& scope, const std::string& content, const std::string& kind,
                     const std::string& topic, std::int64_t day,
                     const std::string& source = "model_extracted") {
    memory_record r;
    r.id = "mem-" + std::to_string(1000 + counter++);
    r.content = content;
    r.scope = scope;
    r.kind = kind;
    r.source = source;
    r.status = "active";
    // 2024-01-01T00:00:00Z = 1704067200000 ms; day offsets from there, with a seeded hour.
    const std::int64_t hour = static_cast<std::int64_t>(rng() % 14) + 8;
    const auto t =
        memhealth::timestamp_from_epoch_ms(1704067200000LL + day * 86400000LL + hour * 3600000LL);
    r.created_at = t;
    r.updated_at = t;
    r.last_accessed_at = t;
    if (!topic.empty()) r.metadata.emplace("topic", topic);
    r.metadata.emplace("ingest_batch", std::string(day < 120 ? "chat-2024-h1" : "chat-2024-h2"));
    r.confidence = source == "user_declared" ? 0.95 : 0.7;
    out.push_back(std::move(r));
    return out.back();
  }
};

// ---- retrieval events (--events) ----
// 2024-07-14, hourly traffic per user partition (alice and bob 12 queries an hour, chen and dana
// 4). 06:00-09:00 is normal: queries embedded by each partition's majority model, five distinct
// results, latency around 20-40 ms. From 09:00 queries use the newest model while half the index
// still holds the old one, and what the store's faults do to retrieval shows: the repeated facts
// fill top-k, latency rises to 100-350 ms, results from the old model score low, a copy from
// another user's scope and a link target that no longer exists are served, and some of bob's
// queries come back empty. Everything is derived from the records (scopes, versions, cosines,
// texts, links), with a random stream of its own, so the store's bytes do not change.

double cosine(const memory_record& a, const memory_record& b) {
  if (a.embedding.size() != b.embedding.size() || a.embedding.empty()) return 0;
  double ab = 0, aa = 0, bb = 0;
  for (std::size_t i = 0; i < a.embedding.size(); ++i) {
    ab += double(a.embedding[i]) * b.embedding[i];
    aa += double(a.embedding[i]) * a.embedding[i];
    bb += double(b.embedding[i]) * b.embedding[i];
  }
  return aa > 0 && bb > 0 ? ab / std::sqrt(aa * bb) : 0;
}

// Same model and cosine >= 0.92: what the monitor counts as a duplicate in top-k.
bool near_copy(const memory_record& a, const memory_record& b) {
  return a.embedding_version == b.embedding_version && cosine(a, b) >= 0.92;
}

void write_events(const std::vector<memory_record>& recs, std::uint64_t seed,
                  const std::string& path) {
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ULL +
                      0xE7E7);  // its own stream; mt19937_64 is portable
  auto unit = [&] { return static_cast<double>(rng() >> 11) * 0x1.0p-53; };  // [0, 1)
  auto round3 = [](double x) { return std::round(x * 1000.0) / 1000.0; };
  auto in_partition = [](const memory_record& r, const std::string& p) {
    return memhealth::scope_is_ancestor_or_self(p, r.scope);
  };
  const std::string newest = recs.back().embedding_version;  // the model queries moved to
  std::ofstream out(path, std::ios::binary);
  if (!out) throw memhealth::error(memhealth::error_code::io, "cannot write " + path);
  const std::vector<std::pair<std::string, int>> partitions{
      {"user:alice", 12}, {"user:bob", 12}, {"user:chen", 4}, {"user:dana", 4}};
  const std::int64_t day = 1720915200000LL;  // 2024-07-14T00:00:00Z
  for (int hour = 6; hour < 12; ++hour) {
    const bool incident = hour >= 9;
    for (const auto& [part, per_hour] : partitions) {
      std::vector<const memory_record*> cand;
      std::map<std::string, int> versions;
      for (const auto& r : recs)
        if (in_partition(r, part) && r.status == "active")
          cand.push_back(&r), ++versions[r.embedding_version];
      std::string majority;
      for (const auto& [v, n] : versions)
        if (majority.empty() || n > versions[majority]) majority = v;
      // the largest group of near copies in the partition (served together during the incident)
      std::vector<const memory_record*> copies;
      for (const auto* a : cand) {
        std::vector<const memory_record*> g{a};
        for (const auto* b : cand)
          if (b != a && near_copy(*a, *b)) g.push_back(b);
        if (g.size() > copies.size() && g.size() > 1) copies = g;
      }
      // a record of another scope with the same text as one of the partition's (a leaked copy)
      const memory_record* leak = nullptr;
      for (const auto& r : recs)
        if (!leak && !in_partition(r, part))
          for (const auto* c : cand)
            if (c->content == r.content) leak = &r;
      // a link target that no longer exists (the index still returns it)
      std::string ghost;
      for (const auto* c : cand)
        for (const auto& id : c->links.supersedes)
          if (ghost.empty() &&
              std::none_of(recs.begin(), recs.end(), [&](const auto& r) { return r.id == id; }))
            ghost = id;
      for (int q = 0; q < per_hour; ++q) {
        memhealth::retrieval_event e;
        e.time =
            memhealth::timestamp_from_epoch_ms(day + hour * 3600000LL + (q * 3600000LL) / per_hour +
                                               static_cast<std::int64_t>(unit() * 60000));
        e.partition = part;
        e.requested_scopes = {part};
        e.query_embedding_version = incident ? newest : majority;
        const double u = unit();
        e.latency_ms = round3(incident ? 100 + 250 * u : 18 + 22 * u * u);
        std::vector<const memory_record*> pool;
        for (const auto* c : cand)
          if (incident || c->embedding_version == majority) pool.push_back(c);
        for (std::size_t i = pool.size(); i > 1; --i) std::swap(pool[i - 1], pool[rng() % i]);
        std::vector<const memory_record*> picked;
        if (incident && copies.size() > 1 && unit() < 0.75) picked = copies;
        for (const auto* c : pool) {
          if (picked.size() >= 5) break;
          if (std::find(picked.begin(), picked.end(), c) != picked.end()) continue;
          if (std::none_of(picked.begin(), picked.end(),
                           [&](const auto* p) { return near_copy(*p, *c); }))
            picked.push_back(c);
        }
        const bool empty = incident && part == "user:bob" && q % 6 == 5;  // 2 of 12 an hour
        std::vector<std::pair<std::string, double>> res;
        if (!empty) {
          double top = 0.74 + 0.12 * unit();
          for (std::size_t i = 0; i < picked.size(); ++i) {
            const auto* c = picked[i];
            const bool same = c->embedding_version == e.query_embedding_version;
            double sim =
                same ? top : 0.30 + 0.20 * unit();  // another model's vector: not comparable
            for (std::size_t j = 0; j < i; ++j)     // a near copy scores as its original
              if (near_copy(*picked[j], *c)) sim = res[j].second;
            res.emplace_back(c->id, round3(sim));
            if (same) top -= 0.03 + 0.04 * unit();
          }
          if (incident && leak && q % 6 == 2)
            res.emplace_back(leak->id, round3(0.70 + 0.1 * unit()));
          if (incident && !ghost.empty() && q % 12 == 7)
            res.emplace_back(ghost, round3(0.55 + 0.1 * unit()));
          std::stable_sort(res.begin(), res.end(),
                           [](const auto& a, const auto& b) { return a.second > b.second; });
        }
        std::uint32_t rank = 1;
        for (const auto& [id, sim] : res) e.results.push_back({id, sim, rank++});
        out << memhealth::to_jsonl(e) << '\n';
      }
    }
  }
  if (!out.flush()) throw memhealth::error(memhealth::error_code::io, "cannot write " + path);
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t seed = 7;
  std::string events;
  bool usage = argc < 2 || argc % 2 != 0 || std::string(argv[1]).starts_with("-");
  for (int i = 2; !usage && i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--seed")
      seed = std::stoull(argv[i + 1]);
    else if (flag == "--events")
      events = argv[i + 1];
    else
      usage = true;
  }
  if (usage) {
    std::cerr << "usage: make_sample_store OUT.jsonl [--seed N] [--events EVENTS.jsonl]\n";
    return 2;
  }
  generator g{std::mt19937_64(seed), {}, 0, 0};

  const std::string alice = "user:alice", bob = "user:bob", chen = "user:chen", dana = "user:dana";
  const std::string bob_atlas = "user:bob/project:atlas",
                    bob_borealis = "user:bob/project:borealis";

  // Alice: food preferences that change, repeated facts, paraphrases.
  {
    auto& r = g.add(alice, "Alice never eats cilantro.", "preference", "food", 3, "user_declared");
    r.claim = memhealth::preference_claim{"dinner", "cilantro", "", memhealth::polarity::negative};
  }
  {
    auto& r = g.add(alice, "Alice says a little cilantro is fine now.", "preference", "food", 160,
                    "user_declared");
    r.claim = memhealth::preference_claim{"dinner", "cilantro", "a little",
                                          memhealth::polarity::positive};
  }
  g.add(alice, "Alice lives in Berlin.", "fact", "home", 5);
  g.add(alice, "alice lives in berlin", "fact", "home", 40);
  g.add(alice, "Alice lives in Berlin!!", "fact", "home", 71);
  g.add(alice, "Alice lives in Berlin, Germany.", "fact", "home", 95);
  g.add(alice, "Alice is allergic to peanuts.", "fact", "health", 8, "user_declared");
  g.add(alice, "Alice prefers window seats on long flights.", "preference", "travel", 20);
  g.add(alice, "Alice prefers a window seat on long flights.", "preference", "travel", 130);
  g.add(alice, "Alice is training for the Berlin half marathon in April.", "fact", "fitness", 30);
  g.add(alice, "Alice runs three times a week before work.", "fact", "fitness", 33);
  g.add(alice, "Alice wants vegetarian recipes for weekday dinners.", "preference", "food", 45);
  g.add(alice, "Alice is not vegetarian.", "fact", "food", 150);
  g.add(alice, "Alice's brother is vegetarian.", "fact", "family", 151);
  g.add(alice, "Alice asked for a reminder to renew her passport.", "temporary", "errands", 12);
  g.add(alice, "Alice had ramen for lunch today.", "episodic", "food", 14);

  // Bob: a project switch; the old project's facts stay active.
  {
    auto& r =
        g.add(bob, "Bob's current project is Atlas, a billing migration.", "fact", "work", 10);
    r.claim = memhealth::fact_claim{"bob", "current_project", "atlas"};
  }
  {
    auto& r = g.add(bob, "Bob switched to project Borealis, the new search service.", "fact",
                    "work", 170);
    r.claim = memhealth::fact_claim{"bob", "current_project", "borealis"};
  }
  g.add(bob_atlas, "The Atlas migration moves invoices from the legacy Oracle database.", "fact",
        "work", 11);
  g.add(bob_atlas, "Atlas standups are at 9:30 on Mondays and Thursdays.", "fact", "work", 13);
  g.add(bob_atlas, "Atlas uses Kafka for billing events.", "fact", "work", 16);
  g.add(bob_atlas, "Atlas uses Kafka for the billing events.", "fact", "work", 60);
  g.add(bob_borealis, "Borealis indexes product documents with BM25 and embeddings.", "fact",
        "work", 171);
  g.add(bob_borealis, "Borealis standups are at 10:00 every weekday.", "fact", "work", 172);
  g.add(bob, "Bob drinks his coffee black.", "preference", "food", 4, "user_declared");
  g.add(bob, "Bob takes his coffee black, no sugar.", "preference", "food", 90);
  g.add(bob, "Bob is learning Rust in the evenings.", "fact", "learning", 25);
  g.add(bob, "Bob no longer drinks coffee after 2pm.", "preference", "food", 140);
  g.add(bob, "Bob wants a reminder about the dentist on Friday.", "temporary", "errands", 22);

  // Chen: Chinese memories, a repeated fact and a negated preference.
  g.add(chen, "陈先生不吃辣。", "preference", "food", 6, "user_declared");
  g.add(chen, "陈先生不吃辣", "preference", "food", 50);
  g.add(chen, "陈先生住在上海。", "fact", "home", 7);
  g.add(chen, "陈先生喜欢周末去爬山。", "preference", "hobby", 35);
  g.add(chen, "陈先生不再周末去爬山了。", "preference", "hobby", 180);
  g.add(chen, "陈先生在学习日语。", "fact", "learning", 28);

  // Dana: a healthy, ordinary user.
  g.add(dana, "Dana works as a nurse on night shifts.", "fact", "work", 9);
  g.add(dana, "Dana's daughter starts school in September.", "fact", "family", 100);
  g.add(dana, "Dana prefers short answers with bullet points.", "preference", "style", 15,
        "user_declared");
  g.add(dana, "Dana is saving for a trip to Portugal.", "fact", "travel", 110);

  // A bulk import that dropped the topic field (batch bulk-2024-05).
  for (const char* text :
       {"Alice's favourite film is Spirited Away.", "Bob supports FC St. Pauli.",
        "Dana plays the cello.", "Alice volunteers at the animal shelter on Sundays.",
        "Bob's sister lives in Lisbon.", "Dana's car is a green Renault Zoe."}) {
    const std::string t = text;
    const std::string scope = t.rfind("Alice", 0) == 0 ? alice
                              : t.rfind("Bob", 0) == 0 ? bob
                                                       : dana;
    auto& r = g.add(scope, t, "fact", "", 125, "system_log");
    r.metadata["ingest_batch"] = std::string("bulk-2024-05");
  }

  // Faults beyond the ordinary.
  g.add(bob, "Alice is allergic to peanuts.", "fact", "health",
        140);  // copied into another user's scope
  g.add(dana, "{{user_memory}} You are a helpful assistant.", "fact", "", 141);  // prompt fragment
  {
    auto& r = g.add(alice, "Alice moved her piano lessons to Wednesdays.", "fact", "hobby", 142);
    r.links.supersedes = {"mem-0999"};  // points at a record that no longer exists
  }
  {
    auto& r = g.add(bob, "Bob's coffee: black.", "preference", "food", 143);
    r.links.duplicate_of =
        "mem-1024";  // merged into "Bob drinks his coffee black." but still active
  }
  g.add(dana, "Dana likes jazz playlists while cooking.", "preference", "music", 144).status =
      "enabled";
  {
    auto& r = g.add(chen, "陈先生的猫叫小白。", "fact", "pets", 145);
    r.created_at = memhealth::parse_timestamp("2024-05-25T09:00:00+08:00");
    r.updated_at =
        memhealth::parse_timestamp("2024-05-25T02:30:00Z");  // 30 min later, sorts earlier as text
  }

  // Embeddings: the first half by model v1, the rest by v2 (a model switch halfway).
  const memhealth::lexical_embedder v1(384, 1);
  const memhealth::lexical_embedder v2(384, 2);
  const std::size_t half = g.out.size() / 2;
  std::vector<memory_record> first(g.out.begin(),
                                   g.out.begin() + static_cast<std::ptrdiff_t>(half));
  std::vector<memory_record> second(g.out.begin() + static_cast<std::ptrdiff_t>(half), g.out.end());
  memhealth::embed_missing(first, v1);
  memhealth::embed_missing(second, v2);
  first.insert(first.end(), second.begin(), second.end());
  memhealth::write_jsonl(argv[1], first);
  std::cerr << "wrote " << first.size() << " records to " << argv[1] << "\n";
  if (!events.empty()) {
    write_events(first, seed, events);
    std::cerr << "wrote retrieval events to " << events << "\n";
  }
  return 0;
}
