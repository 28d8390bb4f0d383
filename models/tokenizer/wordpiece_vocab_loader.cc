// LoadWordPieceVocab (tokenizer_loaders.h): BERT's vocab.txt.
#include "common/io/file_contents.h"
#include "common/utf8.h"
#include "models/tokenizer/bert_unicode.h"
#include "models/tokenizer/tokenizer_loaders.h"

namespace geotrain::models {
namespace {

// BERT's vocab.txt is 0.2 MB; multilingual ones reach a few MB.
constexpr size_t kMaxVocabBytes = 64 << 20;

// `line` without trailing white space, as the reference's str::trim_end (Unicode White_Space).
std::string_view TrimEnd(std::string_view line) {
  size_t end = 0;
  for (size_t pos = 0; pos < line.size();) {
    const DecodedCodePoint decoded = DecodeUtf8(line, pos);
    pos += decoded.length;
    if (!IsBertWhitespace(decoded.code_point)) end = pos;
  }
  return line.substr(0, end);
}

}  // namespace

StatusOr<std::unique_ptr<WordPieceTokenizer>> LoadWordPieceVocab(
    const std::string& vocab_path, const WordPieceVocabOptions& options) {
  GEOTRAIN_ASSIGN_OR_RETURN(const std::string text,
                            io::ReadFileContents(vocab_path, kMaxVocabBytes));
  if (!IsValidUtf8(text)) return InvalidArgument(vocab_path + ": not valid UTF-8");
  std::unordered_map<std::string, int32_t> vocab;
  size_t line_start = 0;
  for (int32_t id = 0; line_start < text.size(); ++id) {
    size_t line_end = text.find('\n', line_start);
    if (line_end == std::string::npos) line_end = text.size();
    const std::string token(
        TrimEnd(std::string_view(text).substr(line_start, line_end - line_start)));
    line_start = line_end + 1;
    if (id > kMaxTokenId) {
      return InvalidArgument(vocab_path + ": more than " + std::to_string(kMaxTokenId + 1) +
                             " lines");
    }
    auto [it, inserted] = vocab.emplace(token, id);
    if (!inserted) {
      // The reference keeps the later line and leaves the earlier id without a token.
      return InvalidArgument(vocab_path + " line " + std::to_string(id + 1) + ": \"" + token +
                             "\" is also on line " + std::to_string(it->second + 1));
    }
  }
  std::vector<AddedToken> special;
  for (const std::string& content : options.special_tokens) {
    auto it = vocab.find(content);
    if (it != vocab.end()) special.push_back({content, it->second, true});
  }
  GEOTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<WordPieceModel> model,
                            WordPieceModel::Create(std::move(vocab), options.model, vocab_path));
  return WordPieceTokenizer::Create(std::move(model), std::move(special), options.tokenizer,
                                    vocab_path);
}

}  // namespace geotrain::models
