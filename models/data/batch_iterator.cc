#include "models/data/batch_iterator.h"

#include <algorithm>
#include <numeric>

#include "common/hash_random.h"

namespace geotrain::models::data {
namespace {
// HashCounter stream of the stable shards' per-epoch shuffles ("SHARD").
constexpr uint64_t kStableShardStream = 0x5348415244ull;
}  // namespace

StatusOr<std::unique_ptr<BatchIterator>> BatchIterator::Create(const Dataset* dataset,
                                                               const BatchOptions& options) {
  if (dataset == nullptr) return InvalidArgument("batch iterator: no dataset");
  if (options.batch_size <= 0) {
    return InvalidArgument("batch options: batch_size " + std::to_string(options.batch_size) +
                           " must be > 0");
  }
  if (options.world_size <= 0) {
    return InvalidArgument("batch options: world_size " + std::to_string(options.world_size) +
                           " must be > 0");
  }
  if (options.rank < 0 || options.rank >= options.world_size) {
    return InvalidArgument("batch options: rank " + std::to_string(options.rank) +
                           " is not in [0, " + std::to_string(options.world_size) + ")");
  }
  EpochMixture mixture;
  mixture.block_counts = dataset->block_counts();
  mixture.weights = dataset->weights();
  mixture.samples_per_epoch =
      options.samples_per_epoch != 0
          ? options.samples_per_epoch
          : std::accumulate(mixture.block_counts.begin(), mixture.block_counts.end(), uint64_t{0});
  const uint64_t round =
      static_cast<uint64_t>(options.batch_size) * static_cast<uint64_t>(options.world_size);
  const uint64_t batches_per_epoch = mixture.samples_per_epoch / round;
  if (batches_per_epoch == 0) {
    return InvalidArgument(
        "batch options: an epoch of " + std::to_string(mixture.samples_per_epoch) +
        " samples is shorter than one round of world_size * batch_size = " + std::to_string(round));
  }
  return std::unique_ptr<BatchIterator>(
      new BatchIterator(dataset, options, std::move(mixture), batches_per_epoch));
}

Status BatchIterator::Seek(const DataPosition& position) {
  if (position.index > batches_per_epoch_) {
    return OutOfRange("data position: index " + std::to_string(position.index) + " is beyond the " +
                      std::to_string(batches_per_epoch_) + " batches of an epoch");
  }
  position_ = position;
  return OkStatus();
}

uint64_t BatchIterator::RankOffset(uint64_t index) const {
  return (index * static_cast<uint64_t>(options_.world_size) +
          static_cast<uint64_t>(options_.rank)) *
         static_cast<uint64_t>(options_.batch_size);
}

Status BatchIterator::BuildOrder(uint64_t epoch) {
  GEOTRAIN_ASSIGN_OR_RETURN(
      order_, BuildEpochOrder(mixture_, options_.seed, options_.stable_shards ? 0 : epoch));
  if (options_.stable_shards) {
    // This rank's share of epoch 0, in its epoch-0 order, then reshuffled for later epochs.
    const uint64_t batch_size = static_cast<uint64_t>(options_.batch_size);
    std::vector<uint64_t> share;
    share.reserve(batches_per_epoch_ * batch_size);
    for (uint64_t index = 0; index < batches_per_epoch_; ++index) {
      const auto first = order_.begin() + static_cast<std::ptrdiff_t>(RankOffset(index));
      share.insert(share.end(), first, first + static_cast<std::ptrdiff_t>(batch_size));
    }
    if (epoch > 0) {
      ShuffleIds(&share, HashCounter(options_.seed ^ kStableShardStream,
                                     static_cast<uint64_t>(options_.rank), epoch));
    }
    order_ = std::move(share);
  }
  order_epoch_ = epoch;
  has_order_ = true;
  return OkStatus();
}

StatusOr<Batch> BatchIterator::Next() {
  if (position_.index == batches_per_epoch_) position_ = {position_.epoch + 1, 0};
  if (!has_order_ || order_epoch_ != position_.epoch) {
    GEOTRAIN_RETURN_IF_ERROR(BuildOrder(position_.epoch));
  }
  const uint64_t batch_size = static_cast<uint64_t>(options_.batch_size);
  const uint64_t seq_length = static_cast<uint64_t>(dataset_->seq_length());
  const uint64_t first =
      options_.stable_shards ? position_.index * batch_size : RankOffset(position_.index);
  Batch batch;
  batch.epoch = position_.epoch;
  batch.index = position_.index;
  batch.sample_ids.assign(order_.begin() + first, order_.begin() + first + batch_size);
  batch.tokens.reserve(batch_size * seq_length);
  for (uint64_t sample_id : batch.sample_ids) {
    GEOTRAIN_ASSIGN_OR_RETURN(const Span<const uint32_t> block, dataset_->Block(sample_id));
    batch.tokens.insert(batch.tokens.end(), block.begin(), block.end());
  }
  ++position_.index;
  return batch;
}

}  // namespace geotrain::models::data
