// WordPieceTokenizer: BERT's tokenizer, text <-> token ids, as Hugging Face tokenizers computes
// it.
//
// Encode: added tokens ([CLS], [SEP], [PAD], [MASK], [UNK]) are cut out of the raw text first
// (added_token_matcher.h); the text between them is normalized (bert_normalizer.h), split into
// words (bert_pretokenizer.h), and each word becomes WordPiece ids (wordpiece_model.h).
// No [CLS]/[SEP] is added around the text: the caller frames examples (classification_set.h).
// Decode is the library's WordPiece decoder: tokens joined by spaces, a continuation ("##ing")
// glued to the token before it, and with cleanup the spaces before ". ? ! ," and English
// contractions removed. Normalization loses information, so Decode(Encode(s)) need not be s.
//
// Immutable after Create: thread-safe.
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
#include "models/tokenizer/bert_normalizer.h"
#include "models/tokenizer/tokenizer.h"
#include "models/tokenizer/wordpiece_model.h"

namespace geotrain::models {

struct WordPieceDecoderOptions {
  std::string prefix = "##";  // stripped from continuation tokens after the first
  bool cleanup = true;        // remove the spaces tokenization put before punctuation
};

struct WordPieceTokenizerOptions {
  BertNormalizerOptions normalizer;
  WordPieceDecoderOptions decoder;
};

class WordPieceTokenizer : public Tokenizer {
 public:
  // `source` names the files in errors: an added token whose id or content conflicts with the
  // vocabulary, duplicate added tokens.
  static StatusOr<std::unique_ptr<WordPieceTokenizer>> Create(
      std::unique_ptr<WordPieceModel> model, std::vector<AddedToken> added_tokens,
      const WordPieceTokenizerOptions& options, const std::string& source);

  std::vector<int32_t> Encode(std::string_view text) const override;
  std::vector<int32_t> EncodeOrdinary(std::string_view text) const override;
  // As the reference's decode(ids, skip_special_tokens=False).
  StatusOr<std::string> Decode(Span<const int32_t> ids) const override;

  int32_t vocab_size() const override { return static_cast<int32_t>(tokens_.size()); }
  std::optional<int32_t> TokenId(const std::string& token) const override;
  const std::vector<AddedToken>& added_tokens() const override { return added_tokens_; }
  std::string BehaviourKey() const override;

  const WordPieceTokenizerOptions& options() const { return options_; }

 private:
  WordPieceTokenizer(std::unique_ptr<WordPieceModel> model, std::vector<AddedToken> added_tokens,
                     const WordPieceTokenizerOptions& options)
      : model_(std::move(model)),
        added_tokens_(std::move(added_tokens)),
        matcher_(added_tokens_),
        options_(options) {}
  void EncodeText(std::string_view text, std::vector<int32_t>* ids) const;

  std::unique_ptr<WordPieceModel> model_;
  std::vector<AddedToken> added_tokens_;
  AddedTokenMatcher matcher_;
  WordPieceTokenizerOptions options_;
  std::vector<std::string> tokens_;  // id -> spelling (added tokens: their content)
  std::vector<bool> is_token_;       // ids may have gaps
};

}  // namespace geotrain::models
