#include "models/tokenizer/bpe_model.h"

#include <cstdio>
#include <queue>

#include "common/utf8.h"
#include "models/tokenizer/byte_level_alphabet.h"

namespace geotrain::models {
namespace {

// Longer pieces (a run of 300 letters) are rare and would crowd the cache.
constexpr size_t kMaxCachedPieceBytes = 256;

std::string Quoted(const std::string& s) { return "\"" + s + "\""; }

}  // namespace

StatusOr<std::unique_ptr<BpeModel>> BpeModel::Create(
    std::unordered_map<std::string, int32_t> vocab, const std::vector<BpeMergeRule>& merges,
    const BpeModelOptions& options, const std::string& vocab_source,
    const std::function<std::string(size_t)>& describe_merge) {
  std::unique_ptr<BpeModel> model(new BpeModel());
  model->options_ = options;

  std::unordered_map<int32_t, const std::string*> spelling_of;
  spelling_of.reserve(vocab.size());
  for (const auto& [spelling, id] : vocab) {
    if (id < 0 || id > kMaxTokenId) {
      return InvalidArgument(vocab_source + ": " + Quoted(spelling) + ": id " + std::to_string(id) +
                             " is outside [0, " + std::to_string(kMaxTokenId) + "]");
    }
    auto [it, inserted] = spelling_of.emplace(id, &spelling);
    if (!inserted) {
      // Report the pair in a stable order, whatever the hash map's.
      const std::string& a = std::min(*it->second, spelling);
      const std::string& b = std::max(*it->second, spelling);
      return InvalidArgument(vocab_source + ": duplicate id " + std::to_string(id) + " for " +
                             Quoted(a) + " and " + Quoted(b));
    }
  }
  // A byte without a token is dropped when encoding, as Hugging Face tokenizers does for a BPE
  // model with no unk_token and no byte_fallback (SmolLM2's vocabulary lacks 21 bytes). Such a
  // tokenizer cannot round-trip text containing those bytes; MissingBytes() lets callers say so.
  for (int b = 0; b < 256; ++b) {
    std::string spelling;
    AppendUtf8(ByteToAlphabetCodePoint(static_cast<uint8_t>(b)), &spelling);
    auto it = vocab.find(spelling);
    model->byte_ids_[b] = it == vocab.end() ? kNoToken : it->second;
    if (it == vocab.end()) model->missing_bytes_.push_back(static_cast<uint8_t>(b));
  }

  model->merges_.reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const BpeMergeRule& rule = merges[rank];
    auto left = vocab.find(rule.left);
    auto right = vocab.find(rule.right);
    for (const auto* side : {&left, &right}) {
      if (*side == vocab.end()) {
        const std::string& missing = side == &left ? rule.left : rule.right;
        return InvalidArgument(describe_merge(rank) + ": token " + Quoted(missing) +
                               " is not in the vocabulary");
      }
    }
    auto merged = vocab.find(rule.left + rule.right);
    if (merged == vocab.end()) {
      return InvalidArgument(describe_merge(rank) + ": merged token " +
                             Quoted(rule.left + rule.right) + " is not in the vocabulary");
    }
    const MergeResult result{static_cast<int32_t>(rank), merged->second};
    auto [it, inserted] = model->merges_.emplace(PairKey(left->second, right->second), result);
    if (!inserted) {
      return InvalidArgument(describe_merge(rank) + ": duplicate merge " +
                             Quoted(rule.left + " " + rule.right) + " (first at " +
                             describe_merge(static_cast<size_t>(it->second.rank)) + ")");
    }
  }
  model->vocab_ = std::move(vocab);
  return model;
}

std::optional<int32_t> BpeModel::IdOf(const std::string& spelling) const {
  auto it = vocab_.find(spelling);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

const BpeModel::MergeResult* BpeModel::FindMerge(int32_t left, int32_t right) const {
  auto it = merges_.find(PairKey(left, right));
  return it == merges_.end() ? nullptr : &it->second;
}

void BpeModel::Merge(std::string_view piece, std::vector<int32_t>* ids) const {
  struct Symbol {
    int32_t id;
    int32_t prev;  // index of the live neighbour, -1 at the ends
    int32_t next;
    bool alive;
  };
  struct Candidate {
    int32_t rank;
    int32_t pos;  // index of the pair's left symbol
    int32_t merged_id;
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  // Bytes without a token are left out before merging, so their neighbours may merge.
  std::vector<int32_t> byte_tokens;
  byte_tokens.reserve(piece.size());
  for (char c : piece) {
    const int32_t id = byte_ids_[static_cast<uint8_t>(c)];
    if (id != kNoToken) byte_tokens.push_back(id);
  }
  const int32_t n = static_cast<int32_t>(byte_tokens.size());
  std::vector<Symbol> symbols(n);
  for (int32_t i = 0; i < n; ++i) {
    symbols[i] = {byte_tokens[i], i - 1, i + 1 < n ? i + 1 : -1, true};
  }
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> queue;
  for (int32_t i = 0; i + 1 < n; ++i) {
    if (const MergeResult* m = FindMerge(symbols[i].id, symbols[i + 1].id)) {
      queue.push({m->rank, i, m->merged_id});
    }
  }
  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    Symbol& left = symbols[top.pos];
    if (!left.alive || left.next < 0) continue;
    // Skip entries made stale by an earlier merge of either symbol (the check Hugging Face uses).
    const MergeResult* m = FindMerge(left.id, symbols[left.next].id);
    if (m == nullptr || m->merged_id != top.merged_id) continue;

    Symbol& right = symbols[left.next];
    left.id = top.merged_id;
    right.alive = false;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = top.pos;
    if (left.prev >= 0) {
      if (const MergeResult* p = FindMerge(symbols[left.prev].id, left.id)) {
        queue.push({p->rank, left.prev, p->merged_id});
      }
    }
    if (left.next >= 0) {
      if (const MergeResult* p = FindMerge(left.id, symbols[left.next].id)) {
        queue.push({p->rank, top.pos, p->merged_id});
      }
    }
  }
  for (int32_t i = 0; i >= 0 && i < n; i = symbols[i].next) ids->push_back(symbols[i].id);
}

void BpeModel::EncodePiece(std::string_view piece, std::vector<int32_t>* ids) const {
  if (piece.empty()) return;
  if (options_.ignore_merges) {
    auto it = vocab_.find(BytesToAlphabet(piece));
    if (it != vocab_.end()) {
      ids->push_back(it->second);
      return;
    }
  }
  const bool cacheable = piece.size() <= kMaxCachedPieceBytes && options_.cache_capacity > 0;
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    auto it = cache_.find(std::string(piece));
    if (it != cache_.end()) {
      ids->insert(ids->end(), it->second.begin(), it->second.end());
      return;
    }
  }
  const size_t start = ids->size();
  Merge(piece, ids);
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    if (cache_.size() >= options_.cache_capacity) cache_.clear();
    cache_.emplace(std::string(piece), std::vector<int32_t>(ids->begin() + start, ids->end()));
  }
}

}  // namespace geotrain::models
