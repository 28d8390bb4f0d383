// LoadVocabMergesTokenizer (tokenizer_loaders.h).
#include "common/io/file_contents.h"
#include "common/io/strict_json.h"
#include "models/tokenizer/bpe_file_parsing.h"
#include "models/tokenizer/tokenizer_loaders.h"

namespace geotrain::models {
namespace {

// GPT-2's files are 1 MB and 0.5 MB; the largest public BPE vocabularies are ~10 MB.
constexpr size_t kMaxTokenizerFileBytes = 128 << 20;
constexpr char kEndOfText[] = "<|endoftext|>";

}  // namespace

StatusOr<std::unique_ptr<BpeTokenizer>> LoadVocabMergesTokenizer(
    const std::string& vocab_path, const std::string& merges_path,
    const VocabMergesOptions& options) {
  GEOTRAIN_ASSIGN_OR_RETURN(std::string vocab_text,
                            io::ReadFileContents(vocab_path, kMaxTokenizerFileBytes));
  GEOTRAIN_ASSIGN_OR_RETURN(nlohmann::json vocab_json, io::ParseStrictJson(vocab_text, vocab_path));
  GEOTRAIN_ASSIGN_OR_RETURN(auto vocab, ParseVocabObject(vocab_json, vocab_path));
  vocab_json = nullptr;  // free the DOM before building the model

  GEOTRAIN_ASSIGN_OR_RETURN(std::string merges_text,
                            io::ReadFileContents(merges_path, kMaxTokenizerFileBytes));
  GEOTRAIN_ASSIGN_OR_RETURN(ParsedMerges merges, ParseMergesText(merges_text, merges_path));

  std::vector<AddedToken> special;
  if (options.special_tokens) {
    for (const std::string& content : *options.special_tokens) {
      auto it = vocab.find(content);
      if (it == vocab.end()) {
        return InvalidArgument(vocab_path + ": special token \"" + content +
                               "\" is not in the vocabulary");
      }
      special.push_back({content, it->second, true});
    }
  } else if (auto it = vocab.find(kEndOfText); it != vocab.end()) {
    special.push_back({kEndOfText, it->second, true});
  }

  const std::vector<size_t>& lines = merges.line_numbers;
  GEOTRAIN_ASSIGN_OR_RETURN(
      std::unique_ptr<BpeModel> model,
      BpeModel::Create(
          std::move(vocab), merges.rules, BpeModelOptions(), vocab_path,
          [&](size_t i) { return merges_path + " line " + std::to_string(lines[i]); }));
  return BpeTokenizer::Create(std::move(model), std::move(special), options.tokenizer, vocab_path);
}

}  // namespace geotrain::models
