// Env: every file-system operation the tree performs, behind one seam (after leveldb's Env).
//
// The I/O helpers of common/io (ReadFileContents, AtomicFileWriter, MappedFile) and the stores
// that write durable state (runtime/checkpoint_store.h) go through an Env, so a test can wrap the
// POSIX one with an EnvWrapper and inject faults: a full disk, a failing rename, a directory that
// cannot be listed. Errors are Status values whose code is the kind callers branch on, set from
// errno in one place (errno_status.h): ENOSPC and EDQUOT are RESOURCE_EXHAUSTED, ENOENT is
// NOT_FOUND, anything else UNAVAILABLE; messages name the path and the operation.
//
// Env::Default() lives for the whole process and is thread-safe; so must be every Env handed to
// code that runs on several threads. A WritableFile is owned by one thread at a time.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "common/io/mapped_file.h"
#include "common/status.h"

namespace geotrain::io {

// A file being written; Append then Sync then Close. Destroying an unclosed one closes it.
class WritableFile {
 public:
  virtual ~WritableFile() = default;
  virtual Status Append(const void* data, size_t size) = 0;
  // Makes the bytes appended so far durable (fsync).
  virtual Status Sync() = 0;
  virtual Status Close() = 0;
};

class Env {
 public:
  virtual ~Env() = default;

  // The POSIX file system; never null, never destroyed.
  static Env* Default();

  // The whole of a regular file. NOT_FOUND when it does not exist, INVALID_ARGUMENT when it is
  // not a regular file, OUT_OF_RANGE beyond `max_bytes`.
  virtual StatusOr<std::string> ReadFile(const std::string& path, size_t max_bytes) = 0;
  // A regular file mapped read-only (mapped_file.h); NOT_FOUND when it does not exist.
  virtual StatusOr<std::unique_ptr<MappedFile>> MapFile(const std::string& path) = 0;
  // Creates `path` for writing (mode 0644); fails if it already exists.
  virtual StatusOr<std::unique_ptr<WritableFile>> NewExclusiveFile(const std::string& path) = 0;

  // rename(2): atomic, replaces a file or an empty directory at `to`.
  virtual Status Rename(const std::string& from, const std::string& to) = 0;
  // Swaps two existing paths atomically (renameat2 RENAME_EXCHANGE). FAILED_PRECONDITION where
  // the file system cannot (e.g. NFS), so the caller can fall back to two renames.
  virtual Status Exchange(const std::string& a, const std::string& b) = 0;
  virtual Status RemoveFile(const std::string& path) = 0;
  // Removes a file or a directory tree; a path already gone is OK.
  virtual Status RemoveAll(const std::string& path) = 0;
  // Creates `path` and its missing parents; an existing directory is OK.
  virtual Status CreateDirectories(const std::string& path) = 0;
  // Creates one directory; an existing one is an error (its code: UNAVAILABLE).
  virtual Status CreateDirectory(const std::string& path) = 0;
  // Names of the entries of a directory (no "." or ".."), in no particular order.
  virtual StatusOr<std::vector<std::string>> ListDirectory(const std::string& path) = 0;
  // fsync of a directory: makes the renames and creations inside it durable.
  virtual Status SyncDirectory(const std::string& path) = 0;
  virtual bool IsRegularFile(const std::string& path) = 0;
  virtual bool IsDirectory(const std::string& path) = 0;
};

// Forwards every call to another Env; a test derives from it and overrides the calls it breaks.
class EnvWrapper : public Env {
 public:
  // `target` must outlive the wrapper.
  explicit EnvWrapper(Env* target) : target_(target) {}
  Env* target() const { return target_; }

  StatusOr<std::string> ReadFile(const std::string& path, size_t max_bytes) override {
    return target_->ReadFile(path, max_bytes);
  }
  StatusOr<std::unique_ptr<MappedFile>> MapFile(const std::string& path) override {
    return target_->MapFile(path);
  }
  StatusOr<std::unique_ptr<WritableFile>> NewExclusiveFile(const std::string& path) override {
    return target_->NewExclusiveFile(path);
  }
  Status Rename(const std::string& from, const std::string& to) override {
    return target_->Rename(from, to);
  }
  Status Exchange(const std::string& a, const std::string& b) override {
    return target_->Exchange(a, b);
  }
  Status RemoveFile(const std::string& path) override { return target_->RemoveFile(path); }
  Status RemoveAll(const std::string& path) override { return target_->RemoveAll(path); }
  Status CreateDirectories(const std::string& path) override {
    return target_->CreateDirectories(path);
  }
  Status CreateDirectory(const std::string& path) override {
    return target_->CreateDirectory(path);
  }
  StatusOr<std::vector<std::string>> ListDirectory(const std::string& path) override {
    return target_->ListDirectory(path);
  }
  Status SyncDirectory(const std::string& path) override { return target_->SyncDirectory(path); }
  bool IsRegularFile(const std::string& path) override { return target_->IsRegularFile(path); }
  bool IsDirectory(const std::string& path) override { return target_->IsDirectory(path); }

 private:
  Env* target_;
};

}  // namespace geotrain::io
