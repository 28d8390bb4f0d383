// ErrnoStatus: an errno as a Status whose code is the kind of failure callers branch on.
//
// The one place that turns errno into a code, so that no caller ever tells a full disk or a
// missing file by reading message text: ENOSPC and EDQUOT are RESOURCE_EXHAUSTED (and the message
// names ENOSPC, the word an operator greps logs for), ENOENT is NOT_FOUND, anything else
// UNAVAILABLE. Thread-safe (strerror_r).
#pragma once

#include <string>

#include "common/status.h"

namespace geotrain::io {

// "<what>: <strerror(err)>", plus " (ENOSPC: the disk is full)" for a full disk or quota.
Status ErrnoStatus(const std::string& what, int err);

}  // namespace geotrain::io
