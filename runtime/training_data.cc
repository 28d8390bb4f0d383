#include "runtime/training_data.h"

#include "models/model_config.h"
#include "models/tokenizer/tokenizer_loaders.h"

namespace geotrain::runtime {

StatusOr<std::unique_ptr<TrainingData>> TrainingData::Open(const StageAssignment& assignment) {
  std::unique_ptr<TrainingData> data(new TrainingData());
  const DataSettings& settings = assignment.data;
  const std::string tokenizer_dir =
      settings.tokenizer_dir.empty() ? assignment.model_dir : settings.tokenizer_dir;
  GEOTRAIN_ASSIGN_OR_RETURN(data->tokenizer_, models::LoadTokenizerDirectory(tokenizer_dir));

  // One opener for the training and the validation sources of either task.
  const auto open = [&](const std::vector<WeightedSource>& sources, const char* field,
                        bool validation) -> Status {
    if (settings.task == Task::kSequenceClassification) {
      GEOTRAIN_ASSIGN_OR_RETURN(models::ModelConfig config,
                                models::LoadModelConfig(assignment.model_dir));
      models::data::ClassificationOptions options;
      options.sources = sources;
      options.seq_length = settings.seq_length;
      options.text_field = settings.text_field;
      options.pair_field = settings.pair_field;
      options.label_field = settings.label_field;
      options.num_labels = config.num_labels;
      options.label_names = settings.labels;
      auto examples = models::data::OpenClassificationSet(options, *data->tokenizer_);
      if (!examples.ok()) return examples.status().WithContext(field);
      auto& slot = validation ? data->valid_examples_ : data->train_examples_;
      slot = std::move(examples).value();
      (validation ? data->valid_ : data->train_) = &slot->dataset();
      return OkStatus();
    }
    models::data::DataOptions options;
    options.sources = sources;
    options.seq_length = settings.seq_length;
    options.cache_dir = settings.cache_dir;
    options.jsonl_field = settings.text_field;
    auto dataset = models::data::OpenDataset(options, *data->tokenizer_);
    if (!dataset.ok()) return dataset.status().WithContext(field);
    auto& slot = validation ? data->owned_valid_ : data->owned_train_;
    slot = std::move(dataset).value();
    (validation ? data->valid_ : data->train_) = slot.get();
    return OkStatus();
  };
  GEOTRAIN_RETURN_IF_ERROR(open(settings.train, "data.train", false));

  models::data::BatchOptions batch;
  batch.batch_size = assignment.training.micro_batch_size;
  batch.rank = assignment.dp_rank;
  batch.world_size = assignment.dp_size;
  batch.seed = assignment.training.seed;
  batch.samples_per_epoch = settings.samples_per_epoch;
  const compression::CodecId forward = assignment.compression.forward.codec;
  batch.stable_shards = settings.stable_shards || forward == compression::CodecId::kDelta ||
                        forward == compression::CodecId::kDeltaLowBits;
  auto iterator = models::data::BatchIterator::Create(data->train_, batch);
  if (!iterator.ok()) return iterator.status().WithContext("data.train");
  data->train_iterator_ = std::move(iterator).value();

  if (!settings.valid.empty()) {
    GEOTRAIN_RETURN_IF_ERROR(open(settings.valid, "data.valid", true));
    data->valid_options_ = batch;
    data->valid_options_.samples_per_epoch = 0;
    data->valid_options_.stable_shards = false;
  }
  return data;
}

StatusOr<at::Tensor> TrainingData::Labels(Span<const uint64_t> sample_ids, bool validation) const {
  if (!classification()) return Tokens(validation ? *valid_ : *train_, sample_ids);
  at::Tensor labels = at::empty({static_cast<int64_t>(sample_ids.size())}, at::kLong);
  for (size_t i = 0; i < sample_ids.size(); ++i) {
    GEOTRAIN_ASSIGN_OR_RETURN(models::data::ClassificationExample example,
                              Examples(validation).Example(sample_ids[i]));
    labels[static_cast<int64_t>(i)] = example.label;
  }
  return labels;
}

StatusOr<models::SequenceContext> TrainingData::Context(Span<const uint64_t> sample_ids,
                                                        bool validation) const {
  if (!classification()) return models::SequenceContext{};
  const int64_t rows = static_cast<int64_t>(sample_ids.size());
  const int64_t seq = Examples(validation).seq_length();
  at::Tensor mask = at::zeros({rows, seq}, at::kLong);
  at::Tensor types = at::zeros({rows, seq}, at::kLong);
  for (int64_t i = 0; i < rows; ++i) {
    GEOTRAIN_ASSIGN_OR_RETURN(models::data::ClassificationExample example,
                              Examples(validation).Example(sample_ids[static_cast<size_t>(i)]));
    mask[i].narrow(0, 0, example.length).fill_(1);
    types[i].narrow(0, example.first_segment, example.length - example.first_segment).fill_(1);
  }
  return models::SequenceContext{mask, types};
}

StatusOr<std::unique_ptr<models::data::BatchIterator>> TrainingData::ValidationBatches() const {
  if (!valid_) return FailedPrecondition("data.valid: no validation sources");
  return models::data::BatchIterator::Create(valid_, valid_options_);
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
