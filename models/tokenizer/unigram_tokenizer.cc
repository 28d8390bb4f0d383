#include "models/tokenizer/unigram_tokenizer.h"

#include <algorithm>
#include <cstdio>
#include <limits>

#include "common/utf8.h"
#include "models/tokenizer/bert_unicode.h"
#include "models/tokenizer/bpe_model.h"
#include "models/tokenizer/unicode_nfc.h"

namespace geotrain::models {
namespace {

// The library's penalty on the unknown piece, below the vocabulary's lowest score.
constexpr double kUnkPenalty = 10.0;

std::u32string FromUtf8(std::string_view text) {
  std::u32string out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const DecodedCodePoint d = DecodeUtf8(text, pos);
    out.push_back(d.code_point == kInvalidCodePoint ? U'\uFFFD' : d.code_point);
    pos += d.length;
  }
  return out;
}

std::string ToUtf8(const std::u32string& text) {
  std::string out;
  out.reserve(text.size());
  for (char32_t cp : text) AppendUtf8(cp, &out);
  return out;
}

// White space as the library's Strip (Rust char::is_whitespace) and the Regex \s see it: the
// Unicode White_Space property, which is also the BERT pre-tokenizer's set.
bool IsWhiteSpace(char32_t cp) { return IsBertWhitespace(cp); }

void ApplyStep(const UnigramNormalizerStep& step, std::u32string* text) {
  using Kind = UnigramNormalizerStep::Kind;
  switch (step.kind) {
    case Kind::kReplace: {
      std::u32string out;
      for (size_t pos = 0; pos < text->size();) {
        if (text->compare(pos, step.pattern.size(), step.pattern) == 0) {
          out += step.content;
          pos += step.pattern.size();
        } else {
          out.push_back((*text)[pos++]);
        }
      }
      *text = std::move(out);
      return;
    }
    case Kind::kReplaceWhitespaceRuns: {
      // Leftmost alternation: a run of two or more white space characters, else one of \n\r\t.
      std::u32string out;
      for (size_t pos = 0; pos < text->size();) {
        size_t end = pos;
        while (end < text->size() && IsWhiteSpace((*text)[end])) ++end;
        const char32_t c = (*text)[pos];
        if (end - pos >= 2) {
          out += step.content;
          pos = end;
        } else if (c == U'\n' || c == U'\r' || c == U'\t') {
          out += step.content;
          ++pos;
        } else {
          out.push_back(c);
          ++pos;
        }
      }
      *text = std::move(out);
      return;
    }
    case Kind::kNfc:
      *text = NormalizeNfc(*text);
      return;
    case Kind::kStrip: {
      size_t begin = 0, end = text->size();
      if (step.strip_left) {
        while (begin < end && IsWhiteSpace((*text)[begin])) ++begin;
      }
      if (step.strip_right) {
        while (end > begin && IsWhiteSpace((*text)[end - 1])) --end;
      }
      *text = text->substr(begin, end - begin);
      return;
    }
  }
}

}  // namespace

StatusOr<std::unique_ptr<UnigramTokenizer>> UnigramTokenizer::Create(
    std::vector<std::pair<std::string, double>> vocab, int32_t unk_id,
    std::vector<AddedToken> added_tokens, const UnigramTokenizerOptions& options,
    const std::string& source) {
  if (vocab.empty()) return InvalidArgument(source + ": model.vocab: empty");
  if (vocab.size() > static_cast<size_t>(kMaxTokenId) + 1) {
    return InvalidArgument(source + ": model.vocab: more than " + std::to_string(kMaxTokenId + 1) +
                           " pieces");
  }
  if (unk_id < 0 || static_cast<size_t>(unk_id) >= vocab.size()) {
    return InvalidArgument(source + ": model.unk_id: " + std::to_string(unk_id) +
                           " is not an id of model.vocab (" + std::to_string(vocab.size()) +
                           " pieces)");
  }
  std::unordered_map<std::string, int32_t> piece_ids;
  double min_score = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < vocab.size(); ++i) {
    const std::string field = source + ": model.vocab[" + std::to_string(i) + "]";
    if (vocab[i].first.empty()) return InvalidArgument(field + ": empty piece");
    if (!IsValidUtf8(vocab[i].first)) return InvalidArgument(field + ": not valid UTF-8");
    if (!piece_ids.emplace(vocab[i].first, static_cast<int32_t>(i)).second) {
      return InvalidArgument(field + ": piece \"" + vocab[i].first + "\" repeats model.vocab[" +
                             std::to_string(piece_ids[vocab[i].first]) + "]");
    }
    min_score = std::min(min_score, vocab[i].second);
  }
  const int32_t max_vocab_id = static_cast<int32_t>(vocab.size()) - 1;
  GEOTRAIN_ASSIGN_OR_RETURN(const int32_t max_id,
                            CheckAddedTokens(
                                added_tokens, max_vocab_id, kMaxTokenId,
                                [&](const std::string& spelling) -> std::optional<int32_t> {
                                  auto it = piece_ids.find(spelling);
                                  if (it == piece_ids.end()) return std::nullopt;
                                  return it->second;
                                },
                                source));

  std::unique_ptr<UnigramTokenizer> t(new UnigramTokenizer(std::move(added_tokens), options));
  t->unk_id_ = unk_id;
  t->unk_score_ = min_score - kUnkPenalty;
  t->trie_.emplace_back();
  for (size_t i = 0; i < vocab.size(); ++i) {
    int32_t node = 0;
    for (unsigned char byte : vocab[i].first) {
      int32_t child = t->Child(node, byte);
      if (child < 0) {
        child = static_cast<int32_t>(t->trie_.size());
        auto& next = t->trie_[node].next;
        next.insert(std::lower_bound(next.begin(), next.end(), std::make_pair(byte, int32_t{0})),
                    {byte, child});
        t->trie_.emplace_back();
      }
      node = child;
    }
    t->trie_[node].id = static_cast<int32_t>(i);
  }
  t->tokens_.resize(static_cast<size_t>(max_id + 1));
  t->is_token_.resize(static_cast<size_t>(max_id + 1));
  for (size_t i = 0; i < vocab.size(); ++i) {
    t->tokens_[i] = vocab[i].first;
    t->is_token_[i] = true;
  }
  for (const AddedToken& token : t->added_tokens_) {
    t->tokens_[token.id] = token.content;
    t->is_token_[token.id] = true;
  }
  t->vocab_ = std::move(vocab);
  t->piece_ids_ = std::move(piece_ids);
  return t;
}

int32_t UnigramTokenizer::Child(int32_t node, unsigned char byte) const {
  const auto& next = trie_[node].next;
  auto it = std::lower_bound(next.begin(), next.end(), std::make_pair(byte, int32_t{0}));
  return it != next.end() && it->first == byte ? it->second : -1;
}

std::u32string UnigramTokenizer::Normalize(std::string_view text) const {
  std::u32string normalized = FromUtf8(text);
  for (const UnigramNormalizerStep& step : options_.normalizer) ApplyStep(step, &normalized);
  return normalized;
}

// Viterbi over the lattice of pieces of `piece` (UTF-8), as the library's encode_optimized.
void UnigramTokenizer::EncodePiece(std::string_view piece, std::vector<int32_t>* ids) const {
  struct Best {
    int32_t id = -1;
    size_t starts_at = 0;
    double score = 0;
    bool set = false;
  };
  const size_t size = piece.size();
  std::vector<Best> best(size + 1);
  best[0].set = true;
  for (size_t starts_at = 0; starts_at < size;) {
    const double base = best[starts_at].score;
    const size_t char_len = DecodeUtf8(piece, starts_at).length;
    bool has_single = false;
    int32_t node = 0;
    for (size_t end = starts_at; end < size;) {
      node = Child(node, static_cast<unsigned char>(piece[end]));
      if (node < 0) break;
      ++end;
      const int32_t id = trie_[node].id;
      if (id < 0) continue;
      Best& target = best[end];
      const double candidate = vocab_[id].second + base;
      if (!target.set || candidate > target.score) {
        target = {id, starts_at, candidate, true};
      }
      if (end - starts_at == char_len) has_single = true;
    }
    if (!has_single) {
      Best& target = best[starts_at + char_len];
      const double candidate = unk_score_ + base;
      if (!target.set || candidate > target.score) {
        target = {unk_id_, starts_at, candidate, true};
      }
    }
    starts_at += char_len;
  }
  // Back from the end; adjacent unknown pieces fuse into one string, looked up like the rest.
  std::vector<std::string_view> pieces;
  size_t unk_begin = std::string::npos, unk_end = 0;
  for (size_t ends_at = size; ends_at > 0;) {
    const Best& node = best[ends_at];
    if (node.id == unk_id_) {
      if (unk_begin == std::string::npos) unk_end = ends_at;
      unk_begin = node.starts_at;
    } else {
      if (unk_begin != std::string::npos) {
        pieces.push_back(piece.substr(unk_begin, unk_end - unk_begin));
        unk_begin = std::string::npos;
      }
      pieces.push_back(piece.substr(node.starts_at, ends_at - node.starts_at));
    }
    ends_at = node.starts_at;
  }
  if (unk_begin != std::string::npos) {
    pieces.push_back(piece.substr(unk_begin, unk_end - unk_begin));
  }
  for (auto it = pieces.rbegin(); it != pieces.rend(); ++it) {
    auto found = piece_ids_.find(std::string(*it));
    ids->push_back(found == piece_ids_.end() ? unk_id_ : found->second);
  }
}

void UnigramTokenizer::EncodeText(std::string_view text, bool at_start,
                                  std::vector<int32_t>* ids) const {
  std::u32string normalized = Normalize(text);
  if (normalized.empty()) return;  // the library prepends nothing to an empty string
  const char32_t rep = options_.replacement;
  std::replace(normalized.begin(), normalized.end(), U' ', rep);
  const bool prepend = normalized[0] != rep &&
                       (options_.prepend_scheme == MetaspacePrependScheme::kAlways ||
                        (options_.prepend_scheme == MetaspacePrependScheme::kFirst && at_start));
  if (prepend) normalized.insert(normalized.begin(), rep);
  if (!options_.split) {
    EncodePiece(ToUtf8(normalized), ids);
    return;
  }
  // Split before each replacement (MergedWithNext).
  size_t begin = 0;
  for (size_t i = 1; i <= normalized.size(); ++i) {
    if (i == normalized.size() || normalized[i] == rep) {
      EncodePiece(ToUtf8(normalized.substr(begin, i - begin)), ids);
      begin = i;
    }
  }
}

std::vector<int32_t> UnigramTokenizer::Encode(std::string_view text) const {
  return matcher_.Encode(text, [&](std::string_view stretch, std::vector<int32_t>* ids) {
    EncodeText(stretch, stretch.data() == text.data(), ids);
  });
}

std::vector<int32_t> UnigramTokenizer::EncodeOrdinary(std::string_view text) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 4);
  if (!text.empty()) EncodeText(text, /*at_start=*/true, &ids);
  return ids;
}

StatusOr<std::string> UnigramTokenizer::Decode(Span<const int32_t> ids) const {
  std::string rep;
  AppendUtf8(options_.decoder_replacement, &rep);
  const bool drop_first = options_.decoder_prepend_scheme != MetaspacePrependScheme::kNever;
  std::string text;
  for (size_t i = 0; i < ids.size(); ++i) {
    const int32_t id = ids[i];
    if (id < 0 || id >= vocab_size() || !is_token_[id]) {
      return InvalidArgument("Decode: ids[" + std::to_string(i) + "] = " + std::to_string(id) +
                             " is not a token (vocabulary size " + std::to_string(vocab_size()) +
                             ")");
    }
    const std::string& token = tokens_[id];
    for (size_t pos = 0; pos < token.size();) {
      if (token.compare(pos, rep.size(), rep) == 0) {
        if (!(i == 0 && drop_first)) text += ' ';
        pos += rep.size();
      } else {
        text += token[pos++];
      }
    }
  }
  return text;
}

std::optional<int32_t> UnigramTokenizer::TokenId(const std::string& token) const {
  for (const AddedToken& added : added_tokens_) {
    if (added.content == token) return added.id;
  }
  auto it = piece_ids_.find(token);
  if (it == piece_ids_.end()) return std::nullopt;
  return it->second;
}

std::string UnigramTokenizer::BehaviourKey() const {
  // Scores decide the segmentation and are not revealed by the spellings.
  std::string key = "Unigram v1 unk=" + std::to_string(unk_id_);
  for (const UnigramNormalizerStep& step : options_.normalizer) {
    key += " step" + std::to_string(static_cast<int>(step.kind)) + ":" +
           std::to_string(step.pattern.size()) + ":" + ToUtf8(step.pattern) + ":" +
           std::to_string(step.content.size()) + ":" + ToUtf8(step.content) +
           (step.strip_left ? ":L" : ":-") + (step.strip_right ? "R" : "-");
  }
  key += " rep=" + std::to_string(options_.replacement) +
         " prepend=" + std::to_string(static_cast<int>(options_.prepend_scheme)) +
         (options_.split ? " split" : " nosplit");
  uint64_t h = 0xCBF29CE484222325ull;
  char buf[32];
  for (const auto& [piece, score] : vocab_) {
    std::snprintf(buf, sizeof(buf), "%.17g", score);
    for (char c : piece + '\0' + buf + '\0') {
      h = (h ^ static_cast<unsigned char>(c)) * 0x100000001B3ull;
    }
  }
  std::snprintf(buf, sizeof(buf), " scores=%016llx", static_cast<unsigned long long>(h));
  return key + buf;
}

}  // namespace geotrain::models
