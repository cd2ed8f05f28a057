// Tests for the model adapters (net/): the HTTP client's retries, the OpenAI-compatible embedder
// and judge, their cache, and the judge inside the default pipeline. Every request goes to
// fake_openai_server.hpp on 127.0.0.1 (deterministic answers: the lexical stand-in's vectors and
// verdicts set per pair); nothing reaches the network. Built when memhealth::http and
// cpp-httplib are found.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "memhealth/detect/claim_judge.hpp"
#include "memhealth/detect/default_pipeline.hpp"
#include "memhealth/embed/embedder.hpp"
#include "memhealth/embed/lexical_embedder.hpp"
#include "memhealth/net/http_client.hpp"
#include "memhealth/net/openai_embedder.hpp"
#include "memhealth/net/openai_judge.hpp"
#include "memhealth/net/response_cache.hpp"
#include "memhealth/store/memory_store.hpp"

#include "fake_openai_server.hpp"

namespace net_test {
using namespace memhealth;
using memhealth::test::fake_openai_server;

namespace {

// Short waits so the retry tests take milliseconds.
http_options quick_http(int retries = 3) {
  http_options h;
  h.max_retries = retries;
  h.backoff_initial = std::chrono::milliseconds(1);
  h.backoff_max = std::chrono::milliseconds(5);
  h.timeout = std::chrono::milliseconds(2000);
  return h;
}

std::filesystem::path temp_cache(const char* name) {
  auto p = std::filesystem::temp_directory_path() /
           (std::string("memhealth-net-") + name + "-" + std::to_string(::getpid()) + ".sqlite");
  std::filesystem::remove(p);
  return p;
}

openai_embedder_options embed_opts(const fake_openai_server& s, std::size_t dim = 0) {
  openai_embedder_options o;
  o.url = s.url();
  o.model = "fake-embed";
  o.dimension = dim;
  o.batch_size = 4;
  o.api_key_env = "MEMHEALTH_TEST_API_KEY";
  o.http = quick_http();
  return o;
}

std::vector<float> lexical(const std::string& t, std::size_t d = 16) {
  std::vector<float> v(d);
  lexical_embedder(d, 0).embed(t, v);
  return v;
}

}  // namespace

TEST_SUITE("net") {
  TEST_CASE("openai_endpoint: an API base, a /v1 base or the full endpoint") {
    CHECK(openai_endpoint("http://h:1/v1", "embeddings") == "http://h:1/v1/embeddings");
    CHECK(openai_endpoint("http://h:1/v1/", "embeddings") == "http://h:1/v1/embeddings");
    CHECK(openai_endpoint("http://h:1", "chat/completions") == "http://h:1/v1/chat/completions");
    CHECK(openai_endpoint("http://h:1/api/v1/embeddings", "embeddings") ==
          "http://h:1/api/v1/embeddings");
    // a query string stays at the end (it used to get the path appended after it)
    CHECK(openai_endpoint("http://h:1/v1?api_key=k", "embeddings") ==
          "http://h:1/v1/embeddings?api_key=k");
    CHECK(openai_endpoint("http://h:1/?a=b#f", "chat/completions") ==
          "http://h:1/v1/chat/completions?a=b#f");
  }

  TEST_CASE("url_for_messages: user information and query hidden") {
    CHECK(url_for_messages("http://bob:Hunter2@127.0.0.1:9/v1?api_key=sk-QUERY") ==
          "http://***@127.0.0.1:9/v1?***");
    CHECK(url_for_messages("https://h/v1/embeddings") == "https://h/v1/embeddings");
    CHECK(url_for_messages("http://h:8080") == "http://h:8080");
    CHECK(url_for_messages("http://u@h#frag") == "http://***@h?***");
    // an '@' in the path is not user information
    CHECK(url_for_messages("http://h/a@b") == "http://h/a@b");
    CHECK(url_for_messages("no scheme user:pw@host/x") == "***@host/x");
    CHECK(url_for_messages("") == "");
  }

  TEST_CASE("openai_embedder: the probe learns the dimension, batches of batch_size, index order") {
    fake_openai_server srv(16);
    openai_embedder e(embed_opts(srv));
    static_assert(embedder<openai_embedder>);
    CHECK(e.dimension() == 16);
    CHECK(e.version() == "openai:fake-embed:16");
    CHECK(srv.embedding_requests == 1);  // the probe
    CHECK(srv.last_model == "fake-embed");
    std::vector<std::string> texts;
    for (int i = 0; i < 10; ++i) texts.push_back("memory number " + std::to_string(i));
    texts.push_back("");  // not sent: a zero vector
    std::vector<float> out(texts.size() * 16);
    embed_batch(e, texts, std::span<float>(out));
    // 10 texts in batches of 4: 3 requests (4 + 4 + 2), the empty one not sent
    CHECK(srv.embedding_requests == 4);
    CHECK(srv.texts == 11);  // 1 probe text + 10
    for (std::size_t i = 0; i < 10; ++i) {
      const auto want = lexical(texts[i]);
      for (std::size_t k = 0; k < 16; ++k) REQUIRE(out[i * 16 + k] == want[k]);
    }
    for (std::size_t k = 0; k < 16; ++k) CHECK(out[10 * 16 + k] == 0.0f);
    std::vector<float> wrong(15);
    CHECK_THROWS_AS(e.embed("x", wrong), error);
  }

  TEST_CASE("openai_embedder: the API key comes from the environment, as a bearer header") {
    fake_openai_server srv(8);
    ::setenv("MEMHEALTH_TEST_API_KEY", "sk-test-123", 1);
    openai_embedder e(embed_opts(srv, 8));
    std::vector<float> v(8);
    e.embed("hello", v);
    CHECK(srv.last_authorization == "Bearer sk-test-123");
    ::unsetenv("MEMHEALTH_TEST_API_KEY");
    openai_embedder e2(embed_opts(srv, 8));
    e2.embed("hello again", v);
    CHECK(srv.last_authorization.empty());
  }

  TEST_CASE("openai_embedder: a warm cache makes no request, a new model misses it") {
    fake_openai_server srv(16);
    const auto cache = temp_cache("embed");
    std::vector<std::string> texts{"likes tea", "lives in Porto", "works at a bakery"};
    std::vector<float> first(3 * 16), second(3 * 16);
    {
      auto o = embed_opts(srv);
      o.cache_path = cache;
      openai_embedder e(o);
      embed_batch(e, texts, std::span<float>(first));
      CHECK(srv.embedding_requests == 2);  // probe + one batch
      CHECK(e.stats().cache_hits == 0);
    }
    {
      auto o = embed_opts(srv);  // dimension 0: the probe itself is answered by the cache
      o.cache_path = cache;
      openai_embedder e(o);
      embed_batch(e, texts, std::span<float>(second));
      CHECK(srv.embedding_requests == 2);  // nothing new
      CHECK(e.stats().cache_hits == 4);
      CHECK(e.stats().requests == 0);
    }
    CHECK(first == second);
    {
      auto o = embed_opts(srv, 16);
      o.model = "other-model";
      o.cache_path = cache;
      openai_embedder e(o);
      embed_batch(e, texts, std::span<float>(second));
      CHECK(srv.embedding_requests == 3);
    }
    std::filesystem::remove(cache);
  }

  TEST_CASE("http retries: 429, 500, a slow reply and a malformed one are retried, 400 is not") {
    fake_openai_server srv(8);
    auto o = embed_opts(srv, 8);
    o.http.max_retries = 4;  // 5 attempts
    o.http.timeout = std::chrono::milliseconds(150);
    srv.slow_ms = 600;
    openai_embedder e(o);
    std::vector<float> v(8);
    SUBCASE("429 twice (Retry-After: 0), then an answer") {
      srv.push({"429", "429"});
      e.embed("a", v);
      CHECK(srv.embedding_requests == 3);
      CHECK(v == lexical("a", 8));
    }
    SUBCASE("500, garbage, a short reply, a wrong dimension, then an answer") {
      srv.push({"500", "garbage", "short", "wrongdim"});
      e.embed("b", v);
      CHECK(srv.embedding_requests == 5);
      CHECK(v == lexical("b", 8));
      CHECK(e.stats().requests == 5);
    }
    SUBCASE("a reply slower than the timeout is retried") {
      srv.push({"slow"});
      e.embed("c", v);
      CHECK(srv.embedding_requests == 2);
    }
    SUBCASE("500 on every attempt: error(io) after max_retries + 1 attempts") {
      srv.push({"500", "500", "500", "500", "500", "500"});
      try {
        e.embed("d", v);
        FAIL("no error");
      } catch (const error& x) {
        CHECK(x.code() == error_code::io);
        CHECK(std::string(x.what()).find("HTTP 500") != std::string::npos);
        CHECK(std::string(x.what()).find("after 5 attempts") != std::string::npos);
      }
      CHECK(srv.embedding_requests == 5);
    }
    SUBCASE("malformed on every attempt: error(parse)") {
      srv.push({"garbage", "garbage", "garbage", "garbage", "garbage"});
      try {
        e.embed("e", v);
        FAIL("no error");
      } catch (const error& x) {
        CHECK(x.code() == error_code::parse);
      }
    }
    SUBCASE("a secret the server quotes back in its error is masked in the message") {
      srv.push({"echo400"});
      try {
        e.embed("Alice's AWS key is AKIAQ7ZXR4MNB2KD9WPL for the backups", v);
        FAIL("no error");
      } catch (const error& x) {
        const std::string msg = x.what();
        CHECK(msg.find("HTTP 400") != std::string::npos);
        CHECK(msg.find("AKIAQ7ZXR4MNB2KD9WPL") == std::string::npos);
        CHECK(msg.find("AKIA") != std::string::npos);  // the masked form, e.g. AKIA…(20)
      }
    }
    SUBCASE("400 is not retried") {
      srv.push({"400"});
      CHECK_THROWS_AS(e.embed("f", v), error);
      CHECK(srv.embedding_requests == 1);
    }
  }

  TEST_CASE("http: nothing listening is error(io) naming the URL, not a hang") {
    openai_embedder_options o;
    o.url = "http://127.0.0.1:9/v1";  // discard port: nothing listens
    o.model = "m";
    o.dimension = 4;
    o.http = quick_http(1);
    openai_embedder e(o);
    std::vector<float> v(4);
    try {
      e.embed("x", v);
      FAIL("no error");
    } catch (const error& x) {
      CHECK(x.code() == error_code::io);
      CHECK(std::string(x.what()).find("127.0.0.1:9/v1/embeddings") != std::string::npos);
    }
    // credentials in the URL never reach the message
    o.url = "http://bob:Hunter2Secret@127.0.0.1:9/v1?api_key=sk-QUERYKEY123456";
    openai_embedder e2(o);
    try {
      e2.embed("x", v);
      FAIL("no error");
    } catch (const error& x) {
      const std::string m = x.what();
      CHECK(m.find("http://***@127.0.0.1:9/v1/embeddings?***") != std::string::npos);
      CHECK(m.find("Hunter2Secret") == std::string::npos);
      CHECK(m.find("QUERYKEY") == std::string::npos);
      CHECK(m.find("bob") == std::string::npos);
    }
  }

  TEST_CASE("parse_model_answer: only the requested object, validated") {
    auto a = parse_model_answer(R"({"verdict": "conflict", "newer": "B", "reason": "moved"})");
    REQUIRE(a);
    CHECK(a->verdict == "conflict");
    CHECK(a->newer == "B");
    CHECK(a->reason == "moved");
    a = parse_model_answer("```json\n{\"verdict\": \"Duplicate\", \"newer\": \"same\"}\n```");
    REQUIRE(a);
    CHECK(a->verdict == "duplicate");
    CHECK(a->newer == "same");
    CHECK_FALSE(parse_model_answer(R"({"verdict": "maybe", "newer": "A"})"));
    CHECK_FALSE(parse_model_answer(R"({"verdict": "conflict"})"));
    CHECK_FALSE(parse_model_answer(R"({"verdict": "conflict", "newer": "C"})"));
    CHECK_FALSE(parse_model_answer("Sure! Here is my answer: conflict"));
    CHECK_FALSE(parse_model_answer(R"(["conflict", "A"])"));
    CHECK_FALSE(parse_model_answer(R"({"verdict": 1, "newer": "A"})"));
  }

  TEST_CASE("openai_judge: rules first, the model only for open pairs, validated, cached") {
    fake_openai_server srv(16);
    const auto cache = temp_cache("judge");
    openai_judge_options o;
    o.url = srv.url();
    o.model = "fake-chat";
    o.http = quick_http(1);
    o.cache_path = cache;
    auto model = std::make_shared<openai_judge>(o);
    claim_conflict_judge<> judge;
    judge.model = model;
    memory_record a, b, c, d;
    a.id = "a";
    a.content = "User is a night owl";
    b.id = "b";
    b.content = "User goes to bed at nine every evening";
    c.id = "c";
    c.content = "Alice lives in Porto";
    d.id = "d";
    d.content = "Bob lives in Madrid";
    srv.set_verdict(a.content, b.content,
                    R"({"verdict": "conflict", "newer": "unknown", "reason": "sleep times"})");
    // the rules leave (a, b) open and decide (c, d): different holders
    const auto open = judge.by_rules(a, "user is a night owl", b, "user goes to bed", 0.7f);
    INFO(open.reason);
    REQUIRE(model_judge::left_open(open));
    const auto decided = judge.by_rules(c, "alice lives in porto", d, "bob lives in madrid", 0.7f);
    REQUIRE(decided.reason == "different_holders");

    const auto v = judge(a, "user is a night owl", b, "user goes to bed", 0.7f);
    CHECK(v.conflict);
    CHECK(v.needs_human);  // conflicts_need_review by default
    CHECK(v.reason == "model_conflict");
    CHECK(srv.chat_requests == 1);
    CHECK(judge(c, "alice lives in porto", d, "bob lives in madrid", 0.7f).reason ==
          "different_holders");
    CHECK(srv.chat_requests == 1);  // decided by a rule: not asked
    // the same pair again: from the cache
    CHECK(judge(a, "user is a night owl", b, "user goes to bed", 0.7f).conflict);
    CHECK(srv.chat_requests == 1);
    CHECK(model->stats().cache_hits == 1);

    SUBCASE("a reply without the verdict object, twice: the rules' verdict stands") {
      memory_record e = a, f = b;
      e.content = "User drinks coffee";
      f.content = "User collects stamps";
      srv.push({"short", "garbage"});
      const auto w = judge(e, "user drinks coffee", f, "user collects stamps", 0.7f);
      CHECK_FALSE(w.conflict);
      CHECK(w.reason == "no_claim_conflict");
      CHECK(model->stats().invalid_replies == 1);
      CHECK(srv.chat_requests == 3);
      // not cached: asked again next time (the default answer now: unrelated)
      CHECK(judge(e, "user drinks coffee", f, "user collects stamps", 0.7f).reason ==
            "model_unrelated");
      CHECK(srv.chat_requests == 4);
    }
    SUBCASE("ask_all: decided pairs reach the model too") {
      auto o2 = o;
      o2.ask_all = true;
      o2.cache_path.clear();
      judge.model = std::make_shared<openai_judge>(o2);
      CHECK(judge(c, "alice lives in porto", d, "bob lives in madrid", 0.7f).reason ==
            "model_unrelated");
      CHECK(srv.chat_requests == 2);
    }
    SUBCASE("the server failing for good fails the check (error(io)), never a silent skip") {
      memory_record e = a;
      e.content = "User is an early bird";
      srv.push({"500", "500"});
      CHECK_THROWS_AS((void)judge(e, "user is an early bird", b, "user goes to bed", 0.7f), error);
    }
    std::filesystem::remove(cache);
  }

  TEST_CASE("default pipeline with a model judge: a conflict the rules miss becomes a finding") {
    fake_openai_server srv(16);
    std::vector<memory_record> rs(3);
    rs[0].id = "m1";
    rs[0].content = "User is a night owl";
    rs[1].id = "m2";
    rs[1].content = "User goes to bed at nine every evening";
    rs[2].id = "m3";
    rs[2].content = "User keeps a cat named Miso";
    for (auto& r : rs) {
      r.scope = "user:u1";
      r.status = "active";
      r.source = "user_declared";
      r.created_at = parse_timestamp("2026-01-01T00:00:00Z");
      r.updated_at = r.created_at;
      r.embedding = lexical(r.content);
      r.embedding_version = "lexical";
    }
    srv.set_verdict(rs[0].content, rs[1].content,
                    R"({"verdict": "conflict", "newer": "B", "reason": "sleep schedule"})");
    const auto store = memory_store<>::from_records(rs);
    default_check_settings s;
    s.conflict_candidate_threshold = -1.0f;  // every pair of the scope reaches the judge
    const auto count = [](const report& r) {
      return std::count_if(r.findings.begin(), r.findings.end(),
                           [](const finding& f) { return f.kind == finding_kinds::conflict; });
    };
    CHECK(count(make_default_pipeline(s).run(store)) == 0);  // rules only: none
    openai_judge_options o;
    o.url = srv.url();
    o.model = "fake-chat";
    o.http = quick_http(1);
    s.conflict_model = std::make_shared<openai_judge>(o);
    const report r = make_default_pipeline(s).run(store);
    REQUIRE(count(r) == 1);
    for (const auto& f : r.findings)
      if (f.kind == finding_kinds::conflict) {
        CHECK(f.record_ids == std::vector<std::string>{"m1", "m2"});
      }
    CHECK(srv.chat_requests == 3);  // the three pairs of the scope, each open to the rules
  }

}  // TEST_SUITE("net")
}  // namespace net_test
