// FullDiskEnv: an io::EnvWrapper whose disk is full for the files created under one path prefix.
//
// Appends to a file whose path starts with `prefix` fail once `bytes_left` bytes have gone to
// such files, with the Status a real full disk gives (io::ErrnoStatus of ENOSPC); every other
// call goes to the wrapped Env. For tests of what a full disk leaves behind; not thread-safe.
#pragma once

#include <cerrno>
#include <memory>
#include <string>

#include "common/io/env.h"
#include "common/io/errno_status.h"

namespace geotrain::testing {

class FullDiskEnv : public io::EnvWrapper {
 public:
  explicit FullDiskEnv(std::string prefix, size_t bytes_left = 0,
                       io::Env* target = io::Env::Default())
      : io::EnvWrapper(target), prefix_(std::move(prefix)), bytes_left_(bytes_left) {}

  StatusOr<std::unique_ptr<io::WritableFile>> NewExclusiveFile(const std::string& path) override {
    StatusOr<std::unique_ptr<io::WritableFile>> file = target()->NewExclusiveFile(path);
    if (!file.ok() || path.rfind(prefix_, 0) != 0) return file;
    return std::unique_ptr<io::WritableFile>(new File(this, path, std::move(file).value()));
  }

  // Appends refused so far.
  int refused() const { return refused_; }

 private:
  class File : public io::WritableFile {
   public:
    File(FullDiskEnv* env, std::string path, std::unique_ptr<io::WritableFile> file)
        : env_(env), path_(std::move(path)), file_(std::move(file)) {}
    Status Append(const void* data, size_t size) override {
      if (size > env_->bytes_left_) {
        ++env_->refused_;
        return io::ErrnoStatus(path_ + ": write failed", ENOSPC);
      }
      env_->bytes_left_ -= size;
      return file_->Append(data, size);
    }
    Status Sync() override { return file_->Sync(); }
    Status Close() override { return file_->Close(); }

   private:
    FullDiskEnv* env_;
    std::string path_;
    std::unique_ptr<io::WritableFile> file_;
  };

  std::string prefix_;
  size_t bytes_left_;
  int refused_ = 0;
};

}  // namespace geotrain::testing
