// TokenizerFingerprint: a 64-bit identity of a tokenizer's behaviour, part of the token cache key.
//
// BpeTokenizer does not expose its merge list, so the fingerprint is taken from what it does: the
// bytes of every id, the added tokens (content, id, special), and the ids that EncodeOrdinary
// gives for the bytes of every token. Two tokenizers with the same fingerprint spell every id
// alike and tokenize every vocabulary entry alike, which a changed vocabulary, merge list or
// option (add_prefix_space) breaks in practice. About 0.1 s for GPT-2's 50257 tokens.
// Thread-safe (BpeTokenizer is).
#pragma once

#include <cstdint>

#include "models/tokenizer/bpe_tokenizer.h"

namespace geotrain::models::data {

uint64_t TokenizerFingerprint(const BpeTokenizer& tokenizer);

}  // namespace geotrain::models::data
