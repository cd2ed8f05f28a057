#pragma once
/// @file gzip_stream.hpp
/// gzip (RFC 1952) compression of a byte stream and a `std::streambuf` that reads one back, both
/// through zlib (zlib1g-dev): what lets a plan file named `*.gz` be written compressed and read
/// by the same reader as a plain one (repair/plan_file.hpp).
///
/// `gzip_writer` deflates text handed to it piece by piece into an output string (memory: zlib's
/// state, about 270 KiB at level 1, plus what the caller keeps); `gzip_istreambuf` inflates a
/// compressed `std::istream` 256 KiB at a time (concatenated gzip members are read as one
/// stream, as gzip(1) does). `is_gzip` tells a gzip stream by its magic bytes 1f 8b.
///
/// Errors: `memhealth::error(error_code::io)` when zlib cannot start (out of memory);
/// `error(error_code::parse)` for compressed data that is damaged or cut short, naming `name`.

#include <array>
#include <cstddef>
#include <cstring>
#include <istream>
#include <memory>
#include <streambuf>
#include <string>
#include <string_view>

#include "memhealth/config.hpp"

#include <zlib.h>

namespace memhealth {

/// True when `head` starts with the gzip magic bytes 1f 8b (RFC 1952, section 2.3.1).
[[nodiscard]] inline bool is_gzip(std::string_view head) noexcept {
  return head.size() >= 2 && static_cast<unsigned char>(head[0]) == 0x1f &&
         static_cast<unsigned char>(head[1]) == 0x8b;
}

/// True when a file name ends with ".gz" (the names `write_plan` compresses).
[[nodiscard]] inline bool gzip_name(std::string_view path) noexcept {
  return path.size() > 3 && path.substr(path.size() - 3) == ".gz";
}

/// Compresses a byte stream into gzip format, piece by piece (see the file comment).
/// Move-only; not thread-safe.
class gzip_writer {
 public:
  /// @param level zlib level, 1 (fastest) to 9 (smallest); the plan files use 1.
  /// @throws error(io) when zlib cannot start.
  explicit gzip_writer(int level = 1) : z_(std::make_unique<z_stream>()) {
    std::memset(z_.get(), 0, sizeof(z_stream));
    // windowBits 15 + 16: a gzip header and trailer around the deflate stream (zlib manual)
    if (deflateInit2(z_.get(), level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
      throw error(error_code::io, "gzip: cannot start zlib's deflate");
  }
  gzip_writer(gzip_writer&&) noexcept = default;
  gzip_writer& operator=(gzip_writer&&) = delete;
  gzip_writer(const gzip_writer&) = delete;
  gzip_writer& operator=(const gzip_writer&) = delete;
  ~gzip_writer() {
    if (z_) deflateEnd(z_.get());
  }

  /// Compresses `in` and appends what zlib emits to `out`; `finish` ends the stream (the gzip
  /// trailer is written; nothing may follow).
  void write(std::string_view in, std::string& out, bool finish = false) {
    z_->next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    z_->avail_in = static_cast<uInt>(in.size());
    const int flush = finish ? Z_FINISH : Z_NO_FLUSH;
    for (;;) {
      std::array<char, 1 << 16> chunk;
      z_->next_out = reinterpret_cast<Bytef*>(chunk.data());
      z_->avail_out = static_cast<uInt>(chunk.size());
      const int rc = deflate(z_.get(), flush);
      out.append(chunk.data(), chunk.size() - z_->avail_out);
      if (rc == Z_STREAM_END) return;
      if (rc != Z_OK && rc != Z_BUF_ERROR)
        throw error(error_code::io, "gzip: deflate failed (" + std::to_string(rc) + ")");
      if (!finish && z_->avail_in == 0 && z_->avail_out != 0) return;
    }
  }

 private:
  std::unique_ptr<z_stream> z_;
};

/// A read-only `std::streambuf` over the gzip-compressed bytes of `source` (see the file comment).
class gzip_istreambuf : public std::streambuf {
 public:
  /// @param source the compressed stream (kept; must outlive this buffer).
  /// @param name the file name used in error messages. @throws error(io) when zlib cannot start.
  gzip_istreambuf(std::istream& source, std::string name)
      : src_(source), name_(std::move(name)), z_(std::make_unique<z_stream>()) {
    std::memset(z_.get(), 0, sizeof(z_stream));
    if (inflateInit2(z_.get(), 15 + 16) != Z_OK)
      throw error(error_code::io, "gzip: cannot start zlib's inflate");
    in_.resize(1 << 16);
    out_.resize(1 << 18);
  }
  gzip_istreambuf(const gzip_istreambuf&) = delete;
  gzip_istreambuf& operator=(const gzip_istreambuf&) = delete;
  ~gzip_istreambuf() override { inflateEnd(z_.get()); }

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    std::size_t produced = 0;
    while (produced == 0) {
      if (z_->avail_in == 0) {
        src_.read(in_.data(), static_cast<std::streamsize>(in_.size()));
        const auto got = static_cast<std::size_t>(src_.gcount());
        if (got == 0) {
          if (!ended_ || mid_member_)
            throw error(error_code::parse,
                        "gzip: '" + name_ + "' ends in the middle of its compressed data");
          return traits_type::eof();
        }
        z_->next_in = reinterpret_cast<Bytef*>(in_.data());
        z_->avail_in = static_cast<uInt>(got);
      }
      if (ended_) {  // another gzip member follows the last one (concatenated files)
        if (inflateReset(z_.get()) != Z_OK) throw error(error_code::io, "gzip: inflateReset");
        ended_ = false;
      }
      z_->next_out = reinterpret_cast<Bytef*>(out_.data());
      z_->avail_out = static_cast<uInt>(out_.size());
      const int rc = inflate(z_.get(), Z_NO_FLUSH);
      produced = out_.size() - z_->avail_out;
      mid_member_ = true;
      if (rc == Z_STREAM_END) {
        ended_ = true;
        mid_member_ = false;
      } else if (rc != Z_OK && !(rc == Z_BUF_ERROR && produced > 0)) {
        throw error(error_code::parse, "gzip: '" + name_ + "' has damaged compressed data (" +
                                           (z_->msg ? std::string(z_->msg) : std::to_string(rc)) +
                                           ")");
      }
    }
    setg(out_.data(), out_.data(), out_.data() + produced);
    return traits_type::to_int_type(*gptr());
  }

 private:
  std::istream& src_;
  std::string name_;
  std::unique_ptr<z_stream> z_;
  std::string in_, out_;
  bool ended_ = false;       // the last member's end was reached
  bool mid_member_ = false;  // inside a member (its end not yet seen)
};

/// An `std::istream` over gzip-compressed bytes (owns its `gzip_istreambuf` and the source).
class gzip_istream : public std::istream {
 public:
  /// @param source the compressed stream, owned. @param name file name for error messages.
  gzip_istream(std::unique_ptr<std::istream> source, std::string name)
      : std::istream(nullptr), src_(std::move(source)), buf_(*src_, std::move(name)) {
    rdbuf(&buf_);
    exceptions(std::ios::badbit);  // the buffer's errors (damaged data) reach the reader
  }

 private:
  std::unique_ptr<std::istream> src_;
  gzip_istreambuf buf_;
};

}  // namespace memhealth
