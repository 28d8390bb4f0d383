// SplitBertPretokens: Hugging Face's BertPreTokenizer, which cuts normalized text into words.
//
// White space separates words and is dropped; each punctuation character (bert_unicode.h: ASCII
// punctuation and symbols, Unicode P*) is a word of its own. Stateless; thread-safe.
#pragma once

#include <string_view>
#include <vector>

namespace geotrain::models {

// Appends the words of `text`, none empty, in order; they point into `text`.
void SplitBertPretokens(std::u32string_view text, std::vector<std::u32string_view>* words);

}  // namespace geotrain::models
