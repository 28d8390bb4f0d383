// MappedFile: a whole file mapped read-only into memory.
//
// Checkpoints are large (GB) and a pipeline stage reads only some of their tensors, so tensors are
// read through a mapping: pages never touched are never read from disk. Owns the mapping, which
// is released in the destructor; the bytes keep their address for the object's lifetime. The file
// must not be truncated while mapped (a read past the new end would fault): checkpoints are
// replaced by rename, never rewritten in place. Thread-safe for concurrent reads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/span.h"
#include "common/status.h"

namespace geotrain::io {

class MappedFile {
 public:
  // Env::Default()->MapFile(path): NOT_FOUND if `path` does not exist; an empty file maps to an
  // empty span.
  static StatusOr<std::unique_ptr<MappedFile>> Open(const std::string& path);

  // For Env implementations: takes ownership of an mmap(2) region of `size` bytes at `data`
  // (null when size is 0), which the destructor unmaps.
  MappedFile(std::string path, const uint8_t* data, size_t size)
      : path_(std::move(path)), data_(data), size_(size) {}
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  Span<const uint8_t> bytes() const { return Span<const uint8_t>(data_, size_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  const uint8_t* data_;
  size_t size_;
};

}  // namespace geotrain::io
