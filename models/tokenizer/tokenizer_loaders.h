// Loading a BpeTokenizer from the files a Hugging Face model directory carries.
//
//  - vocab.json + merges.txt (GPT-2's original pair). They do not say which tokens are special;
//    GPT-2's convention, <|endoftext|>, is the default.
//  - tokenizer.json (the `tokenizers` library's single file): model.type "BPE" with a ByteLevel
//    pre-tokenizer (alone or as the only member of a Sequence), added_tokens read as tokens
//    matched before pre-tokenization. Settings geotrain does not implement (a normalizer, other
//    pre-tokenizers, dropout, subword prefixes/suffixes, lstrip/rstrip/single_word added tokens)
//    are refused by name rather than silently tokenizing differently from the reference.
// Errors name the file and the field. Thread-safe (no shared state).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "models/tokenizer/bpe_tokenizer.h"

namespace geotrain::models {

struct VocabMergesOptions {
  // Vocabulary entries to match as special tokens. nullopt: "<|endoftext|>" if the vocabulary has
  // it (GPT-2); an entry missing from the vocabulary is an error.
  std::optional<std::vector<std::string>> special_tokens;
  BpeTokenizerOptions tokenizer;
};

StatusOr<std::unique_ptr<BpeTokenizer>> LoadVocabMergesTokenizer(
    const std::string& vocab_path, const std::string& merges_path,
    const VocabMergesOptions& options = {});

StatusOr<std::unique_ptr<BpeTokenizer>> LoadTokenizerJson(const std::string& path);

// `dir`/tokenizer.json when present, else `dir`/vocab.json + `dir`/merges.txt.
StatusOr<std::unique_ptr<BpeTokenizer>> LoadTokenizerDirectory(const std::string& dir);

}  // namespace geotrain::models
