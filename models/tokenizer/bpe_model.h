// BpeModel: byte-level byte-pair encoding of one pre-token: vocabulary, ranked merges, merge loop.
//
// A pre-token's bytes start as one symbol per byte (a byte the vocabulary lacks is dropped, as
// Hugging Face does without unk_token or byte_fallback); then the adjacent pair with the lowest
// merge rank is merged, leftmost first on ties, until no pair has a merge. This is the order
// Hugging Face tokenizers uses (a min-heap of rank, position), which gives the same ids as
// OpenAI's original GPT-2 encoder. Results for short pieces are cached.
//
// Immutable after Create except for the cache, which a mutex guards: thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/status.h"

namespace geotrain::models {

// Spellings in the byte-level alphabet (byte_level_alphabet.h), e.g. {"Ġ", "t"}.
struct BpeMergeRule {
  std::string left;
  std::string right;
};

struct BpeModelOptions {
  // Use a pre-token's own vocabulary entry when it has one, before merging (tokenizer.json's
  // "ignore_merges", set by Llama-3 style tokenizers; false for GPT-2).
  bool ignore_merges = false;
  // Cached pieces; the cache is emptied when full (steady-state text reuses few thousand words).
  size_t cache_capacity = 1 << 16;
};

// Largest id accepted from a file: bounds the id -> token tables built from it.
constexpr int32_t kMaxTokenId = (1 << 24) - 1;

class BpeModel {
 public:
  // `vocab_source` ("vocab.json", "tokenizer.json: model.vocab") and `describe_merge(i)`
  // ("merges.txt line 9") name the inputs in errors: duplicate ids, ids out of range, a byte with
  // no token, a merge naming an unknown token or producing one not in the vocabulary, a duplicate
  // merge.
  static StatusOr<std::unique_ptr<BpeModel>> Create(
      std::unordered_map<std::string, int32_t> vocab, const std::vector<BpeMergeRule>& merges,
      const BpeModelOptions& options, const std::string& vocab_source,
      const std::function<std::string(size_t)>& describe_merge);

  // Appends the ids of one pre-token given as raw bytes (not alphabet spelling).
  void EncodePiece(std::string_view piece, std::vector<int32_t>* ids) const;

  std::optional<int32_t> IdOf(const std::string& spelling) const;
  const std::unordered_map<std::string, int32_t>& vocab() const { return vocab_; }
  size_t merge_count() const { return merges_.size(); }
  // Bytes the vocabulary has no token for; EncodePiece drops them (see bpe_model.cc).
  const std::vector<uint8_t>& MissingBytes() const { return missing_bytes_; }

 private:
  struct MergeResult {
    int32_t rank;
    int32_t merged_id;
  };
  static uint64_t PairKey(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) |
           static_cast<uint32_t>(right);
  }
  const MergeResult* FindMerge(int32_t left, int32_t right) const;
  void Merge(std::string_view piece, std::vector<int32_t>* ids) const;

  static constexpr int32_t kNoToken = -1;

  BpeModelOptions options_;
  std::unordered_map<std::string, int32_t> vocab_;
  int32_t byte_ids_[256];  // kNoToken for a byte the vocabulary lacks
  std::vector<uint8_t> missing_bytes_;
  std::unordered_map<uint64_t, MergeResult> merges_;

  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<int32_t>> cache_;  // guarded by cache_mutex_
};

}  // namespace geotrain::models
