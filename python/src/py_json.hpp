// Python objects -> JSON text, in C++ (the GIL held): the records' dicts become the JSONL the
// library's reader parses (io/jsonl_read.hpp), without a Python-level encoder call per record.
// dict (str keys), list, tuple, str, int, float, bool, None; anything else is handed to
// `fallback(obj)` (python/memhealth: datetimes -> isoformat(), NumPy arrays -> tolist()) and its
// result written. Non-finite floats are written as the strings "NaN", "Infinity", "-Infinity",
// as the library writes them (record_codec.hpp).
#pragma once

#include <charconv>
#include <cmath>
#include <string>

#include <pybind11/pybind11.h>

namespace memhealth::python {

namespace py = pybind11;

class json_writer {
 public:
  explicit json_writer(py::object fallback) : fallback_(std::move(fallback)) {}

  /// Appends the JSON of `o` to `out`. @throws TypeError for a dict key that is not a str, or
  /// what `fallback` raises; ValueError for nesting deeper than 200.
  void write(PyObject* o, std::string& out, int depth = 0) {
    if (depth > 200) throw py::value_error("record: nested deeper than 200 levels");
    if (PyUnicode_Check(o)) return string(o, out);
    if (o == Py_None) return out.append("null"), void();
    if (o == Py_True) return out.append("true"), void();
    if (o == Py_False) return out.append("false"), void();
    if (PyLong_Check(o)) {
      int overflow = 0;
      const long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
      if (!overflow) return integer(v, out);
      py::str s = py::str(py::handle(o));  // beyond 64 bits: its decimal text
      return out.append(s.cast<std::string>()), void();
    }
    if (PyFloat_Check(o)) return number(PyFloat_AS_DOUBLE(o), out);
    if (PyDict_Check(o)) {
      out += '{';
      PyObject *k = nullptr, *v = nullptr;
      Py_ssize_t pos = 0;
      bool first = true;
      while (PyDict_Next(o, &pos, &k, &v)) {
        if (!PyUnicode_Check(k))
          throw py::type_error("record: a key is not a str: " +
                               py::repr(py::handle(k)).cast<std::string>());
        if (!first) out += ',';
        first = false;
        string(k, out);
        out += ':';
        write(v, out, depth + 1);
      }
      out += '}';
      return;
    }
    if (PyList_Check(o) || PyTuple_Check(o)) {
      const bool list = PyList_Check(o);
      const Py_ssize_t n = list ? PyList_GET_SIZE(o) : PyTuple_GET_SIZE(o);
      out += '[';
      for (Py_ssize_t i = 0; i < n; ++i) {
        if (i) out += ',';
        write(list ? PyList_GET_ITEM(o, i) : PyTuple_GET_ITEM(o, i), out, depth + 1);
      }
      out += ']';
      return;
    }
    py::object r = fallback_(py::handle(o));
    if (r.ptr() == o) throw py::type_error("record: the fallback returned its argument");
    write(r.ptr(), out, depth + 1);
  }

 private:
  static void integer(long long v, std::string& out) {
    char buf[24];
    const auto res = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, res.ptr);
  }
  static void number(double v, std::string& out) {
    if (std::isnan(v)) return out.append("\"NaN\""), void();
    if (std::isinf(v)) return out.append(v > 0 ? "\"Infinity\"" : "\"-Infinity\""), void();
    char buf[32];
    const auto res = std::to_chars(buf, buf + sizeof buf, v);  // shortest round trip
    out.append(buf, res.ptr);
  }
  static void string(PyObject* s, std::string& out) {
    Py_ssize_t n = 0;
    const char* p = PyUnicode_AsUTF8AndSize(s, &n);
    if (!p) throw py::error_already_set();  // a lone surrogate: not UTF-8
    out += '"';
    static constexpr char hex[] = "0123456789abcdef";
    for (Py_ssize_t i = 0; i < n; ++i) {
      const auto c = static_cast<unsigned char>(p[i]);
      switch (c) {
        case '"':
          out += "\\\"";
          break;
        case '\\':
          out += "\\\\";
          break;
        case '\n':
          out += "\\n";
          break;
        case '\r':
          out += "\\r";
          break;
        case '\t':
          out += "\\t";
          break;
        default:
          if (c < 0x20) {
            out += "\\u00";
            out += hex[c >> 4];
            out += hex[c & 15];
          } else {
            out += static_cast<char>(c);
          }
      }
    }
    out += '"';
  }

  py::object fallback_;
};

}  // namespace memhealth::python
