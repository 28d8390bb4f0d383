// SplitGpt2Pretokens: the GPT-2 pre-tokenization pattern, implemented by hand.
//
// The pattern is
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// (alternatives tried in order at each position, each greedy). No C++ regex library available here
// handles \p{L} and the look-ahead well, so this is a direct scanner with the same results, checked
// against Hugging Face tokenizers on the golden strings. Notably:
//  - contractions are case-sensitive ("'S" is punctuation then a letter);
//  - one space attaches to the following letter/number/punctuation run ("a b" -> "a", " b");
//  - in a run of white space followed by a non-space, the last white-space character is left for
//    the next piece (\s+(?!\S)); it joins that piece only if it is a plain space.
// Invalid UTF-8 bytes count as "other" characters. Stateless; thread-safe.
#pragma once

#include <string_view>
#include <vector>

namespace geotrain::models {

// Appends to `pieces` the consecutive, non-empty pieces of `text`; together they are `text`.
void SplitGpt2Pretokens(std::string_view text, std::vector<std::string_view>* pieces);

}  // namespace geotrain::models
