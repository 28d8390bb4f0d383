// ReadFileContents: reads a whole (small) file into memory, refusing files beyond a size limit.
//
// For configuration-sized inputs (tokenizer files, checkpoint indexes, config.json); tensors are
// memory-mapped instead (mapped_file.h). Thread-safe (no shared state).
#pragma once

#include <cstddef>
#include <string>

#include "common/status.h"

namespace geotrain::models {

// A regular file opened read-only; the caller owns `fd` and must close it.
struct OpenedFile {
  int fd = -1;
  size_t size = 0;
};

// Opens `path` if it is a regular file. Errors name `path`: NOT_FOUND when it does not exist,
// UNAVAILABLE when it cannot be opened, INVALID_ARGUMENT when it is not a regular file.
StatusOr<OpenedFile> OpenRegularFile(const std::string& path);

// Errors name `path`: NOT_FOUND when it does not exist, OUT_OF_RANGE beyond `max_bytes`.
StatusOr<std::string> ReadFileContents(const std::string& path, size_t max_bytes);

}  // namespace geotrain::models
