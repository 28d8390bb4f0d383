// Per-tile statistics that tah's encoder gathers in one pass over its input.
//
// For every tile (G consecutive values of one row) the pass records what the later steps need:
// min and max (the quantization range of an unrotated tile), the largest and second largest |x|
// (the outlier test), and Σ|x| and Σ|x|·log2|x| (from which the entropy of a tile or a token is
// H = log2 S - (1/S) Σ|x| log2|x|, with S = Σ|x|; see TahUnitEntropy).
//
// log2 is FastLog2: exponent bits plus a cubic on the mantissa, within 6.4e-4 of log2. The
// entropy only ranks units and the ranking travels in the frame, so the receiver never recomputes
// it and an approximation costs nothing in agreement.
//
// The AVX2 path accumulates in 8 lanes and reduces them in a fixed tree; the scalar path does the
// same arithmetic in the same order, so a sender built without AVX2 produces identical frames.
// Thread-compatible: the functions are pure; TahTileStats is a plain value.
#pragma once

#include <cstdint>
#include <vector>

namespace geotrain::compression {

// Struct of arrays, one entry per tile, tiles in row-major order.
struct TahTileStats {
  std::vector<float> min;
  std::vector<float> max;
  std::vector<float> abs_max;      // largest |x|
  std::vector<float> abs_second;   // second largest |x| of the multiset (equals abs_max on a tie)
  std::vector<float> abs_sum;      // Σ|x|: not finite iff an input is NaN/inf or the sum overflows
  std::vector<float> abs_log_sum;  // Σ|x|·FastLog2(|x|)
};

// log2(x) for finite x >= 0 to within 6.4e-4 (x = 0 gives about -127, so 0·log2 0 = 0).
float FastLog2(float x);

// Fills `stats` for `tiles` tiles of `tile_size` values each (a multiple of 8) starting at `x`.
void ComputeTahTileStats(const float* x, int64_t tiles, int tile_size, TahTileStats* stats);

// The portable reference path (tests check it matches ComputeTahTileStats bit for bit).
void ComputeTahTileStatsScalar(const float* x, int64_t tiles, int tile_size, TahTileStats* stats);

// Index of the first of the g values whose |x| equals `abs_value` (0 if none does).
int TahFirstIndexOfAbs(const float* x, int g, float abs_value);

// Entropies of tiles as units: out[k] = FastLog2(S) - L/S in float from the tile's sums, 0 where
// S is 0 or anything is not finite. The AVX2 and scalar paths agree bit for bit.
void TahTileEntropies(const TahTileStats& stats, int64_t tiles, float* out);
void TahTileEntropiesScalar(const TahTileStats& stats, int64_t tiles, float* out);

// Entropy (in bits) of a unit with S = Σ|x| and L = Σ|x|·log2|x| summed in double (tokens). An
// all-zero unit, or one whose sums overflowed, has entropy 0 so that every entropy is finite.
float TahUnitEntropy(double abs_sum, double abs_log_sum);

}  // namespace geotrain::compression
