// Launch geometry shared by the kernels of compression/cuda/ (included by .cu files only).
#pragma once

#include <cstdint>

namespace geotrain::compression::cuda {

constexpr int kThreads = 256;

inline int64_t CeilDiv(int64_t n, int64_t d) { return (n + d - 1) / d; }

// Grid size for `blocks` one-dimensional blocks (frames are bounded to 2^28 values, so this
// stays far below the 2^31 - 1 limit of gridDim.x); at least one block.
inline unsigned Blocks(int64_t blocks) { return static_cast<unsigned>(blocks > 0 ? blocks : 1); }

}  // namespace geotrain::compression::cuda
