// BpeTokenizer: GPT-2 style byte-level BPE tokenizer: text <-> token ids.
//
// Encode: added tokens are cut out first (added_token_matcher.h), the text between them is split
// by the Digits pre-tokenizer when configured (digits_splitter.h), then by the GPT-2 pattern
// (gpt2_pretokenizer.h), and each piece is byte-pair encoded (bpe_model.h).
// Decode: each id's bytes are concatenated, so decode(encode(s)) == s for any byte string s,
// valid UTF-8 or not. Build one with the loaders in tokenizer_loaders.h.
//
// The Tokenizer (tokenizer.h) of byte-level BPE models. Immutable after Create (the BPE cache is
// internally locked): thread-safe.
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
#include "models/tokenizer/bpe_model.h"
#include "models/tokenizer/digits_splitter.h"
#include "models/tokenizer/tokenizer.h"

namespace geotrain::models {

struct BpeTokenizerOptions {
  // Prepend a space to each stretch of text that does not start with one, so a first word
  // tokenizes like a later one (ByteLevel "add_prefix_space"; false for GPT-2). Decode does not
  // remove it.
  bool add_prefix_space = false;
  // A Digits pre-tokenizer before ByteLevel (digits_splitter.h): the GPT-2 pattern then runs on
  // each of its pieces, so a digit never joins a neighbouring piece (SmolLM2: kIndividual).
  DigitSplitting digits = DigitSplitting::kNone;
};

class BpeTokenizer : public Tokenizer {
 public:
  // `source` names the files in errors: an added token whose id or content conflicts with the
  // vocabulary, duplicate added tokens.
  static StatusOr<std::unique_ptr<BpeTokenizer>> Create(std::unique_ptr<BpeModel> model,
                                                        std::vector<AddedToken> added_tokens,
                                                        const BpeTokenizerOptions& options,
                                                        const std::string& source);

  // Added tokens in the text become their ids (as Hugging Face tokenizers does).
  std::vector<int32_t> Encode(std::string_view text) const override;
  // Added tokens are ordinary text here: for untrusted corpora that must not inject control
  // tokens ("<|endoftext|>" typed by a user encodes as its pieces).
  std::vector<int32_t> EncodeOrdinary(std::string_view text) const override;
  // The exact bytes of the ids. INVALID_ARGUMENT for an id that is no token.
  StatusOr<std::string> Decode(Span<const int32_t> ids) const override;

  // 1 + the largest id (the embedding table's row count must be at least this).
  int32_t vocab_size() const override { return static_cast<int32_t>(token_bytes_.size()); }
  // The id of an added token's content or of a vocabulary spelling ("Ġthe"); nullopt if none.
  std::optional<int32_t> TokenId(const std::string& token) const override;
  const std::vector<AddedToken>& added_tokens() const override { return added_tokens_; }

 private:
  BpeTokenizer(std::unique_ptr<BpeModel> model, std::vector<AddedToken> added_tokens,
               const BpeTokenizerOptions& options)
      : model_(std::move(model)),
        added_tokens_(std::move(added_tokens)),
        matcher_(added_tokens_),
        options_(options) {}
  void EncodeText(std::string_view text, std::vector<int32_t>* ids) const;

  std::unique_ptr<BpeModel> model_;
  std::vector<AddedToken> added_tokens_;
  AddedTokenMatcher matcher_;
  BpeTokenizerOptions options_;
  std::vector<std::string> token_bytes_;  // id -> the bytes Decode writes
  std::vector<bool> is_token_;            // ids may have gaps
};

}  // namespace geotrain::models
