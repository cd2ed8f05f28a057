#pragma once
/// @file openai_judge.hpp
/// `openai_judge`: a `model_judge` (conflict_judge.hpp) over an OpenAI-compatible
/// `POST /v1/chat/completions` endpoint (Ollama, llama.cpp's server, vLLM, hosted services).
/// Part of `memhealth::http` (libcurl, OpenSSL, SQLite).
///
/// The model gets the two statements and is asked for one JSON object:
/// `{"verdict": "conflict" | "duplicate" | "compatible" | "unrelated", "newer": "A" | "B" |
/// "same" | "unknown", "reason": "..."}`. The reply is validated, never trusted blindly: the
/// message content must hold exactly such an object (a Markdown code fence around it is
/// tolerated), with a known verdict and a known `newer`; anything else is a malformed reply,
/// asked again (`http_options::max_retries`), and when no attempt gives a valid answer the judge
/// answers nothing (the rules' verdict stands) and counts it in `stats().invalid_replies`.
///
/// Verdict mapping: "conflict" -> conflict, `needs_human` = `conflicts_need_review` (default
/// true: a model's contradiction is shown to a person rather than resolved by rule), reason
/// "model_conflict" (+ "_newer_a" / "_newer_b" when the model says which is newer); the others ->
/// no conflict, reason "model_duplicate", "model_compatible", "model_unrelated".
///
/// Valid verdicts are cached (`response_cache`, namespace "judge", keyed by the model and the
/// SHA-256 of the prompt), so a rerun asks nothing. Temperature 0. The API key comes from the
/// environment (`api_key_env`), never from a command line.
///
/// Errors: `judge` throws error(io) when the server fails for good (a check then fails rather
/// than skipping the model silently); error(invalid_argument) from the constructor for an empty
/// URL or model.

#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "memhealth/detect/conflict_judge.hpp"
#include "memhealth/net/http_client.hpp"
#include "memhealth/net/response_cache.hpp"

namespace memhealth {

/// Settings of an `openai_judge`.
struct openai_judge_options {
  /// API base ("http://localhost:11434/v1") or the full ".../v1/chat/completions".
  std::string url;
  /// Model name (e.g. "qwen2.5:7b-instruct", "gpt-4o-mini").
  std::string model;
  /// Environment variable holding the API key ("" = none).
  std::string api_key_env = "OPENAI_API_KEY";
  /// Cache file ("" = no cache).
  std::filesystem::path cache_path;
  /// Ask about every candidate pair, not only those the rules leave open.
  bool ask_all = false;
  /// A model-found conflict goes to a person (manual review) instead of the rule chain.
  bool conflicts_need_review = true;
  /// Most tokens of the reply.
  int max_tokens = 200;
  /// Timeouts, retries (also for malformed replies), rate limit.
  http_options http;
};

/// A parsed, validated model answer.
struct model_answer {
  std::string verdict;  ///< conflict, duplicate, compatible or unrelated
  std::string newer;    ///< A, B, same or unknown
  std::string reason;   ///< the model's short explanation (may be empty)
};

/// Reads a chat reply's message content into a `model_answer`; nullopt when it is not exactly
/// the requested JSON object (see the file comment).
inline std::optional<model_answer> parse_model_answer(std::string_view content) {
  std::string_view s = content;
  const auto trim = [](std::string_view& t) {
    while (!t.empty() &&
           (t.front() == ' ' || t.front() == '\n' || t.front() == '\r' || t.front() == '\t'))
      t.remove_prefix(1);
    while (!t.empty() &&
           (t.back() == ' ' || t.back() == '\n' || t.back() == '\r' || t.back() == '\t'))
      t.remove_suffix(1);
  };
  trim(s);
  if (s.starts_with("```")) {  // ```json ... ```
    const auto nl = s.find('\n');
    if (nl == std::string_view::npos || !s.ends_with("```")) return std::nullopt;
    s = s.substr(nl + 1, s.size() - nl - 1 - 3);
    trim(s);
  }
  const auto j = nlohmann::json::parse(s, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  const auto text = [&](const char* k) -> std::optional<std::string> {
    const auto it = j.find(k);
    if (it == j.end() || !it->is_string()) return std::nullopt;
    return it->get<std::string>();
  };
  auto verdict = text("verdict");
  auto newer = text("newer");
  if (!verdict || !newer) return std::nullopt;
  for (auto* x : {&*verdict, &*newer})
    for (auto& c : *x) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (*verdict != "conflict" && *verdict != "duplicate" && *verdict != "compatible" &&
      *verdict != "unrelated")
    return std::nullopt;
  if (*newer != "a" && *newer != "b" && *newer != "same" && *newer != "unknown")
    return std::nullopt;
  model_answer a;
  a.verdict = std::move(*verdict);
  a.newer = *newer == "a" ? "A" : *newer == "b" ? "B" : std::move(*newer);
  if (auto r = text("reason")) a.reason = std::move(*r);
  return a;
}

/// The judge (see the file comment). Thread-safe.
class openai_judge final : public model_judge {
 public:
  /// Counters since construction.
  struct counters {
    std::uint64_t asked = 0;            ///< pairs asked about (cache hits included)
    std::uint64_t cache_hits = 0;       ///< pairs answered from the cache
    std::uint64_t requests = 0;         ///< HTTP attempts
    std::uint64_t invalid_replies = 0;  ///< pairs left to the rules: no valid answer
  };

  /// The instruction sent as the system message.
  static constexpr std::string_view system_prompt =
      "You compare two memories that an AI assistant stored about the same user. Decide how "
      "statement A relates to statement B: \"conflict\" when both cannot be true of the same "
      "person at the same time (a changed preference, a new value of a single-valued fact, "
      "opposite polarity); \"duplicate\" when they say the same thing; \"compatible\" when "
      "both can be true and they are about the same topic; \"unrelated\" otherwise. Also say "
      "which statement is newer when the text shows it (\"moved to\", \"now\", \"no longer\"), "
      "else \"unknown\" (or \"same\"). Answer with one JSON object and nothing else: "
      "{\"verdict\": \"conflict|duplicate|compatible|unrelated\", \"newer\": "
      "\"A|B|same|unknown\", \"reason\": \"a few words\"}";

  /// @throws error(invalid_argument) for an empty url or model; the cache's errors.
  explicit openai_judge(openai_judge_options o) : opt_(std::move(o)) {
    if (opt_.url.empty() || opt_.model.empty())
      throw error(error_code::invalid_argument, "openai_judge: a URL and a model are required");
    endpoint_ = openai_endpoint(opt_.url, "chat/completions");
    client_ = std::make_unique<http_client>(opt_.http);
    headers_ = bearer_headers(opt_.api_key_env);
    if (!opt_.cache_path.empty()) cache_ = std::make_unique<response_cache>(opt_.cache_path);
  }

  /// The validated answer about `a` and `b`, from the cache or the model; nullopt when no
  /// attempt gave a valid reply. @throws error(io) when the server fails for good.
  [[nodiscard]] std::optional<model_answer> ask(std::string_view a, std::string_view b) const {
    ++asked_;
    const std::string user = "A: " + std::string(a) + "\nB: " + std::string(b);
    if (cache_) {
      if (auto hit = cache_->get("judge", opt_.model, user))
        if (auto ans = parse_model_answer(*hit)) {
          ++cache_hits_;
          return ans;
        }
    }
    nlohmann::json req;
    req["model"] = opt_.model;
    req["temperature"] = 0;
    req["max_tokens"] = opt_.max_tokens;
    req["messages"] =
        nlohmann::json::array({{{"role", "system"}, {"content", std::string(system_prompt)}},
                               {{"role", "user"}, {"content", user}}});
    const std::string body = req.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    std::optional<model_answer> got;
    std::string content;
    try {
      client_->post_json(endpoint_, body, headers_, [&](const http_response& r) -> std::string {
        const auto j = nlohmann::json::parse(r.body, nullptr, false);
        if (j.is_discarded() || !j.is_object()) return "not a JSON object";
        const auto ch = j.find("choices");
        if (ch == j.end() || !ch->is_array() || ch->empty() || !(*ch)[0].is_object())
          return "no choices";
        const auto& msg = (*ch)[0].value("message", nlohmann::json::object());
        if (!msg.is_object() || !msg.contains("content") || !msg["content"].is_string())
          return "no message content";
        content = msg["content"].get<std::string>();
        got = parse_model_answer(content);
        return got ? std::string() : std::string("not the requested verdict object");
      });
    } catch (const error& e) {
      if (e.code() != error_code::parse) throw;
      ++invalid_;
      return std::nullopt;
    }
    if (cache_) {
      nlohmann::json c{{"verdict", got->verdict}, {"newer", got->newer}, {"reason", got->reason}};
      cache_->put("judge", opt_.model, user,
                  c.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    }
    return got;
  }

  /// model_judge: the verdict mapped as the file comment says.
  [[nodiscard]] std::optional<conflict_verdict> judge(std::string_view a, std::string_view b,
                                                      const conflict_verdict&) const override {
    auto ans = ask(a, b);
    if (!ans) return std::nullopt;
    if (ans->verdict == "conflict") {
      std::string reason = "model_conflict";
      if (ans->newer == "A") reason += "_newer_a";
      if (ans->newer == "B") reason += "_newer_b";
      return conflict_verdict{true, opt_.conflicts_need_review, std::move(reason)};
    }
    return conflict_verdict{false, false, "model_" + ans->verdict};
  }

  /// model_judge: `ask_all` of the options.
  [[nodiscard]] bool ask_all() const override { return opt_.ask_all; }

  /// The endpoint requests go to.
  [[nodiscard]] const std::string& endpoint() const noexcept { return endpoint_; }

  /// Counters since construction.
  [[nodiscard]] counters stats() const noexcept {
    return {asked_.load(), cache_hits_.load(), client_->stats().requests, invalid_.load()};
  }

 private:
  openai_judge_options opt_;
  std::string endpoint_;
  std::vector<std::string> headers_;
  std::unique_ptr<http_client> client_;
  std::unique_ptr<response_cache> cache_;
  mutable std::atomic<std::uint64_t> asked_{0}, cache_hits_{0}, invalid_{0};
};

}  // namespace memhealth
