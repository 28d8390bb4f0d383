// LoadWordPieceTokenizerJson (tokenizer_loaders.h): Hugging Face tokenizer.json with a WordPiece
// model (BERT). What is not implemented is refused by name.
#include "common/io/strict_json.h"
#include "models/tokenizer/bpe_file_parsing.h"
#include "models/tokenizer/tokenizer_json_reader.h"
#include "models/tokenizer/tokenizer_loaders.h"

namespace geotrain::models {
namespace {

using nlohmann::json;

class WordPieceJsonChecks : public TokenizerJsonReader {
 public:
  using TokenizerJsonReader::TokenizerJsonReader;

  // normalizer: BertNormalizer, or none (null).
  Status CheckNormalizer(BertNormalizerOptions* options) const {
    const json* normalizer = Field(root_, "normalizer");
    if (normalizer == nullptr) {
      *options = BertNormalizerOptions{false, false, false, false};
      return OkStatus();
    }
    if (!normalizer->is_object()) {
      return Error("normalizer", "expected an object, got " + io::JsonKindName(*normalizer));
    }
    const json* type = Field(*normalizer, "type");
    if (type == nullptr || !type->is_string() || type->get<std::string>() != "BertNormalizer") {
      return Unsupported("normalizer.type", type ? type->dump() : "null",
                         "geotrain implements BertNormalizer for WordPiece models");
    }
    GEOTRAIN_RETURN_IF_ERROR(
        CheckKeys(*normalizer, "normalizer",
                  {"type", "clean_text", "handle_chinese_chars", "strip_accents", "lowercase"}));
    GEOTRAIN_ASSIGN_OR_RETURN(options->clean_text,
                              Bool(*normalizer, "clean_text", "normalizer.clean_text", true));
    GEOTRAIN_ASSIGN_OR_RETURN(
        options->handle_chinese_chars,
        Bool(*normalizer, "handle_chinese_chars", "normalizer.handle_chinese_chars", true));
    GEOTRAIN_ASSIGN_OR_RETURN(options->lowercase,
                              Bool(*normalizer, "lowercase", "normalizer.lowercase", true));
    // null: strip accents exactly when lowercasing (BERT uncased), as the library does.
    GEOTRAIN_ASSIGN_OR_RETURN(
        options->strip_accents,
        Bool(*normalizer, "strip_accents", "normalizer.strip_accents", options->lowercase));
    return OkStatus();
  }

  Status CheckPreTokenizer() const {
    const json* pre = Field(root_, "pre_tokenizer");
    if (pre == nullptr) {
      return Error("pre_tokenizer", "missing; WordPiece models need the BertPreTokenizer");
    }
    if (!pre->is_object()) {
      return Error("pre_tokenizer", "expected an object, got " + io::JsonKindName(*pre));
    }
    const json* type = Field(*pre, "type");
    if (type == nullptr || !type->is_string() || type->get<std::string>() != "BertPreTokenizer") {
      return Unsupported("pre_tokenizer.type", type ? type->dump().substr(0, 200) : "null",
                         "geotrain implements BertPreTokenizer for WordPiece models");
    }
    return CheckKeys(*pre, "pre_tokenizer", {"type"});
  }

  Status CheckModel(const json& model, WordPieceModelOptions* options) const {
    GEOTRAIN_RETURN_IF_ERROR(CheckKeys(
        model, "model",
        {"type", "unk_token", "continuing_subword_prefix", "max_input_chars_per_word", "vocab"}));
    GEOTRAIN_ASSIGN_OR_RETURN(options->unk_token,
                              String(model, "unk_token", "model.unk_token", "[UNK]"));
    GEOTRAIN_ASSIGN_OR_RETURN(
        options->continuing_subword_prefix,
        String(model, "continuing_subword_prefix", "model.continuing_subword_prefix", "##"));
    if (const json* max = Field(model, "max_input_chars_per_word")) {
      GEOTRAIN_ASSIGN_OR_RETURN(
          const uint64_t value,
          io::JsonToUnsigned(*max, path_ + ": model.max_input_chars_per_word", 1ull << 32));
      options->max_input_chars_per_word = static_cast<size_t>(value);
    }
    return OkStatus();
  }

  // decoder: WordPiece (Decode implements no other).
  Status CheckDecoder(WordPieceDecoderOptions* options) const {
    const json* decoder = Field(root_, "decoder");
    if (decoder == nullptr) {
      return Error("decoder",
                   "missing; geotrain decodes WordPiece models with the WordPiece "
                   "decoder");
    }
    if (!decoder->is_object()) {
      return Error("decoder", "expected an object, got " + io::JsonKindName(*decoder));
    }
    const json* type = Field(*decoder, "type");
    if (type == nullptr || !type->is_string() || type->get<std::string>() != "WordPiece") {
      return Unsupported("decoder.type", type ? type->dump().substr(0, 200) : "null",
                         "geotrain implements the WordPiece decoder for WordPiece models");
    }
    GEOTRAIN_RETURN_IF_ERROR(CheckKeys(*decoder, "decoder", {"type", "prefix", "cleanup"}));
    GEOTRAIN_ASSIGN_OR_RETURN(options->prefix, String(*decoder, "prefix", "decoder.prefix", "##"));
    GEOTRAIN_ASSIGN_OR_RETURN(options->cleanup, Bool(*decoder, "cleanup", "decoder.cleanup", true));
    return OkStatus();
  }

  // The post-processor only acts when special tokens are added around an encoding, which
  // geotrain never asks for (classification_set.h frames examples itself); BERT's kinds are
  // accepted and not applied, others refused.
  Status CheckPostProcessor() const {
    const json* post = Field(root_, "post_processor");
    if (post == nullptr) return OkStatus();
    const json* type = post->is_object() ? Field(*post, "type") : nullptr;
    if (type == nullptr || !type->is_string() ||
        (type->get<std::string>() != "TemplateProcessing" &&
         type->get<std::string>() != "BertProcessing")) {
      return Unsupported("post_processor.type", type ? type->dump().substr(0, 200) : "null",
                         "geotrain accepts BERT's TemplateProcessing or BertProcessing, or null");
    }
    return OkStatus();
  }

  // Encode-time batch settings of the library's Python API: refused rather than ignored.
  Status CheckTruncationPadding() const {
    for (const char* key : {"truncation", "padding"}) {
      if (const json* value = Field(root_, key)) {
        return Unsupported(key, value->dump().substr(0, 200),
                           "geotrain sizes sequences itself; it must be null");
      }
    }
    return OkStatus();
  }

  // Added tokens marked "normalized" are matched in the normalized text by the reference;
  // geotrain matches added tokens in the raw text only.
  Status CheckAddedTokensNotNormalized(bool has_normalizer) const {
    const json* added = Field(root_, "added_tokens");
    if (added == nullptr || !added->is_array() || !has_normalizer) return OkStatus();
    for (size_t i = 0; i < added->size(); ++i) {
      if (!(*added)[i].is_object()) continue;  // AddedTokens() reports it
      const std::string field = "added_tokens[" + std::to_string(i) + "].normalized";
      GEOTRAIN_ASSIGN_OR_RETURN(const bool normalized,
                                Bool((*added)[i], "normalized", field, false));
      if (normalized) {
        return Unsupported(field, "true", "added tokens are matched in the raw text");
      }
    }
    return OkStatus();
  }

 private:
  StatusOr<std::string> String(const json& parent, const char* key, const std::string& field,
                               const std::string& default_value) const {
    const json* value = Field(parent, key);
    if (value == nullptr) return default_value;
    if (!value->is_string()) {
      return Error(field, "expected a string, got " + io::JsonKindName(*value));
    }
    return value->get<std::string>();
  }
};

}  // namespace

StatusOr<std::unique_ptr<WordPieceTokenizer>> WordPieceTokenizerFromJson(
    const std::string& path, const nlohmann::json& root) {
  const WordPieceJsonChecks reader(path, root);
  const json* model = TokenizerJsonReader::Field(root, "model");
  if (model == nullptr) return reader.Error("model", "missing");
  if (!model->is_object())
    return reader.Error("model", "expected an object, got " + io::JsonKindName(*model));
  const json* type = TokenizerJsonReader::Field(*model, "type");
  if (type == nullptr) return reader.Error("model.type", "missing");
  if (!type->is_string() || type->get<std::string>() != "WordPiece") {
    return reader.Unsupported("model.type", type->dump(), "this loader reads WordPiece models");
  }
  WordPieceVocabOptions options;  // only for its members' types; every field is set below
  GEOTRAIN_RETURN_IF_ERROR(reader.CheckModel(*model, &options.model));
  GEOTRAIN_RETURN_IF_ERROR(reader.CheckNormalizer(&options.tokenizer.normalizer));
  GEOTRAIN_RETURN_IF_ERROR(reader.CheckPreTokenizer());
  GEOTRAIN_RETURN_IF_ERROR(reader.CheckDecoder(&options.tokenizer.decoder));
  GEOTRAIN_RETURN_IF_ERROR(reader.CheckPostProcessor());
  GEOTRAIN_RETURN_IF_ERROR(reader.CheckTruncationPadding());
  GEOTRAIN_RETURN_IF_ERROR(reader.CheckAddedTokensNotNormalized(
      TokenizerJsonReader::Field(root, "normalizer") != nullptr));

  const json* vocab_json = TokenizerJsonReader::Field(*model, "vocab");
  if (vocab_json == nullptr) return reader.Error("model.vocab", "missing");
  GEOTRAIN_ASSIGN_OR_RETURN(auto vocab, ParseVocabObject(*vocab_json, path + ": model.vocab"));
  GEOTRAIN_ASSIGN_OR_RETURN(std::vector<AddedToken> added, reader.AddedTokens());
  GEOTRAIN_ASSIGN_OR_RETURN(
      std::unique_ptr<WordPieceModel> wordpiece,
      WordPieceModel::Create(std::move(vocab), options.model, path + ": model.vocab"));
  return WordPieceTokenizer::Create(std::move(wordpiece), std::move(added), options.tokenizer,
                                    path);
}

StatusOr<std::unique_ptr<WordPieceTokenizer>> LoadWordPieceTokenizerJson(const std::string& path) {
  GEOTRAIN_ASSIGN_OR_RETURN(const json root, ReadTokenizerJson(path));
  return WordPieceTokenizerFromJson(path, root);
}

}  // namespace geotrain::models
