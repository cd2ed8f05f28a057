#pragma once
/// @file http_client.hpp
/// A small HTTP client for the model adapters (openai_embedder.hpp, openai_judge.hpp): JSON POST
/// requests through libcurl (Debian's libcurl4-openssl-dev) with a per-request timeout, retries
/// with exponential backoff on 429, 5xx, timeouts and connection failures (honouring a
/// `Retry-After` header in seconds), and a request-rate limit shared by every thread using one
/// client. Part of `memhealth::http` (CMake), which exists when libcurl, OpenSSL and SQLite are
/// found.
///
/// Thread safety: one client may be used from many threads at once (each request uses its own
/// curl handle, taken from a pool so that connections are reused; the rate limiter and the
/// counters are synchronised). Not copyable.
///
/// Errors: `memhealth::error(io)` when a request fails for good (a 4xx other than 408 and 429,
/// or every attempt failed), naming the URL (user information and query hidden:
/// `url_for_messages`), the status or the curl error, and the first 200
/// bytes of the reply body with any secret in it masked (`mask_secrets`). Request bodies are
/// never put in messages (they hold user text); the API key is never put in messages or logs.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "memhealth/config.hpp"
#include "memhealth/detect/secrets.hpp"

#include <curl/curl.h>

namespace memhealth {

/// Limits of one `http_client`.
struct http_options {
  /// Whole-request timeout (connect, send, wait, receive), per attempt.
  std::chrono::milliseconds timeout{60'000};
  /// Connect timeout, per attempt.
  std::chrono::milliseconds connect_timeout{10'000};
  /// Attempts after the first for a retryable failure (429, 408, 5xx, timeout, connection
  /// error, a reply the caller rejects as malformed); 0 = no retry.
  int max_retries = 4;
  /// Wait before the first retry; doubled before each further retry, at most `backoff_max`.
  /// A `Retry-After: N` header (seconds) on a 429 or 503 is waited instead when longer.
  std::chrono::milliseconds backoff_initial{500};
  std::chrono::milliseconds backoff_max{30'000};
  /// Most requests started per second across all threads (token bucket of one second's
  /// burst); 0 = no limit.
  double requests_per_second = 0;
  /// Ask for gzip-compressed replies (about 3x fewer bytes for embeddings as JSON text; worth it
  /// over a network, not on localhost). Only gzip: brotli costs a server far more time.
  bool accept_gzip = true;
};

/// One reply.
struct http_response {
  long status = 0;                ///< HTTP status (0 when no reply arrived)
  std::string body;               ///< reply body
  long retry_after_seconds = -1;  ///< `Retry-After` header in seconds (-1 = absent)
};

/// Token-bucket rate limiter: `acquire()` blocks until a request may start. Thread-safe.
class rate_limiter {
 public:
  /// @param per_second requests per second (<= 0: no limit); the bucket holds up to
  ///        max(1, per_second) tokens.
  explicit rate_limiter(double per_second = 0) : rate_(per_second) {
    capacity_ = std::max(1.0, rate_);
    tokens_ = capacity_;
    last_ = std::chrono::steady_clock::now();
  }
  /// Waits for one token.
  void acquire() {
    if (rate_ <= 0) return;
    for (;;) {
      std::chrono::duration<double> wait{};
      {
        std::lock_guard lock(mu_);
        const auto now = std::chrono::steady_clock::now();
        tokens_ = std::min(capacity_,
                           tokens_ + std::chrono::duration<double>(now - last_).count() * rate_);
        last_ = now;
        if (tokens_ >= 1.0) {
          tokens_ -= 1.0;
          return;
        }
        wait = std::chrono::duration<double>((1.0 - tokens_) / rate_);
      }
      std::this_thread::sleep_for(wait);
    }
  }

 private:
  double rate_ = 0;
  double capacity_ = 1;
  double tokens_ = 1;
  std::chrono::steady_clock::time_point last_;
  std::mutex mu_;
};

namespace detail::http {

inline void global_init() {
  static const bool ok = [] { return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK; }();
  if (!ok) throw error(error_code::io, "libcurl: curl_global_init failed");
}

inline std::size_t on_body(char* p, std::size_t size, std::size_t n, void* user) {
  static_cast<std::string*>(user)->append(p, size * n);
  return size * n;
}

inline std::size_t on_header(char* p, std::size_t size, std::size_t n, void* user) {
  std::string_view line(p, size * n);
  constexpr std::string_view name = "retry-after:";
  if (line.size() > name.size()) {
    bool match = true;
    for (std::size_t i = 0; i < name.size() && match; ++i)
      match = static_cast<char>(std::tolower(static_cast<unsigned char>(line[i]))) == name[i];
    if (match) {
      long v = 0;
      bool digits = false;
      for (char c : line.substr(name.size())) {
        if (c >= '0' && c <= '9') {
          v = v * 10 + (c - '0');
          digits = true;
          if (v > 86'400) break;
        } else if (digits || (c != ' ' && c != '\t')) {
          break;
        }
      }
      if (digits) *static_cast<long*>(user) = v;
    }
  }
  return size * n;
}

/// The first `n` bytes of a reply for an error message, control characters replaced and any
/// secret masked (a server may echo the request, which holds user text, in its error message).
inline std::string excerpt(std::string_view s, std::size_t n = 200) {
  std::string out = mask_secrets(s.substr(0, std::min(s.size(), n * 4)));
  if (out.size() > n) out.resize(n);
  for (auto& c : out)
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  if (s.size() > n) out += "...";
  return out;
}

}  // namespace detail::http

/// JSON-over-HTTP client with retries and a rate limit (see the file comment).
class http_client {
 public:
  /// Counters since construction (all attempts, including retries).
  struct counters {
    std::uint64_t requests = 0;  ///< attempts sent
    std::uint64_t retries = 0;   ///< attempts that were retries
    std::uint64_t failures = 0;  ///< calls that ended in an error
  };

  /// @throws error(io) when libcurl cannot be initialised.
  explicit http_client(http_options o = {}) : opt_(o), limiter_(o.requests_per_second) {
    detail::http::global_init();
  }

  ~http_client() {
    for (CURL* h : pool_) curl_easy_cleanup(h);
  }
  http_client(const http_client&) = delete;
  http_client& operator=(const http_client&) = delete;

  /// The options in use.
  [[nodiscard]] const http_options& options() const noexcept { return opt_; }

  /// POSTs `body` (JSON) to `url` with the extra `headers` ("Name: value") and returns the
  /// first 2xx reply. `accept(reply)` may reject a 2xx reply as malformed (return a reason;
  /// empty = accepted): it is then retried like a 5xx and, when every attempt is rejected, the
  /// call throws error(parse) with the last reason.
  /// @throws error(io) as the file comment says; error(parse) as above.
  template <class Accept>
  http_response post_json(const std::string& url, const std::string& body,
                          const std::vector<std::string>& headers, Accept&& accept) const {
    std::string last;
    bool last_parse = false;
    for (int attempt = 0; attempt <= opt_.max_retries; ++attempt) {
      if (attempt > 0) ++retries_;
      limiter_.acquire();
      ++requests_;
      http_response r;
      std::string curl_error;
      const CURLcode rc = perform(url, body, headers, r, curl_error);
      long wait_hint = -1;
      if (rc != CURLE_OK) {
        last = url_for_messages(url) + ": " + curl_error;
      } else if (r.status >= 200 && r.status < 300) {
        std::string why = accept(r);
        if (why.empty()) return r;
        last = url_for_messages(url) + ": malformed reply (" + why +
               "): " + detail::http::excerpt(r.body);
        last_parse = true;
      } else {
        last = url_for_messages(url) + ": HTTP " + std::to_string(r.status) + ": " +
               detail::http::excerpt(r.body);
        const bool retryable = r.status == 408 || r.status == 429 || r.status >= 500;
        if (!retryable) {
          ++failures_;
          throw error(error_code::io, "POST " + last);
        }
        wait_hint = r.retry_after_seconds;
        last_parse = false;
      }
      if (rc != CURLE_OK) last_parse = false;
      if (attempt == opt_.max_retries) break;
      auto wait = std::min(opt_.backoff_max,
                           opt_.backoff_initial * (std::int64_t{1} << std::min(attempt, 20)));
      if (wait_hint >= 0)
        wait =
            std::max(wait, std::min(opt_.backoff_max, std::chrono::milliseconds{wait_hint * 1000}));
      std::this_thread::sleep_for(wait);
    }
    ++failures_;
    throw error(last_parse ? error_code::parse : error_code::io,
                "POST " + last + " (after " + std::to_string(opt_.max_retries + 1) + " attempts)");
  }

  /// `post_json` accepting every 2xx reply.
  http_response post_json(const std::string& url, const std::string& body,
                          const std::vector<std::string>& headers = {}) const {
    return post_json(url, body, headers, [](const http_response&) { return std::string(); });
  }

  /// Counters since construction.
  [[nodiscard]] counters stats() const noexcept {
    return {requests_.load(), retries_.load(), failures_.load()};
  }

 private:
  CURLcode perform(const std::string& url, const std::string& body,
                   const std::vector<std::string>& headers, http_response& r,
                   std::string& curl_error) const {
    CURL* h = take_handle();
    if (!h) {
      curl_error = "curl_easy_init failed";
      return CURLE_FAILED_INIT;
    }
    curl_slist* list = curl_slist_append(nullptr, "Content-Type: application/json");
    // no "Expect: 100-continue" round trip before bodies over 1 KiB (servers that do not answer
    // it cost a second per request)
    list = curl_slist_append(list, "Expect:");
    for (const auto& x : headers) list = curl_slist_append(list, x.c_str());
    char err[CURL_ERROR_SIZE] = {};
    curl_easy_setopt(h, CURLOPT_URL, url.c_str());
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, list);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(opt_.timeout.count()));
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(opt_.connect_timeout.count()));
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);  // threads: no SIGALRM for timeouts
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, &detail::http::on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &r.body);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, &detail::http::on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, &r.retry_after_seconds);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, err);
    if (opt_.accept_gzip) curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "gzip");
    const CURLcode rc = curl_easy_perform(h);
    if (rc == CURLE_OK) {
      curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r.status);
    } else {
      curl_error = err[0] ? std::string(err) : std::string(curl_easy_strerror(rc));
    }
    curl_slist_free_all(list);
    give_handle(h);
    return rc;
  }

  // Handles are kept for reuse, so their connections stay open between requests (keep-alive).
  CURL* take_handle() const {
    {
      std::lock_guard lock(pool_mu_);
      if (!pool_.empty()) {
        CURL* h = pool_.back();
        pool_.pop_back();
        curl_easy_reset(h);  // options back to defaults; the connection cache stays
        return h;
      }
    }
    return curl_easy_init();
  }
  void give_handle(CURL* h) const {
    std::lock_guard lock(pool_mu_);
    pool_.push_back(h);
  }

  http_options opt_;
  mutable rate_limiter limiter_;
  mutable std::mutex pool_mu_;
  mutable std::vector<CURL*> pool_;
  mutable std::atomic<std::uint64_t> requests_{0}, retries_{0}, failures_{0};
};

/// The API key from environment variable `name` ("" when `name` is empty or the variable is
/// unset), as an `Authorization: Bearer` header list (empty when there is no key).
inline std::vector<std::string> bearer_headers(const std::string& name) {
  std::vector<std::string> h;
  if (name.empty()) return h;
  const char* v = std::getenv(name.c_str());
  if (v && *v) h.push_back(std::string("Authorization: Bearer ") + v);
  return h;
}

/// The endpoint URL for `path` ("embeddings", "chat/completions") under an OpenAI-style API base:
/// a base already ending in "/" + path is used as is; one ending in "/v1" gets "/" + path; any
/// other gets "/v1/" + path ("http://localhost:11434" -> ".../v1/embeddings"). A query string or
/// fragment of the base stays at the end ("http://h/v1?k=x" -> "http://h/v1/embeddings?k=x").
inline std::string openai_endpoint(std::string base, std::string_view path) {
  std::string query;  // "?..." / "#...": kept after the path, not before it
  if (const std::size_t q = base.find_first_of("?#"); q != std::string::npos) {
    query = base.substr(q);
    base.resize(q);
  }
  while (!base.empty() && base.back() == '/') base.pop_back();
  const std::string tail = "/" + std::string(path);
  if (base.size() >= tail.size() && base.compare(base.size() - tail.size(), tail.size(), tail) == 0)
    return base + query;
  if (base.size() >= 3 && base.compare(base.size() - 3, 3, "/v1") == 0) return base + tail + query;
  return base + "/v1" + tail + query;
}

}  // namespace memhealth
