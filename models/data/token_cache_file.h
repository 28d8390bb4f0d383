// The token cache file: one source's token ids, tokenized once and reused on later runs.
//
// Layout (little-endian, version 1):
//   offset 0   char[8]  magic "GTTOKENS"
//          8   u32      version (1)
//         12   u32      header size in bytes (64)
//         16   u64      tokenizer fingerprint (tokenizer_fingerprint.h)
//         24   u64      settings fingerprint (format, jsonl field, end-of-text id)
//         32   u64      source size in bytes
//         40   i64      source modification time, ns since the epoch
//         48   u64      source content fingerprint (content_fingerprint.h)
//         56   u64      token count N
//         64   u32[N]   token ids
//   64 + 4N   u64      fingerprint of the N token ids (a checksum against torn or corrupt files)
// The five key fields say what the tokens were made from: a reader compares them with the current
// source and tokenizer and rebuilds the file on any difference. Files are written atomically
// (temp + fsync + rename, atomic_file_writer.h), so a reader sees a complete file or none.
//
// TokenCacheFile owns a read-only mapping of the file; tokens() stays valid for its lifetime.
// Immutable after Open: thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/io/mapped_file.h"
#include "common/span.h"
#include "common/status.h"

namespace geotrain::models::data {

struct TokenCacheKey {
  uint64_t tokenizer_fingerprint = 0;
  uint64_t settings_fingerprint = 0;
  uint64_t source_size = 0;
  int64_t source_mtime_ns = 0;
  uint64_t source_fingerprint = 0;

  bool operator==(const TokenCacheKey& other) const {
    return tokenizer_fingerprint == other.tokenizer_fingerprint &&
           settings_fingerprint == other.settings_fingerprint && source_size == other.source_size &&
           source_mtime_ns == other.source_mtime_ns &&
           source_fingerprint == other.source_fingerprint;
  }
  bool operator!=(const TokenCacheKey& other) const { return !(*this == other); }
};

// Writes `tokens` under `key` to `path` atomically.
Status WriteTokenCacheFile(const std::string& path, const TokenCacheKey& key,
                           Span<const uint32_t> tokens);

class TokenCacheFile {
 public:
  // NOT_FOUND when `path` does not exist; DATA_LOSS naming `path` and the field for a wrong
  // magic, an unknown version, a size that does not match the token count, a bad checksum.
  static StatusOr<std::unique_ptr<TokenCacheFile>> Open(const std::string& path);

  const TokenCacheKey& key() const { return key_; }
  Span<const uint32_t> tokens() const { return tokens_; }

 private:
  TokenCacheFile(std::unique_ptr<io::MappedFile> file, TokenCacheKey key,
                 Span<const uint32_t> tokens)
      : file_(std::move(file)), key_(key), tokens_(tokens) {}

  std::unique_ptr<io::MappedFile> file_;
  TokenCacheKey key_;
  Span<const uint32_t> tokens_;  // points into file_
};

}  // namespace geotrain::models::data
