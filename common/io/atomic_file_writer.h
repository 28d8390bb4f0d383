// AtomicFileWriter: writes a file so that readers see either the old file or the complete new one.
//
// Bytes go to a temporary file in the destination's directory (same filesystem, so the final
// rename is atomic); Commit fsyncs it, renames it over the destination and fsyncs the directory,
// so a crash at any point leaves no half-written checkpoint under the final name. Any failure
// removes the temporary file and leaves the destination as it was; a full disk is
// RESOURCE_EXHAUSTED (errno_status.h). Destroying an uncommitted writer removes the temporary
// file. Every operation goes through an Env (env.h). Owns its file; not thread-safe.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "common/io/env.h"
#include "common/status.h"

namespace geotrain::io {

class AtomicFileWriter {
 public:
  // Creates "<path>.tmp.<pid>.<n>" next to `path`; errors name `path`.
  static StatusOr<std::unique_ptr<AtomicFileWriter>> Create(const std::string& path,
                                                            Env* env = Env::Default());
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  Status Append(const void* data, size_t size);
  // fsync, rename onto the destination, fsync the directory. The writer is spent afterwards.
  Status Commit();

  const std::string& path() const { return path_; }
  const std::string& temp_path() const { return temp_path_; }

 private:
  AtomicFileWriter(Env* env, std::string path, std::string temp_path,
                   std::unique_ptr<WritableFile> file)
      : env_(env),
        path_(std::move(path)),
        temp_path_(std::move(temp_path)),
        file_(std::move(file)) {}
  // Abandons the temporary file and returns `status` with `path` named.
  Status Fail(const Status& status);

  Env* env_;
  std::string path_;
  std::string temp_path_;
  std::unique_ptr<WritableFile> file_;  // null once committed or failed
};

// The directory holding `path` ("." for a bare name): what to fsync after a rename into it.
std::string DirectoryOf(const std::string& path);

}  // namespace geotrain::io
