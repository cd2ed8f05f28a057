#pragma once
/// @file flat_index.hpp
/// A reference index policy (repair/index_policy.hpp) over a simple file-backed flat index: exact,
/// brute-force cosine search over every vector, kept in one JSONL file. It is what the tool's
/// `--index flat:PATH` runs (`memhealth index build|check`, `memhealth apply --index`), and a
/// template for a host's own policy over FAISS, hnswlib, pgvector or a vector database.
///
/// ## File format (JSONL, UTF-8)
/// Line 1, the header: `{"memhealth_flat_index":1,"dimension":D,"embedding_version":"V"}` (keys
/// in any order; `save` writes them sorted);
/// then one line per entry, sorted by id: `{"id":"m1","vector":[0.6,0.8]}` (every vector of
/// length D; floats written as the shortest decimal of their double value, so they read back to
/// the same bits). An empty index has the header only (D may be 0).
///
/// Reading throws `memhealth::error`: `io` for a file that cannot be read, `parse` (naming the
/// line) for a bad header, a line that is not JSON, an entry without an id or vector, a vector of
/// another length than D, a non-number, or an id given twice. Writing is atomic (`atomic_write`:
/// the old file or the complete new one, never a torn one).
///
/// Not thread-safe; one writer at a time (the tool's commands are short-lived).

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "memhealth/config.hpp"
#include "memhealth/io/atomic_write.hpp"
#include "memhealth/repair/index_policy.hpp"
#include "memhealth/store/store.hpp"

namespace memhealth::examples {

/// A flat (exact) vector index: entries by id, one dimension and one model version.
class flat_index {
 public:
  /// An empty index (dimension 0, no version).
  flat_index() = default;
  /// An empty index of this dimension and model version.
  flat_index(std::size_t dimension, std::string embedding_version)
      : dim_(dimension), version_(std::move(embedding_version)) {}

  /// Reads an index file (see the file comment for the format and the errors it throws).
  static flat_index load(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::error_code ec;
    if (!in || std::filesystem::is_directory(path, ec))
      throw error(error_code::io, path.string() +
                                      ": cannot read the flat index (memhealth index build "
                                      "STORE --index flat:PATH makes one)");
    flat_index ix;
    std::string line;
    std::size_t n = 0;
    bool header = false;
    auto bad = [&](const std::string& why) {
      return error(error_code::parse, path.string() + ":" + std::to_string(n) + ": " + why);
    };
    while (std::getline(in, line)) {
      ++n;
      if (line.empty()) continue;
      nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_discarded() || !j.is_object()) throw bad("not a JSON object");
      if (!header) {
        const auto f = j.find("memhealth_flat_index");
        const auto d = j.find("dimension");
        const auto v = j.find("embedding_version");
        if (f == j.end() || *f != 1 || d == j.end() || !d->is_number_unsigned() ||
            (v != j.end() && !v->is_string()))
          throw bad(
              "not a flat index header {\"memhealth_flat_index\":1,\"dimension\":D,"
              "\"embedding_version\":\"V\"}");
        ix.dim_ = d->get<std::size_t>();
        if (v != j.end()) ix.version_ = v->get<std::string>();
        header = true;
        continue;
      }
      const auto id = j.find("id");
      const auto vec = j.find("vector");
      if (id == j.end() || !id->is_string() || id->get<std::string>().empty() || vec == j.end() ||
          !vec->is_array())
        throw bad("an entry needs a non-empty \"id\" and a \"vector\" array");
      if (vec->size() != ix.dim_)
        throw bad("vector of length " + std::to_string(vec->size()) +
                  ", the index's dimension is " + std::to_string(ix.dim_));
      std::vector<float> v;
      v.reserve(vec->size());
      for (const auto& x : *vec) {
        if (!x.is_number()) throw bad("a vector element is not a number");
        v.push_back(static_cast<float>(x.get<double>()));
      }
      if (!ix.entries_.emplace(id->get<std::string>(), std::move(v)).second)
        throw bad("id '" + id->get<std::string>() + "' given twice");
    }
    if (!header) throw bad("empty file: no flat index header");
    return ix;
  }

  /// Writes the index to `path` atomically. @throws memhealth::error(io) as `atomic_write`.
  void save(const std::filesystem::path& path) const {
    nlohmann::json h;
    h["memhealth_flat_index"] = 1;
    h["dimension"] = dim_;
    h["embedding_version"] = version_;
    std::string out = h.dump() + "\n";
    for (const auto& [id, v] : entries_) {
      out += "{\"id\":" + nlohmann::json(id).dump() + ",\"vector\":[";
      char buf[40];
      for (std::size_t k = 0; k < v.size(); ++k) {
        const auto r = std::to_chars(buf, buf + sizeof buf, static_cast<double>(v[k]));
        if (k) out += ',';
        out.append(buf, r.ptr);
      }
      out += "]}\n";
    }
    atomic_write(path, out);
  }

  /// Builds the index a store expects (`expected_index`): every live record with a usable vector
  /// of the store's dimension and model version.
  template <record_store S>
  static flat_index build(const S& store) {
    const index_expectation e = expected_index(store);
    flat_index ix;
    ix.dim_ = e.dimension;
    ix.version_ = e.embedding_version;
    for (const auto& id : e.ids) {
      const auto i = store.find(id);
      const auto v = store.embedding(*i);
      ix.entries_.emplace(id, std::vector<float>(v.begin(), v.end()));
    }
    return ix;
  }

  /// Entries held. @complexity O(1).
  [[nodiscard]] std::size_t size() const noexcept { return entries_.size(); }
  /// Vector length of every entry.
  [[nodiscard]] std::size_t dimension() const noexcept { return dim_; }
  /// Model version the vectors come from ("" = unknown).
  [[nodiscard]] const std::string& embedding_version() const noexcept { return version_; }
  /// True when the index holds `id`. @complexity O(log n).
  [[nodiscard]] bool contains(std::string_view id) const {
    return entries_.find(id) != entries_.end();
  }
  /// The ids held, sorted.
  [[nodiscard]] std::vector<std::string> ids() const {
    std::vector<std::string> out;
    out.reserve(entries_.size());
    for (const auto& [id, v] : entries_) out.push_back(id);
    return out;
  }

  /// Adds or replaces `id`'s vector. @throws memhealth::error(invalid_argument) for an empty id
  /// or a vector whose length is not the index's dimension (an empty index takes any length).
  void upsert(const std::string& id, std::vector<float> v) {
    if (id.empty()) throw error(error_code::invalid_argument, "flat index: empty id");
    if (entries_.empty()) dim_ = v.size();
    if (v.size() != dim_)
      throw error(error_code::invalid_argument,
                  "flat index: vector of length " + std::to_string(v.size()) + " for '" + id +
                      "', the index's dimension is " + std::to_string(dim_));
    entries_[id] = std::move(v);
  }

  /// Removes these ids. @return how many were held (ids not held are ignored).
  std::size_t remove(std::span<const std::string> ids) {
    std::size_t n = 0;
    for (const auto& id : ids) n += entries_.erase(id);
    return n;
  }

  /// The `k` entries most similar to `query` by cosine, best first (ties: smaller id first);
  /// entries with a zero vector are skipped. @throws memhealth::error(invalid_argument) for a
  /// query of another length. @complexity O(n d + n log k).
  [[nodiscard]] std::vector<std::pair<std::string, double>> search(std::span<const float> query,
                                                                   std::size_t k) const {
    if (query.size() != dim_)
      throw error(error_code::invalid_argument, "flat index: query of length " +
                                                    std::to_string(query.size()) + ", expected " +
                                                    std::to_string(dim_));
    const double qn = norm(query);
    std::vector<std::pair<std::string, double>> all;
    if (qn == 0) return all;
    for (const auto& [id, v] : entries_) {
      const double vn = norm(v);
      if (vn == 0) continue;
      double dot = 0;
      for (std::size_t c = 0; c < v.size(); ++c)
        dot += static_cast<double>(v[c]) * static_cast<double>(query[c]);
      all.emplace_back(id, dot / (qn * vn));
    }
    std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) {
      return a.second != b.second ? a.second > b.second : a.first < b.first;
    });
    if (all.size() > k) all.resize(k);
    return all;
  }

  /// Compares the index with what the store expects (`index_expectation`): entries missing,
  /// extra (ghosts), stale (another vector than the store's, by `vector_hash`), and the dimension
  /// and model version (an empty index has no dimension to compare).
  [[nodiscard]] index_check check(const index_expectation& e) const {
    index_check c;
    c.entries = entries_.size();
    c.expected = e.ids.size();
    c.dimension = dim_;
    c.embedding_version = version_;
    auto it = entries_.begin();
    std::size_t k = 0;
    while (it != entries_.end() || k < e.ids.size()) {
      if (k == e.ids.size() || (it != entries_.end() && it->first < e.ids[k])) {
        ++c.extra, ++it;
      } else if (it == entries_.end() || e.ids[k] < it->first) {
        ++c.missing, ++k;
      } else {
        if (vector_hash(it->second) != e.vector_hashes[k]) ++c.stale;
        ++it, ++k;
      }
    }
    if (!entries_.empty() && dim_ != e.dimension)
      c.problems.push_back("dimension " + std::to_string(dim_) + ", the store's is " +
                           std::to_string(e.dimension));
    if (version_ != e.embedding_version)
      c.problems.push_back("model version '" + version_ + "', the store's is '" +
                           e.embedding_version + "'");
    if (c.missing)
      c.problems.push_back(std::to_string(c.missing) + " live records not in the index");
    if (c.extra)
      c.problems.push_back(std::to_string(c.extra) + " ids without a live record (ghosts)");
    if (c.stale) c.problems.push_back(std::to_string(c.stale) + " vectors differ from the store's");
    c.consistent = c.problems.empty();
    return c;
  }

  /// The ids behind `check(e)`'s counts, each list sorted and cut at `limit` ids (so a report
  /// can name them): expected ids the index lacks, ids it holds that the store has no live
  /// record for (ghosts), and ids whose indexed vector differs from the store's (`vector_hash`).
  struct problem_ids {
    std::vector<std::string> missing;  ///< live records not in the index
    std::vector<std::string> extra;    ///< index ids without a live record
    std::vector<std::string> stale;    ///< ids whose vector differs from the store's
  };
  /// See `problem_ids`. @complexity O(n + m) for n entries and m expected ids.
  [[nodiscard]] problem_ids ids_of_problems(const index_expectation& e,
                                            std::size_t limit = 10) const {
    problem_ids out;
    const auto note = [limit](std::vector<std::string>& to, const std::string& id) {
      if (to.size() < limit) to.push_back(id);
    };
    auto it = entries_.begin();
    std::size_t k = 0;
    while (it != entries_.end() || k < e.ids.size()) {
      if (k == e.ids.size() || (it != entries_.end() && it->first < e.ids[k])) {
        note(out.extra, it->first);
        ++it;
      } else if (it == entries_.end() || e.ids[k] < it->first) {
        note(out.missing, e.ids[k]);
        ++k;
      } else {
        if (vector_hash(it->second) != e.vector_hashes[k]) note(out.stale, it->first);
        ++it, ++k;
      }
    }
    return out;
  }

 private:
  static double norm(std::span<const float> v) {
    double s = 0;
    for (float x : v) s += static_cast<double>(x) * static_cast<double>(x);
    return std::sqrt(s);
  }

  std::size_t dim_ = 0;
  std::string version_;
  std::map<std::string, std::vector<float>, std::less<>> entries_;
};

/// The index policy (repair/index_policy.hpp) of a flat index file over a store: every operation
/// reads the file, changes it and writes it back atomically. It satisfies `index_policy`,
/// `partial_index_policy`, `cleanable_index_policy` and `checkable_index_policy`. The store is
/// held by reference (it must outlive the policy) and read at each call, so during `apply_plan`
/// the policy sees the records as the run has changed them.
template <record_store S>
class flat_index_policy {
 public:
  /// @param path the index file (it need not exist for `rebuild()`). @param store the store the
  /// index serves.
  flat_index_policy(std::filesystem::path path, const S& store)
      : path_(std::move(path)), store_(store) {}

  /// Rebuilds the whole file from the store (`flat_index::build`). @throws error(io) on write.
  void rebuild() { flat_index::build(store_).save(path_); }

  /// Re-indexes these ids: each takes its record's vector when the store expects it in the index
  /// and is removed otherwise. When the store's dimension or model version is no longer the
  /// file's, the whole index is rebuilt instead (one index never mixes two vector spaces).
  /// @throws what `flat_index::load` / `save` throw.
  void rebuild(std::span<const std::string> ids) {
    flat_index ix = flat_index::load(path_);
    const index_expectation e = expected_index(store_);
    if (ix.dimension() != e.dimension || ix.embedding_version() != e.embedding_version)
      return rebuild();
    for (const auto& id : ids) {
      const auto at = std::lower_bound(e.ids.begin(), e.ids.end(), id);
      if (at != e.ids.end() && *at == id) {
        const auto v = store_.embedding(*store_.find(id));
        ix.upsert(id, std::vector<float>(v.begin(), v.end()));
      } else {
        const std::string one[1] = {id};
        ix.remove(one);
      }
    }
    ix.save(path_);
  }

  /// Removes these ids from the file. @return entries removed. @throws what load/save throw.
  std::size_t remove(std::span<const std::string> ids) {
    flat_index ix = flat_index::load(path_);
    const std::size_t n = ix.remove(ids);
    if (n) ix.save(path_);
    return n;
  }

  /// `flat_index::check` of the file against `expected`. @throws what `flat_index::load` throws.
  index_check check(const index_expectation& expected) {
    return flat_index::load(path_).check(expected);
  }

  /// The index file.
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }

 private:
  std::filesystem::path path_;
  const S& store_;
};

}  // namespace memhealth::examples
