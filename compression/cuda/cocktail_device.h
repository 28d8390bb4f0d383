// The device steps of the CUDA cocktail codec (cocktail_cuda_codec.h), kernels in
// cocktail_device.cu. Each step is asynchronous on `stream` unless it says it synchronises.
// Not thread-safe per workspace.
#pragma once

#include <cstdint>

#include "common/status.h"
#include "compression/cuda/cocktail_math.h"
#include "compression/cuda/device_memory.h"
#include "compression/cuda/fixpoint_device.h"

namespace geotrain::compression::cuda {

// Scratch one codec keeps between calls (grown on demand, never shrunk).
struct CocktailWorkspace {
  DeviceArray<float> sampled;             // m sampled values of v, sampled order
  DeviceArray<uint32_t> sampled_index;    // seeded masks: their coordinates
  DeviceArray<uint32_t> words_a;          // per word: member lanes, or lanes > T
  DeviceArray<uint32_t> words_b;          // per word: lanes == T
  DeviceArray<uint32_t> counts32;         // per word: counts, then
  DeviceArray<uint32_t> before32;         //   their exclusive scan
  DeviceArray<uint64_t> counts64;         // per word: PackCounts, then
  DeviceArray<uint64_t> before64;         //   their exclusive scan
  DeviceArray<uint32_t> histograms;       // kSelectPasses * kMaxDigitBins
  DeviceArray<uint32_t> select_state;     // a SelectState
  DeviceArray<uint8_t> bitmap;            // ceil(m / 8) bytes
  DeviceArray<float> kept;                // k kept values, sampled order
  DeviceArray<uint32_t> kept_coords;      // their coordinates (increasing)
  DeviceArray<float> kept_decoded;        // what the receiver decodes for them
  DeviceArray<double> sums;               // Σv², kept Σv², kept Σ(v - x̂)²
  DeviceArray<unsigned long long> flags;  // ~first non-finite x index (0: none), v not finite, m
  DeviceBytes scan_temp;                  // CUB's scratch
  PinnedBytes readback;                   // flags and sums, copied back
  PinnedBytes payload_host;               // the bitmap and the block, copied back
  FixpointWorkspace fixpoint;
  DeviceBytes block;  // the fixpoint block (encode) or bitmap + block (decode)
};

// What CocktailSample learnt about the input.
struct CocktailSampleInfo {
  uint64_t m = 0;             // sampled coordinates
  bool x_not_finite = false;  // some x[i] is NaN or infinite,
  uint64_t first_bad_x = 0;   //   the first of them at this index
  bool v_not_finite = false;  // some v = x + residual is not finite
};

// Forms v (x, or `residual` += x in place when `residual` is non-null), sums Σv² into
// ws->sums[0], checks finiteness and gathers the m sampled values of v in sampled order into
// ws->sampled (and, for seeded masks, their coordinates into ws->sampled_index). Synchronises
// once to learn m and the finiteness flags; when a value is not finite nothing is gathered.
Status CocktailSample(const float* x, float* residual, int64_t n, const CocktailMaskParams& mask,
                      CocktailWorkspace* ws, CocktailSampleInfo* info, Stream stream);

// Top-k of the m >= 1 sampled values (1 <= k <= m): the radix select of the k-th magnitude, then
// the bitmap (ws->bitmap, ceil(m / 8) bytes) and the kept values and coordinates in sampled
// order (ws->kept, ws->kept_coords).
Status CocktailSelectTopK(int64_t m, int64_t k, const CocktailMaskParams& mask,
                          CocktailWorkspace* ws, Stream stream);

// Σ over the k kept values of v² and (v - x̂)² (x̂ = ws->kept_decoded) into ws->sums[1..2].
Status CocktailKeptSums(int64_t k, CocktailWorkspace* ws, Stream stream);

// residual[kept_coords[c]] -= kept_decoded[c] for the k kept values.
Status CocktailSubtractSent(int64_t k, CocktailWorkspace* ws, float* residual, Stream stream);

// Decode, seeded masks: the sampled coordinates of [0, n) into ws->sampled_index and their
// count into *m. Synchronises once (for m).
Status CocktailSeededIndices(const CocktailMaskParams& mask, int64_t n, CocktailWorkspace* ws,
                             uint64_t* m, Stream stream);

// Decode: out[coordinate of sampled position j] = decoded[rank of j among the set bits] for every
// set bit j of `bitmap` (device, ceil(m / 8) bytes, already checked), zeros elsewhere in out[n].
Status CocktailScatter(const uint8_t* bitmap, int64_t m, int64_t n, const CocktailMaskParams& mask,
                       const float* decoded, CocktailWorkspace* ws, float* out, Stream stream);

}  // namespace geotrain::compression::cuda
