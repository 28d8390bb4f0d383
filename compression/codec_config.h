// CodecConfig: everything a sender needs to build a codec, with documented defaults.
//
// One flat struct because the job spec and the seed projects' flags (--forward-bits, --tile-size,
// --high-precision-bits, ...) are flat; Validate() checks only the fields the chosen codec uses
// and names the field and the reason on failure. Receivers read parameters from each frame, not
// from here, except the delta cache's bounds.
#pragma once

#include <cstdint>
#include <string>

#include "compression/types.h"

namespace geotrain::compression {

// Which values share one quantization scale (fixpoint, delta, backward).
enum class ScaleMode : uint8_t {
  kPerChannel = 0,  // one scale per last-dim channel, shared by all rows (AC-SGD default)
  kPerRow = 1,      // one scale per row (token)
  kPerTile = 2,     // one scale per `tile_size` consecutive values of a row
};
enum class Rounding : uint8_t {
  kNearest = 0,     // round half to even
  kStochastic = 1,  // floor + Bernoulli(fraction): unbiased
};
// The unit whose entropy decides high or low bits in tah.
enum class EntropyUnit : uint8_t { kToken = 0, kTile = 1 };
// What the activation cache does when a new sample arrives and every slot is taken.
enum class CacheFullPolicy : uint8_t {
  kEvictLeastRecent = 0,  // evict the least recently used sample on both ends (same order)
  kError = 1,             // refuse with RESOURCE_EXHAUSTED
};
// How cocktail picks the random subset.
enum class MaskMode : uint8_t {
  kRolling = 0,  // every round(1/p)-th coordinate, offset rolling by one per step (no seed traffic)
  kSeeded = 1,   // Bernoulli(p) per coordinate from a hash of (seed, step, index)
};

const char* ScaleModeName(ScaleMode mode);  // "channel", "row", "tile"
StatusOr<ScaleMode> ParseScaleMode(const std::string& name);
const char* RoundingName(Rounding rounding);  // "nearest", "stochastic"
StatusOr<Rounding> ParseRounding(const std::string& name);

struct CodecConfig {
  CodecId codec = CodecId::kNone;

  // none: element type on the wire (a cast; f16/bf16 halve the bytes).
  DType wire_dtype = DType::kFloat32;

  // fixpoint, delta, delta-lowbits: code width (2..8) and scale grouping.
  int bits = 8;
  ScaleMode scale_mode = ScaleMode::kPerChannel;
  // Values per scale in kPerTile mode and the tah tile G (a power of two, 8..1024).
  int tile_size = 64;
  Rounding rounding = Rounding::kNearest;
  // Shared seed: stochastic rounding, randk, powersgd's initial Q, seeded cocktail masks.
  uint64_t seed = 0;

  // delta-lowbits: bits of the cached activation (2, 4 or 8).
  int cache_bits = 4;
  // delta: most samples the cache holds (--max-activation-cache-size).
  int64_t max_cache_samples = 20000;
  // delta: directory of the memory-mapped cache file; empty means $TMPDIR or /tmp.
  std::string cache_dir;
  CacheFullPolicy cache_full_policy = CacheFullPolicy::kEvictLeastRecent;

  // tah (TAH-Quant): bits of high- and low-precision units and the share of high ones.
  int high_bits = 4;
  int low_bits = 3;
  double high_ratio = 0.8;
  EntropyUnit entropy_unit = EntropyUnit::kToken;
  // A tile is an outlier tile when max|x| >= threshold * second max|x| (τ).
  double outlier_threshold = 2.0;

  // topk, randk: fraction of values kept, and how kept values travel.
  double density = 0.01;
  DType value_dtype = DType::kFloat16;

  // powersgd: rank r; error feedback keeps M - P Qᵀ for the next encode (lazy error propagation).
  int rank = 16;
  bool error_feedback = true;

  // cocktail: random fraction p, top-k fraction of the sampled set, value bits and group size.
  double random_ratio = 0.1;
  double topk_ratio = 0.2;
  int quant_bits = 4;
  int quant_group = 128;
  MaskMode mask_mode = MaskMode::kRolling;

  // Any codec: zstd level for the payload (0 = off, 1..19).
  int zstd_level = 0;
  // CPU threads one encode or decode of a large tensor may use (fixpoint today; 1 = the calling
  // thread only). Frames are identical for any value.
  int threads = 1;

  // Checks the fields `codec` uses. The message names the field: "bits: 9 is outside 2..8".
  Status Validate() const;
  // Compact description for logs and benchmarks: "fixpoint bits=4 scale=channel".
  std::string Describe() const;
};

}  // namespace geotrain::compression
