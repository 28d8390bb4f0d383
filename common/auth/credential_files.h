// Reading the control plane's secrets and certificates from files, every error naming the flag
// (or environment variable) the path came from and what is wrong with the file.
#pragma once

#include <cstddef>
#include <string>

#include "common/status.h"

namespace geotrain::auth {

// A token shorter than this is refused: 32 characters of hex are 128 bits.
inline constexpr size_t kMinTokenLength = 32;

// A file path and where it came from ("--tls-ca", "GEOTRAIN_TLS_CA"), for error messages.
struct CredentialFile {
  std::string path;  // empty: not given
  std::string origin;
  bool given() const { return !path.empty(); }
};

// The whole file; it must exist, be readable and hold a PEM block ("-----BEGIN ").
StatusOr<std::string> ReadPemFile(const CredentialFile& file);

// The token in `file`: one line (a trailing newline is dropped), at least kMinTokenLength
// printable characters without spaces. The file must not be readable by group or others (mode
// 0600 or 0400): a token anyone on the host can read is no secret.
StatusOr<std::string> ReadTokenFile(const CredentialFile& file);

}  // namespace geotrain::auth
