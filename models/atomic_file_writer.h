// AtomicFileWriter: writes a file so that readers see either the old file or the complete new one.
//
// Bytes go to a temporary file in the destination's directory (same filesystem, so the final
// rename is atomic); Commit fsyncs it, renames it over the destination and fsyncs the directory,
// so a crash at any point leaves no half-written checkpoint under the final name. Destroying an
// uncommitted writer removes the temporary file. Owns its descriptor; not thread-safe.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "common/status.h"

namespace geotrain::models {

class AtomicFileWriter {
 public:
  // Creates "<path>.tmp.<pid>.<n>" next to `path`; errors name `path`.
  static StatusOr<std::unique_ptr<AtomicFileWriter>> Create(const std::string& path);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  Status Append(const void* data, size_t size);
  // fsync, rename onto the destination, fsync the directory. The writer is spent afterwards.
  Status Commit();

  const std::string& path() const { return path_; }
  const std::string& temp_path() const { return temp_path_; }

 private:
  AtomicFileWriter(std::string path, std::string temp_path, int fd)
      : path_(std::move(path)), temp_path_(std::move(temp_path)), fd_(fd) {}
  Status Fail(const std::string& what, int err);

  std::string path_;
  std::string temp_path_;
  int fd_;  // -1 once committed or failed
};

}  // namespace geotrain::models
