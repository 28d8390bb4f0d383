#include "compression/cuda/device_activation_cache.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "compression/cuda/delta_device.h"

namespace geotrain::compression::cuda {

StatusOr<std::unique_ptr<DeviceActivationCache>> DeviceActivationCache::Create(
    const ActivationCacheOptions& options, Stream stream) {
  if (options.max_samples < 1) {
    return InvalidArgument("max_cache_samples: " + std::to_string(options.max_samples) +
                           " must be at least 1");
  }
  if (options.cache_bits != 0) {
    return InvalidArgument("cache_bits: " + std::to_string(options.cache_bits) +
                           ": the CUDA delta codec keeps fp16 slots only (delta-lowbits runs on "
                           "the CPU codec)");
  }
  return std::unique_ptr<DeviceActivationCache>(new DeviceActivationCache(options, stream));
}

Status DeviceActivationCache::UseSampleShape(int64_t rows, int64_t cols) {
  GEOTRAIN_RETURN_IF_ERROR(CheckSampleShape(rows, cols));
  if (rows_ != 0) return OkStatus();
  rows_ = rows;
  cols_ = cols;
  sample_bytes_ = 2 * static_cast<size_t>(rows) * static_cast<size_t>(cols);
  slot_bytes_ = (sample_bytes_ + 255) / 256 * 256;
  return OkStatus();
}

uint8_t* DeviceActivationCache::SlotAddress(int64_t slot) const {
  return static_cast<uint8_t*>(chunks_[slot / kSlotsPerChunk].data()) +
         (slot % kSlotsPerChunk) * slot_bytes_;
}

Status DeviceActivationCache::ReserveSlot(int64_t slot) {
  const size_t chunk = static_cast<size_t>(slot / kSlotsPerChunk);
  if (chunk < chunks_.size()) return OkStatus();
  DeviceBytes memory;
  const Status s = memory.Reserve(kSlotsPerChunk * slot_bytes_);
  if (!s.ok()) {
    return ResourceExhausted(
        "max_cache_samples: device memory for the activation cache ran out "
        "at " +
        std::to_string(slot) + " samples of " + std::to_string(sample_bytes_) +
        " bytes; lower max_cache_samples (" + s.message() + ")");
  }
  chunks_.push_back(std::move(memory));
  return OkStatus();
}

StatusOr<SampleSlots::Entry*> DeviceActivationCache::Acquire(uint64_t id) {
  if (rows_ == 0) {
    return FailedPrecondition("activation cache: no sample shape yet (call UseSampleShape)");
  }
  return slots_.Acquire(id, [this](int64_t slot) { return ReserveSlot(slot); });
}

Status DeviceActivationCache::Rehash(SampleSlots::Entry* entry) {
  GEOTRAIN_RETURN_IF_ERROR(staging_.Reserve(sample_bytes_));
  GEOTRAIN_RETURN_IF_ERROR(
      CopyToHost(staging_.data(), SlotAddress(entry->slot), sample_bytes_, stream_));
  GEOTRAIN_RETURN_IF_ERROR(Synchronize(stream_, "hashing an activation cache slot"));
  entry->content_hash = XXH3_64bits(staging_.data(), sample_bytes_);
  return OkStatus();
}

uint64_t DeviceActivationCache::ContentHash(uint64_t id) const {
  const SampleSlots::Entry* entry = slots_.Find(id);
  return entry ? entry->content_hash : 0;
}

const uint8_t* DeviceActivationCache::Slot(uint64_t id) const {
  const SampleSlots::Entry* entry = slots_.Find(id);
  return entry ? SlotAddress(entry->slot) : nullptr;
}

Status DeviceActivationCache::StoreHalf(uint64_t id, const uint8_t* device_half) {
  GEOTRAIN_ASSIGN_OR_RETURN(SampleSlots::Entry * entry, Acquire(id));
  GEOTRAIN_RETURN_IF_ERROR(
      CopyOnDevice(SlotAddress(entry->slot), device_half, sample_bytes_, stream_));
  return Rehash(entry);
}

Status DeviceActivationCache::AccumulateDelta(uint64_t id, const float* delta,
                                              float* reconstruction, const float* reference,
                                              double* sums) {
  if (!Contains(id)) {
    return NotFound("activation cache: sample " + std::to_string(id) + " is not cached");
  }
  GEOTRAIN_ASSIGN_OR_RETURN(SampleSlots::Entry * entry, Acquire(id));
  GEOTRAIN_RETURN_IF_ERROR(AddDeltaToHalfOnDevice(delta, sample_elements(),
                                                  SlotAddress(entry->slot), reconstruction,
                                                  reference, sums, stream_));
  return Rehash(entry);
}

void DeviceActivationCache::Clear() {
  slots_.Clear();
  chunks_.clear();
  rows_ = cols_ = 0;
  sample_bytes_ = slot_bytes_ = 0;
}

StatusOr<std::vector<uint8_t>> DeviceActivationCache::SampleBytes(uint64_t id) const {
  const uint8_t* slot = Slot(id);
  if (!slot) return std::vector<uint8_t>();
  std::vector<uint8_t> bytes(sample_bytes_);
  GEOTRAIN_RETURN_IF_ERROR(CopyToHost(bytes.data(), slot, sample_bytes_, stream_));
  GEOTRAIN_RETURN_IF_ERROR(Synchronize(stream_, "reading an activation cache slot"));
  return bytes;
}

}  // namespace geotrain::compression::cuda
