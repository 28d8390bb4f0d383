// Env::Default(): the POSIX file system (env.h).
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <system_error>

#include "common/io/env.h"
#include "common/io/errno_status.h"

namespace geotrain::io {
namespace {

namespace fs = std::filesystem;

Status FromErrorCode(const std::string& what, const std::error_code& error) {
  // std::filesystem reports errno values in the generic category on POSIX.
  return ErrnoStatus(what, error.value());
}

// A regular file opened read-only; the caller closes `fd`.
struct OpenedFile {
  int fd = -1;
  size_t size = 0;
};

StatusOr<OpenedFile> OpenRegularFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(path + ": cannot open", errno);
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return InvalidArgument(path + ": not a regular file");
  }
  return OpenedFile{fd, static_cast<size_t>(st.st_size)};
}

class PosixWritableFile : public WritableFile {
 public:
  PosixWritableFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixWritableFile() override {
    if (fd_ >= 0) ::close(fd_);
  }

  Status Append(const void* data, size_t size) override {
    const char* bytes = static_cast<const char*>(data);
    while (size > 0) {
      const ssize_t n = ::write(fd_, bytes, size);
      if (n < 0) {
        if (errno == EINTR) continue;
        return ErrnoStatus(path_ + ": write failed", errno);
      }
      bytes += n;
      size -= static_cast<size_t>(n);
    }
    return OkStatus();
  }

  Status Sync() override {
    if (::fsync(fd_) != 0) return ErrnoStatus(path_ + ": fsync failed", errno);
    return OkStatus();
  }

  Status Close() override {
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) return ErrnoStatus(path_ + ": close failed", errno);
    return OkStatus();
  }

 private:
  std::string path_;
  int fd_;  // -1 once closed
};

class PosixEnv : public Env {
 public:
  StatusOr<std::string> ReadFile(const std::string& path, size_t max_bytes) override {
    GEOTRAIN_ASSIGN_OR_RETURN(const OpenedFile file, OpenRegularFile(path));
    const int fd = file.fd;
    if (file.size > max_bytes) {
      ::close(fd);
      return OutOfRange(path + ": " + std::to_string(file.size) + " bytes exceeds the limit of " +
                        std::to_string(max_bytes));
    }
    std::string contents(file.size, '\0');
    size_t done = 0;
    while (done < contents.size()) {
      const ssize_t n = ::read(fd, contents.data() + done, contents.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const int err = errno;
        ::close(fd);
        if (n < 0) return ErrnoStatus(path + ": read failed", err);
        return Unavailable(path + ": read failed: file shrank while reading");
      }
      done += static_cast<size_t>(n);
    }
    ::close(fd);
    return contents;
  }

  StatusOr<std::unique_ptr<MappedFile>> MapFile(const std::string& path) override {
    GEOTRAIN_ASSIGN_OR_RETURN(const OpenedFile file, OpenRegularFile(path));
    const uint8_t* data = nullptr;
    if (file.size > 0) {  // mmap refuses a length of 0
      void* addr = ::mmap(nullptr, file.size, PROT_READ, MAP_PRIVATE, file.fd, 0);
      if (addr == MAP_FAILED) {
        const int err = errno;
        ::close(file.fd);
        return ErrnoStatus(path + ": mmap of " + std::to_string(file.size) + " bytes failed", err);
      }
      data = static_cast<const uint8_t*>(addr);
    }
    ::close(file.fd);  // the mapping keeps the file alive
    return std::make_unique<MappedFile>(path, data, file.size);
  }

  StatusOr<std::unique_ptr<WritableFile>> NewExclusiveFile(const std::string& path) override {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return ErrnoStatus(path + ": cannot create", errno);
    return std::unique_ptr<WritableFile>(new PosixWritableFile(path, fd));
  }

  Status Rename(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) {
      return ErrnoStatus(to + ": rename from " + from + " failed", errno);
    }
    return OkStatus();
  }

  Status Exchange(const std::string& a, const std::string& b) override {
    if (::renameat2(AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), RENAME_EXCHANGE) == 0) {
      return OkStatus();
    }
    const int err = errno;
    if (err == EINVAL || err == ENOSYS) {
      return FailedPrecondition(b + ": this file system cannot exchange it with " + a);
    }
    return ErrnoStatus(b + ": exchange with " + a + " failed", err);
  }

  Status RemoveFile(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) return ErrnoStatus(path + ": cannot remove", errno);
    return OkStatus();
  }

  Status RemoveAll(const std::string& path) override {
    std::error_code error;
    fs::remove_all(path, error);
    if (error && error != std::errc::no_such_file_or_directory) {
      return FromErrorCode(path + ": cannot delete", error);
    }
    return OkStatus();
  }

  Status CreateDirectories(const std::string& path) override {
    std::error_code error;
    fs::create_directories(path, error);
    if (error) return FromErrorCode(path + ": cannot create", error);
    return OkStatus();
  }

  Status CreateDirectory(const std::string& path) override {
    if (::mkdir(path.c_str(), 0755) != 0) return ErrnoStatus(path + ": cannot create", errno);
    return OkStatus();
  }

  StatusOr<std::vector<std::string>> ListDirectory(const std::string& path) override {
    std::vector<std::string> names;
    std::error_code error;
    for (fs::directory_iterator it(path, error), end; !error && it != end; it.increment(error)) {
      names.push_back(it->path().filename().string());
    }
    if (error) return FromErrorCode(path + ": cannot list", error);
    return names;
  }

  Status SyncDirectory(const std::string& path) override {
    const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return ErrnoStatus(path + ": cannot open directory", errno);
    const int result = ::fsync(fd);
    const int err = errno;
    ::close(fd);
    if (result != 0) return ErrnoStatus(path + ": fsync failed", err);
    return OkStatus();
  }

  bool IsRegularFile(const std::string& path) override {
    std::error_code error;
    return fs::is_regular_file(path, error);
  }

  bool IsDirectory(const std::string& path) override {
    std::error_code error;
    return fs::is_directory(path, error);
  }
};

}  // namespace

Env* Env::Default() {
  static PosixEnv* env = new PosixEnv();  // never destroyed: usable from other static destructors
  return env;
}

}  // namespace geotrain::io
