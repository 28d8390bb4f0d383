// Tokenizer: text <-> token ids, whatever the model (byte-level BPE, WordPiece).
//
// What the data pipeline and the commands need from a tokenizer: the concrete kinds are
// BpeTokenizer (bpe_tokenizer.h), WordPieceTokenizer (wordpiece_tokenizer.h) and
// UnigramTokenizer (unigram_tokenizer.h), and
// LoadTokenizerDirectory (tokenizer_loaders.h) picks the one a model directory's files describe.
// Implementations are immutable after construction: thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/span.h"
#include "common/status.h"
#include "models/tokenizer/added_token_matcher.h"

namespace geotrain::models {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Added tokens in the text become their ids (as Hugging Face tokenizers does). No special
  // tokens are added around the text (add_special_tokens=False).
  virtual std::vector<int32_t> Encode(std::string_view text) const = 0;
  // Added tokens are ordinary text here: for untrusted corpora that must not inject control
  // tokens ("<|endoftext|>" or "[SEP]" typed by a user encodes as its pieces).
  virtual std::vector<int32_t> EncodeOrdinary(std::string_view text) const = 0;
  // INVALID_ARGUMENT for an id that is no token.
  virtual StatusOr<std::string> Decode(Span<const int32_t> ids) const = 0;

  // 1 + the largest id (the embedding table's row count must be at least this).
  virtual int32_t vocab_size() const = 0;
  // The id of an added token's content or of a vocabulary spelling; nullopt if none.
  virtual std::optional<int32_t> TokenId(const std::string& token) const = 0;
  virtual const std::vector<AddedToken>& added_tokens() const = 0;
  // The settings that change how text becomes ids but that Decode and EncodeOrdinary of the
  // vocabulary's own spellings need not reveal (WordPiece's lowercasing, say), for
  // TokenizerFingerprint. Empty when the vocabulary reveals them all (BPE), which keeps the
  // fingerprints of existing BPE token caches unchanged.
  virtual std::string BehaviourKey() const { return std::string(); }
};

// A loaded concrete tokenizer as a Tokenizer (StatusOr does not convert between pointer types).
template <typename T>
StatusOr<std::unique_ptr<Tokenizer>> AsTokenizer(StatusOr<std::unique_ptr<T>> loaded) {
  if (!loaded.ok()) return loaded.status();
  return std::unique_ptr<Tokenizer>(std::move(loaded).value());
}

}  // namespace geotrain::models
