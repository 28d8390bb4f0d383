// The worker's identity across daemon restarts: the id the coordinator gave it at its first
// registration, kept in WORK_DIR/worker-id (one line) and presented again afterwards so that the
// coordinator sees the same worker come back rather than a new one.
//
// Free functions over one file; no state. Writes are atomic (temp file + rename), so a crash
// mid-write leaves the old id or the new one, never half of one.
#pragma once

#include <string>

#include "common/status.h"

namespace geotrain::worker {

// WORK_DIR/worker-id.
std::string WorkerIdPath(const std::string& work_dir);

// The id stored at `path`, or "" when the file does not exist (a worker never registered).
// A file that exists but cannot be read, is empty or holds anything but one id (letters, digits,
// '.', '_', '-', at most 128) is an error naming the file: a damaged identity is not silently
// replaced by a new one, which would leave the old worker's tasks orphaned at the coordinator.
StatusOr<std::string> LoadWorkerId(const std::string& path);

// Stores `id` at `path`; the id must pass the same check as above.
Status SaveWorkerId(const std::string& path, const std::string& id);

// Whether `id` is a well-formed worker id (the check described above).
bool IsValidWorkerId(const std::string& id);

}  // namespace geotrain::worker
