// The Assignment as a file: WORK_DIR/tasks/<task>/assignment.pb, the serialised protobuf the
// daemon writes and its task child reads (and a person can inspect with protoc --decode).
//
// Also the checks every Assignment passes before the worker acts on it, since its job id becomes
// a directory name and its numbers become command-line arguments.
// Free functions; thread-safe.
#pragma once

#include <string>

#include "common/status.h"
#include "geotrain/v1/job.pb.h"

namespace geotrain::worker {

// Every problem, one per line, each naming the field ("assignment.job_id: empty"): job_id of
// letters, digits, '.', '_', '-' (at most 128, not starting with '.'), stage and replica not
// negative, spec_yaml not empty, frame_key empty or 32 bytes.
Status ValidateAssignment(const geotrain::v1::Assignment& assignment);

// Atomic (temp file + rename); the file is the owner's only (0600): it holds the job's frame key.
Status WriteAssignmentFile(const std::string& path, const geotrain::v1::Assignment& assignment);
// Errors name the file: unreadable, not a serialised Assignment, or an invalid one.
StatusOr<geotrain::v1::Assignment> ReadAssignmentFile(const std::string& path);

}  // namespace geotrain::worker
