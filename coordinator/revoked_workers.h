// RevokedWorkers: the coordinator's --revoked-workers file, how an operator takes a worker's
// certificate away without a new CA (docs/security.md "Adding and revoking a worker").
//
// One entry a line; '#' starts a comment, blank lines are skipped:
//
//   w7                   every certificate of worker name w7
//   sha256:3f0c...       one certificate, by the fingerprint `geotrain certs add-worker` printed
//
// The file is read at start (an unreadable or malformed file is an error naming the flag) and
// again whenever its modification time, size or inode changes, checked at most once a second, so
// an edit takes effect on the next worker call without a restart. A later edit that cannot be
// read or parsed is logged and the last good list stays in force (a half-written file never
// un-revokes anyone). Thread-safe.
#pragma once

#include <sys/stat.h>

#include <ctime>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "common/clock.h"
#include "common/status.h"

namespace geotrain::coordinator {

class RevokedWorkers {
 public:
  // Reads `path` now. `clock` (not owned) paces the re-checks.
  static StatusOr<std::unique_ptr<RevokedWorkers>> Open(const std::string& path, Clock* clock);

  // Whether the certificate of worker `name` (may be empty) with `fingerprint` is revoked; a
  // non-empty reason says which line matched ("name 'w7'", "fingerprint sha256:...").
  std::string RevocationOf(const std::string& name, const std::string& fingerprint);

  // Parses the file's text: INVALID_ARGUMENT naming the line of a bad entry.
  static StatusOr<std::set<std::string>> Parse(const std::string& text, const std::string& path);

 private:
  RevokedWorkers(std::string path, Clock* clock) : path_(std::move(path)), clock_(clock) {}
  // Re-reads the file when it changed; under mu_.
  Status RefreshLocked();

  const std::string path_;
  Clock* const clock_;
  std::mutex mu_;
  std::set<std::string> entries_;
  int64_t last_check_ms_ = 0;
  struct timespec mtime_ {};
  off_t size_ = -1;
  ino_t inode_ = 0;
};

}  // namespace geotrain::coordinator
