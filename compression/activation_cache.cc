#include "compression/activation_cache.h"

#include <sys/stat.h>
#include <unistd.h>
// Inlined so that XXH3 is compiled for this build's -march (AVX2): twice the speed of the
// distribution's baseline library on cache slots.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <cerrno>
#include <cstring>

#include "common/bytes.h"
#include "compression/fixpoint_block.h"
#include "compression/half_kernels.h"

namespace geotrain::compression {
namespace {

constexpr size_t kSlotAlignment = 64;  // slots start on cache lines

std::string ShapeText(int64_t rows, int64_t cols) {
  return "[" + std::to_string(rows) + ", " + std::to_string(cols) + "] (" +
         std::to_string(rows * cols) + " values)";
}

QuantLayout CacheLayout(int64_t rows, int64_t cols) {
  QuantLayout layout;
  layout.rows = rows;
  layout.cols = cols;
  layout.mode = ScaleMode::kPerChannel;  // one scale per (sample, channel)
  return layout;
}

Status CheckWritableDirectory(const std::string& dir) {
  struct stat st;
  if (stat(dir.c_str(), &st) != 0) {
    return Unavailable("cache_dir: " + dir + ": " + std::strerror(errno));
  }
  if (!S_ISDIR(st.st_mode)) return Unavailable("cache_dir: " + dir + " is not a directory");
  if (access(dir.c_str(), W_OK | X_OK) != 0) {
    return Unavailable("cache_dir: " + dir + " is not writable: " + std::strerror(errno));
  }
  return OkStatus();
}

}  // namespace

StatusOr<std::unique_ptr<ActivationCache>> ActivationCache::Create(
    const ActivationCacheOptions& options) {
  if (options.max_samples < 1) {
    return InvalidArgument("max_cache_samples: " + std::to_string(options.max_samples) +
                           " must be at least 1");
  }
  if (options.cache_bits != 0 && options.cache_bits != 2 && options.cache_bits != 4 &&
      options.cache_bits != 8) {
    return InvalidArgument("cache_bits: " + std::to_string(options.cache_bits) +
                           " must be 0 (fp16), 2, 4 or 8");
  }
  GEOTRAIN_RETURN_IF_ERROR(CheckWritableDirectory(MappedSlotFile::ResolveDirectory(options.dir)));
  return std::unique_ptr<ActivationCache>(new ActivationCache(options));
}

Status CheckCacheSampleShape(int64_t rows, int64_t cols, int64_t fixed_rows, int64_t fixed_cols) {
  if (rows < 1 || cols < 1) {
    return InvalidArgument("sample shape " + ShapeText(rows, cols) + " is empty");
  }
  if (fixed_rows == 0 || (rows == fixed_rows && cols == fixed_cols)) return OkStatus();
  return InvalidArgument("sample shape " + ShapeText(rows, cols) + " differs from " +
                         ShapeText(fixed_rows, fixed_cols) +
                         ", the shape fixed by the activation cache's first sample");
}

Status ActivationCache::CheckSampleShape(int64_t rows, int64_t cols) const {
  return CheckCacheSampleShape(rows, cols, rows_, cols_);
}

Status ActivationCache::UseSampleShape(int64_t rows, int64_t cols) {
  GEOTRAIN_RETURN_IF_ERROR(CheckSampleShape(rows, cols));
  if (rows_ != 0) return OkStatus();
  const uint64_t elements = static_cast<uint64_t>(rows) * static_cast<uint64_t>(cols);
  const uint64_t bytes = options_.cache_bits == 0
                             ? 2 * elements
                             : FixpointBlockBytes(CacheLayout(rows, cols), options_.cache_bits);
  const size_t slot_bytes = (bytes + kSlotAlignment - 1) / kSlotAlignment * kSlotAlignment;
  GEOTRAIN_ASSIGN_OR_RETURN(file_,
                            MappedSlotFile::Create(options_.dir, options_.max_samples, slot_bytes));
  rows_ = rows;
  cols_ = cols;
  sample_bytes_ = bytes;
  return OkStatus();
}

Status ActivationCache::Lookup(uint64_t id, float* out) const {
  const Entry* entry = slots_.Find(id);
  if (!entry) return NotFound("activation cache: sample " + std::to_string(id) + " is not cached");
  const uint8_t* slot = file_->slot(entry->slot);
  if (options_.cache_bits == 0) {
    HalfToFloatFinite(slot, sample_elements(), out);  // only finite values are ever stored
    return OkStatus();
  }
  ByteReader reader(Span<const uint8_t>(slot, sample_bytes_));
  const Status s =
      DecodeFixpointBlock(&reader, CacheLayout(rows_, cols_), options_.cache_bits, out);
  if (!s.ok())
    return Internal("activation cache: slot of sample " + std::to_string(id) +
                    " is corrupt: " + s.message());
  return OkStatus();
}

Status ActivationCache::Subtract(uint64_t id, const float* values, float* delta) const {
  const Entry* entry = slots_.Find(id);
  if (!entry) return NotFound("activation cache: sample " + std::to_string(id) + " is not cached");
  bool in_range;
  if (options_.cache_bits == 0) {
    in_range = SubtractHalf(values, file_->slot(entry->slot), sample_elements(), delta);
  } else {
    GEOTRAIN_RETURN_IF_ERROR(Lookup(id, delta));
    in_range = SubtractFloat(values, delta, sample_elements(), delta);
  }
  if (in_range) return OkStatus();
  return InvalidArgument("values: contain NaN, infinity or a magnitude beyond " +
                         std::to_string(static_cast<int>(kHalfMax)) +
                         " (the fp16 range of the activation cache)");
}

StatusOr<ActivationCache::Entry*> ActivationCache::Acquire(uint64_t id) {
  if (!file_) {
    return FailedPrecondition("activation cache: no sample shape yet (call UseSampleShape)");
  }
  return slots_.Acquire(id, [this](int64_t slot) { return file_->Reserve(slot); });
}

Status ActivationCache::WriteLowBits(Entry* entry, const float* values) {
  block_scratch_.clear();
  ByteWriter writer(&block_scratch_);
  QuantizeOptions quantize;
  quantize.bits = options_.cache_bits;
  quantize.rounding = Rounding::kNearest;  // deterministic on both ends, no seed to agree on
  GEOTRAIN_RETURN_IF_ERROR(
      EncodeFixpointBlock(values, CacheLayout(rows_, cols_), quantize, &writer, nullptr, nullptr));
  if (block_scratch_.size() != sample_bytes_) {
    // Only f32 scales change the size, and stored values never exceed the fp16 range.
    return Internal("activation cache: low-bit block of " + std::to_string(block_scratch_.size()) +
                    " bytes, slot holds " + std::to_string(sample_bytes_));
  }
  std::memcpy(file_->slot(entry->slot), block_scratch_.data(), sample_bytes_);
  return OkStatus();
}

void ActivationCache::Rehash(Entry* entry) {
  entry->content_hash = XXH3_64bits(file_->slot(entry->slot), sample_bytes_);
}

Status ActivationCache::StoreHalf(uint64_t id, const uint8_t* half_values) {
  GEOTRAIN_ASSIGN_OR_RETURN(Entry * entry, Acquire(id));
  if (options_.cache_bits == 0) {
    std::memcpy(file_->slot(entry->slot), half_values, sample_bytes_);
  } else {
    values_scratch_.resize(sample_elements());
    HalfToFloatFinite(half_values, sample_elements(), values_scratch_.data());
    const Status s = WriteLowBits(entry, values_scratch_.data());
    if (!s.ok()) {
      Erase(id);  // half written: never leave a slot that differs from the other end's
      return s;
    }
  }
  Rehash(entry);
  return OkStatus();
}

Status ActivationCache::Store(uint64_t id, const float* values) {
  if (!file_) {
    return FailedPrecondition("activation cache: no sample shape yet (call UseSampleShape)");
  }
  std::vector<uint8_t> half(2 * sample_elements());
  if (!FloatToHalfInRange(values, sample_elements(), half.data(), nullptr)) {
    return InvalidArgument("values: contain NaN, infinity or a magnitude beyond the fp16 range");
  }
  return StoreHalf(id, half.data());
}

Status ActivationCache::AccumulateDelta(uint64_t id, const float* delta, float* reconstruction,
                                        const float* reference, ErrorSums* error) {
  if (!Contains(id)) {
    return NotFound("activation cache: sample " + std::to_string(id) + " is not cached");
  }
  GEOTRAIN_ASSIGN_OR_RETURN(Entry * entry, Acquire(id));
  const int64_t n = sample_elements();
  if (options_.cache_bits == 0) {
    AddDeltaToHalf(delta, n, file_->slot(entry->slot), reconstruction, reference, error);
  } else {
    values_scratch_.resize(n);
    GEOTRAIN_RETURN_IF_ERROR(Lookup(id, values_scratch_.data()));
    float* sum = reconstruction ? reconstruction : values_scratch_.data();
    AddDeltaToFloat(values_scratch_.data(), delta, n, sum, reference, error);
    const Status s = WriteLowBits(entry, sum);
    if (!s.ok()) {
      Erase(id);
      return s;
    }
  }
  Rehash(entry);
  return OkStatus();
}

void ActivationCache::Clear() {
  slots_.Clear();
  file_.reset();
  rows_ = cols_ = 0;
  sample_bytes_ = 0;
}

Span<const uint8_t> ActivationCache::SampleBytes(uint64_t id) const {
  const Entry* entry = slots_.Find(id);
  if (!entry) return {};
  return Span<const uint8_t>(file_->slot(entry->slot), sample_bytes_);
}

uint64_t ActivationCache::ContentHash(uint64_t id) const {
  const Entry* entry = slots_.Find(id);
  return entry ? entry->content_hash : 0;
}

}  // namespace geotrain::compression
