#include "models/atomic_file_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace geotrain::models {
namespace {

std::string DirectoryOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

StatusOr<std::unique_ptr<AtomicFileWriter>> AtomicFileWriter::Create(const std::string& path) {
  // pid + a process-wide counter: unique among concurrent writers, even to the same path.
  static std::atomic<uint64_t> counter{0};
  const std::string temp_path =
      path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
  const int fd = ::open(temp_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    return Unavailable(path + ": cannot create temporary file " + temp_path + ": " +
                       std::strerror(errno));
  }
  return std::unique_ptr<AtomicFileWriter>(new AtomicFileWriter(path, temp_path, fd));
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(temp_path_.c_str());
  }
}

Status AtomicFileWriter::Fail(const std::string& what, int err) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  ::unlink(temp_path_.c_str());
  const std::string message = path_ + ": " + what + ": " + std::strerror(err);
  return err == ENOSPC || err == EDQUOT ? ResourceExhausted(message) : Unavailable(message);
}

Status AtomicFileWriter::Append(const void* data, size_t size) {
  if (fd_ < 0) return FailedPrecondition(path_ + ": write after commit or failure");
  const char* bytes = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd_, bytes, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Fail("write failed", errno);
    }
    bytes += n;
    size -= static_cast<size_t>(n);
  }
  return OkStatus();
}

Status AtomicFileWriter::Commit() {
  if (fd_ < 0) return FailedPrecondition(path_ + ": commit after commit or failure");
  if (::fsync(fd_) != 0) return Fail("fsync failed", errno);
  if (::close(fd_) != 0) {
    fd_ = -1;
    const int err = errno;
    ::unlink(temp_path_.c_str());
    return Unavailable(path_ + ": close failed: " + std::strerror(err));
  }
  fd_ = -1;
  if (::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    ::unlink(temp_path_.c_str());
    return Unavailable(path_ + ": rename from " + temp_path_ + " failed: " + std::strerror(err));
  }
  // The rename is durable only once the directory entry is.
  const int dir_fd = ::open(DirectoryOf(path_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
  return OkStatus();
}

}  // namespace geotrain::models
