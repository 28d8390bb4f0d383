// Reading the control plane's secrets and certificates from files, every error naming the flag
// (or environment variable) the path came from and what is wrong with the file.
#pragma once

#include <cstddef>
#include <string>

#include "common/status.h"

namespace geotrain::auth {

// A token shorter than this is refused: 32 characters of hex are 128 bits.
inline constexpr size_t kMinTokenLength = 32;
// The strength a token must show (TokenWeakness): its length times log2 of the alphabet its
// character classes span (10 digits, 26 lower, 26 upper, 32 punctuation), at least this many bits,
// and at least kMinDistinctTokenCharacters different characters. 32 random hex characters show
// 128 bits and have fewer than 8 different characters about once in a million.
inline constexpr double kMinTokenBits = 128;
inline constexpr size_t kMinDistinctTokenCharacters = 8;

// A file path and where it came from ("--tls-ca", "GEOTRAIN_TLS_CA"), for error messages.
struct CredentialFile {
  std::string path;  // empty: not given
  std::string origin;
  bool given() const { return !path.empty(); }
};

// The whole file; it must exist, be readable and hold a PEM block ("-----BEGIN ").
StatusOr<std::string> ReadPemFile(const CredentialFile& file);

// What makes `token` (printable ASCII) guessable, or "" when nothing does: fewer than
// kMinTokenBits by the estimate above ("32 decimal digits: 106 bits"), fewer than
// kMinDistinctTokenCharacters different characters ("aaaa..."), a repeated pattern
// ("abcdabcd..."), or mostly runs of consecutive characters ("abcdefgh...", "0123456789...").
// Only a screen for tokens a person made up: a token that passes is not thereby random.
std::string TokenWeakness(const std::string& token);

// The token in `file`: one line (a trailing newline is dropped), at least kMinTokenLength
// printable characters without spaces, and no TokenWeakness. The file must not be readable by
// group or others (mode 0600 or 0400): a token anyone on the host can read is no secret.
StatusOr<std::string> ReadTokenFile(const CredentialFile& file);

}  // namespace geotrain::auth
