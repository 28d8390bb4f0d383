// AddedTokenMatcher: finds added (special) tokens such as "<|endoftext|>" in raw text.
//
// Added tokens are matched before pre-tokenization, so "<|endoftext|>" becomes its one id rather
// than the pieces "<|", "endoftext", "|>". Matching is leftmost, then longest, as Hugging Face does
// (its Aho-Corasick matcher is leftmost-longest). Immutable after construction: thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace geotrain::models {

struct AddedToken {
  std::string content;  // matched verbatim in the text, and what Decode writes for it
  int32_t id = 0;
  bool special = true;  // a control token (<|endoftext|>) rather than extra vocabulary
};

class AddedTokenMatcher {
 public:
  // Tokens with empty content are ignored (they could never be matched meaningfully).
  explicit AddedTokenMatcher(const std::vector<AddedToken>& tokens);

  // Calls on_text for each stretch of ordinary text (never empty) and on_token for each added
  // token found, in text order.
  void Split(std::string_view text, const std::function<void(std::string_view)>& on_text,
             const std::function<void(const AddedToken&)>& on_token) const;

  // A tokenizer's Encode: each added token's id, and between them what encode_text appends for
  // each stretch of ordinary text.
  std::vector<int32_t> Encode(
      std::string_view text,
      const std::function<void(std::string_view, std::vector<int32_t>*)>& encode_text) const;

  bool empty() const { return tokens_.empty(); }

 private:
  std::vector<AddedToken> tokens_;
  // For each first byte, indexes into tokens_ ordered longest first.
  std::vector<std::vector<size_t>> by_first_byte_;
};

// Checks a tokenizer's added tokens against each other and its vocabulary (`vocab_id` of a
// spelling): non-empty contents added once, ids in [0, max_token_id] used once, and a token that
// is also a vocabulary entry (GPT-2's <|endoftext|>, BERT's [CLS]) under the same id. Errors name
// `source` and the token. Returns the largest of their ids and `max_vocab_id`.
StatusOr<int32_t> CheckAddedTokens(
    const std::vector<AddedToken>& tokens, int32_t max_vocab_id, int32_t max_token_id,
    const std::function<std::optional<int32_t>(const std::string&)>& vocab_id,
    const std::string& source);

}  // namespace geotrain::models
