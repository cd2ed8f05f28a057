#pragma once
/// @file openai_embedder.hpp
/// `openai_embedder`: an `embedder` (embed/embedder.hpp) over an OpenAI-compatible
/// `POST /v1/embeddings` endpoint, the shape Ollama, llama.cpp's server, vLLM, LiteLLM and the
/// hosted services speak: request `{"model": M, "input": [texts...]}`, reply `{"data": [{"index":
/// i, "embedding": [floats]}...]}`. Part of `memhealth::http` (libcurl, OpenSSL, SQLite).
///
/// - **Batching:** `embed_batch` sends up to `batch_size` texts per request.
/// - **Cache:** with `cache_path` set, every vector is kept in a `response_cache` keyed by the
///   model and the SHA-256 of the text: a rerun over the same texts sends no request.
/// - **Retries, timeouts, rate limit:** `http_client` (429/5xx/timeouts retried with backoff,
///   `Retry-After` honoured; `requests_per_second`). A reply that is not the documented shape
///   (not JSON, a missing or duplicate index, a vector of the wrong length, a non-finite number)
///   is retried like a 5xx and never stored.
/// - **API key:** read from the environment variable `api_key_env` (default `OPENAI_API_KEY`)
///   and sent as `Authorization: Bearer`; it is never taken from a command line, printed or
///   cached.
/// - **Empty text:** not sent (the APIs reject it); its vector is all zeros, which the structural
///   check flags (`zero_embedding`).
///
/// `version()` is "openai:" + model + ":" + dimension: the vector space, whatever server serves
/// the model.
///
/// Errors: error(invalid_argument) for an empty URL or model; error(io) when the server fails for
/// good (http_client.hpp); error(parse) when every attempt gave a malformed reply (a vector of
/// another length than `dimension` is one); the cache's errors (response_cache.hpp).

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "memhealth/config.hpp"
#include "memhealth/net/http_client.hpp"
#include "memhealth/net/response_cache.hpp"

namespace memhealth {

/// Settings of an `openai_embedder`.
struct openai_embedder_options {
  /// API base ("http://localhost:11434/v1") or the full endpoint (".../v1/embeddings");
  /// see `openai_endpoint`.
  std::string url;
  /// Model name sent in each request (e.g. "nomic-embed-text", "text-embedding-3-small").
  std::string model;
  /// Output dimension; 0 = asked from the server once at construction (one request for a
  /// fixed probe text, cached like any other).
  std::size_t dimension = 0;
  /// Texts per request (>= 1).
  std::size_t batch_size = 64;
  /// Environment variable holding the API key ("" = send none).
  std::string api_key_env = "OPENAI_API_KEY";
  /// Cache file ("" = no cache).
  std::filesystem::path cache_path;
  /// Timeouts, retries, rate limit.
  http_options http;
};

/// The embedder (see the file comment). Copies share one HTTP client and one cache.
class openai_embedder {
 public:
  /// Counters since construction.
  struct counters {
    std::uint64_t requests = 0;    ///< HTTP attempts (retries included)
    std::uint64_t texts_sent = 0;  ///< texts sent to the server
    std::uint64_t cache_hits = 0;  ///< texts answered from the cache
  };

  /// @throws error(invalid_argument) for an empty url or model or batch_size 0; the probe's
  ///         errors when `dimension` is 0; the cache's errors when it cannot be opened.
  explicit openai_embedder(openai_embedder_options o) : s_(std::make_shared<shared>()) {
    if (o.url.empty() || o.model.empty())
      throw error(error_code::invalid_argument, "openai_embedder: a URL and a model are required");
    if (o.batch_size == 0)
      throw error(error_code::invalid_argument, "openai_embedder: batch_size must be >= 1");
    s_->endpoint = openai_endpoint(o.url, "embeddings");
    s_->client = std::make_unique<http_client>(o.http);
    s_->headers = bearer_headers(o.api_key_env);
    if (!o.cache_path.empty()) s_->cache = std::make_unique<response_cache>(o.cache_path);
    s_->opt = std::move(o);
    if (s_->opt.dimension == 0) {  // the probe, answered by the cache when it can be
      const auto hit = s_->cache ? s_->cache->get("embedding", s_->opt.model, probe_text)
                                 : std::optional<std::string>();
      if (hit && !hit->empty() && hit->size() % sizeof(float) == 0) {
        s_->opt.dimension = hit->size() / sizeof(float);
        ++s_->cache_hits;
      } else {
        std::vector<std::vector<float>> v;
        fetch({std::string_view(probe_text)}, v, 0);
        s_->opt.dimension = v.front().size();
        if (s_->cache)
          s_->cache->put("embedding", s_->opt.model, probe_text,
                         detail::sqlite::encode_floats(std::span<const float>(v.front())));
      }
    }
    s_->version = "openai:" + s_->opt.model + ":" + std::to_string(s_->opt.dimension);
  }

  /// Output dimension d.
  [[nodiscard]] std::size_t dimension() const noexcept { return s_->opt.dimension; }
  /// "openai:<model>:<d>".
  [[nodiscard]] std::string_view version() const noexcept { return s_->version; }
  /// The endpoint requests go to.
  [[nodiscard]] const std::string& endpoint() const noexcept { return s_->endpoint; }

  /// Embeds one text into `out` (d floats). @throws error(invalid_argument) when
  /// `out.size() != d`; as the file comment says.
  void embed(std::string_view text, std::span<float> out) const {
    embed_batch(std::span<const std::string_view>(&text, 1), out);
  }

  /// Embeds n texts into `out` (n x d, row-major, float32): cached texts from the cache, the
  /// rest in requests of up to `batch_size`. @throws as `embed`; rows of batches already
  /// answered are written, the others are unspecified.
  void embed_batch(std::span<const std::string_view> texts, std::span<float> out) const {
    const std::size_t d = dimension();
    if (out.size() != texts.size() * d)
      throw error(error_code::invalid_argument,
                  "openai_embedder: output has " + std::to_string(out.size()) +
                      " floats, expected " + std::to_string(texts.size()) + " x " +
                      std::to_string(d));
    std::vector<std::size_t> todo;
    for (std::size_t i = 0; i < texts.size(); ++i) {
      float* row = out.data() + i * d;
      if (texts[i].empty()) {
        std::fill(row, row + d, 0.0f);
        continue;
      }
      if (s_->cache) {
        if (auto hit = s_->cache->get("embedding", s_->opt.model, texts[i]);
            hit && hit->size() == d * sizeof(float)) {
          detail::sqlite::decode_floats(hit->data(), hit->size(), row);
          ++s_->cache_hits;
          continue;
        }
      }
      todo.push_back(i);
    }
    for (std::size_t at = 0; at < todo.size(); at += s_->opt.batch_size) {
      const std::size_t n = std::min(s_->opt.batch_size, todo.size() - at);
      std::vector<std::string_view> batch;
      for (std::size_t k = 0; k < n; ++k) batch.push_back(texts[todo[at + k]]);
      std::vector<std::vector<float>> vecs;
      fetch(batch, vecs, d);
      for (std::size_t k = 0; k < n; ++k) {
        std::memcpy(out.data() + todo[at + k] * d, vecs[k].data(), d * sizeof(float));
        if (s_->cache)
          s_->cache->put("embedding", s_->opt.model, batch[k],
                         detail::sqlite::encode_floats(std::span<const float>(vecs[k])));
      }
    }
  }

  /// Counters since construction.
  [[nodiscard]] counters stats() const noexcept {
    return {s_->client->stats().requests, s_->texts_sent.load(), s_->cache_hits.load()};
  }

  /// The text sent to learn the dimension when none is configured.
  static constexpr std::string_view probe_text = "memhealth dimension probe";

 private:
  struct shared {
    openai_embedder_options opt;
    std::string endpoint;
    std::string version;
    std::vector<std::string> headers;
    std::unique_ptr<http_client> client;
    std::unique_ptr<response_cache> cache;
    std::atomic<std::uint64_t> texts_sent{0}, cache_hits{0};
  };

  // One request for `batch` (d = 0: any one length, learnt from the reply); vectors in order.
  void fetch(const std::vector<std::string_view>& batch, std::vector<std::vector<float>>& out,
             std::size_t d) const {
    nlohmann::json req;
    req["model"] = s_->opt.model;
    req["input"] = nlohmann::json::array();
    for (auto t : batch) req["input"].push_back(std::string(t));
    req["encoding_format"] = "float";
    std::string body;
    try {
      body = req.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    } catch (const std::exception& e) {
      throw error(error_code::invalid_argument, std::string("openai_embedder: ") + e.what());
    }
    s_->texts_sent += batch.size();
    s_->client->post_json(s_->endpoint, body, s_->headers, [&](const http_response& r) {
      return parse_reply(r.body, batch.size(), d, out);
    });
  }

  // Reads a reply into `out` (n vectors); returns "" or why it is malformed.
  static std::string parse_reply(const std::string& body, std::size_t n, std::size_t d,
                                 std::vector<std::vector<float>>& out) {
    const auto j = nlohmann::json::parse(body, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return "not a JSON object";
    const auto data = j.find("data");
    if (data == j.end() || !data->is_array()) return "no \"data\" array";
    if (data->size() != n)
      return std::to_string(data->size()) + " embeddings for " + std::to_string(n) + " inputs";
    out.assign(n, {});
    std::vector<bool> seen(n, false);
    for (std::size_t k = 0; k < n; ++k) {
      const auto& item = (*data)[k];
      if (!item.is_object()) return "a data item is not an object";
      std::size_t idx = k;
      if (const auto ix = item.find("index"); ix != item.end()) {
        if (!ix->is_number_unsigned() || ix->get<std::size_t>() >= n) return "a bad index";
        idx = ix->get<std::size_t>();
      }
      if (seen[idx]) return "index " + std::to_string(idx) + " twice";
      seen[idx] = true;
      const auto e = item.find("embedding");
      if (e == item.end() || !e->is_array() || e->empty()) return "an item without an embedding";
      if (k == 0 && d == 0) d = e->size();  // the probe: the first vector sets the length
      const std::size_t want = d;
      if (e->size() != want)
        return "an embedding of " + std::to_string(e->size()) + " dimensions, expected " +
               std::to_string(want);
      auto& v = out[idx];
      v.reserve(want);
      for (const auto& x : *e) {
        if (!x.is_number()) return "a non-number in an embedding";
        const auto f = x.get<double>();
        if (!std::isfinite(f)) return "a non-finite number in an embedding";
        v.push_back(static_cast<float>(f));
      }
    }
    return {};
  }

  std::shared_ptr<shared> s_;
};

}  // namespace memhealth
