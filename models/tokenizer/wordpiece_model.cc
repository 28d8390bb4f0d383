#include "models/tokenizer/wordpiece_model.h"

#include <algorithm>
#include <map>

#include "common/utf8.h"
#include "models/tokenizer/bpe_model.h"

namespace geotrain::models {

StatusOr<std::unique_ptr<WordPieceModel>> WordPieceModel::Create(
    std::unordered_map<std::string, int32_t> vocab, const WordPieceModelOptions& options,
    const std::string& source) {
  std::map<int32_t, const std::string*> by_id;
  size_t longest = 0;
  for (const auto& [spelling, id] : vocab) {
    if (id < 0 || id > kMaxTokenId) {
      return InvalidArgument(source + ": \"" + spelling + "\": id " + std::to_string(id) +
                             " is out of range");
    }
    auto [it, inserted] = by_id.emplace(id, &spelling);
    if (!inserted) {
      return InvalidArgument(source + ": \"" + spelling + "\" and \"" + *it->second +
                             "\" have the same id " + std::to_string(id));
    }
    longest = std::max(longest, spelling.size());
  }
  auto unk = vocab.find(options.unk_token);
  if (unk == vocab.end()) {
    return InvalidArgument(source + ": the unknown token \"" + options.unk_token +
                           "\" is not in the vocabulary");
  }
  const int32_t unk_id = unk->second;
  std::unique_ptr<WordPieceModel> model(new WordPieceModel(std::move(vocab), options));
  model->unk_id_ = unk_id;
  model->longest_entry_bytes_ = longest;
  return model;
}

void WordPieceModel::EncodeWord(std::u32string_view word, std::vector<int32_t>* ids) const {
  if (word.empty()) return;
  if (word.size() > options_.max_input_chars_per_word) {
    ids->push_back(unk_id_);
    return;
  }
  // The word as UTF-8 and where each character starts, so candidates are byte ranges.
  std::string bytes;
  std::vector<size_t> starts;
  starts.reserve(word.size() + 1);
  for (char32_t cp : word) {
    starts.push_back(bytes.size());
    AppendUtf8(cp, &bytes);
  }
  starts.push_back(bytes.size());

  const size_t first_id = ids->size();
  const std::string& prefix = options_.continuing_subword_prefix;
  std::string candidate;
  size_t start = 0;
  while (start < word.size()) {
    std::optional<int32_t> found;
    size_t end = word.size();
    for (; end > start; --end) {
      const size_t length = starts[end] - starts[start];
      const size_t prefix_length = start > 0 ? prefix.size() : 0;
      if (prefix_length + length > longest_entry_bytes_) continue;
      candidate.assign(start > 0 ? prefix : std::string());
      candidate.append(bytes, starts[start], length);
      auto it = vocab_.find(candidate);
      if (it != vocab_.end()) {
        found = it->second;
        break;
      }
    }
    if (!found) {  // the word as a whole is unknown, also the pieces found so far
      ids->resize(first_id);
      ids->push_back(unk_id_);
      return;
    }
    ids->push_back(*found);
    start = end;
  }
}

std::optional<int32_t> WordPieceModel::IdOf(const std::string& spelling) const {
  auto it = vocab_.find(spelling);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

}  // namespace geotrain::models
