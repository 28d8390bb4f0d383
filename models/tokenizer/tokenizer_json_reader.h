// TokenizerJsonReader: field access and errors for the tokenizer.json loaders (BPE:
// tokenizer_json_loader.cc, WordPiece: wordpiece_json_loader.cc, Unigram:
// unigram_json_loader.cc). Internal to models/tokenizer.
#pragma once

#include <initializer_list>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/io/strict_json.h"
#include "common/status.h"
#include "models/tokenizer/added_token_matcher.h"
#include "models/tokenizer/bpe_model.h"
#include "models/tokenizer/bpe_tokenizer.h"
#include "models/tokenizer/unigram_tokenizer.h"
#include "models/tokenizer/wordpiece_tokenizer.h"

namespace geotrain::models {

// Errors of one tokenizer.json, each naming the file and the field.
class TokenizerJsonReader {
 public:
  using json = nlohmann::json;

  TokenizerJsonReader(const std::string& path, const json& root) : path_(path), root_(root) {}

  Status Error(const std::string& field, const std::string& reason) const {
    return InvalidArgument(path_ + ": " + field + ": " + reason);
  }
  Status Unsupported(const std::string& field, const std::string& value,
                     const std::string& supported) const {
    return InvalidArgument(path_ + ": " + field + ": " + value + " is not supported (" + supported +
                           ")");
  }

  // `parent.key` if present and not null, else nullptr.
  static const json* Field(const json& parent, const char* key) {
    auto it = parent.find(key);
    return it == parent.end() || it->is_null() ? nullptr : &*it;
  }

  // Refuses keys the loader does not know: a newer library's option would otherwise be ignored.
  Status CheckKeys(const json& object, const std::string& field,
                   std::initializer_list<const char*> known) const {
    for (auto it = object.begin(); it != object.end(); ++it) {
      bool found = false;
      for (const char* key : known) found = found || it.key() == key;
      if (!found) {
        return Unsupported(field + "." + it.key(), it.value().dump().substr(0, 200),
                           "not implemented");
      }
    }
    return OkStatus();
  }

  StatusOr<bool> Bool(const json& parent, const char* key, const std::string& field,
                      bool default_value) const {
    const json* value = Field(parent, key);
    if (value == nullptr) return default_value;
    if (!value->is_boolean())
      return Error(field, "expected a boolean, got " + io::JsonKindName(*value));
    return value->get<bool>();
  }

  StatusOr<std::vector<AddedToken>> AddedTokens() const {
    std::vector<AddedToken> tokens;
    const json* added = Field(root_, "added_tokens");
    if (added == nullptr) return tokens;
    if (!added->is_array())
      return Error("added_tokens", "expected an array, got " + io::JsonKindName(*added));
    for (size_t i = 0; i < added->size(); ++i) {
      const json& entry = (*added)[i];
      const std::string field = "added_tokens[" + std::to_string(i) + "]";
      if (!entry.is_object()) {
        return Error(field, "expected an object, got " + io::JsonKindName(entry));
      }
      const json* id = Field(entry, "id");
      if (id == nullptr) return Error(field + ".id", "missing");
      auto id_value = io::JsonToUnsigned(*id, path_ + ": " + field + ".id", kMaxTokenId);
      if (!id_value.ok()) return id_value.status();
      const json* content = Field(entry, "content");
      if (content == nullptr) return Error(field + ".content", "missing");
      if (!content->is_string() || content->get<std::string>().empty()) {
        return Error(field + ".content", "expected a non-empty string, got " + content->dump());
      }
      for (const char* key : {"lstrip", "rstrip", "single_word"}) {
        GEOTRAIN_ASSIGN_OR_RETURN(const bool set, Bool(entry, key, field + "." + key, false));
        if (set) return Unsupported(field + "." + key, "true", "added tokens match verbatim");
      }
      GEOTRAIN_ASSIGN_OR_RETURN(const bool special,
                                Bool(entry, "special", field + ".special", false));
      tokens.push_back({content->get<std::string>(), static_cast<int32_t>(*id_value), special});
    }
    return tokens;
  }

 protected:
  const std::string& path_;
  const json& root_;
};

// The file at `path` as a JSON object (size-limited, strict).
StatusOr<nlohmann::json> ReadTokenizerJson(const std::string& path);

// The tokenizer a parsed tokenizer.json describes, by model; `path` names it in errors.
StatusOr<std::unique_ptr<BpeTokenizer>> BpeTokenizerFromJson(const std::string& path,
                                                             const nlohmann::json& root);
StatusOr<std::unique_ptr<WordPieceTokenizer>> WordPieceTokenizerFromJson(
    const std::string& path, const nlohmann::json& root);
StatusOr<std::unique_ptr<UnigramTokenizer>> UnigramTokenizerFromJson(const std::string& path,
                                                                     const nlohmann::json& root);

}  // namespace geotrain::models
