// _memhealth: the compiled part of the Python module `memhealth` (python/memhealth/ wraps it).
// It exposes the library, not the tool: every function below calls the library function the
// tool's subcommand calls (tools/memhealth/*.cpp), on a `py_store` (py_store.hpp) whose embeddings
// may be a NumPy array read in place. C++ work runs with the GIL released; Python callbacks (an
// embedder, a conflict judge) take it back only while they run, and an exception they raise is
// re-raised to the caller as itself.
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <utility>
#include <vector>

#include "memhealth/drift/drift_json.hpp"
#include "memhealth/io/import_mem0.hpp"
#include "memhealth/live/write_gate.hpp"
#include "memhealth/memhealth.hpp"
#include "memhealth/monitor/monitor_json.hpp"

#include "py_json.hpp"
#include "py_store.hpp"
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

namespace py = pybind11;
using namespace memhealth;
using memhealth::python::py_store;

namespace {

// ------------------------------------------------------------------ errors

// memhealth.Error and one subclass per error_code (config.hpp), created at import.
std::map<int, py::object>& error_classes() {
  static auto* m = new std::map<int, py::object>();  // never destroyed: lives as long as Python
  return *m;
}

// The first Python exception a callback raised during one library call. The callback stores it
// and throws `callback_failed` to unwind the C++ side; the binding re-raises the stored exception
// once the call is over (whether the library let `callback_failed` through or handled it).
struct callback_failed : memhealth::error {
  callback_failed() : error(error_code::invalid_argument, "a Python callback raised") {}
};

struct callback_errors {
  std::mutex m;
  std::optional<py::error_already_set> first;  // written with the GIL held
  void keep(py::error_already_set&& e) {
    std::lock_guard lock(m);
    if (!first) first.emplace(std::move(e));
  }
  // With the GIL held: raises the stored exception, if any.
  void rethrow() {
    std::optional<py::error_already_set> e;
    {
      std::lock_guard lock(m);
      e.swap(first);
    }
    if (e) throw std::move(*e);
  }
};

// Runs f with the GIL released; a Python exception a callback stored is raised afterwards (also
// when f threw because of it).
template <class F>
auto without_gil(callback_errors& cb, F&& f) {
  try {
    py::gil_scoped_release release;
    return f();
  } catch (const callback_failed&) {
    cb.rethrow();
    throw;
  } catch (...) {
    cb.rethrow();  // the callback's exception explains whatever the library made of it
    throw;
  }
}

// ------------------------------------------------------------------ records

std::string py_str(const py::handle& h) {
  return h.cast<std::string>();
}

// A float32 n x d array read in place when it is C-contiguous float32, else copied once (with a
// Python warning). @throws ValueError for another number of dimensions.
py::array_t<float, py::array::c_style> as_rows(const py::object& obj, const char* what) {
  auto np = py::module_::import("numpy");
  py::array a = py::reinterpret_borrow<py::array>(np.attr("asarray")(obj));
  if (a.ndim() != 2)
    throw py::value_error(std::string(what) + ": expected a 2-dimensional n x d array, got " +
                          std::to_string(a.ndim()) + " dimensions");
  const bool f32 = a.dtype().is(py::dtype::of<float>());
  const bool contiguous = (a.flags() & py::array::c_style) != 0;
  if (f32 && contiguous) return py::reinterpret_borrow<py::array_t<float, py::array::c_style>>(a);
  auto warnings = py::module_::import("warnings");
  warnings.attr("warn")(std::string(what) + ": " +
                            (f32 ? "not C-contiguous" : "dtype " + py_str(py::str(a.dtype()))) +
                            "; copied once into a C-contiguous float32 array (pass "
                            "np.ascontiguousarray(x, dtype=np.float32) to avoid the copy)",
                        py::module_::import("builtins").attr("RuntimeWarning"), 2);
  return py::array_t<float, py::array::c_style>::ensure(
      np.attr("ascontiguousarray")(a, py::arg("dtype") = np.attr("float32")));
}

// One issue as a dict (io/load_issue.hpp).
py::dict issue_dict(const load_issue& i) {
  py::dict d;
  d["file"] = i.file;
  d["line"] = i.line;
  d["field"] = i.field;
  d["reason"] = i.reason;
  d["record_kept"] = i.record_kept;
  return d;
}

// The Python `Records`: the store, the array it borrows (kept alive), the load issues.
struct records_handle {
  // Readers (check, plan, monitor, ...) share it, repairs (apply, rollback, recover) hold it
  // alone: two Python threads may use one Records at once.
  mutable std::shared_mutex mu;
  py_store store;
  py::object keeper;  // the NumPy array whose buffer the store reads (None when it owns its block)
  std::vector<load_issue> issues;
};

// A read lock, taken with the GIL released (a repair in another thread may be waiting for it).
std::shared_lock<std::shared_mutex> read_lock(const records_handle& h) {
  return std::shared_lock<std::shared_mutex>(h.mu);
}

// A read lock for a quick accessor that holds the GIL: never waits (a repair's Python callback
// needs the GIL). @throws error(busy) while a repair runs in another thread.
std::shared_lock<std::shared_mutex> try_read(const records_handle& h) {
  std::shared_lock<std::shared_mutex> l(h.mu, std::try_to_lock);
  if (!l.owns_lock())
    throw error(error_code::busy,
                "these records are being repaired in another thread; try again when it is done");
  return l;
}

// A Python embedder: an object with `dimension` (int), `version` (str) and `embed(texts)` ->
// n x d float32-convertible array. Satisfies the library's `embedder` concept (embed/embedder.hpp)
// and its batch form; the GIL is taken only inside the calls.
struct py_embedder {
  py::object obj;
  std::size_t d = 0;
  std::string ver;
  callback_errors* cb = nullptr;

  [[nodiscard]] std::size_t dimension() const noexcept { return d; }
  [[nodiscard]] std::string_view version() const noexcept { return ver; }
  void embed(std::string_view text, std::span<float> out) const {
    const std::string_view one[] = {text};
    embed_batch(std::span<const std::string_view>(one), out);
  }
  void embed_batch(std::span<const std::string_view> texts, std::span<float> out) const {
    if (out.size() != texts.size() * d)
      throw error(error_code::invalid_argument, "embed: output span has the wrong size");
    py::gil_scoped_acquire gil;
    try {
      py::list l;
      for (auto t : texts) l.append(py::str(t.data(), t.size()));
      py::object res = obj.attr("embed")(l);
      auto a = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(res);
      if (!a || a.ndim() != 2 || static_cast<std::size_t>(a.shape(0)) != texts.size() ||
          static_cast<std::size_t>(a.shape(1)) != d)
        throw py::value_error("embedder.embed(texts) must return a len(texts) x " +
                              std::to_string(d) + " array of numbers");
      std::copy(a.data(), a.data() + out.size(), out.begin());
    } catch (py::error_already_set& e) {
      cb->keep(std::move(e));
      throw callback_failed();
    } catch (const py::builtin_exception& e) {
      e.set_error();
      cb->keep(py::error_already_set());
      throw callback_failed();
    }
  }
};

py_embedder make_embedder(const py::object& obj, callback_errors& cb) {
  py_embedder e;
  e.obj = obj;
  e.d = obj.attr("dimension").cast<std::size_t>();
  e.ver = py_str(obj.attr("version"));
  e.cb = &cb;
  if (e.d == 0) throw py::value_error("embedder.dimension must be positive");
  return e;
}

// A Python conflict judge: `judge(a, b, rules)` with the two texts and the rules' verdict as a
// dict {conflict, needs_human, reason}; returns None (no answer: the rules stand), a bool
// (conflict or not) or such a dict. A `model_judge` (detect/conflict_judge.hpp).
struct py_judge : model_judge {
  py::object fn;
  bool all = false;
  callback_errors* cb = nullptr;
  ~py_judge() override {
    py::gil_scoped_acquire gil;
    fn = py::object();
  }
  [[nodiscard]] std::optional<conflict_verdict> judge(
      std::string_view a, std::string_view b, const conflict_verdict& rules) const override {
    py::gil_scoped_acquire gil;
    try {
      py::dict r;
      r["conflict"] = rules.conflict;
      r["needs_human"] = rules.needs_human;
      r["reason"] = rules.reason;
      py::object res = fn(py::str(a.data(), a.size()), py::str(b.data(), b.size()), r);
      if (res.is_none()) return std::nullopt;
      conflict_verdict v;
      if (py::isinstance<py::bool_>(res)) {
        v.conflict = res.cast<bool>();
        v.reason = v.conflict ? "python_judge_conflict" : "python_judge_compatible";
        return v;
      }
      if (!py::isinstance<py::dict>(res))
        throw py::type_error(
            "judge(a, b, rules) must return None, a bool or a dict with 'conflict'");
      auto d = py::reinterpret_borrow<py::dict>(res);
      v.conflict = d.contains("conflict") && py::bool_(d["conflict"]);
      v.needs_human = d.contains("needs_human") && py::bool_(d["needs_human"]);
      v.reason = d.contains("reason") ? py_str(d["reason"]) : std::string("python_judge");
      return v;
    } catch (py::error_already_set& e) {
      cb->keep(std::move(e));
      throw callback_failed();
    } catch (const py::builtin_exception& e) {
      e.set_error();
      cb->keep(py::error_already_set());
      throw callback_failed();
    }
  }
  [[nodiscard]] bool ask_all() const override { return all; }
};

// Records from JSONL text (the io/ layer's format; python/memhealth builds it from dicts).
std::shared_ptr<records_handle> records_from_text(const std::string& text, py::object embeddings,
                                                  std::size_t dimension, py::object embedder) {
  auto h = std::make_shared<records_handle>();
  callback_errors cb;
  std::optional<py_embedder> emb;
  if (!embedder.is_none()) emb = make_embedder(embedder, cb);
  if (embeddings.is_none()) {
    h->store = without_gil(cb, [&] {
      auto lr = parse_jsonl(text, "<records>");
      h->issues = std::move(lr.issues);
      if (emb) embed_missing(lr.records, *emb);
      return py_store::owning(std::move(lr.records), dimension);
    });
    h->keeper = py::none();
    return h;
  }
  auto a = as_rows(embeddings, "embeddings");
  const float* data = a.data();
  const auto n = static_cast<std::size_t>(a.shape(0));
  const auto d = static_cast<std::size_t>(a.shape(1));
  h->store = without_gil(cb, [&] {
    auto lr = parse_jsonl(text, "<records>");
    h->issues = std::move(lr.issues);
    if (lr.records.size() != n)
      throw error(error_code::invalid_argument,
                  "embeddings has " + std::to_string(n) + " rows for " +
                      std::to_string(lr.records.size()) + " records (one row per record)");
    return py_store::borrowing(std::move(lr.records), data, d);
  });
  h->keeper = std::move(a);
  return h;
}

// Records from Python dicts: written as JSONL in C++ (py_json.hpp), then read as above.
std::shared_ptr<records_handle> records_from_dicts(const py::iterable& records,
                                                   py::object embeddings, std::size_t dimension,
                                                   py::object embedder, py::object fallback) {
  memhealth::python::json_writer w(std::move(fallback));
  std::string text;
  if (PyList_Check(records.ptr()))
    text.reserve(static_cast<std::size_t>(PyList_GET_SIZE(records.ptr())) * 256);
  for (py::handle r : records) {
    if (PyDict_Check(r.ptr())) {
      w.write(r.ptr(), text);
    } else if (py::isinstance(r, py::module_::import("collections.abc").attr("Mapping"))) {
      py::dict d(py::reinterpret_borrow<py::object>(r));
      w.write(d.ptr(), text);
    } else {
      throw py::type_error("memhealth: a record must be a dict, got " +
                           py::str(py::type::handle_of(r).attr("__name__")).cast<std::string>());
    }
    text += '\n';
  }
  return records_from_text(text, std::move(embeddings), dimension, std::move(embedder));
}

// Records from a mem0 export (`Memory.get_all()` as JSON), through the library's importer
// (io/import_mem0.hpp: ids, memory -> content, user/agent/run -> scope, hash -> metadata).
std::shared_ptr<records_handle> records_from_mem0(const std::string& text, py::object embeddings,
                                                  py::object embedder) {
  auto h = std::make_shared<records_handle>();
  callback_errors cb;
  std::optional<py_embedder> emb;
  if (!embedder.is_none()) emb = make_embedder(embedder, cb);
  std::optional<py::array_t<float, py::array::c_style>> a;
  if (!embeddings.is_none()) a = as_rows(embeddings, "embeddings");
  const float* data = a ? a->data() : nullptr;
  const std::size_t n = a ? static_cast<std::size_t>(a->shape(0)) : 0;
  const std::size_t d = a ? static_cast<std::size_t>(a->shape(1)) : 0;
  h->store = without_gil(cb, [&] {
    auto lr = import_mem0_text(text, "<mem0>");
    h->issues = std::move(lr.issues);
    if (!data) {
      if (emb) embed_missing(lr.records, *emb);
      return py_store::owning(std::move(lr.records));
    }
    if (lr.records.size() != n)
      throw error(error_code::invalid_argument,
                  "embeddings has " + std::to_string(n) + " rows for " +
                      std::to_string(lr.records.size()) + " memories (one row per memory)");
    return py_store::borrowing(std::move(lr.records), data, d);
  });
  if (a)
    h->keeper = std::move(*a);
  else
    h->keeper = py::none();
  return h;
}

std::shared_ptr<records_handle> records_from_file(const std::string& path, std::size_t dimension) {
  auto h = std::make_shared<records_handle>();
  callback_errors cb;
  h->store = without_gil(cb, [&] {
    auto lr = read_jsonl(path);
    h->issues = std::move(lr.issues);
    return py_store::owning(std::move(lr.records), dimension);
  });
  h->keeper = py::none();
  return h;
}

// Every record as canonical JSONL (record_codec.hpp), embeddings included.
std::string records_jsonl(const records_handle& h) {
  std::string out;
  py::gil_scoped_release release;
  const auto lock = read_lock(h);
  for (std::size_t i = 0; i < h.store.size(); ++i) {
    const memory_record r = h.store.extract(i);
    append_json(r, out);
    out += '\n';
  }
  return out;
}

// ------------------------------------------------------------------ settings

std::optional<utc_time> time_of(const py::handle& v, const char* what) {
  if (v.is_none()) return std::nullopt;
  std::string text;
  if (py::isinstance<py::str>(v))
    text = py_str(v);
  else if (py::hasattr(v, "isoformat"))
    text = py_str(v.attr("isoformat")());
  else
    throw py::type_error(std::string(what) + ": expected an ISO-8601 string or a datetime");
  const auto t = parse_timestamp(text);
  if (!t) throw py::value_error(std::string(what) + ": not an ISO-8601 time: " + text);
  return t->instant;
}

std::chrono::milliseconds duration_of(const py::handle& v, const char* what) {
  double seconds = 0;
  if (py::hasattr(v, "total_seconds"))
    seconds = v.attr("total_seconds")().cast<double>();
  else
    seconds = v.cast<double>();
  if (!(seconds >= 0)) throw py::value_error(std::string(what) + ": must be >= 0 seconds");
  return std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000.0));
}

// The keyword settings of check/plan (`memhealth.check.__doc__` lists them) -> the library's.
struct check_config {
  default_check_settings settings;
  detect_options d;
  std::shared_ptr<py_judge> judge;
};

check_config check_settings(const py::dict& kw, callback_errors& cb) {
  check_config c;
  auto& s = c.settings;
  for (auto item : kw) {
    const std::string k = py_str(item.first);
    const py::handle v = item.second;
    if (k == "near_duplicate_threshold")
      s.near_duplicate_threshold = v.cast<float>();
    else if (k == "near_duplicate_window")
      s.near_duplicate_window =
          v.is_none() ? std::nullopt
                      : std::optional<std::chrono::milliseconds>(duration_of(v, k.c_str()));
    else if (k == "conflict_candidate_threshold")
      s.conflict_candidate_threshold = v.cast<float>();
    else if (k == "expect_unit_norm")
      s.expect_unit_norm = v.cast<bool>();
    else if (k == "stale_threshold")
      s.stale_threshold = v.cast<double>();
    else if (k == "max_pairs_per_scope")
      s.max_pairs_per_scope = v.cast<std::size_t>();
    else if (k == "block_scopes_above")
      s.block_scopes_above = v.cast<std::size_t>();
    else if (k == "threads")
      s.threads = v.cast<unsigned>();
    else if (k == "duplicate_guards")
      s.duplicate_guards = v.cast<bool>();
    else if (k == "schema") {
      if (!v.is_none()) s.schema = load_schema_json(py_str(v));
    } else if (k == "now") {
      if (auto t = time_of(v, "now")) c.d.now = *t;
    } else if (k == "dimension")
      c.d.dimension = v.cast<std::size_t>();
    else if (k == "judge" || k == "judge_all") {
      // handled below
    } else if (k == "hygiene_off") {
      for (auto item_name : v) {
        const std::string name = py_str(item_name);
        if (name == "secrets")
          s.secrets.enabled = false;
        else if (name == "mojibake")
          s.mojibake.enabled = false;
        else if (name == "content_size")
          s.content_size.enabled = false;
        else if (name == "content_time")
          s.content_time.enabled = false;
        else
          throw py::value_error("hygiene_off: unknown check '" + name +
                                "' (known: secrets, mojibake, content_size, content_time)");
      }
    } else
      throw py::type_error("unknown setting '" + k + "'");
  }
  if (!(s.near_duplicate_threshold >= -1.0f && s.near_duplicate_threshold <= 1.0f))
    throw py::value_error("near_duplicate_threshold must be a cosine in [-1, 1]");
  if (kw.contains("judge") && !py::reinterpret_borrow<py::object>(kw["judge"]).is_none()) {
    c.judge = std::make_shared<py_judge>();
    c.judge->fn = kw["judge"];
    c.judge->all = kw.contains("judge_all") && py::bool_(kw["judge_all"]);
    c.judge->cb = &cb;
    s.conflict_model = c.judge;
  }
  return c;
}

// ------------------------------------------------------------------ check

struct check_handle {
  report r;
  detect_options d;
  std::string json;  // check_report_json, indented as the tool writes it
};

std::shared_ptr<check_handle> run_check(const records_handle& h, const py::dict& kw) {
  callback_errors cb;
  auto c = check_settings(kw, cb);
  auto out = std::make_shared<check_handle>();
  without_gil(cb, [&] {
    const auto lock = read_lock(h);
    if (c.d.dimension == 0) c.d.dimension = h.store.dimension();
    out->r = make_default_pipeline(c.settings).run(h.store, c.d);
    out->d = c.d;
    out->json = check_report_json(out->r, "<python>", c.d, h.issues).dump(2);
    return 0;
  });
  return out;
}

// ------------------------------------------------------------------ plan, apply, rollback

struct plan_handle {
  repair_plan plan;
};

std::shared_ptr<plan_handle> run_plan(const records_handle& h, const check_handle& chk,
                                      std::size_t max_records, std::size_t blast_radius,
                                      const py::dict& defaults) {
  planner_options po;
  po.max_records_per_run = max_records;
  po.blast_radius_threshold = blast_radius;
  for (auto kv : defaults) po.metadata_defaults[py_str(kv.first)] = py_str(kv.second);
  auto out = std::make_shared<plan_handle>();
  py::gil_scoped_release release;
  const auto lock = read_lock(h);
  out->plan = make_plan(h.store, chk.r, po);
  return out;
}

py::dict outcome_dict(const apply_result& res) {
  py::dict d;
  d["applied"] = res.applied;
  d["already_applied"] = res.skipped_already_applied;
  d["noop"] = res.skipped_noop;
  d["unapproved"] = res.skipped_unapproved;
  d["deferred"] = res.deferred;
  d["failed"] = res.failed;
  d["records_changed"] = res.records_changed;
  d["dry_run"] = res.dry_run;
  py::list outs;
  for (const auto& o : res.outcomes) {
    py::dict x;
    x["action"] = o.action;
    x["idempotency_key"] = o.idempotency_key;
    x["status"] = std::string(to_string(o.status));
    x["attempts"] = o.attempts;
    x["records_changed"] = o.records_changed;
    x["reason"] = o.reason;
    outs.append(x);
  }
  d["outcomes"] = outs;
  return d;
}

py::dict run_apply(records_handle& h, const plan_handle& p, const std::string& wal,
                   const std::vector<std::string>& approve, std::size_t batch_size,
                   std::size_t max_records, bool dry_run, const py::object& embedder,
                   const std::string& embed_version) {
  apply_options opt;
  for (const auto& x : approve) {
    if (x == "tier2")
      opt.approve_tier2 = true;
    else if (x == "tier3")
      opt.approve_tier2 = opt.approve_tier3 = true;
    else if (x == "suspended")
      opt.approve_suspended = true;
    else
      throw py::value_error("approve: unknown approval '" + x + "' (tier2, tier3, suspended)");
  }
  if (batch_size == 0) throw py::value_error("batch_size must be >= 1");
  opt.batch_size = batch_size;
  opt.max_records = max_records;
  opt.dry_run = dry_run;
  opt.embed_version = embed_version;
  callback_errors cb;
  std::optional<py_embedder> emb;
  if (!embedder.is_none()) {
    emb = make_embedder(embedder, cb);
    if (opt.embed_version.empty()) opt.embed_version = emb->ver;
    opt.embed = [&emb](const memory_record& r) {
      std::vector<float> v(emb->d);
      emb->embed(r.content, v);
      return v;
    };
  }
  const apply_result res = without_gil(cb, [&] {
    std::unique_lock lock(h.mu);
    wal_writer_options wo;
    wo.store = identify_store(h.store, "<python>");
    wal_writer w(wal, wo);
    auto r = apply_plan(h.store, p.plan, w, opt);
    w.sync();
    return r;
  });
  return outcome_dict(res);
}

template <class Result>
void undo_common(py::dict& d, const Result& res) {
  d["records_restored"] = res.records_restored;
  d["complete"] = res.complete();
  d["records_relocated"] = res.records_relocated;
  py::list conflicts;
  for (const auto& c : res.conflicts) {
    py::dict x;
    x["kind"] = std::string(to_string(c.kind));
    x["id"] = c.id;
    x["idempotency_key"] = c.idempotency_key;
    x["reason"] = c.reason;
    x["overwritten"] = c.overwritten;
    conflicts.append(x);
  }
  d["conflicts"] = conflicts;
  d["log_problem"] =
      res.log_problem ? py::object(py::str(res.log_problem->reason)) : py::object(py::none());
}

// The tool's load_wal: a file that is not a log is an error; damage followed by valid frames is
// refused unless `force`.
wal_contents load_log(const std::string& path, bool force) {
  auto log = read_wal_file(path);
  if (log.file_bytes == 0)
    throw error(error_code::parse, path + ": empty file, not a memhealth write-ahead log");
  if (!log.has_header() || (log.problem && log.problem->kind == wal_problem_kind::bad_header))
    throw error(error_code::parse,
                path + ": not a memhealth write-ahead log (no MHWAL1 header frame)");
  if (log.problem && log.problem->valid_frames_follow && !force)
    throw error(error_code::parse, path + ": corrupt frame at byte " +
                                       std::to_string(log.problem->offset) +
                                       " with valid frames after it; pass force=True to use the "
                                       "part before it");
  return log;
}

py::dict run_rollback(records_handle& h, const std::string& wal, bool force) {
  rollback_result res;
  {
    py::gil_scoped_release release;
    const auto log = load_log(wal, force);
    rollback_options ro;
    ro.force = force;
    std::unique_lock lock(h.mu);
    res = rollback(h.store, log, ro);
  }
  py::dict d;
  d["rolled_back"] = res.rolled_back;
  d["already_restored"] = res.already_restored;
  undo_common(d, res);
  return d;
}

py::dict run_recover(records_handle& h, const std::string& wal, const std::string& policy,
                     bool force) {
  if (policy != "undo" && policy != "redo")
    throw py::value_error("policy must be 'undo' or 'redo'");
  recover_result res;
  {
    py::gil_scoped_release release;
    const auto log = load_log(wal, force);
    recover_options ro;
    ro.force = force;
    ro.open_actions = policy == "redo" ? open_action_policy::redo : open_action_policy::undo;
    std::unique_lock lock(h.mu);
    res = recover(h.store, log, ro);
  }
  py::dict d;
  py::list actions;
  for (const auto& a : res.actions) {
    py::dict x;
    x["idempotency_key"] = a.idempotency_key;
    x["status"] = std::string(to_string(a.status));
    actions.append(x);
  }
  d["actions"] = actions;
  undo_common(d, res);
  return d;
}

// ------------------------------------------------------------------ monitor, drift, gate

std::string run_monitor(const records_handle& h, const std::string& events,
                        const std::string& baseline, double window_s, std::size_t top_k,
                        std::size_t min_retrievals, float threshold) {
  monitor_options mo;
  if (!(window_s > 0)) throw py::value_error("window must be positive (seconds)");
  mo.window = std::chrono::milliseconds(static_cast<std::int64_t>(window_s * 1000));
  mo.top_k = top_k;
  mo.min_retrievals = min_retrievals;
  if (!(threshold >= -1.0f && threshold <= 1.0f))
    throw py::value_error("threshold must be in [-1, 1]");
  mo.duplicate_threshold = threshold;
  py::gil_scoped_release release;
  const auto lock = read_lock(h);
  const auto ev = parse_events_jsonl(events, "<events>");
  std::optional<baseline_map> base;
  std::vector<load_issue> issues = ev.issues;
  if (!baseline.empty()) {
    const auto b = parse_events_jsonl(baseline, "<baseline>");
    issues.insert(issues.end(), b.issues.begin(), b.issues.end());
    base = compute_baseline(h.store, std::span(b.retrievals), std::span(b.feedback), mo);
  }
  auto res = monitor_retrievals(h.store, std::span(ev.retrievals), std::span(ev.feedback), mo,
                                base ? &*base : nullptr);
  res.findings.records_checked = ev.retrievals.size() + ev.feedback.size();
  nlohmann::ordered_json j;
  j["summary"] = summary_json(res.findings, issues.size());
  j["windows"] = windows_json(res.windows);
  j["findings"] = findings_json(res.findings);
  j["load_issues"] = load_issues_json(issues);
  return j.dump();
}

using rows_map = Eigen::Map<const row_matrix>;

rows_map map_rows(const py::array_t<float, py::array::c_style>& a) {
  return rows_map(a.data(), static_cast<Eigen::Index>(a.shape(0)),
                  static_cast<Eigen::Index>(a.shape(1)));
}

std::string run_drift(const py::object& a_obj, const py::object& b_obj, double alpha,
                      double noise_cosine) {
  if (!(alpha > 0.0 && alpha < 1.0)) throw py::value_error("alpha must be in (0, 1)");
  if (!(noise_cosine > -1.0 && noise_cosine <= 1.0))
    throw py::value_error("noise_cosine must be in (-1, 1]");
  const auto a = as_rows(a_obj, "reference");
  const auto b = as_rows(b_obj, "current");
  drift_options d;
  d.alpha = alpha;
  d.mmd.noise_cosine = noise_cosine;
  py::gil_scoped_release release;
  const rows_map ra = map_rows(a), rb = map_rows(b);
  const drift_result dr = detect_drift(ra, rb, d);
  report r;
  r.records_total = r.records_checked = static_cast<std::size_t>(ra.rows() + rb.rows());
  r.findings = dr.findings;
  nlohmann::ordered_json j;
  j["reference"] = norm_summary_json(dr.reference);
  j["current"] = norm_summary_json(dr.current);
  j["mmd"] = drift_mmd_json(dr);
  j["centroid_cosine"] = centroid_cosine_json(dr);
  j["summary"] = summary_json(r, 0);
  j["findings"] = findings_json(r);
  return j.dump();
}

std::string run_gate(const py::object& old_obj, const py::object& new_obj,
                     const std::vector<std::string>& ids, std::size_t k, double min_overlap,
                     double min_rank_correlation) {
  if (k == 0) throw py::value_error("k must be positive");
  const auto a = as_rows(old_obj, "old");
  const auto b = as_rows(new_obj, "new");
  gate_options g;
  g.k = k;
  g.min_overlap = min_overlap;
  g.min_rank_correlation = min_rank_correlation;
  py::gil_scoped_release release;
  const gate_result gr = migration_gate(map_rows(a), map_rows(b), g, ids);
  report r;
  r.records_total = r.records_checked = gr.n;
  r.findings = gr.findings;
  nlohmann::ordered_json j;
  j["n"] = gr.n;
  j["k"] = gr.k;
  j["passed"] = gr.passed;
  j["mean_overlap"] = gr.mean_overlap;
  j["min_query_overlap"] = gr.min_query_overlap;
  j["mean_rank_correlation"] = gr.mean_rank_correlation;
  j["overlap"] = gr.overlap;
  j["rank_correlation"] = gr.rank_correlation;
  j["summary"] = summary_json(r, 0);
  j["findings"] = findings_json(r);
  return j.dump();
}

// ------------------------------------------------------------------ the write-time gate

memory_record one_record(const std::string& json_line) {
  auto lr = parse_jsonl(json_line, "<record>");
  if (lr.records.size() != 1)
    throw error(error_code::parse, lr.issues.empty() ? std::string("expected one record")
                                                     : "record: " + lr.issues.front().reason);
  return std::move(lr.records.front());
}

struct gate_handle {
  explicit gate_handle(write_gate_settings s) : gate(std::move(s)) {}
  write_gate<> gate;
};

std::string verdict_json(const gate_verdict& v) {
  report r;
  r.findings = v.findings;
  nlohmann::ordered_json j;
  j["decision"] = std::string(to_string(v.decision));
  j["target_id"] = v.target_id;
  j["superseded_ids"] = v.superseded_ids;
  j["reason"] = v.reason;
  j["findings"] = findings_json(r);
  return j.dump();
}

}  // namespace

PYBIND11_MODULE(_memhealth, m) {
  m.doc() =
      "The compiled part of memhealth (a header-only C++20 library that checks and repairs an AI "
      "agent's long-term memory store). Use the `memhealth` package, which wraps it.";
  m.attr("__version__") = MEMHEALTH_PY_VERSION;
  m.attr("library_version") = memhealth::version;

  // errors: memhealth.Error(code, message) and one subclass per code
  py::object base = py::reinterpret_steal<py::object>(
      PyErr_NewExceptionWithDoc("memhealth.Error",
                                "memhealth's error: `code` is the library's stable error code "
                                "(config.hpp), `code_name` its name.",
                                PyExc_RuntimeError, nullptr));
  m.attr("Error") = base;
  struct sub {
    error_code code;
    const char* name;
    PyObject* also;
  };
  const sub subs[] = {
      {error_code::io, "IoError", PyExc_OSError},
      {error_code::parse, "ParseError", PyExc_ValueError},
      {error_code::precondition, "PreconditionError", nullptr},
      {error_code::not_found, "NotFoundError", PyExc_LookupError},
      {error_code::invalid_argument, "InvalidArgumentError", PyExc_ValueError},
      {error_code::schema, "SchemaError", nullptr},
      {error_code::busy, "BusyError", nullptr},
  };
  for (const auto& s : subs) {
    py::tuple bases = s.also ? py::make_tuple(base, py::handle(s.also)) : py::make_tuple(base);
    const std::string qual = std::string("memhealth.") + s.name;
    py::object cls =
        py::reinterpret_steal<py::object>(PyErr_NewException(qual.c_str(), bases.ptr(), nullptr));
    cls.attr("code") = static_cast<int>(s.code);
    cls.attr("code_name") = to_string(s.code);
    m.attr(s.name) = cls;
    error_classes()[static_cast<int>(s.code)] = cls;
  }
  base.attr("code") = 0;
  base.attr("code_name") = "unknown";
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const memhealth::error& e) {
      auto& m = error_classes();
      const auto it = m.find(static_cast<int>(e.code()));
      if (it == m.end()) throw;
      PyErr_SetString(it->second.ptr(), e.what());
    }
  });

  py::class_<records_handle, std::shared_ptr<records_handle>>(
      m, "_Records", "Records in memory (the store the functions work on); see memhealth.Records.")
      .def("__len__",
           [](const records_handle& h) {
             const auto lock = try_read(h);
             return h.store.size();
           })
      .def_property_readonly("dimension",
                             [](const records_handle& h) { return h.store.dimension(); })
      .def_property_readonly("borrows_embeddings",
                             [](const records_handle& h) { return h.store.borrows(); })
      .def_property_readonly("load_issues",
                             [](const records_handle& h) {
                               py::list l;
                               for (const auto& i : h.issues) l.append(issue_dict(i));
                               return l;
                             })
      .def("ids",
           [](const records_handle& h) {
             const auto lock = try_read(h);
             py::list l;
             for (std::size_t i = 0; i < h.store.size(); ++i) l.append(h.store.record(i).id);
             return l;
           })
      .def("to_jsonl", &records_jsonl)
      .def("record_json",
           [](const records_handle& h, std::size_t i) {
             const auto lock = try_read(h);
             if (i >= h.store.size()) throw py::index_error("record index out of range");
             return to_json(h.store.extract(i));
           })
      .def("_block_address",
           [](const records_handle& h) {
             const auto lock = try_read(h);
             return reinterpret_cast<std::uintptr_t>(h.store.block_data());
           })
      .def("_units_address",
           [](const records_handle& h) {
             // what the detection context reads (detect/pipeline.hpp): its own copy or the block
             const auto lock = try_read(h);
             detection_context<py_store> ctx(h.store);
             const auto u = ctx.unit_embeddings();
             return py::make_tuple(reinterpret_cast<std::uintptr_t>(u.data()),
                                   ctx.units_in_place());
           })
      .def("embeddings", [](const records_handle& h) {
        // a copy: the block may move when a repair writes a vector
        const auto lock = try_read(h);
        const auto& s = h.store;
        return py::array_t<float>(
            {static_cast<py::ssize_t>(s.block_rows()), static_cast<py::ssize_t>(s.dimension())},
            s.block_data());
      });

  m.def("_records_from_jsonl_text", &records_from_text,
        "Records from JSONL text (io/jsonl_read.hpp: never throws on bad data; each problem is a "
        "load issue).",
        py::arg("text"), py::arg("embeddings") = py::none(), py::arg("dimension") = 0,
        py::arg("embedder") = py::none());
  m.def("_records_from_dicts", &records_from_dicts,
        "Records from dicts with the JSONL field names; embeddings: an n x d row-major float32 "
        "array read in place.",
        py::arg("records"), py::arg("embeddings") = py::none(), py::arg("dimension") = 0,
        py::arg("embedder") = py::none(), py::arg("fallback") = py::none());
  m.def("_records_from_mem0", &records_from_mem0,
        "Imports a mem0 export (io/import_mem0.hpp): a JSON array, {\"results\": [...]}, or JSONL.",
        py::arg("text"), py::arg("embeddings") = py::none(), py::arg("embedder") = py::none());
  m.def("_records_from_file", &records_from_file,
        "Reads a JSONL file (io/jsonl_read.hpp). Raises IoError when the file cannot be read.",
        py::arg("path"), py::arg("dimension") = 0);

  py::class_<check_handle, std::shared_ptr<check_handle>>(m, "_CheckResult")
      .def_property_readonly("json", [](const check_handle& c) { return c.json; })
      .def_property_readonly("findings", [](const check_handle& c) { return c.r.findings.size(); });
  m.def(
      "_check", [](const records_handle& h, py::kwargs kw) { return run_check(h, kw); },
      "Runs the default detection pipeline (detect/default_pipeline.hpp); never changes the "
      "records. Settings as memhealth.check.",
      py::arg("records"));

  py::class_<plan_handle, std::shared_ptr<plan_handle>>(m, "_Plan")
      .def("__len__", [](const plan_handle& p) { return p.plan.actions.size(); })
      .def("to_json", [](const plan_handle& p) { return plan_to_json(p.plan).dump(2); })
      .def_property_readonly("suspended", [](const plan_handle& p) { return p.plan.suspended; })
      .def_static("from_json", [](const std::string& text) {
        auto out = std::make_shared<plan_handle>();
        nlohmann::json j;
        try {
          j = nlohmann::json::parse(text);
        } catch (const nlohmann::json::exception& e) {
          throw error(error_code::parse, std::string("plan: not JSON: ") + e.what());
        }
        out->plan = plan_from_json(j);
        return out;
      });
  m.def("_plan", &run_plan,
        "Plans repairs for the findings of a report against the current records "
        "(repair/planner.hpp; read only).",
        py::arg("records"), py::arg("report"), py::arg("max_records"), py::arg("blast_radius"),
        py::arg("metadata_defaults"));
  m.def("_apply", &run_apply,
        "Applies a plan through the write-ahead log (repair/executor.hpp); the records hold "
        "exactly the committed actions.",
        py::arg("records"), py::arg("plan"), py::arg("wal"), py::arg("approve"),
        py::arg("batch_size"), py::arg("max_records"), py::arg("dry_run"), py::arg("embedder"),
        py::arg("embed_version"));
  m.def("_rollback", &run_rollback,
        "Undoes the committed actions of a log (repair/rollback.hpp); changed records are "
        "conflicts, left alone unless force.",
        py::arg("records"), py::arg("wal"), py::arg("force"));
  m.def("_recover", &run_recover,
        "Consistent state after an interrupted apply (repair/rollback.hpp): open actions undone or "
        "redone.",
        py::arg("records"), py::arg("wal"), py::arg("policy"), py::arg("force"));
  m.def("_monitor", &run_monitor,
        "Windowed retrieval metrics and alerts (monitor/retrieval_monitor.hpp), as JSON.",
        py::arg("records"), py::arg("events"), py::arg("baseline"), py::arg("window"),
        py::arg("top_k"), py::arg("min_retrievals"), py::arg("threshold"));
  m.def("_drift", &run_drift,
        "Compares a reference sample (n x d1) with a current one (m x d2), row-major float32 "
        "(drift/drift.hpp), as JSON.",
        py::arg("reference"), py::arg("current"), py::arg("alpha"), py::arg("noise_cosine"));
  m.def("_gate", &run_gate,
        "The migration gate (drift/migration_gate.hpp): row i of both samples is the same text; "
        "overlap@k and Spearman rho.",
        py::arg("old"), py::arg("new"), py::arg("ids"), py::arg("k"), py::arg("min_overlap"),
        py::arg("min_rank_correlation"));

  py::class_<gate_handle, std::shared_ptr<gate_handle>>(m, "_WriteGate")
      .def(py::init([](float near, float conflict, std::size_t max_judged, std::size_t dim) {
             write_gate_settings s;
             s.near_duplicate_threshold = near;
             s.conflict_candidate_threshold = conflict;
             s.max_judged = max_judged;
             s.dimension = dim;
             return std::make_shared<gate_handle>(std::move(s));
           }),
           py::arg("near_duplicate_threshold"), py::arg("conflict_candidate_threshold"),
           py::arg("max_judged"), py::arg("dimension"))
      .def("observe_records",
           [](gate_handle& g, const records_handle& h) {
             py::gil_scoped_release release;
             const auto lock = read_lock(h);
             std::vector<memory_record> all;
             all.reserve(h.store.size());
             for (std::size_t i = 0; i < h.store.size(); ++i) all.push_back(h.store.extract(i));
             g.gate.observe_all(all);
           })
      .def("observe",
           [](gate_handle& g, const std::string& line) {
             auto r = one_record(line);
             py::gil_scoped_release release;
             g.gate.observe(r);
           })
      .def("forget", [](gate_handle& g, const std::string& id) { return g.gate.forget(id); })
      .def("__len__", [](const gate_handle& g) { return g.gate.size(); })
      .def_property_readonly("dimension", [](const gate_handle& g) { return g.gate.dimension(); })
      .def("inspect", [](const gate_handle& g, const std::string& line, const std::string& kind,
                         const py::object& now) {
        const auto r = one_record(line);
        write_kind k = write_kind::upsert;
        if (kind == "insert")
          k = write_kind::insert;
        else if (kind == "update")
          k = write_kind::update;
        else if (kind != "upsert")
          throw py::value_error("kind must be 'upsert', 'insert' or 'update'");
        const auto t = time_of(now, "now");
        py::gil_scoped_release release;
        const auto v = t ? g.gate.inspect(r, k, *t) : g.gate.inspect(r, k);
        return verdict_json(v);
      });
}
