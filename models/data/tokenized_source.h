// TokenizedSource: one corpus file as a single stream of token ids, from the token cache when
// it is current, else tokenized now (and cached).
//
// The stream is the file's documents (source_documents.h) in file order, each encoded with
// Tokenizer::EncodeOrdinary and followed by the end-of-text id (GPT-2: <|endoftext|>, 50256).
// So consecutive documents are separated by end-of-text, as in GPT-2's training data, and a
// block that spans two documents shows the model where one ends. EncodeOrdinary rather than
// Encode: a corpus that contains the text "<|endoftext|>" must not inject control tokens.
//
// With a cache directory, the ids are kept in "<cache_dir>/<file name>.<hash of the absolute
// path>.tokens" (token_cache_file.h); it is reused while the source's size, modification time and
// content fingerprint, the tokenizer fingerprint and the settings all match, and rewritten
// otherwise. A corrupt cache file is rebuilt, not reported. Each open reads the source once to
// fingerprint it (a few GB/s); tokenizing is what the cache saves.
//
// Owns its ids (a mapped cache file or a vector); tokens() is valid for the object's lifetime.
// Immutable after loading: thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/span.h"
#include "common/status.h"
#include "models/data/token_cache_file.h"
#include "models/tokenizer/tokenizer.h"

namespace geotrain::models::data {

struct SourceTokenizeOptions {
  std::string jsonl_field = "text";    // for .jsonl/.ndjson sources
  uint32_t end_of_text_id = 0;         // appended after every document
  std::string cache_dir;               // empty: tokenize in memory, no cache file
  uint64_t tokenizer_fingerprint = 0;  // TokenizerFingerprint(tokenizer), computed once by caller
};

class TokenizedSource {
 public:
  // Errors name `path` (and for jsonl its line and field).
  static StatusOr<std::unique_ptr<TokenizedSource>> Load(const std::string& path,
                                                         const SourceTokenizeOptions& options,
                                                         const Tokenizer& tokenizer);

  // Ids made elsewhere (a classification set's padded example rows), named `path` in errors.
  static std::unique_ptr<TokenizedSource> FromTokens(std::string path,
                                                     std::vector<uint32_t> tokens);

  const std::string& path() const { return path_; }
  Span<const uint32_t> tokens() const { return tokens_; }
  // True when the ids came from an existing, current cache file (tokenizing was skipped).
  bool loaded_from_cache() const { return loaded_from_cache_; }
  // Where the cache file is (empty without a cache directory).
  const std::string& cache_path() const { return cache_path_; }

 private:
  TokenizedSource() = default;

  std::string path_;
  std::string cache_path_;
  bool loaded_from_cache_ = false;
  std::unique_ptr<TokenCacheFile> cache_;  // owns tokens_ when loaded from the cache
  std::vector<uint32_t> owned_tokens_;     // owns tokens_ otherwise
  Span<const uint32_t> tokens_;
};

}  // namespace geotrain::models::data
