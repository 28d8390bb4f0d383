// MappedSlotFile: a fixed number of fixed-size byte slots in a memory-mapped temporary file.
//
// Activation caches are large (GPT2-XL: 6.5 MB per sample, 20000 samples), so they live in a file
// mapped MAP_SHARED rather than in anonymous memory: the kernel can write cold slots back to disk.
// The file is created in a directory of the caller's choice, unlinked at once (nothing is left
// behind, even after a crash) and sized with ftruncate, so it stays sparse until slots are used.
// Each slot's blocks are reserved with fallocate before first use: a full disk then surfaces as
// RESOURCE_EXHAUSTED from Reserve instead of a SIGBUS on some later write through the mapping.
//
// Owns the mapping and the descriptor. Not thread-safe; slot pointers stay valid for its lifetime.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"

namespace geotrain::compression {

class MappedSlotFile {
 public:
  // Maps `slots` slots of `slot_bytes` bytes each in a new unlinked file under `dir` (empty:
  // $TMPDIR, else /tmp). Slots read as zeros until written.
  static StatusOr<std::unique_ptr<MappedSlotFile>> Create(const std::string& dir, int64_t slots,
                                                          size_t slot_bytes);
  ~MappedSlotFile();
  MappedSlotFile(const MappedSlotFile&) = delete;
  MappedSlotFile& operator=(const MappedSlotFile&) = delete;

  // Allocates the disk (or tmpfs) blocks behind `slot`; call once before its first write.
  Status Reserve(int64_t slot);

  uint8_t* slot(int64_t index) { return base_ + static_cast<size_t>(index) * slot_bytes_; }
  const uint8_t* slot(int64_t index) const {
    return base_ + static_cast<size_t>(index) * slot_bytes_;
  }
  int64_t slots() const { return slots_; }
  size_t slot_bytes() const { return slot_bytes_; }

  // The directory a cache with `dir` configured would use.
  static std::string ResolveDirectory(const std::string& dir);

 private:
  MappedSlotFile(int fd, uint8_t* base, int64_t slots, size_t slot_bytes)
      : fd_(fd), base_(base), slots_(slots), slot_bytes_(slot_bytes) {}

  int fd_;
  uint8_t* base_;
  int64_t slots_;
  size_t slot_bytes_;
};

}  // namespace geotrain::compression
