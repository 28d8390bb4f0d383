#include "models/tokenizer/wordpiece_tokenizer.h"

#include <algorithm>
#include <map>

#include "models/tokenizer/bert_pretokenizer.h"
#include "models/tokenizer/bpe_model.h"

namespace geotrain::models {
namespace {

void ReplaceAll(std::string* text, std::string_view from, std::string_view to) {
  size_t pos = 0;
  while ((pos = text->find(from, pos)) != std::string::npos) {
    text->replace(pos, from.size(), to);
    pos += to.size();
  }
}

// The reference decoder's cleanup, applied to each token (with its leading space) in turn; the
// order of the replacements is the library's.
void CleanUpToken(std::string* token) {
  static constexpr std::pair<std::string_view, std::string_view> kReplacements[] = {
      {" .", "."},   {" ?", "?"},     {" !", "!"},     {" ,", ","},
      {" ' ", "'"},  {" n't", "n't"}, {" 'm", "'m"},   {" do not", " don't"},
      {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"},
  };
  if (token->find(' ') == std::string::npos) return;
  for (const auto& [from, to] : kReplacements) ReplaceAll(token, from, to);
}

}  // namespace

StatusOr<std::unique_ptr<WordPieceTokenizer>> WordPieceTokenizer::Create(
    std::unique_ptr<WordPieceModel> model, std::vector<AddedToken> added_tokens,
    const WordPieceTokenizerOptions& options, const std::string& source) {
  int32_t max_vocab_id = -1;
  for (const auto& entry : model->vocab()) max_vocab_id = std::max(max_vocab_id, entry.second);
  GEOTRAIN_ASSIGN_OR_RETURN(
      const int32_t max_id,
      CheckAddedTokens(
          added_tokens, max_vocab_id, kMaxTokenId,
          [&](const std::string& spelling) { return model->IdOf(spelling); }, source));

  std::unique_ptr<WordPieceTokenizer> tokenizer(
      new WordPieceTokenizer(std::move(model), std::move(added_tokens), options));
  tokenizer->tokens_.resize(static_cast<size_t>(max_id + 1));
  tokenizer->is_token_.resize(static_cast<size_t>(max_id + 1));
  for (const auto& [spelling, id] : tokenizer->model_->vocab()) {
    tokenizer->tokens_[id] = spelling;
    tokenizer->is_token_[id] = true;
  }
  for (const AddedToken& token : tokenizer->added_tokens_) {
    tokenizer->tokens_[token.id] = token.content;
    tokenizer->is_token_[token.id] = true;
  }
  return tokenizer;
}

void WordPieceTokenizer::EncodeText(std::string_view text, std::vector<int32_t>* ids) const {
  if (text.empty()) return;
  const std::u32string normalized = NormalizeBert(text, options_.normalizer);
  std::vector<std::u32string_view> words;
  SplitBertPretokens(normalized, &words);
  for (std::u32string_view word : words) model_->EncodeWord(word, ids);
}

std::vector<int32_t> WordPieceTokenizer::Encode(std::string_view text) const {
  return matcher_.Encode(
      text, [&](std::string_view stretch, std::vector<int32_t>* ids) { EncodeText(stretch, ids); });
}

std::vector<int32_t> WordPieceTokenizer::EncodeOrdinary(std::string_view text) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 4);
  EncodeText(text, &ids);
  return ids;
}

StatusOr<std::string> WordPieceTokenizer::Decode(Span<const int32_t> ids) const {
  const std::string& prefix = options_.decoder.prefix;
  std::string text;
  std::string token;
  for (size_t i = 0; i < ids.size(); ++i) {
    const int32_t id = ids[i];
    if (id < 0 || id >= vocab_size() || !is_token_[id]) {
      return InvalidArgument("Decode: ids[" + std::to_string(i) + "] = " + std::to_string(id) +
                             " is not a token (vocabulary size " + std::to_string(vocab_size()) +
                             ")");
    }
    token = tokens_[id];
    if (i > 0) {
      // The reference removes the prefix's first occurrence, which starts_with makes the start
      // (an empty prefix glues every token).
      if (token.compare(0, prefix.size(), prefix) == 0) {
        token.erase(0, prefix.size());
      } else {
        token.insert(token.begin(), ' ');
      }
    }
    if (options_.decoder.cleanup) CleanUpToken(&token);
    text += token;
  }
  return text;
}

std::optional<int32_t> WordPieceTokenizer::TokenId(const std::string& token) const {
  for (const AddedToken& added : added_tokens_) {
    if (added.content == token) return added.id;
  }
  return model_->IdOf(token);
}

std::string WordPieceTokenizer::BehaviourKey() const {
  const BertNormalizerOptions& n = options_.normalizer;
  const WordPieceModelOptions& m = model_->options();
  std::string key = "WordPiece v1";
  for (bool flag : {n.clean_text, n.handle_chinese_chars, n.strip_accents, n.lowercase,
                    options_.decoder.cleanup}) {
    key += flag ? " 1" : " 0";
  }
  key += " max=" + std::to_string(m.max_input_chars_per_word);
  // Lengths first, so no two settings read alike.
  for (const std::string* s :
       {&m.unk_token, &m.continuing_subword_prefix, &options_.decoder.prefix}) {
    key += " " + std::to_string(s->size()) + ":" + *s;
  }
  return key;
}

}  // namespace geotrain::models
