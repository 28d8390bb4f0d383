// WordPieceModel: BERT's subword model, one word (a pre-token) -> ids.
//
// Greedy longest-match-first, as Hugging Face's WordPiece: the longest vocabulary entry that
// starts the word, then the longest entry spelled continuing_subword_prefix + the rest ("##ing"),
// and so on. A word that some position cannot continue, or that is longer than
// max_input_chars_per_word characters, is the unknown token as a whole. Immutable after Create:
// thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/status.h"

namespace geotrain::models {

struct WordPieceModelOptions {
  std::string unk_token = "[UNK]";
  std::string continuing_subword_prefix = "##";
  size_t max_input_chars_per_word = 100;
};

class WordPieceModel {
 public:
  // `source` names the vocabulary in errors: an id out of range or given twice, an unknown token
  // missing from the vocabulary (the reference fails on the first unknown word instead).
  static StatusOr<std::unique_ptr<WordPieceModel>> Create(
      std::unordered_map<std::string, int32_t> vocab, const WordPieceModelOptions& options,
      const std::string& source);

  // Appends the ids of one word.
  void EncodeWord(std::u32string_view word, std::vector<int32_t>* ids) const;

  std::optional<int32_t> IdOf(const std::string& spelling) const;
  const std::unordered_map<std::string, int32_t>& vocab() const { return vocab_; }
  const WordPieceModelOptions& options() const { return options_; }

 private:
  WordPieceModel(std::unordered_map<std::string, int32_t> vocab,
                 const WordPieceModelOptions& options)
      : vocab_(std::move(vocab)), options_(options) {}

  std::unordered_map<std::string, int32_t> vocab_;
  WordPieceModelOptions options_;
  int32_t unk_id_ = 0;
  size_t longest_entry_bytes_ = 0;  // no longer candidate can match
};

}  // namespace geotrain::models
