#include "compression/mapped_slot_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

namespace geotrain::compression {
namespace {

std::string ErrnoText(int err) { return std::strerror(err); }

}  // namespace

std::string MappedSlotFile::ResolveDirectory(const std::string& dir) {
  if (!dir.empty()) return dir;
  const char* tmpdir = std::getenv("TMPDIR");
  return tmpdir && *tmpdir ? tmpdir : "/tmp";
}

StatusOr<std::unique_ptr<MappedSlotFile>> MappedSlotFile::Create(const std::string& dir,
                                                                 int64_t slots, size_t slot_bytes) {
  if (slots < 1 || slot_bytes < 1) {
    return InvalidArgument("activation cache file: needs at least one slot of at least one byte");
  }
  if (static_cast<uint64_t>(slots) >
      static_cast<uint64_t>(std::numeric_limits<off_t>::max()) / slot_bytes) {
    return InvalidArgument("activation cache file: " + std::to_string(slots) + " slots of " +
                           std::to_string(slot_bytes) + " bytes overflow a file size");
  }
  const std::string directory = ResolveDirectory(dir);
  std::string path_template = directory + "/geotrain-activation-cache-XXXXXX";
  std::vector<char> path(path_template.begin(), path_template.end());
  path.push_back('\0');
  const int fd = mkostemp(path.data(), O_CLOEXEC);
  if (fd < 0) {
    return Unavailable("cache_dir: cannot create a file in " + directory + ": " + ErrnoText(errno));
  }
  // Unlinked at once: the mapping keeps the storage alive, and nothing outlives the process.
  unlink(path.data());
  const off_t total = static_cast<off_t>(slots) * static_cast<off_t>(slot_bytes);
  if (ftruncate(fd, total) != 0) {
    const int err = errno;
    close(fd);
    return ResourceExhausted("cache_dir: cannot size the cache file in " + directory + " to " +
                             std::to_string(total) + " bytes: " + ErrnoText(err));
  }
  void* base = mmap(nullptr, static_cast<size_t>(total), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    const int err = errno;
    close(fd);
    return ResourceExhausted("activation cache file: cannot map " + std::to_string(total) +
                             " bytes: " + ErrnoText(err));
  }
  return std::unique_ptr<MappedSlotFile>(
      new MappedSlotFile(fd, static_cast<uint8_t*>(base), slots, slot_bytes));
}

MappedSlotFile::~MappedSlotFile() {
  munmap(base_, static_cast<size_t>(slots_) * slot_bytes_);
  close(fd_);
}

Status MappedSlotFile::Reserve(int64_t slot) {
  const off_t offset = static_cast<off_t>(slot) * static_cast<off_t>(slot_bytes_);
  const int err = posix_fallocate(fd_, offset, static_cast<off_t>(slot_bytes_));
  // Filesystems without fallocate keep the sparse behaviour: nothing better can be done there.
  if (err == 0 || err == EOPNOTSUPP || err == EINVAL) return OkStatus();
  return ResourceExhausted("activation cache file: cannot allocate slot " + std::to_string(slot) +
                           " (" + std::to_string(slot_bytes_) + " bytes): " + ErrnoText(err));
}

}  // namespace geotrain::compression
