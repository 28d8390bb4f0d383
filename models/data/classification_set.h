// ClassificationSet: labelled examples for sequence classification (GLUE-style tasks such as
// QNLI, CoLA, SST-2), from files the user provides.
//
// Files: ".jsonl"/".ndjson" (one object per line) or ".tsv" (tab-separated, no quoting). In a
// tsv whose fields are named by column numbers ("3") the file has no header (GLUE's CoLA);
// otherwise its first row names the columns. Each example has a text, optionally a second text
// (`pair_field`, a text pair: QNLI's question and sentence) and a label: an integer in
// [0, num_labels), or a string that is one of `label_names` (its index). Every problem names the
// file, the 1-based line and the field; nothing is skipped silently.
//
// Tokens of an example, as BERT lays them out: [CLS] text [SEP] (pair [SEP]), cut longest-first
// to seq_length and padded to it; segment ids 0 up to the first [SEP], 1 after. The special tokens
// are the tokenizer's "[CLS]"/"[SEP]"/"[PAD]" (BERT), else "<s>"/"</s>"/"<pad>" (RoBERTa-style),
// else its end-of-text token for all three (GPT-2's tokenizer, used with randomly initialised
// encoders). Example i of source s has sample id MakeSampleId(s, i), so the batch iterator, the
// activation cache and every pipeline stage name it alike; each stage looks up the padding mask,
// segments and label of an arriving sample id here.
//
// Immutable after OpenClassificationSet: thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/span.h"
#include "common/status.h"
#include "common/weighted_source_list.h"
#include "models/data/dataset.h"
#include "models/tokenizer/tokenizer.h"

namespace geotrain::models::data {

struct ClassificationOptions {
  std::vector<WeightedSource> sources;
  int64_t seq_length = 128;  // tokens per example, specials included (>= 3)
  std::string text_field = "text";
  std::string pair_field;  // empty: single texts
  std::string label_field = "label";
  int64_t num_labels = 2;
  std::vector<std::string> label_names;  // string labels; empty: labels are integers
};

struct ClassificationExample {
  uint32_t length = 0;         // tokens before the padding
  uint32_t first_segment = 0;  // tokens of segment 0 ([CLS] text [SEP])
  int32_t label = 0;
};

class ClassificationSet {
 public:
  // The examples' token rows as the blocks of a Dataset (for BatchIterator).
  const Dataset& dataset() const { return *dataset_; }
  int64_t seq_length() const { return dataset_->seq_length(); }
  int64_t num_labels() const { return num_labels_; }

  // OUT_OF_RANGE for an id that names no example.
  StatusOr<ClassificationExample> Example(uint64_t sample_id) const;

 private:
  friend StatusOr<std::unique_ptr<ClassificationSet>> OpenClassificationSet(
      const ClassificationOptions&, const Tokenizer&);
  ClassificationSet() = default;

  std::unique_ptr<Dataset> dataset_;
  std::vector<std::vector<ClassificationExample>> examples_;  // by source, by example
  int64_t num_labels_ = 0;
};

StatusOr<std::unique_ptr<ClassificationSet>> OpenClassificationSet(
    const ClassificationOptions& options, const Tokenizer& tokenizer);

}  // namespace geotrain::models::data
