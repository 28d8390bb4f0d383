// BatchIterator: one data-parallel rank's stream of micro-batches over a Dataset.
//
// Epoch e visits BuildEpochOrder(mixture, seed, e) (epoch_order.h): weighted across sources,
// shuffled by (seed, e), identical on every rank. The order is dealt out in rounds of
// world_size * batch_size samples: in round k, rank r takes positions
// [(k * world_size + r) * batch_size, ... + batch_size). So the ranks' shares are disjoint, every
// rank gets batch_size samples per round and the same number of batches per epoch, and together
// they cover the epoch except the last samples_per_epoch % (world_size * batch_size), which are
// dropped so that no rank waits on another. After the last batch of an epoch, the next epoch
// starts; the stream never ends (stop on Batch::epoch). With stable_shards, epoch e > 0 visits
// the rank's epoch-0 share again, shuffled by (seed, e, rank).
//
// Holds a pointer to the Dataset, which must outlive it. Not thread-safe: one iterator per
// consumer; iterators over one Dataset may run in different threads.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "common/status.h"
#include "models/data/data_position.h"
#include "models/data/dataset.h"
#include "models/data/epoch_order.h"

namespace geotrain::models::data {

struct BatchOptions {
  int64_t batch_size = 1;          // blocks per micro-batch, > 0
  int64_t rank = 0;                // this data-parallel rank, in [0, world_size)
  int64_t world_size = 1;          // data-parallel replicas, > 0
  uint64_t seed = 0;               // the shuffle; the same on every rank
  uint64_t samples_per_epoch = 0;  // all ranks together; 0: the total block count of all sources
  // Each rank keeps the samples epoch 0 dealt it and visits them in a new order every epoch, so
  // a sample always reaches the same replica (AC-SGD's delta codec then finds it in that
  // replica's activation cache). Later epochs revisit epoch 0's samples, so with a mixture whose
  // epochs differ (samples_per_epoch below the block count) the rest is never seen.
  bool stable_shards = false;
};

struct Batch {
  std::vector<uint64_t> sample_ids;  // batch_size stable ids (sample_id.h)
  std::vector<uint32_t> tokens;      // batch_size * seq_length, row i is sample_ids[i]'s block
  uint64_t epoch = 0;                // the epoch the batch belongs to
  uint64_t index = 0;                // its 0-based position in that epoch, for this rank
};

class BatchIterator {
 public:
  // Errors name the option: a bad batch_size, rank or world_size, or an epoch shorter than one
  // round (world_size * batch_size samples).
  static StatusOr<std::unique_ptr<BatchIterator>> Create(const Dataset* dataset,
                                                         const BatchOptions& options);

  // The batch at position(), then advances.
  StatusOr<Batch> Next();
  // Where the next batch comes from; save it with a checkpoint.
  DataPosition position() const { return position_; }
  // Continues from `position` (from position() of an iterator with the same dataset and
  // options). OUT_OF_RANGE for an index beyond the epoch's batches.
  Status Seek(const DataPosition& position);

  uint64_t batches_per_epoch() const { return batches_per_epoch_; }

 private:
  BatchIterator(const Dataset* dataset, const BatchOptions& options, EpochMixture mixture,
                uint64_t batches_per_epoch)
      : dataset_(dataset),
        options_(options),
        mixture_(std::move(mixture)),
        batches_per_epoch_(batches_per_epoch) {}

  // Position in the epoch order where this rank's batch `index` starts (dealt in rounds).
  uint64_t RankOffset(uint64_t index) const;
  // Fills order_ with what epoch `epoch` visits (the whole epoch order, or with stable_shards
  // this rank's share only).
  Status BuildOrder(uint64_t epoch);

  const Dataset* dataset_;
  BatchOptions options_;
  EpochMixture mixture_;
  uint64_t batches_per_epoch_;
  DataPosition position_;
  // The order of epoch order_epoch_, built on first use of that epoch.
  bool has_order_ = false;
  uint64_t order_epoch_ = 0;
  std::vector<uint64_t> order_;
};

}  // namespace geotrain::models::data
