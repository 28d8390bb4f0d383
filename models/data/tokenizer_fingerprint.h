// TokenizerFingerprint: a 64-bit identity of a tokenizer's behaviour, part of the token cache key.
//
// A Tokenizer does not expose its merge list, so the fingerprint is taken from what it does: the
// bytes of every id, the added tokens (content, id, special), and the ids that EncodeOrdinary
// gives for the bytes of every token. Two tokenizers with the same fingerprint spell every id
// alike and tokenize every vocabulary entry alike, which a changed vocabulary, merge list or
// option (add_prefix_space) breaks in practice. Settings the vocabulary need not reveal
// (WordPiece lowercasing an all-lowercase vocabulary) enter through Tokenizer::BehaviourKey.
// About 0.1 s for GPT-2's 50257 tokens. Thread-safe (tokenizers are).
#pragma once

#include <cstdint>

#include "models/tokenizer/tokenizer.h"

namespace geotrain::models::data {

uint64_t TokenizerFingerprint(const Tokenizer& tokenizer);

}  // namespace geotrain::models::data
