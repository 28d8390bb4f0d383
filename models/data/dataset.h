// Dataset: the tokenized sources of a training mixture, cut into seq_length blocks.
//
// OpenDataset tokenizes each source once (or reads its token cache, tokenized_source.h) and views
// its token stream as consecutive, non-overlapping blocks of seq_length ids; the remainder after
// the last whole block is dropped. A block holds the model's inputs; callers shift by one for the
// next-token labels (as the `eval` command and transformers do), so the last position of a block
// has no label. Block b of source s has the sample id MakeSampleId(s, b) (sample_id.h), stable
// across runs and epochs. BatchIterator (batch_iterator.h) walks blocks in a seeded, weighted,
// sharded order.
//
// Owns every source's ids. Immutable after OpenDataset: thread-safe; the tokenizer is not kept.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/span.h"
#include "common/status.h"
#include "common/weighted_source_list.h"
#include "models/data/tokenized_source.h"
#include "models/tokenizer/tokenizer.h"

namespace geotrain::models::data {

struct DataOptions {
  // The mixture; weights need not be normalised (ParseWeightedSourceList parses the
  // "path:weight,..." form). Order matters: it numbers the sources in sample ids.
  std::vector<WeightedSource> sources;
  int64_t seq_length = 1024;                        // tokens per block, > 0
  std::string jsonl_field = "text";                 // the document field of .jsonl/.ndjson sources
  std::string end_of_text_token = "<|endoftext|>";  // separates documents; must be a token
  std::string cache_dir;  // token cache directory; empty: no cache on disk
};

class Dataset {
 public:
  size_t num_sources() const { return sources_.size(); }
  const std::string& source_path(size_t source) const { return sources_[source]->path(); }
  double source_weight(size_t source) const { return weights_[source]; }  // normalised
  uint64_t num_blocks(size_t source) const { return block_counts_[source]; }
  const std::vector<uint64_t>& block_counts() const { return block_counts_; }
  const std::vector<double>& weights() const { return weights_; }
  const TokenizedSource& source(size_t index) const { return *sources_[index]; }
  int64_t seq_length() const { return seq_length_; }
  uint32_t end_of_text_id() const { return end_of_text_id_; }

  // The seq_length ids of a block; OUT_OF_RANGE for an id that names no block.
  StatusOr<Span<const uint32_t>> Block(uint64_t sample_id) const;

 private:
  friend StatusOr<std::unique_ptr<Dataset>> OpenDataset(const DataOptions&, const Tokenizer&);
  friend StatusOr<std::unique_ptr<Dataset>> DatasetOfRows(
      std::vector<std::unique_ptr<TokenizedSource>>, std::vector<double>, int64_t);
  Dataset() = default;

  std::vector<std::unique_ptr<TokenizedSource>> sources_;
  std::vector<double> weights_;
  std::vector<uint64_t> block_counts_;
  int64_t seq_length_ = 0;
  uint32_t end_of_text_id_ = 0;
};

// Errors: invalid options (named), a source that cannot be read or parsed (named by
// tokenized_source.h), a source too short for one block (named, with its token count).
StatusOr<std::unique_ptr<Dataset>> OpenDataset(const DataOptions& options,
                                               const Tokenizer& tokenizer);

// A dataset whose blocks are given: each source's ids are whole rows of seq_length (a
// classification set's examples, padded), weighted by `weights` (normalised here). Errors: no
// source, a source that is empty or not whole rows, mismatched lengths.
StatusOr<std::unique_ptr<Dataset>> DatasetOfRows(
    std::vector<std::unique_ptr<TokenizedSource>> sources, std::vector<double> weights,
    int64_t seq_length);

}  // namespace geotrain::models::data
