// TrainingData: a rank's view of the job's data.
//
// Every stage opens the training mixture (tokenized once, or read from the token cache): the first
// stage draws its micro-batches from it, the last stage looks up the labels of the sample ids that
// arrive with each activation, and every stage knows the epoch length, which turns
// compression.warmup_epochs into a step count all stages agree on without talking. Evaluation
// batches come from the validation sources, the same first `eval_batches` micro-batches of this
// replica's share at every evaluation, so successive evaluation losses are comparable.
//
// With data.task sequence_classification the sources are labelled examples
// (models::data::ClassificationSet), one per sample id: every stage looks up the padding mask and
// segment ids of the samples it computes (Context), the last stage their class labels (Labels).
//
// Not thread-safe: the rank's training thread owns it.
#pragma once

#include <ATen/ATen.h>

#include <memory>

#include "models/data/batch_iterator.h"
#include "models/data/classification_set.h"
#include "models/data/dataset.h"
#include "models/tokenizer/tokenizer.h"
#include "models/transformer/stage_parts.h"
#include "runtime/stage_assignment.h"

namespace geotrain::runtime {

class TrainingData {
 public:
  static StatusOr<std::unique_ptr<TrainingData>> Open(const StageAssignment& assignment);

  // The next training micro-batch of this replica (first stage).
  StatusOr<models::data::Batch> NextTrain() { return train_iterator_->Next(); }
  models::data::DataPosition position() const { return train_iterator_->position(); }
  Status Seek(const models::data::DataPosition& position) {
    return train_iterator_->Seek(position);
  }
  uint64_t batches_per_epoch() const { return train_iterator_->batches_per_epoch(); }

  bool has_validation() const { return valid_ != nullptr; }
  // A fresh iterator over this replica's share of the validation sources.
  StatusOr<std::unique_ptr<models::data::BatchIterator>> ValidationBatches() const;

  bool classification() const { return train_examples_ != nullptr; }
  // The labels of the last stage's loss for `sample_ids` of the training (or validation) set:
  // the blocks' token ids [n, seq_length] for a language model, the class ids [n] for a
  // classifier.
  StatusOr<at::Tensor> Labels(Span<const uint64_t> sample_ids, bool validation) const;
  // What a classifier's stages need besides the activations: the padding mask and segment ids
  // [n, seq_length] of `sample_ids`. Empty for a language model.
  StatusOr<models::SequenceContext> Context(Span<const uint64_t> sample_ids, bool validation) const;
  // A batch's tokens as int64 [n, seq_length].
  static at::Tensor BatchTokens(const models::data::Batch& batch, int64_t seq_length);

 private:
  TrainingData() = default;
  static StatusOr<at::Tensor> Tokens(const models::data::Dataset& dataset,
                                     Span<const uint64_t> sample_ids);
  const models::data::ClassificationSet& Examples(bool validation) const {
    return validation ? *valid_examples_ : *train_examples_;
  }

  std::unique_ptr<models::Tokenizer> tokenizer_;
  // Language models own their datasets; classifiers' datasets live in their example sets.
  std::unique_ptr<models::data::Dataset> owned_train_, owned_valid_;
  std::unique_ptr<models::data::ClassificationSet> train_examples_, valid_examples_;
  const models::data::Dataset* train_ = nullptr;
  const models::data::Dataset* valid_ = nullptr;
  std::unique_ptr<models::data::BatchIterator> train_iterator_;
  models::data::BatchOptions valid_options_;
};

}  // namespace geotrain::runtime
