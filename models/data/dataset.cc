#include "models/data/dataset.h"

#include "models/data/sample_id.h"
#include "models/data/tokenizer_fingerprint.h"

namespace geotrain::models::data {

StatusOr<std::unique_ptr<Dataset>> OpenDataset(const DataOptions& options,
                                               const Tokenizer& tokenizer) {
  if (options.seq_length <= 0) {
    return InvalidArgument("data options: seq_length " + std::to_string(options.seq_length) +
                           " must be > 0");
  }
  std::vector<WeightedSource> sources = options.sources;
  GEOTRAIN_RETURN_IF_ERROR(NormaliseSourceWeights(&sources));
  if (sources.size() > kMaxSourcesPerDataset) {
    return OutOfRange("data options: " + std::to_string(sources.size()) + " sources exceed " +
                      std::to_string(kMaxSourcesPerDataset));
  }
  const std::optional<int32_t> end_of_text = tokenizer.TokenId(options.end_of_text_token);
  if (!end_of_text) {
    return InvalidArgument("data options: end_of_text_token \"" + options.end_of_text_token +
                           "\" is not a token of the tokenizer");
  }

  std::unique_ptr<Dataset> dataset(new Dataset());
  dataset->seq_length_ = options.seq_length;
  dataset->end_of_text_id_ = static_cast<uint32_t>(*end_of_text);
  SourceTokenizeOptions tokenize;
  tokenize.jsonl_field = options.jsonl_field;
  tokenize.end_of_text_id = dataset->end_of_text_id_;
  tokenize.cache_dir = options.cache_dir;
  tokenize.tokenizer_fingerprint = TokenizerFingerprint(tokenizer);
  const uint64_t seq_length = static_cast<uint64_t>(options.seq_length);
  for (const WeightedSource& weighted : sources) {
    GEOTRAIN_ASSIGN_OR_RETURN(auto source,
                              TokenizedSource::Load(weighted.path, tokenize, tokenizer));
    const uint64_t blocks = source->tokens().size() / seq_length;
    if (blocks == 0) {
      return InvalidArgument(weighted.path + ": " + std::to_string(source->tokens().size()) +
                             " tokens, fewer than one block of seq_length " +
                             std::to_string(seq_length));
    }
    if (blocks > kMaxBlocksPerSource) {
      return OutOfRange(weighted.path + ": " + std::to_string(blocks) + " blocks exceed " +
                        std::to_string(kMaxBlocksPerSource));
    }
    dataset->sources_.push_back(std::move(source));
    dataset->weights_.push_back(weighted.weight);
    dataset->block_counts_.push_back(blocks);
  }
  return dataset;
}

StatusOr<std::unique_ptr<Dataset>> DatasetOfRows(
    std::vector<std::unique_ptr<TokenizedSource>> sources, std::vector<double> weights,
    int64_t seq_length) {
  if (seq_length <= 0 || sources.empty() || sources.size() != weights.size() ||
      sources.size() > kMaxSourcesPerDataset) {
    return InvalidArgument("dataset of rows: " + std::to_string(sources.size()) + " sources, " +
                           std::to_string(weights.size()) + " weights, seq_length " +
                           std::to_string(seq_length));
  }
  double total = 0;
  for (double w : weights) total += w;
  std::unique_ptr<Dataset> dataset(new Dataset());
  dataset->seq_length_ = seq_length;
  for (size_t i = 0; i < sources.size(); ++i) {
    const uint64_t size = sources[i]->tokens().size();
    const uint64_t rows = size / static_cast<uint64_t>(seq_length);
    if (rows == 0 || size % static_cast<uint64_t>(seq_length) != 0 || rows > kMaxBlocksPerSource ||
        !(weights[i] > 0)) {
      return InvalidArgument(sources[i]->path() + ": " + std::to_string(size) +
                             " ids are not whole rows of " + std::to_string(seq_length) +
                             " (or the weight is not positive)");
    }
    dataset->block_counts_.push_back(rows);
    dataset->weights_.push_back(weights[i] / total);
    dataset->sources_.push_back(std::move(sources[i]));
  }
  return dataset;
}

StatusOr<Span<const uint32_t>> Dataset::Block(uint64_t sample_id) const {
  const uint64_t source = SampleIdSource(sample_id);
  const uint64_t block = SampleIdBlock(sample_id);
  if (source >= sources_.size() || block >= block_counts_[source]) {
    return OutOfRange("sample id " + std::to_string(sample_id) + " (source " +
                      std::to_string(source) + ", block " + std::to_string(block) +
                      ") names no block");
  }
  const uint64_t length = static_cast<uint64_t>(seq_length_);
  return sources_[source]->tokens().subspan(block * length, length);
}

}  // namespace geotrain::models::data
