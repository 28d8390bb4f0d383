#include "runtime/training_data.h"

#include "models/tokenizer/tokenizer_loaders.h"

namespace geotrain::runtime {

StatusOr<std::unique_ptr<TrainingData>> TrainingData::Open(const StageAssignment& assignment) {
  std::unique_ptr<TrainingData> data(new TrainingData());
  const DataSettings& settings = assignment.data;
  const std::string tokenizer_dir =
      settings.tokenizer_dir.empty() ? assignment.model_dir : settings.tokenizer_dir;
  GEOTRAIN_ASSIGN_OR_RETURN(data->tokenizer_, models::LoadTokenizerDirectory(tokenizer_dir));

  models::data::DataOptions options;
  options.sources = settings.train;
  options.seq_length = settings.seq_length;
  options.cache_dir = settings.cache_dir;
  auto train = models::data::OpenDataset(options, *data->tokenizer_);
  if (!train.ok()) return train.status().WithContext("data.train");
  data->train_ = std::move(train).value();

  models::data::BatchOptions batch;
  batch.batch_size = assignment.training.micro_batch_size;
  batch.rank = assignment.dp_rank;
  batch.world_size = assignment.dp_size;
  batch.seed = assignment.training.seed;
  batch.samples_per_epoch = settings.samples_per_epoch;
  const compression::CodecId forward = assignment.compression.forward.codec;
  batch.stable_shards = settings.stable_shards || forward == compression::CodecId::kDelta ||
                        forward == compression::CodecId::kDeltaLowBits;
  auto iterator = models::data::BatchIterator::Create(data->train_.get(), batch);
  if (!iterator.ok()) return iterator.status().WithContext("data.train");
  data->train_iterator_ = std::move(iterator).value();

  if (!settings.valid.empty()) {
    options.sources = settings.valid;
    auto valid = models::data::OpenDataset(options, *data->tokenizer_);
    if (!valid.ok()) return valid.status().WithContext("data.valid");
    data->valid_ = std::move(valid).value();
    data->valid_options_ = batch;
    data->valid_options_.samples_per_epoch = 0;
    data->valid_options_.stable_shards = false;
  }
  return data;
}

StatusOr<std::unique_ptr<models::data::BatchIterator>> TrainingData::ValidationBatches() const {
  if (!valid_) return FailedPrecondition("data.valid: no validation sources");
  return models::data::BatchIterator::Create(valid_.get(), valid_options_);
}

at::Tensor TrainingData::BatchTokens(const models::data::Batch& batch, int64_t seq_length) {
  const int64_t rows = static_cast<int64_t>(batch.sample_ids.size());
  return at::from_blob(const_cast<uint32_t*>(batch.tokens.data()), {rows * seq_length}, at::kInt)
      .to(at::kLong)
      .view({rows, seq_length});
}

StatusOr<at::Tensor> TrainingData::Tokens(const models::data::Dataset& dataset,
                                          Span<const uint64_t> sample_ids) {
  const int64_t seq_length = dataset.seq_length();
  at::Tensor tokens = at::empty({static_cast<int64_t>(sample_ids.size()), seq_length}, at::kLong);
  int64_t* out = tokens.data_ptr<int64_t>();
  for (size_t i = 0; i < sample_ids.size(); ++i) {
    GEOTRAIN_ASSIGN_OR_RETURN(Span<const uint32_t> block, dataset.Block(sample_ids[i]));
    for (int64_t t = 0; t < seq_length; ++t) out[i * seq_length + t] = block[t];
  }
  return tokens;
}

}  // namespace geotrain::runtime
