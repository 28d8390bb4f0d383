#include "common/io/errno_status.h"

#include <cerrno>
#include <cstring>

namespace geotrain::io {

Status ErrnoStatus(const std::string& what, int err) {
  char buffer[256];
  // GNU strerror_r returns the message (possibly not in buffer).
  const std::string message = what + ": " + ::strerror_r(err, buffer, sizeof(buffer));
  if (err == ENOSPC || err == EDQUOT) {
    return ResourceExhausted(message + " (ENOSPC: the disk is full)");
  }
  if (err == ENOENT) return NotFound(message);
  return Unavailable(message);
}

}  // namespace geotrain::io
