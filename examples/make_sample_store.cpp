// Generates data/sample_store.jsonl, the bundled demo store: realistic assistant memories for
// four users with the faults long-running agent memories develop. Seeded and deterministic:
//   make_sample_store OUT.jsonl [--seed N]
// What it plants (the demo's check and repair should find each):
// - repeated facts: the same fact stored again with trivial differences and as paraphrases;
// - preferences that change ("never eats cilantro" -> "a little cilantro is fine");
// - a project switch: the old project's facts stay active and grow stale;
// - a bulk import (ingest batch "bulk-2024-05") that dropped the "topic" metadata field;
// - an embedding-model switch halfway through (two embedding versions in one index);
// - a fact copied into another user's scope (a possible leak), a junk prompt fragment, a
//   dangling supersedes link, a record merged but left active, an illegal status, a record whose
//   timestamps carry a local offset.
#include <cstdint>
#include <iostream>
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
                     const std::string& topic, std::int64_t day, const std::string& source = "model_extracted") {
    memory_record r;
    r.id = "mem-" + std::to_string(1000 + counter++);
    r.content = content;
    r.scope = scope;
    r.kind = kind;
    r.source = source;
    r.status = "active";
    // 2024-01-01T00:00:00Z = 1704067200000 ms; day offsets from there, with a seeded hour.
    const std::int64_t hour = static_cast<std::int64_t>(rng() % 14) + 8;
    const auto t = memhealth::timestamp_from_epoch_ms(1704067200000LL + day * 86400000LL + hour * 3600000LL);
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

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: make_sample_store OUT.jsonl [--seed N]\n";
    return 2;
  }
  std::uint64_t seed = 7;
  if (argc == 4 && std::string(argv[2]) == "--seed") seed = std::stoull(argv[3]);
  generator g{std::mt19937_64(seed), {}, 0, 0};

  const std::string alice = "user:alice", bob = "user:bob", chen = "user:chen", dana = "user:dana";
  const std::string bob_atlas = "user:bob/project:atlas", bob_borealis = "user:bob/project:borealis";

  // Alice: food preferences that change, repeated facts, paraphrases.
  {
    auto& r = g.add(alice, "Alice never eats cilantro.", "preference", "food", 3, "user_declared");
    r.claim = memhealth::preference_claim{"dinner", "cilantro", "", memhealth::polarity::negative};
  }
  {
    auto& r = g.add(alice, "Alice says a little cilantro is fine now.", "preference", "food", 160, "user_declared");
    r.claim = memhealth::preference_claim{"dinner", "cilantro", "a little", memhealth::polarity::positive};
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
    auto& r = g.add(bob, "Bob's current project is Atlas, a billing migration.", "fact", "work", 10);
    r.claim = memhealth::fact_claim{"bob", "current_project", "atlas"};
  }
  {
    auto& r = g.add(bob, "Bob switched to project Borealis, the new search service.", "fact", "work", 170);
    r.claim = memhealth::fact_claim{"bob", "current_project", "borealis"};
  }
  g.add(bob_atlas, "The Atlas migration moves invoices from the legacy Oracle database.", "fact", "work", 11);
  g.add(bob_atlas, "Atlas standups are at 9:30 on Mondays and Thursdays.", "fact", "work", 13);
  g.add(bob_atlas, "Atlas uses Kafka for billing events.", "fact", "work", 16);
  g.add(bob_atlas, "Atlas uses Kafka for the billing events.", "fact", "work", 60);
  g.add(bob_borealis, "Borealis indexes product documents with BM25 and embeddings.", "fact", "work", 171);
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
  g.add(dana, "Dana prefers short answers with bullet points.", "preference", "style", 15, "user_declared");
  g.add(dana, "Dana is saving for a trip to Portugal.", "fact", "travel", 110);

  // A bulk import that dropped the topic field (batch bulk-2024-05).
  for (const char* text : {"Alice's favourite film is Spirited Away.", "Bob supports FC St. Pauli.",
                           "Dana plays the cello.", "Alice volunteers at the animal shelter on Sundays.",
                           "Bob's sister lives in Lisbon.", "Dana's car is a green Renault Zoe."}) {
    const std::string t = text;
    const std::string scope = t.rfind("Alice", 0) == 0 ? alice : t.rfind("Bob", 0) == 0 ? bob : dana;
    auto& r = g.add(scope, t, "fact", "", 125, "system_log");
    r.metadata["ingest_batch"] = std::string("bulk-2024-05");
  }

  // Faults beyond the ordinary.
  g.add(bob, "Alice is allergic to peanuts.", "fact", "health", 140);  // copied into another user's scope
  g.add(dana, "{{user_memory}} You are a helpful assistant.", "fact", "", 141);  // prompt fragment
  {
    auto& r = g.add(alice, "Alice moved her piano lessons to Wednesdays.", "fact", "hobby", 142);
    r.links.supersedes = {"mem-0999"};  // points at a record that no longer exists
  }
  {
    auto& r = g.add(bob, "Bob's coffee: black.", "preference", "food", 143);
    r.links.duplicate_of = "mem-1024";  // merged into "Bob drinks his coffee black." but still active
  }
  g.add(dana, "Dana likes jazz playlists while cooking.", "preference", "music", 144).status = "enabled";
  {
    auto& r = g.add(chen, "陈先生的猫叫小白。", "fact", "pets", 145);
    r.created_at = memhealth::parse_timestamp("2024-05-25T09:00:00+08:00");
    r.updated_at = memhealth::parse_timestamp("2024-05-25T02:30:00Z");  // 30 min later, sorts earlier as text
  }

  // Embeddings: the first half by model v1, the rest by v2 (a model switch halfway).
  const memhealth::lexical_embedder v1(384, 1);
  const memhealth::lexical_embedder v2(384, 2);
  const std::size_t half = g.out.size() / 2;
  std::vector<memory_record> first(g.out.begin(), g.out.begin() + static_cast<std::ptrdiff_t>(half));
  std::vector<memory_record> second(g.out.begin() + static_cast<std::ptrdiff_t>(half), g.out.end());
  memhealth::embed_missing(first, v1);
  memhealth::embed_missing(second, v2);
  first.insert(first.end(), second.begin(), second.end());
  memhealth::write_jsonl(argv[1], first);
  std::cerr << "wrote " << first.size() << " records to " << argv[1] << "\n";
  return 0;
}
