// GgufTokenizerToJson (gguf_tokenizer_json.h).
#include "models/gguf/gguf_tokenizer_json.h"

#include <nlohmann/json.hpp>

namespace geotrain::models {
namespace {

using nlohmann::json;

// llama.cpp's token types (llama_token_type / gguf-py TokenType).
constexpr int64_t kControlToken = 3;
constexpr int64_t kUserDefinedToken = 4;

json ByteLevelPreTokenizer() {
  return {{"type", "ByteLevel"},
          {"add_prefix_space", false},
          {"trim_offsets", true},
          {"use_regex", true}};
}

StatusOr<json> PreTokenizerFor(const GgufFile& file) {
  std::string pre = "gpt-2";
  if (const GgufValue* value = file.FindMetadata("tokenizer.ggml.pre")) {
    GEOTRAIN_ASSIGN_OR_RETURN(pre, value->String("tokenizer.ggml.pre"));
  }
  if (pre == "gpt-2") return ByteLevelPreTokenizer();
  if (pre == "smollm") {
    return json{
        {"type", "Sequence"},
        {"pretokenizers", json::array({json{{"type", "Digits"}, {"individual_digits", true}},
                                       ByteLevelPreTokenizer()})}};
  }
  return InvalidArgument(file.path() + ": tokenizer.ggml.pre: " + pre +
                         " is not supported (known: gpt-2, smollm)");
}

}  // namespace

StatusOr<std::string> GgufTokenizerToJson(const GgufFile& file) {
  GEOTRAIN_ASSIGN_OR_RETURN(const GgufValue* model, file.GetMetadata("tokenizer.ggml.model"));
  GEOTRAIN_ASSIGN_OR_RETURN(const std::string model_name, model->String("tokenizer.ggml.model"));
  if (model_name != "gpt2") {
    return InvalidArgument(file.path() + ": tokenizer.ggml.model: " + model_name +
                           " is not supported (geotrain reads byte-level BPE, \"gpt2\")");
  }
  GEOTRAIN_ASSIGN_OR_RETURN(const GgufValue* tokens, file.GetMetadata("tokenizer.ggml.tokens"));
  GEOTRAIN_ASSIGN_OR_RETURN(const GgufValue* merges, file.GetMetadata("tokenizer.ggml.merges"));
  if (!tokens->is_array || tokens->type != GgufValueType::kString) {
    return InvalidArgument(file.path() + ": tokenizer.ggml.tokens: expected array[string], got " +
                           tokens->TypeName());
  }
  if (!merges->is_array || merges->type != GgufValueType::kString) {
    return InvalidArgument(file.path() + ": tokenizer.ggml.merges: expected array[string], got " +
                           merges->TypeName());
  }
  const GgufValue* types = file.FindMetadata("tokenizer.ggml.token_type");
  if (types != nullptr &&
      (!types->is_array || !IsGgufIntegerType(types->type) || types->size() != tokens->size())) {
    return InvalidArgument(file.path() + ": tokenizer.ggml.token_type: expected " +
                           std::to_string(tokens->size()) + " integers, got " +
                           std::to_string(types->size()) + " " + types->TypeName());
  }
  GEOTRAIN_ASSIGN_OR_RETURN(json pre_tokenizer, PreTokenizerFor(file));

  json vocab = json::object();
  json added = json::array();
  for (size_t id = 0; id < tokens->strings.size(); ++id) {
    const std::string& token = tokens->strings[id];
    if (!vocab.emplace(token, id).second) {
      return InvalidArgument(file.path() + ": tokenizer.ggml.tokens[" + std::to_string(id) +
                             "]: duplicate token " + json(token).dump());
    }
    const int64_t type = types ? static_cast<int64_t>(types->integers[id]) : 1;
    if (type == kControlToken || type == kUserDefinedToken) {
      added.push_back({{"id", id},
                       {"content", token},
                       {"single_word", false},
                       {"lstrip", false},
                       {"rstrip", false},
                       {"normalized", false},
                       {"special", type == kControlToken}});
    }
  }
  json root = {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", std::move(added)},
      {"normalizer", nullptr},
      {"pre_tokenizer", std::move(pre_tokenizer)},
      {"post_processor", nullptr},
      {"decoder", ByteLevelPreTokenizer()},
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"unk_token", nullptr},
        {"continuing_subword_prefix", nullptr},
        {"end_of_word_suffix", nullptr},
        {"fuse_unk", false},
        {"byte_fallback", false},
        {"ignore_merges", false},
        {"vocab", std::move(vocab)},
        {"merges", merges->strings}}},
  };
  // Byte-level BPE tokens are valid UTF-8 by construction; a hostile file's stray bytes make
  // dump throw, which is reported rather than silently replaced (it would change the token).
  try {
    return root.dump(1);
  } catch (const json::exception& e) {
    return InvalidArgument(file.path() + ": tokenizer.ggml.tokens/merges: not valid UTF-8 (" +
                           e.what() + ")");
  }
}

}  // namespace geotrain::models
