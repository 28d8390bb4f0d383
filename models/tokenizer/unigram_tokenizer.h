// UnigramTokenizer: SentencePiece Unigram (DeBERTa-v2/v3), text <-> token ids, as Hugging Face
// tokenizers computes it from a tokenizer.json (unigram_json_loader.cc).
//
// Encode: added tokens ([CLS], [SEP], ...) are cut out of the raw text first
// (added_token_matcher.h); each stretch between them is normalized (the steps of
// UnigramNormalizerStep, in order), then the Metaspace pre-tokenizer makes spaces the
// replacement "▁", prepends one (prepend_scheme) and splits before each, and each piece becomes
// the ids of the best-scoring segmentation into vocabulary pieces (Viterbi over the piece lattice).
// A character no piece covers is the unknown piece, scored (lowest score - 10) as the library does;
// adjacent unknown characters fuse into one unknown id. Byte fallback is not implemented. Decode is
// the Metaspace decoder: "▁" becomes a space, and the first token loses its "▁"s unless
// prepend_scheme is "never". Normalization loses information, so Decode(Encode(s)) need not be s.
//
// Immutable after Create: thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/span.h"
#include "common/status.h"
#include "models/tokenizer/added_token_matcher.h"
#include "models/tokenizer/tokenizer.h"

namespace geotrain::models {

struct UnigramNormalizerStep {
  enum class Kind {
    kReplace,                // every `pattern` (a literal) becomes `content`
    kReplaceWhitespaceRuns,  // DeBERTa's Regex "\s{2,}|[\n\r\t]" -> `content`
    kNfc,                    // unicode_nfc.h
    kStrip,                  // white space off the left and/or right end
  };
  Kind kind = Kind::kNfc;
  std::u32string pattern;
  std::u32string content;
  bool strip_left = false;
  bool strip_right = false;
};

enum class MetaspacePrependScheme { kAlways, kFirst, kNever };

struct UnigramTokenizerOptions {
  std::vector<UnigramNormalizerStep> normalizer;
  // Metaspace pre-tokenizer.
  char32_t replacement = U'\u2581';
  MetaspacePrependScheme prepend_scheme = MetaspacePrependScheme::kAlways;
  bool split = true;
  // Metaspace decoder.
  char32_t decoder_replacement = U'\u2581';
  MetaspacePrependScheme decoder_prepend_scheme = MetaspacePrependScheme::kAlways;
};

class UnigramTokenizer : public Tokenizer {
 public:
  // `vocab`: (piece, score) by id. `source` names the file in errors: an empty or repeated
  // piece, unk_id out of range, added tokens that conflict with the vocabulary.
  static StatusOr<std::unique_ptr<UnigramTokenizer>> Create(
      std::vector<std::pair<std::string, double>> vocab, int32_t unk_id,
      std::vector<AddedToken> added_tokens, const UnigramTokenizerOptions& options,
      const std::string& source);

  std::vector<int32_t> Encode(std::string_view text) const override;
  std::vector<int32_t> EncodeOrdinary(std::string_view text) const override;
  // As the library's decode(ids, skip_special_tokens=False).
  StatusOr<std::string> Decode(Span<const int32_t> ids) const override;

  int32_t vocab_size() const override { return static_cast<int32_t>(tokens_.size()); }
  std::optional<int32_t> TokenId(const std::string& token) const override;
  const std::vector<AddedToken>& added_tokens() const override { return added_tokens_; }
  std::string BehaviourKey() const override;

  // The normalizer alone (for tests).
  std::u32string Normalize(std::string_view text) const;

 private:
  struct TrieNode {
    int32_t id = -1;
    std::vector<std::pair<unsigned char, int32_t>> next;  // sorted by byte
  };

  UnigramTokenizer(std::vector<AddedToken> added_tokens, const UnigramTokenizerOptions& options)
      : added_tokens_(std::move(added_tokens)), matcher_(added_tokens_), options_(options) {}
  void EncodeText(std::string_view text, bool at_start, std::vector<int32_t>* ids) const;
  void EncodePiece(std::string_view piece, std::vector<int32_t>* ids) const;
  int32_t Child(int32_t node, unsigned char byte) const;

  std::vector<std::pair<std::string, double>> vocab_;
  std::unordered_map<std::string, int32_t> piece_ids_;
  std::vector<TrieNode> trie_;
  int32_t unk_id_ = 0;
  double unk_score_ = 0;
  std::vector<AddedToken> added_tokens_;
  AddedTokenMatcher matcher_;
  UnigramTokenizerOptions options_;
  std::vector<std::string> tokens_;  // id -> spelling (added tokens: their content)
  std::vector<bool> is_token_;
};

}  // namespace geotrain::models
