// Loading a Tokenizer from the files a Hugging Face model directory carries.
//
//  - vocab.json + merges.txt (GPT-2's original pair). They do not say which tokens are special;
//    GPT-2's convention, <|endoftext|>, is the default.
//  - tokenizer.json (the `tokenizers` library's single file): model.type "BPE" with a ByteLevel
//    pre-tokenizer (alone or as the only member of a Sequence), added_tokens read as tokens
//    matched before pre-tokenization. Settings geotrain does not implement (a normalizer, other
//    pre-tokenizers, dropout, subword prefixes/suffixes, lstrip/rstrip/single_word added tokens)
//    are refused by name rather than silently tokenizing differently from the reference.
//  - tokenizer.json with model.type "WordPiece" (BERT): a BertNormalizer (or none), the
//    BertPreTokenizer and the WordPiece decoder; other settings are refused by name.
//  - vocab.txt (BERT's original file, one token per line, the line number its id): WordPiece with
//    the defaults of transformers' BertTokenizerFast, which tokenizer_config.json's
//    do_lower_case, strip_accents and tokenize_chinese_chars override.
//  - tokenizer.json with model.type "Unigram" (SentencePiece; DeBERTa-v2/v3 as transformers'
//    DebertaV2Tokenizer writes it): normalizers Replace (a literal, or DeBERTa's white space
//    Regex), NFC and Strip, the Metaspace pre-tokenizer and decoder; byte_fallback, NFKC,
//    Precompiled, Lowercase, Punctuation and other settings are refused by name.
// Errors name the file and the field. Thread-safe (no shared state).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "models/tokenizer/bpe_tokenizer.h"
#include "models/tokenizer/tokenizer.h"
#include "models/tokenizer/unigram_tokenizer.h"
#include "models/tokenizer/wordpiece_tokenizer.h"

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

// A BPE tokenizer.json (any other model is refused).
StatusOr<std::unique_ptr<BpeTokenizer>> LoadTokenizerJson(const std::string& path);

struct WordPieceVocabOptions {
  WordPieceModelOptions model;
  WordPieceTokenizerOptions tokenizer;  // BertTokenizerFast's defaults
  // Matched as added special tokens where the vocabulary has them (their vocabulary ids);
  // BertTokenizerFast's five. model.unk_token must be in the vocabulary.
  std::vector<std::string> special_tokens = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
};

// vocab.txt: one token per line (trailing white space, '\r' included, is not part of it), id =
// 0-based line number. A token on two lines is an error.
StatusOr<std::unique_ptr<WordPieceTokenizer>> LoadWordPieceVocab(
    const std::string& vocab_path, const WordPieceVocabOptions& options = {});

// A WordPiece tokenizer.json (any other model is refused).
StatusOr<std::unique_ptr<WordPieceTokenizer>> LoadWordPieceTokenizerJson(const std::string& path);

// A Unigram tokenizer.json (SentencePiece, DeBERTa-v2/v3; any other model is refused).
StatusOr<std::unique_ptr<UnigramTokenizer>> LoadUnigramTokenizerJson(const std::string& path);

// A tokenizer.json of any of these models, by model.type.
StatusOr<std::unique_ptr<Tokenizer>> LoadAnyTokenizerJson(const std::string& path);

// `dir`/tokenizer.json when present (BPE, WordPiece or Unigram by model.type), else
// `dir`/vocab.json + `dir`/merges.txt (BPE), else `dir`/vocab.txt (WordPiece, with
// `dir`/tokenizer_config.json's settings when that exists).
StatusOr<std::unique_ptr<Tokenizer>> LoadTokenizerDirectory(const std::string& dir);

}  // namespace geotrain::models
