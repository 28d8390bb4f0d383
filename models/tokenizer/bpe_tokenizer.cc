#include "models/tokenizer/bpe_tokenizer.h"

#include <algorithm>
#include <map>

#include "models/tokenizer/byte_level_alphabet.h"
#include "models/tokenizer/gpt2_pretokenizer.h"

namespace geotrain::models {

StatusOr<std::unique_ptr<BpeTokenizer>> BpeTokenizer::Create(std::unique_ptr<BpeModel> model,
                                                             std::vector<AddedToken> added_tokens,
                                                             const BpeTokenizerOptions& options,
                                                             const std::string& source) {
  int32_t max_vocab_id = -1;
  for (const auto& entry : model->vocab()) max_vocab_id = std::max(max_vocab_id, entry.second);
  GEOTRAIN_ASSIGN_OR_RETURN(
      const int32_t max_id,
      CheckAddedTokens(
          added_tokens, max_vocab_id, kMaxTokenId,
          [&](const std::string& spelling) { return model->IdOf(spelling); }, source));

  std::unique_ptr<BpeTokenizer> tokenizer(
      new BpeTokenizer(std::move(model), std::move(added_tokens), options));
  tokenizer->token_bytes_.resize(static_cast<size_t>(max_id + 1));
  tokenizer->is_token_.resize(static_cast<size_t>(max_id + 1));
  for (const auto& [spelling, id] : tokenizer->model_->vocab()) {
    std::string bytes;
    // A vocabulary entry outside the byte alphabet (a special token listed only in the
    // vocabulary) decodes to its own text.
    if (!AlphabetToBytes(spelling, &bytes)) bytes = spelling;
    tokenizer->token_bytes_[id] = std::move(bytes);
    tokenizer->is_token_[id] = true;
  }
  // Added tokens decode to their content verbatim, also when the vocabulary lists them.
  for (const AddedToken& token : tokenizer->added_tokens_) {
    tokenizer->token_bytes_[token.id] = token.content;
    tokenizer->is_token_[token.id] = true;
  }
  return tokenizer;
}

void BpeTokenizer::EncodeText(std::string_view text, std::vector<int32_t>* ids) const {
  if (text.empty()) return;
  std::string prefixed;
  if (options_.add_prefix_space && text.front() != ' ') {
    prefixed.reserve(text.size() + 1);
    prefixed.push_back(' ');
    prefixed.append(text);
    text = prefixed;
  }
  std::vector<std::string_view> digit_pieces;
  SplitDigits(text, options_.digits, &digit_pieces);
  std::vector<std::string_view> pieces;
  for (std::string_view digit_piece : digit_pieces) SplitGpt2Pretokens(digit_piece, &pieces);
  for (std::string_view piece : pieces) model_->EncodePiece(piece, ids);
}

std::vector<int32_t> BpeTokenizer::Encode(std::string_view text) const {
  return matcher_.Encode(
      text, [&](std::string_view stretch, std::vector<int32_t>* ids) { EncodeText(stretch, ids); });
}

std::vector<int32_t> BpeTokenizer::EncodeOrdinary(std::string_view text) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3);
  EncodeText(text, &ids);
  return ids;
}

StatusOr<std::string> BpeTokenizer::Decode(Span<const int32_t> ids) const {
  std::string text;
  for (size_t i = 0; i < ids.size(); ++i) {
    const int32_t id = ids[i];
    if (id < 0 || id >= vocab_size() || !is_token_[id]) {
      return InvalidArgument("Decode: ids[" + std::to_string(i) + "] = " + std::to_string(id) +
                             " is not a token (vocabulary size " + std::to_string(vocab_size()) +
                             ")");
    }
    text += token_bytes_[id];
  }
  return text;
}

std::optional<int32_t> BpeTokenizer::TokenId(const std::string& token) const {
  for (const AddedToken& added : added_tokens_) {
    if (added.content == token) return added.id;
  }
  return model_->IdOf(token);
}

}  // namespace geotrain::models
