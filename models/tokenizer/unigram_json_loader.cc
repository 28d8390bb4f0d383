// LoadUnigramTokenizerJson (tokenizer_loaders.h): Hugging Face tokenizer.json with a Unigram model
// (SentencePiece; DeBERTa-v2/v3 as transformers' DebertaV2Tokenizer writes it). What is not
// implemented is refused by name.
#include "common/io/strict_json.h"
#include "common/utf8.h"
#include "models/tokenizer/tokenizer_json_reader.h"
#include "models/tokenizer/tokenizer_loaders.h"

namespace geotrain::models {
namespace {

using nlohmann::json;

// DeBERTa-v2/v3's only Regex: runs of white space and single \n \r \t.
constexpr const char* kWhitespaceRunsRegex = "\\s{2,}|[\\n\\r\\t]";

std::u32string ToCodePoints(const std::string& text) {
  std::u32string out;
  for (size_t pos = 0; pos < text.size();) {
    const DecodedCodePoint d = DecodeUtf8(text, pos);
    out.push_back(d.code_point);
    pos += d.length;
  }
  return out;
}

class UnigramJsonChecks : public TokenizerJsonReader {
 public:
  using TokenizerJsonReader::TokenizerJsonReader;

  Status CheckModel(const json& model, int32_t* unk_id) const {
    GEOTRAIN_RETURN_IF_ERROR(
        CheckKeys(model, "model", {"type", "unk_id", "vocab", "byte_fallback"}));
    const json* unk = Field(model, "unk_id");
    if (unk == nullptr) {
      return Unsupported("model.unk_id", "null",
                         "geotrain needs an unknown piece for characters no piece covers");
    }
    GEOTRAIN_ASSIGN_OR_RETURN(const uint64_t value,
                              io::JsonToUnsigned(*unk, path_ + ": model.unk_id", kMaxTokenId));
    *unk_id = static_cast<int32_t>(value);
    GEOTRAIN_ASSIGN_OR_RETURN(const bool byte_fallback,
                              Bool(model, "byte_fallback", "model.byte_fallback", false));
    if (byte_fallback) {
      return Unsupported("model.byte_fallback", "true",
                         "byte fallback is not implemented; unknown characters become unk_id");
    }
    return OkStatus();
  }

  StatusOr<std::vector<std::pair<std::string, double>>> Vocab(const json& model) const {
    const json* vocab = Field(model, "vocab");
    if (vocab == nullptr) return Error("model.vocab", "missing");
    if (!vocab->is_array()) {
      return Error("model.vocab", "expected an array, got " + io::JsonKindName(*vocab));
    }
    std::vector<std::pair<std::string, double>> out;
    out.reserve(vocab->size());
    for (size_t i = 0; i < vocab->size(); ++i) {
      const json& entry = (*vocab)[i];
      if (!entry.is_array() || entry.size() != 2 || !entry[0].is_string() ||
          !entry[1].is_number()) {
        return Error("model.vocab[" + std::to_string(i) + "]",
                     "expected [piece, score], got " + entry.dump().substr(0, 200));
      }
      out.emplace_back(entry[0].get<std::string>(), entry[1].get<double>());
    }
    return out;
  }

  // normalizer: null, or Replace / NFC / Strip, alone or in a Sequence.
  Status CheckNormalizer(std::vector<UnigramNormalizerStep>* steps) const {
    const json* normalizer = Field(root_, "normalizer");
    if (normalizer == nullptr) return OkStatus();
    if (!normalizer->is_object()) {
      return Error("normalizer", "expected an object, got " + io::JsonKindName(*normalizer));
    }
    const json* type = Field(*normalizer, "type");
    if (type != nullptr && type->is_string() && type->get<std::string>() == "Sequence") {
      GEOTRAIN_RETURN_IF_ERROR(CheckKeys(*normalizer, "normalizer", {"type", "normalizers"}));
      const json* members = Field(*normalizer, "normalizers");
      if (members == nullptr || !members->is_array()) {
        return Error("normalizer.normalizers", "expected an array");
      }
      for (size_t i = 0; i < members->size(); ++i) {
        GEOTRAIN_RETURN_IF_ERROR(
            CheckStep((*members)[i], "normalizer.normalizers[" + std::to_string(i) + "]", steps));
      }
      return OkStatus();
    }
    return CheckStep(*normalizer, "normalizer", steps);
  }

  // pre_tokenizer: Metaspace, alone or as the only member of a Sequence.
  Status CheckPreTokenizer(UnigramTokenizerOptions* options) const {
    const json* pre = Field(root_, "pre_tokenizer");
    std::string field = "pre_tokenizer";
    if (pre == nullptr) {
      return Error(field, "missing; geotrain implements Unigram models with Metaspace");
    }
    if (!pre->is_object()) return Error(field, "expected an object, got " + io::JsonKindName(*pre));
    const json* type = Field(*pre, "type");
    if (type != nullptr && type->is_string() && type->get<std::string>() == "Sequence") {
      GEOTRAIN_RETURN_IF_ERROR(CheckKeys(*pre, field, {"type", "pretokenizers"}));
      const json* members = Field(*pre, "pretokenizers");
      if (members == nullptr || !members->is_array() || members->size() != 1 ||
          !(*members)[0].is_object()) {
        return Unsupported("pre_tokenizer.pretokenizers",
                           members ? members->dump().substr(0, 200) : "null",
                           "a Sequence must hold exactly one Metaspace pre-tokenizer (DeBERTa's "
                           "split_by_punct Punctuation is not implemented)");
      }
      field = "pre_tokenizer.pretokenizers[0]";
      pre = &(*members)[0];
    }
    return CheckMetaspace(*pre, field, &options->replacement, &options->prepend_scheme,
                          &options->split);
  }

  Status CheckDecoder(UnigramTokenizerOptions* options) const {
    const json* decoder = Field(root_, "decoder");
    if (decoder == nullptr) {
      return Error("decoder", "missing; geotrain decodes Unigram models with Metaspace");
    }
    if (!decoder->is_object()) {
      return Error("decoder", "expected an object, got " + io::JsonKindName(*decoder));
    }
    bool split = true;  // the decoder does not split
    return CheckMetaspace(*decoder, "decoder", &options->decoder_replacement,
                          &options->decoder_prepend_scheme, &split);
  }

  // Only acts when special tokens are added around an encoding, which geotrain never asks for.
  Status CheckPostProcessor() const {
    const json* post = Field(root_, "post_processor");
    if (post == nullptr) return OkStatus();
    const json* type = post->is_object() ? Field(*post, "type") : nullptr;
    if (type == nullptr || !type->is_string() || type->get<std::string>() != "TemplateProcessing") {
      return Unsupported("post_processor.type", type ? type->dump().substr(0, 200) : "null",
                         "geotrain accepts DeBERTa's TemplateProcessing, or null");
    }
    return OkStatus();
  }

  Status CheckTruncationPadding() const {
    for (const char* key : {"truncation", "padding"}) {
      if (const json* value = Field(root_, key)) {
        return Unsupported(key, value->dump().substr(0, 200),
                           "geotrain sizes sequences itself; it must be null");
      }
    }
    return OkStatus();
  }

  // The reference matches added tokens marked "normalized" in the normalized text; geotrain
  // matches them in the raw text only.
  Status CheckAddedTokensNotNormalized() const {
    const json* added = Field(root_, "added_tokens");
    if (added == nullptr || !added->is_array() || Field(root_, "normalizer") == nullptr) {
      return OkStatus();
    }
    for (size_t i = 0; i < added->size(); ++i) {
      if (!(*added)[i].is_object()) continue;  // AddedTokens() reports it
      const std::string field = "added_tokens[" + std::to_string(i) + "].normalized";
      GEOTRAIN_ASSIGN_OR_RETURN(const bool normalized,
                                Bool((*added)[i], "normalized", field, false));
      if (normalized) return Unsupported(field, "true", "added tokens are matched in the raw text");
    }
    return OkStatus();
  }

 private:
  Status CheckStep(const json& step, const std::string& field,
                   std::vector<UnigramNormalizerStep>* steps) const {
    using Kind = UnigramNormalizerStep::Kind;
    const json* type = step.is_object() ? Field(step, "type") : nullptr;
    const std::string name = type != nullptr && type->is_string() ? type->get<std::string>() : "";
    UnigramNormalizerStep out;
    if (name == "NFC") {
      GEOTRAIN_RETURN_IF_ERROR(CheckKeys(step, field, {"type"}));
      out.kind = Kind::kNfc;
    } else if (name == "Strip") {
      GEOTRAIN_RETURN_IF_ERROR(CheckKeys(step, field, {"type", "strip_left", "strip_right"}));
      out.kind = Kind::kStrip;
      GEOTRAIN_ASSIGN_OR_RETURN(out.strip_left,
                                Bool(step, "strip_left", field + ".strip_left", false));
      GEOTRAIN_ASSIGN_OR_RETURN(out.strip_right,
                                Bool(step, "strip_right", field + ".strip_right", false));
    } else if (name == "Replace") {
      GEOTRAIN_RETURN_IF_ERROR(CheckKeys(step, field, {"type", "pattern", "content"}));
      const json* content = Field(step, "content");
      if (content == nullptr || !content->is_string()) {
        return Error(field + ".content", "expected a string");
      }
      out.content = ToCodePoints(content->get<std::string>());
      const json* pattern = Field(step, "pattern");
      const json* literal = pattern && pattern->is_object() ? Field(*pattern, "String") : nullptr;
      const json* regex = pattern && pattern->is_object() ? Field(*pattern, "Regex") : nullptr;
      if (literal != nullptr && literal->is_string() && !literal->get<std::string>().empty() &&
          pattern->size() == 1) {
        out.kind = Kind::kReplace;
        out.pattern = ToCodePoints(literal->get<std::string>());
      } else if (regex != nullptr && regex->is_string() &&
                 regex->get<std::string>() == kWhitespaceRunsRegex && pattern->size() == 1) {
        out.kind = Kind::kReplaceWhitespaceRuns;
      } else {
        return Unsupported(field + ".pattern", pattern ? pattern->dump().substr(0, 200) : "null",
                           std::string("geotrain implements a non-empty String pattern and the "
                                       "Regex ") +
                               kWhitespaceRunsRegex);
      }
    } else {
      // NFKC, NFD, NFKD, Lowercase, Precompiled (a SentencePiece charsmap), Prepend, ...
      return Unsupported(field + ".type", type ? type->dump().substr(0, 200) : "null",
                         "geotrain implements Replace, NFC and Strip for Unigram models");
    }
    steps->push_back(std::move(out));
    return OkStatus();
  }

  Status CheckMetaspace(const json& metaspace, const std::string& field, char32_t* replacement,
                        MetaspacePrependScheme* scheme, bool* split) const {
    const json* type = Field(metaspace, "type");
    if (type == nullptr || !type->is_string() || type->get<std::string>() != "Metaspace") {
      return Unsupported(field + ".type", type ? type->dump().substr(0, 200) : "null",
                         "geotrain implements Metaspace for Unigram models");
    }
    GEOTRAIN_RETURN_IF_ERROR(
        CheckKeys(metaspace, field, {"type", "replacement", "prepend_scheme", "split"}));
    if (const json* rep = Field(metaspace, "replacement")) {
      const std::u32string cps =
          rep->is_string() ? ToCodePoints(rep->get<std::string>()) : std::u32string();
      if (cps.size() != 1 || cps[0] == kInvalidCodePoint) {
        return Error(field + ".replacement", "expected one character, got " + rep->dump());
      }
      *replacement = cps[0];
    }
    if (const json* prepend = Field(metaspace, "prepend_scheme")) {
      const std::string value = prepend->is_string() ? prepend->get<std::string>() : "";
      if (value == "always") {
        *scheme = MetaspacePrependScheme::kAlways;
      } else if (value == "first") {
        *scheme = MetaspacePrependScheme::kFirst;
      } else if (value == "never") {
        *scheme = MetaspacePrependScheme::kNever;
      } else {
        return Unsupported(field + ".prepend_scheme", prepend->dump().substr(0, 200),
                           "\"always\", \"first\" or \"never\"");
      }
    }
    GEOTRAIN_ASSIGN_OR_RETURN(*split, Bool(metaspace, "split", field + ".split", true));
    return OkStatus();
  }
};

}  // namespace

StatusOr<std::unique_ptr<UnigramTokenizer>> UnigramTokenizerFromJson(const std::string& path,
                                                                     const nlohmann::json& root) {
  const UnigramJsonChecks reader(path, root);
  const json* model = TokenizerJsonReader::Field(root, "model");
  if (model == nullptr) return reader.Error("model", "missing");
  if (!model->is_object())
    return reader.Error("model", "expected an object, got " + io::JsonKindName(*model));
  const json* type = TokenizerJsonReader::Field(*model, "type");
  if (type == nullptr) return reader.Error("model.type", "missing");
  if (!type->is_string() || type->get<std::string>() != "Unigram") {
    return reader.Unsupported("model.type", type->dump(), "this loader reads Unigram models");
  }
  int32_t unk_id = 0;
  GEOTRAIN_RETURN_IF_ERROR(reader.CheckModel(*model, &unk_id));
  UnigramTokenizerOptions options;
  GEOTRAIN_RETURN_IF_ERROR(reader.CheckNormalizer(&options.normalizer));
  GEOTRAIN_RETURN_IF_ERROR(reader.CheckPreTokenizer(&options));
  GEOTRAIN_RETURN_IF_ERROR(reader.CheckDecoder(&options));
  GEOTRAIN_RETURN_IF_ERROR(reader.CheckPostProcessor());
  GEOTRAIN_RETURN_IF_ERROR(reader.CheckTruncationPadding());
  GEOTRAIN_RETURN_IF_ERROR(reader.CheckAddedTokensNotNormalized());
  GEOTRAIN_ASSIGN_OR_RETURN(auto vocab, reader.Vocab(*model));
  GEOTRAIN_ASSIGN_OR_RETURN(std::vector<AddedToken> added, reader.AddedTokens());
  return UnigramTokenizer::Create(std::move(vocab), unk_id, std::move(added), options, path);
}

StatusOr<std::unique_ptr<UnigramTokenizer>> LoadUnigramTokenizerJson(const std::string& path) {
  GEOTRAIN_ASSIGN_OR_RETURN(const json root, ReadTokenizerJson(path));
  return UnigramTokenizerFromJson(path, root);
}

}  // namespace geotrain::models
