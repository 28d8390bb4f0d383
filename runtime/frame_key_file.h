// geotrain-run's frame key: --frame-key-file, and the name that keeps one run's nonces apart
// from another's.
//
// Processes started by hand have no coordinator to hand them a per-job key, so the user gives
// every rank the same key file. A key used for several runs must not seal two runs' frames under
// the same subkey (AES-GCM nonces would repeat): the ranks agree on a random run name through
// their rendezvous store, and the group names (from which the subkeys derive) start with it.
// Free functions; thread-safe.
#pragma once

#include <string>

#include <torch/csrc/distributed/c10d/Store.hpp>

#include "common/status.h"
#include "net/transport.h"

namespace geotrain::runtime {

// The key in `path`: exactly 32 raw bytes, or 64 hex digits (surrounding whitespace ignored).
// Errors name the flag and the file, never the key's bytes. A file that others may read is
// accepted, with a warning in *warning (empty otherwise).
StatusOr<std::string> ReadFrameKeyFile(const std::string& path, std::string* warning = nullptr);

// A random name for this run, the same on every rank: rank 0 draws 16 random bytes and
// publishes them (hex) in `store`; the others wait for them up to `timeout`.
StatusOr<std::string> AgreeOnRunName(c10d::Store& store, int rank, net::Timeout timeout);

}  // namespace geotrain::runtime
