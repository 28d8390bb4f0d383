// The GPT-2 tokenizer files checked into examples/tokenizers/gpt2, loaded once per test binary.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "models/tokenizer/tokenizer_loaders.h"

namespace geotrain::models::testing {

inline std::string Gpt2Dir() {
  return std::string(GEOTRAIN_SOURCE_DIR) + "/examples/tokenizers/gpt2";
}

// From vocab.json + merges.txt; nullptr (with a test failure) if loading fails.
inline const BpeTokenizer* Gpt2FromVocabMerges() {
  static const auto* tokenizer = [] {
    auto loaded = LoadVocabMergesTokenizer(Gpt2Dir() + "/vocab.json", Gpt2Dir() + "/merges.txt");
    EXPECT_TRUE(loaded.ok()) << loaded.status().ToString();
    return loaded.ok() ? std::move(loaded).value().release() : nullptr;
  }();
  return tokenizer;
}

// From tokenizer.json.
inline const BpeTokenizer* Gpt2FromTokenizerJson() {
  static const auto* tokenizer = [] {
    auto loaded = LoadTokenizerJson(Gpt2Dir() + "/tokenizer.json");
    EXPECT_TRUE(loaded.ok()) << loaded.status().ToString();
    return loaded.ok() ? std::move(loaded).value().release() : nullptr;
  }();
  return tokenizer;
}

}  // namespace geotrain::models::testing
