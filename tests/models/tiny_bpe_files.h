// A tiny byte-level BPE vocabulary (the 256 byte tokens plus a few merges) as vocab.json,
// merges.txt and tokenizer.json text, for tests that break one field at a time.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "common/utf8.h"
#include "models/tokenizer/byte_level_alphabet.h"

namespace geotrain::models::testing {

inline std::string ByteSpelling(int byte) {
  std::string s;
  AppendUtf8(ByteToAlphabetCodePoint(static_cast<uint8_t>(byte)), &s);
  return s;
}

// Byte b has id b; then "he"=256, "ll"=257, "hell"=258, "hello"=259, "Ġw"=260, "<|eot|>"=261.
inline nlohmann::json TinyVocab() {
  nlohmann::json vocab = nlohmann::json::object();
  for (int b = 0; b < 256; ++b) vocab[ByteSpelling(b)] = b;
  vocab["he"] = 256;
  vocab["ll"] = 257;
  vocab["hell"] = 258;
  vocab["hello"] = 259;
  vocab["Ġw"] = 260;
  vocab["<|eot|>"] = 261;
  return vocab;
}

inline std::vector<std::pair<std::string, std::string>> TinyMerges() {
  return {{"h", "e"}, {"l", "l"}, {"he", "ll"}, {"hell", "o"}, {"Ġ", "w"}};
}

inline std::string TinyMergesText() {
  std::string text = "#version: 0.2\n";
  for (const auto& [a, b] : TinyMerges()) text += a + " " + b + "\n";
  return text;
}

inline nlohmann::json TinyTokenizerJson() {
  nlohmann::json merges = nlohmann::json::array();
  for (const auto& [a, b] : TinyMerges()) merges.push_back({a, b});
  return {
      {"version", "1.0"},
      {"added_tokens",
       {{{"id", 261},
         {"content", "<|eot|>"},
         {"single_word", false},
         {"lstrip", false},
         {"rstrip", false},
         {"normalized", false},
         {"special", true}}}},
      {"normalizer", nullptr},
      {"pre_tokenizer",
       {{"type", "ByteLevel"},
        {"add_prefix_space", false},
        {"trim_offsets", true},
        {"use_regex", true}}},
      {"post_processor", nullptr},
      {"decoder", {{"type", "ByteLevel"}}},
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"unk_token", nullptr},
        {"continuing_subword_prefix", nullptr},
        {"end_of_word_suffix", nullptr},
        {"fuse_unk", false},
        {"byte_fallback", false},
        {"ignore_merges", false},
        {"vocab", TinyVocab()},
        {"merges", merges}}},
  };
}

}  // namespace geotrain::models::testing
