#include "models/mapped_file.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "models/file_contents.h"

namespace geotrain::models {

StatusOr<std::unique_ptr<MappedFile>> MappedFile::Open(const std::string& path) {
  GEOTRAIN_ASSIGN_OR_RETURN(const OpenedFile file, OpenRegularFile(path));
  const int fd = file.fd;
  const size_t size = file.size;
  const uint8_t* data = nullptr;
  if (size > 0) {  // mmap refuses a length of 0
    void* addr = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (addr == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      return Unavailable(path + ": mmap of " + std::to_string(size) +
                         " bytes failed: " + std::strerror(err));
    }
    data = static_cast<const uint8_t*>(addr);
  }
  ::close(fd);  // the mapping keeps the file alive
  return std::unique_ptr<MappedFile>(new MappedFile(path, data, size));
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace geotrain::models
