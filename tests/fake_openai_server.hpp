#pragma once
// A local stand-in for an OpenAI-compatible server (cpp-httplib, Debian's libcpp-httplib-dev),
// for the tests and benchmarks of net/: it listens on 127.0.0.1 at a free port and answers
//  - POST /v1/embeddings with the lexical stand-in model's vectors (embed/lexical_embedder.hpp,
//    dimension `dim`), so every answer is known in advance;
//  - POST /v1/chat/completions with the verdict `verdicts` holds for the pair "A: ...\nB: ..."
//    (else the verdict set for ("*", "*"), else "unrelated"), as the message content.
// `script` holds faults for the next requests, one per request, in order: "429" (with
// Retry-After: 0), "500", "400", "slow" (waits `slow_ms`, then answers), "garbage" (not JSON),
// "short" (one embedding too few / a verdict object without "newer"), "echo400" (HTTP 400
// quoting the embeddings request), "wrongdim" (vectors of
// dim + 1). GET /stats answers the request counters as JSON. Nothing reaches the network.
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "memhealth/embed/lexical_embedder.hpp"

#include <httplib.h>

namespace memhealth::test {

class fake_openai_server {
 public:
  explicit fake_openai_server(std::size_t dim = 16) : dim_(dim), model_(dim, 0) {
    srv_.Post("/v1/embeddings",
              [this](const httplib::Request& q, httplib::Response& r) { on_embeddings(q, r); });
    srv_.Post("/v1/chat/completions",
              [this](const httplib::Request& q, httplib::Response& r) { on_chat(q, r); });
    srv_.Get("/stats", [this](const httplib::Request&, httplib::Response& r) {
      nlohmann::json j{{"embedding_requests", embedding_requests.load()},
                       {"texts", texts.load()},
                       {"chat_requests", chat_requests.load()}};
      {
        std::lock_guard lock(mu_);
        j["authorization"] = last_authorization;
      }
      r.set_content(j.dump(), "application/json");
    });
    srv_.set_tcp_nodelay(true);  // headers and body are separate writes: no Nagle delay
    port_ = srv_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { srv_.listen_after_bind(); });
    while (!srv_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~fake_openai_server() {
    srv_.stop();
    if (thread_.joinable()) thread_.join();
  }
  fake_openai_server(const fake_openai_server&) = delete;
  fake_openai_server& operator=(const fake_openai_server&) = delete;

  /// "http://127.0.0.1:PORT/v1"
  [[nodiscard]] std::string url() const {
    return "http://127.0.0.1:" + std::to_string(port_) + "/v1";
  }
  [[nodiscard]] int port() const { return port_; }

  /// Faults for the next requests (see the file comment).
  void push(std::initializer_list<std::string> faults) {
    std::lock_guard lock(mu_);
    for (auto& f : faults) script_.push_back(f);
  }
  /// The verdict object (JSON text) answered for the pair (a, b).
  void set_verdict(const std::string& a, const std::string& b, const std::string& verdict_json) {
    std::lock_guard lock(mu_);
    verdicts_["A: " + a + "\nB: " + b] = verdict_json;
  }

  std::atomic<int> embedding_requests{0};  ///< POST /v1/embeddings received
  std::atomic<int> texts{0};               ///< texts in them
  std::atomic<int> chat_requests{0};       ///< POST /v1/chat/completions received
  std::atomic<int> slow_ms{400};           ///< wait of a "slow" fault
  std::string last_authorization;          ///< Authorization header of the last request
  std::string last_model;                  ///< "model" of the last request

 private:
  std::string next_fault() {
    std::lock_guard lock(mu_);
    if (script_.empty()) return {};
    auto f = script_.front();
    script_.pop_front();
    return f;
  }
  // Answers a plain fault; true when the request is answered.
  bool fault(const std::string& f, httplib::Response& r) {
    if (f == "429") {
      r.status = 429;
      r.set_header("Retry-After", "0");
      r.set_content(R"({"error":{"message":"rate limited"}})", "application/json");
      return true;
    }
    if (f == "500" || f == "400") {
      r.status = f == "500" ? 500 : 400;
      r.set_content(R"({"error":{"message":"fault"}})", "application/json");
      return true;
    }
    if (f == "echo400") {  // a server that quotes the request in its error (many do)
      r.status = 400;
      r.set_content("{\"error\": \"bad input: " + last_body_ + "\"}", "application/json");
      return true;
    }
    if (f == "garbage") {
      r.set_content("<html>this is not json", "text/html");
      return true;
    }
    if (f == "slow") std::this_thread::sleep_for(std::chrono::milliseconds(slow_ms.load()));
    return false;
  }
  void note(const httplib::Request& q, const nlohmann::json& j) {
    std::lock_guard lock(mu_);
    last_authorization = q.get_header_value("Authorization");
    last_model = j.value("model", "");
  }

  void on_embeddings(const httplib::Request& q, httplib::Response& r) {
    ++embedding_requests;
    {
      std::lock_guard lock(mu_);
      last_body_ = q.body;
    }
    const auto f = next_fault();
    if (fault(f, r)) return;
    const auto j = nlohmann::json::parse(q.body);
    note(q, j);
    std::vector<std::string> in;
    if (j["input"].is_string())
      in.push_back(j["input"].get<std::string>());
    else
      for (const auto& t : j["input"]) in.push_back(t.get<std::string>());
    texts += static_cast<int>(in.size());
    nlohmann::json out{{"object", "list"}, {"model", j.value("model", "")}};
    out["data"] = nlohmann::json::array();
    const std::size_t n = f == "short" && !in.empty() ? in.size() - 1 : in.size();
    for (std::size_t i = n; i-- > 0;) {  // reversed: clients must use "index"
      std::vector<float> v(dim_);
      model_.embed(in[i], v);
      if (f == "wrongdim") v.push_back(0.5f);
      out["data"].push_back({{"object", "embedding"}, {"index", i}, {"embedding", v}});
    }
    r.set_content(out.dump(), "application/json");
  }

  void on_chat(const httplib::Request& q, httplib::Response& r) {
    ++chat_requests;
    const auto f = next_fault();
    if (fault(f, r)) return;
    const auto j = nlohmann::json::parse(q.body);
    note(q, j);
    std::string user;
    for (const auto& m : j["messages"])
      if (m["role"] == "user") user = m["content"].get<std::string>();
    std::string content = R"({"verdict": "unrelated", "newer": "unknown", "reason": "none"})";
    {
      std::lock_guard lock(mu_);
      if (auto it = verdicts_.find(user); it != verdicts_.end())
        content = it->second;
      else if (auto all = verdicts_.find("A: *\nB: *"); all != verdicts_.end())
        content = all->second;  // set_verdict("*", "*", ...): the answer for any other pair
    }
    if (f == "short") content = R"({"verdict": "conflict"})";
    nlohmann::json out{{"object", "chat.completion"},
                       {"choices",
                        {{{"index", 0},
                          {"message", {{"role", "assistant"}, {"content", content}}},
                          {"finish_reason", "stop"}}}}};
    r.set_content(out.dump(), "application/json");
  }

  std::size_t dim_;
  lexical_embedder model_;
  httplib::Server srv_;
  int port_ = -1;
  std::thread thread_;
  std::mutex mu_;
  std::deque<std::string> script_;
  std::map<std::string, std::string> verdicts_;
  std::string last_body_;  // the last embeddings request (for "echo400")
};

}  // namespace memhealth::test
