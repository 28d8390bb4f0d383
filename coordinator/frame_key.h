// The per-job data-plane key (Assignment.frame_key): 32 bytes from OpenSSL's CSPRNG.
//
// The coordinator generates one when a job is submitted (or loaded from a database that predates
// keys), stores it apart from the Job record (StateStore::PutFrameKey) and puts it in every
// Assignment of the job; the ranks seal their frames under subkeys of it (net/frame_sealer.h).
// The key is never logged, and no API that returns a Job can carry it.
#pragma once

#include <string>

#include "common/status.h"

namespace geotrain::coordinator {

constexpr size_t kFrameKeyBytes = 32;

// INTERNAL if the system's random generator fails (never silently a weaker key).
StatusOr<std::string> NewFrameKey();

}  // namespace geotrain::coordinator
