#include "models/file_contents.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace geotrain::models {

StatusOr<OpenedFile> OpenRegularFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    std::string message = path + ": cannot open: " + std::strerror(err);
    return err == ENOENT ? NotFound(message) : Unavailable(message);
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return InvalidArgument(path + ": not a regular file");
  }
  return OpenedFile{fd, static_cast<size_t>(st.st_size)};
}

StatusOr<std::string> ReadFileContents(const std::string& path, size_t max_bytes) {
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
      const std::string reason = n < 0 ? std::strerror(errno) : "file shrank while reading";
      ::close(fd);
      return Unavailable(path + ": read failed: " + reason);
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  return contents;
}

}  // namespace geotrain::models
