// The tiny byte-level tokenizer of tiny_bpe_files.h with "<|eot|>" (id 261) as its end-of-text
// token, for data pipeline tests: byte b is id b unless one of its few merges applies ("he",
// "ll", "hello", " w"), so token counts of test corpora are easy to predict.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "models/tokenizer/tokenizer_loaders.h"
#include "tests/models/tiny_bpe_files.h"
#include "tests/testing/temp_dir.h"

namespace geotrain::models::testing {

constexpr int32_t kTinyEndOfTextId = 261;
constexpr const char* kTinyEndOfText = "<|eot|>";

inline std::unique_ptr<BpeTokenizer> LoadTinyDataTokenizer(bool add_prefix_space = false) {
  ::geotrain::testing::TempDir dir;
  const std::string vocab = dir.Write("vocab.json", TinyVocab().dump());
  const std::string merges = dir.Write("merges.txt", TinyMergesText());
  VocabMergesOptions options;
  options.special_tokens = std::vector<std::string>{kTinyEndOfText};
  options.tokenizer.add_prefix_space = add_prefix_space;
  auto loaded = LoadVocabMergesTokenizer(vocab, merges, options);
  EXPECT_TRUE(loaded.ok()) << loaded.status().ToString();
  return loaded.ok() ? std::move(loaded).value() : nullptr;
}

// Shared by the tests of one binary (BpeTokenizer is thread-safe and immutable).
inline const BpeTokenizer& TinyDataTokenizer() {
  static const BpeTokenizer* tokenizer = LoadTinyDataTokenizer().release();
  return *tokenizer;
}

}  // namespace geotrain::models::testing
