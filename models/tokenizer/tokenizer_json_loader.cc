// LoadTokenizerJson and LoadAnyTokenizerJson (tokenizer_loaders.h): Hugging Face tokenizer.json
// with a byte-level BPE model, or dispatched to the WordPiece (wordpiece_json_loader.cc) or
// Unigram (unigram_json_loader.cc) loader.
#include "common/io/file_contents.h"
#include "common/io/strict_json.h"
#include "models/tokenizer/bpe_file_parsing.h"
#include "models/tokenizer/tokenizer_json_reader.h"
#include "models/tokenizer/tokenizer_loaders.h"

namespace geotrain::models {
namespace {

using nlohmann::json;

constexpr size_t kMaxTokenizerJsonBytes = 128 << 20;

// The BPE-specific checks of a tokenizer.json.
class BpeJsonChecks : public TokenizerJsonReader {
 public:
  using TokenizerJsonReader::TokenizerJsonReader;

  // model: BPE without dropout, prefixes or suffixes.
  Status CheckModel(const json& model, BpeModelOptions* options) const {
    const json* type = Field(model, "type");
    if (type == nullptr) return Error("model.type", "missing");
    if (!type->is_string() || type->get<std::string>() != "BPE") {
      return Unsupported("model.type", type->dump(),
                         "geotrain reads BPE, WordPiece and Unigram models");
    }
    if (const json* dropout = Field(model, "dropout")) {
      if (!dropout->is_number() || dropout->get<double>() != 0.0) {
        return Unsupported("model.dropout", dropout->dump(), "BPE dropout is for training only");
      }
    }
    for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
      const json* value = Field(model, key);
      if (value != nullptr && !(value->is_string() && value->get<std::string>().empty())) {
        return Unsupported(std::string("model.") + key, value->dump(),
                           "byte-level BPE uses neither");
      }
    }
    GEOTRAIN_ASSIGN_OR_RETURN(options->ignore_merges,
                              Bool(model, "ignore_merges", "model.ignore_merges", false));
    return OkStatus();
  }

  // pre_tokenizer: ByteLevel with the GPT-2 pattern, alone or in a Sequence, optionally after
  // Digits (SmolLM2: Sequence[Digits{individual_digits: true}, ByteLevel]).
  Status CheckPreTokenizer(BpeTokenizerOptions* options) const {
    const json* pre = Field(root_, "pre_tokenizer");
    std::string field = "pre_tokenizer";
    if (pre == nullptr)
      return Error(field, "missing; byte-level BPE needs a ByteLevel pre-tokenizer");
    if (!pre->is_object()) return Error(field, "expected an object, got " + io::JsonKindName(*pre));
    const json* type = Field(*pre, "type");
    if (type != nullptr && type->is_string() && type->get<std::string>() == "Sequence") {
      constexpr const char* kSupportedSequences =
          "a Sequence must hold exactly one ByteLevel pre-tokenizer, or Digits then ByteLevel";
      const json* members = Field(*pre, "pretokenizers");
      if (members == nullptr || !members->is_array() || members->empty() || members->size() > 2 ||
          !(*members)[0].is_object() || !members->back().is_object()) {
        return Unsupported("pre_tokenizer.pretokenizers",
                           members ? members->dump().substr(0, 200) : "null", kSupportedSequences);
      }
      if (members->size() == 2) {
        GEOTRAIN_ASSIGN_OR_RETURN(
            options->digits,
            CheckDigits((*members)[0], "pre_tokenizer.pretokenizers[0]", kSupportedSequences));
      }
      field = "pre_tokenizer.pretokenizers[" + std::to_string(members->size() - 1) + "]";
      pre = &members->back();
      type = Field(*pre, "type");
    }
    if (type == nullptr || !type->is_string() || type->get<std::string>() != "ByteLevel") {
      return Unsupported(field + ".type", type ? type->dump() : "null",
                         "geotrain implements the ByteLevel pre-tokenizer");
    }
    GEOTRAIN_ASSIGN_OR_RETURN(const bool use_regex,
                              Bool(*pre, "use_regex", field + ".use_regex", true));
    if (!use_regex) {
      return Unsupported(field + ".use_regex", "false", "the GPT-2 split pattern is always used");
    }
    GEOTRAIN_ASSIGN_OR_RETURN(options->add_prefix_space,
                              Bool(*pre, "add_prefix_space", field + ".add_prefix_space", false));
    if (options->add_prefix_space && options->digits != DigitSplitting::kNone) {
      // ByteLevel would prefix every piece Digits left, each digit included.
      return Unsupported(field + ".add_prefix_space", "true",
                         "not implemented after a Digits pre-tokenizer");
    }
    return OkStatus();
  }

  // A Digits member of a pre_tokenizer Sequence: how it splits.
  StatusOr<DigitSplitting> CheckDigits(const json& digits, const std::string& field,
                                       const char* supported) const {
    const json* type = Field(digits, "type");
    if (type == nullptr || !type->is_string() || type->get<std::string>() != "Digits") {
      return Unsupported(field + ".type", type ? type->dump() : "null", supported);
    }
    GEOTRAIN_ASSIGN_OR_RETURN(const bool individual, Bool(digits, "individual_digits",
                                                          field + ".individual_digits", false));
    return individual ? DigitSplitting::kIndividual : DigitSplitting::kContiguous;
  }
};

}  // namespace

StatusOr<nlohmann::json> ReadTokenizerJson(const std::string& path) {
  GEOTRAIN_ASSIGN_OR_RETURN(std::string text, io::ReadFileContents(path, kMaxTokenizerJsonBytes));
  GEOTRAIN_ASSIGN_OR_RETURN(json root, io::ParseStrictJson(text, path));
  text.clear();
  if (!root.is_object()) {
    return InvalidArgument(path + ": expected a JSON object, got " + io::JsonKindName(root));
  }
  return root;
}

StatusOr<std::unique_ptr<BpeTokenizer>> LoadTokenizerJson(const std::string& path) {
  GEOTRAIN_ASSIGN_OR_RETURN(const json root, ReadTokenizerJson(path));
  return BpeTokenizerFromJson(path, root);
}

StatusOr<std::unique_ptr<Tokenizer>> LoadAnyTokenizerJson(const std::string& path) {
  GEOTRAIN_ASSIGN_OR_RETURN(const json root, ReadTokenizerJson(path));
  // Dispatch on model.type; every other problem is the chosen loader's to report.
  const json* model = TokenizerJsonReader::Field(root, "model");
  const json* type =
      model != nullptr && model->is_object() ? TokenizerJsonReader::Field(*model, "type") : nullptr;
  if (type != nullptr && type->is_string() && type->get<std::string>() == "WordPiece") {
    return AsTokenizer(WordPieceTokenizerFromJson(path, root));
  }
  if (type != nullptr && type->is_string() && type->get<std::string>() == "Unigram") {
    return AsTokenizer(UnigramTokenizerFromJson(path, root));
  }
  return AsTokenizer(BpeTokenizerFromJson(path, root));
}

StatusOr<std::unique_ptr<BpeTokenizer>> BpeTokenizerFromJson(const std::string& path,
                                                             const nlohmann::json& root) {
  const BpeJsonChecks reader(path, root);

  if (const json* normalizer = TokenizerJsonReader::Field(root, "normalizer")) {
    return reader.Unsupported("normalizer", normalizer->dump().substr(0, 200),
                              "geotrain applies no normalizer; it must be null");
  }
  const json* model = TokenizerJsonReader::Field(root, "model");
  if (model == nullptr) return reader.Error("model", "missing");
  if (!model->is_object())
    return reader.Error("model", "expected an object, got " + io::JsonKindName(*model));
  BpeModelOptions model_options;
  GEOTRAIN_RETURN_IF_ERROR(reader.CheckModel(*model, &model_options));
  BpeTokenizerOptions tokenizer_options;
  GEOTRAIN_RETURN_IF_ERROR(reader.CheckPreTokenizer(&tokenizer_options));

  const json* vocab_json = TokenizerJsonReader::Field(*model, "vocab");
  if (vocab_json == nullptr) return reader.Error("model.vocab", "missing");
  GEOTRAIN_ASSIGN_OR_RETURN(auto vocab, ParseVocabObject(*vocab_json, path + ": model.vocab"));
  const json* merges_json = TokenizerJsonReader::Field(*model, "merges");
  if (merges_json == nullptr) return reader.Error("model.merges", "missing");
  GEOTRAIN_ASSIGN_OR_RETURN(std::vector<BpeMergeRule> merges,
                            ParseMergesJson(*merges_json, path + ": model.merges"));
  GEOTRAIN_ASSIGN_OR_RETURN(std::vector<AddedToken> added, reader.AddedTokens());

  GEOTRAIN_ASSIGN_OR_RETURN(
      std::unique_ptr<BpeModel> bpe,
      BpeModel::Create(
          std::move(vocab), merges, model_options, path + ": model.vocab",
          [&](size_t i) { return path + ": model.merges[" + std::to_string(i) + "]"; }));
  return BpeTokenizer::Create(std::move(bpe), std::move(added), tokenizer_options, path);
}

}  // namespace geotrain::models
