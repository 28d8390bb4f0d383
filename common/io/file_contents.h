// ReadFileContents: reads a whole (small) file into memory, refusing files beyond a size limit.
//
// For configuration-sized inputs (tokenizer files, checkpoint indexes, config.json, job YAML);
// tensors are memory-mapped instead (mapped_file.h). Reads through an Env (env.h), the POSIX one
// unless a caller (a test) passes another. Thread-safe (no shared state).
#pragma once

#include <cstddef>
#include <string>

#include "common/io/env.h"
#include "common/status.h"

namespace geotrain::io {

// Errors name `path`: NOT_FOUND when it does not exist, INVALID_ARGUMENT when it is not a regular
// file, OUT_OF_RANGE beyond `max_bytes`, UNAVAILABLE when it cannot be read.
StatusOr<std::string> ReadFileContents(const std::string& path, size_t max_bytes,
                                       Env* env = Env::Default());

}  // namespace geotrain::io
