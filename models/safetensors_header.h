// ParseSafetensorsHeader: validates the header of a safetensors file held in memory.
//
// Layout (https://github.com/huggingface/safetensors): an unsigned 64-bit little-endian length N,
// N bytes of UTF-8 JSON (possibly padded with spaces), then the data section. The JSON maps each
// tensor name to {"dtype", "shape", "data_offsets": [begin, end]} (offsets relative to the data
// section), plus an optional "__metadata__" object of string -> string.
//
// Files come from users and other machines, so every field is checked before any byte of a
// tensor is trusted: length within the file and below a hard limit, JSON syntax, entry kinds,
// dtype names, shapes (non-negative, no overflow), offsets (two increasing integers inside the
// data section), dtype size x element count == byte length, no two tensors overlapping. Errors
// name the tensor and field. Gaps between tensors and trailing bytes are tolerated (harmless for
// reading). Thread-safe (no shared state).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/span.h"
#include "common/status.h"
#include "models/safetensors_dtype.h"

namespace geotrain::models {

// The safetensors reference implementation's limit; headers of real checkpoints are < 1 MB.
constexpr uint64_t kMaxSafetensorsHeaderBytes = 100'000'000;
// No real tensor has more dimensions; the cap bounds work on hostile headers.
constexpr size_t kMaxSafetensorsRank = 64;

struct SafetensorsTensorInfo {
  SafetensorsDType dtype = SafetensorsDType::kF32;
  std::vector<int64_t> shape;
  uint64_t data_begin = 0;  // offsets into the data section, end exclusive
  uint64_t data_end = 0;

  int64_t NumElements() const;
};

struct SafetensorsHeader {
  std::map<std::string, SafetensorsTensorInfo> tensors;  // sorted by name
  std::map<std::string, std::string> metadata;           // "__metadata__"
  uint64_t data_offset = 0;  // where the data section starts in the file (8 + N)
  uint64_t data_size = 0;    // bytes from data_offset to the end of the file
};

// `file` is the whole file (the data section must be there for the offset checks).
StatusOr<SafetensorsHeader> ParseSafetensorsHeader(Span<const uint8_t> file);

}  // namespace geotrain::models
