#include "common/io/atomic_file_writer.h"

#include <unistd.h>

#include <atomic>

namespace geotrain::io {

std::string DirectoryOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

StatusOr<std::unique_ptr<AtomicFileWriter>> AtomicFileWriter::Create(const std::string& path,
                                                                     Env* env) {
  // pid + a process-wide counter: unique among concurrent writers, even to the same path.
  static std::atomic<uint64_t> counter{0};
  const std::string temp_path =
      path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
  StatusOr<std::unique_ptr<WritableFile>> file = env->NewExclusiveFile(temp_path);
  if (!file.ok()) return file.status().WithContext(path + ": temporary file");
  return std::unique_ptr<AtomicFileWriter>(
      new AtomicFileWriter(env, path, temp_path, std::move(file).value()));
}

AtomicFileWriter::~AtomicFileWriter() {
  if (file_ != nullptr) (void)Fail(OkStatus());  // abandoned: nothing to report to
}

Status AtomicFileWriter::Fail(const Status& status) {
  file_.reset();                       // closes the descriptor
  (void)env_->RemoveFile(temp_path_);  // best effort: the failure reported is `status`
  return status;
}

Status AtomicFileWriter::Append(const void* data, size_t size) {
  if (file_ == nullptr) return FailedPrecondition(path_ + ": write after commit or failure");
  if (Status s = file_->Append(data, size); !s.ok()) return Fail(s.WithContext(path_));
  return OkStatus();
}

Status AtomicFileWriter::Commit() {
  if (file_ == nullptr) return FailedPrecondition(path_ + ": commit after commit or failure");
  if (Status s = file_->Sync(); !s.ok()) return Fail(s.WithContext(path_));
  if (Status s = file_->Close(); !s.ok()) return Fail(s.WithContext(path_));
  file_.reset();
  if (Status s = env_->Rename(temp_path_, path_); !s.ok()) {
    (void)env_->RemoveFile(temp_path_);
    return s;
  }
  // The rename is durable only once the directory entry is. The new file is in place already, so
  // a directory that cannot be synced (some file systems refuse) does not undo the write.
  (void)env_->SyncDirectory(DirectoryOf(path_));
  return OkStatus();
}

}  // namespace geotrain::io
