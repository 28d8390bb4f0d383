// Kernels of tah_device.h: TahCodec's frames (tah_codec.cc, layout in tah_format.h) built and
// decoded on a CUDA device, byte for byte and bit for bit. The arithmetic is tah_math.h's (shared
// with the CPU codec, and checked against it by a CPU test); this file only decides which thread
// does what. Tiles are contiguous in the flat tensor (G divides the last dim), so tile k is
// x[k·G, (k+1)·G) whatever the shape.
//
// Encode, on `stream`:
//   1. TileStats: 8 threads per tile, thread l walking elements l, l+8, ... exactly like lane l
//      of ComputeTahTileStats (same float adds, same fmas, same FastLog2), then a shuffle-xor
//      tree 4, 2, 1 that is SumLanes' reduction tree at lane 0. Lane 0 writes min/max/max|x|, the
//      rotation flag (τ test), flags fp16 overflow, looks for the first non-finite value of a tile
//      whose Σ|x| is not finite, and writes the tile's entropy key (tile units) or its two sums
//      (token units).
//   2. RowEntropy (token units): one thread per row adds its tiles' sums in double in tile order,
//      as RankUnits does.
//   3. Ranking: TahBitAllocator gives high bits to the units ranked last by (entropy, index); a
//      stable radix sort (CUB) of (key, index) and "position >= low" reproduce it exactly (integer
//      keys: no rounding anywhere).
//   4. PackBitmap writes the unit and outlier bitmaps into the payload; BytePopcounts + an
//      exclusive scan (CUB) give per-byte prefix counts, from which any tile finds how many high
//      tiles and rotated tiles precede it (TahRank), i.e. where its codes and pivot go.
//   5. The host reads back three flags and the outlier count (the one mid-encode synchronisation:
//      the section sizes depend on them), and fails like the CPU codec on non-finite input.
//   6. QuantizeTiles<P>: P = G/8 threads per tile, one group of 8 consecutive values (= `bits`
//      packed bytes) per thread. Rotated tiles (uniform per tile) find the pivot (min-reduce of
//      first matches), swap it with element 0, run the butterflies h = 1, 2, 4 in registers and
//      h = 8..G/2 between threads (warp shuffles for P <= 32, shared memory across warps for
//      P = 64, 128, where a block is one tile), normalise and reduce min/max. Every thread then
//      computes the tile's zero/scale (thread 0 stores it), quantizes and stores its 8 codes at
//      the code offset; the squared error goes to 64 double slots.
//   7. PackPivots: one thread per byte of the pivot section; then the host copies the payload.
// Decode: the host validates the frame (tah_frame_check.h: TahCodec's own checks) and uploads the
// payload; the bitmaps are scanned as in step 4, and DecodeTiles<P> (same thread layout as step 6)
// dequantizes with fma, runs the same butterflies on rotated tiles and swaps the pivot back.
//
// Memory traffic: encode reads the input twice (as the CPU codec does) and writes the payload
// once; decode reads the payload once and writes the output once. The per-tile arrays are G/24 of
// the input or less. The per-element loads of step 1 are 4 bytes wide but every warp instruction
// reads whole 32-byte sectors of 4 tiles.
#include <cuda_runtime.h>

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "compression/cuda/kernel_launch.h"
#include "compression/cuda/tah_device.h"
#include "compression/hadamard.h"
#include "compression/tah_bit_allocation.h"
#include "compression/tah_math.h"

namespace geotrain::compression::cuda {
namespace {

constexpr unsigned kFullMask = 0xffffffffu;
constexpr unsigned long long kNone = ~0ull;
constexpr int kSumSlots = 64;

// ws->flags entries.
enum Flag : int { kFirstNonFinite = 0, kUnfitHalf = 1, kFirstUnsafeTile = 2, kFlagCount = 3 };

Status CudaCall(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return OkStatus();
  cudaGetLastError();
  return Internal(std::string(what) + ": " + cudaGetErrorString(error));
}

// ---- Small kernels ----------------------------------------------------------------------------

__global__ void InitFlags(unsigned long long* flags, double* sums) {
  const int i = threadIdx.x;
  if (i == 0) {
    flags[kFirstNonFinite] = kNone;
    flags[kUnfitHalf] = 0;
    flags[kFirstUnsafeTile] = kNone;
  }
  if (i < 2 * kSumSlots) sums[i] = 0.0;
}

__global__ void Iota(uint32_t* out, int64_t n) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = static_cast<uint32_t>(i);
}

// The units at sorted positions >= low are the high ones.
__global__ void MarkHigh(const uint32_t* order_sorted, int64_t units, int64_t low,
                         uint8_t* unit_high) {
  const int64_t p = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (p < units) unit_high[order_sorted[p]] = p >= low ? 1 : 0;
}

__global__ void PackBitmap(const uint8_t* flags, int64_t n, int64_t bytes, uint8_t* out) {
  const int64_t q = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (q < bytes) out[q] = TahBitmapByte(flags, static_cast<uint64_t>(n), static_cast<uint64_t>(q));
}

// counts[q] = popcount(map[q]) for q < bytes, and counts[bytes] = 0 (so that the exclusive scan's
// last entry is the total).
__global__ void BytePopcounts(const uint8_t* map, int64_t bytes, uint32_t* counts) {
  const int64_t q = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (q <= bytes) counts[q] = q < bytes ? static_cast<uint32_t>(TahPopcount(map[q])) : 0u;
}

__global__ void PackPivots(const uint16_t* pivots, int64_t count, int width, int64_t bytes,
                           uint8_t* out) {
  const int64_t q = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (q < bytes) {
    out[q] = TahFieldByte(pivots, static_cast<uint64_t>(count), width, static_cast<uint64_t>(q));
  }
}

// ---- Pass 1 -----------------------------------------------------------------------------------

struct StatsArgs {
  const float* x;
  int64_t tiles;
  int g;
  bool token;
  double tau, sqrt_g;
  float *min, *max, *abs_max, *abs_sum, *abs_log_sum;
  uint32_t* keys;
  uint8_t* rotated;
  unsigned long long* flags;
};

__device__ inline TahLane ShuffleLane(const TahLane& s, int offset) {
  TahLane o;
  o.lo = __shfl_xor_sync(kFullMask, s.lo, offset);
  o.hi = __shfl_xor_sync(kFullMask, s.hi, offset);
  o.top1 = __shfl_xor_sync(kFullMask, s.top1, offset);
  o.top2 = __shfl_xor_sync(kFullMask, s.top2, offset);
  o.sum = __shfl_xor_sync(kFullMask, s.sum, offset);
  o.log_sum = __shfl_xor_sync(kFullMask, s.log_sum, offset);
  return o;
}

__global__ void __launch_bounds__(kThreads) TileStats(StatsArgs a) {
  const int64_t t = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int64_t k = t >> 3;
  const int lane = static_cast<int>(t & 7);
  const bool active = k < a.tiles;
  TahLane s = TahLaneInit();
  if (active) {
    const float* __restrict__ p = a.x + k * a.g + lane;
    const int steps = a.g >> 3;
#pragma unroll 8
    for (int i = 0; i < steps; ++i) TahLaneAdd(s, p[8 * i]);
  }
  // Lane 0 merges with 4, then (0+4) with (2+6), then with (1+5)+(3+7): SumLanes' tree.
  for (int offset = 4; offset >= 1; offset >>= 1) {
    const TahLane other = ShuffleLane(s, offset);
    TahLaneMerge(s, other);
  }
  if (!active || lane != 0) return;
  const TahTileStat st = TahFinishTile(s);
  const bool rotated = TahIsRotated(st.abs_max, st.abs_second, a.tau);
  a.min[k] = st.min;
  a.max[k] = st.max;
  a.abs_max[k] = st.abs_max;
  a.rotated[k] = rotated ? 1 : 0;
  if (a.token) {
    a.abs_sum[k] = st.abs_sum;
    a.abs_log_sum[k] = st.abs_log_sum;
  } else {
    a.keys[k] = TahOrderedKey(TahTileEntropy(st.abs_sum, st.abs_log_sum));
  }
  if (!TahFitsHalf(st.abs_max, rotated, a.sqrt_g)) {
    // Many tiles may set it: read first so that only the first few write.
    if (*reinterpret_cast<volatile unsigned long long*>(&a.flags[kUnfitHalf]) == 0) {
      atomicOr(&a.flags[kUnfitHalf], 1ull);
    }
  }
  if (!TahIsFinite(st.abs_sum)) {  // CheckFinite: the first non-finite value of such a tile
    const float* tile = a.x + k * a.g;
    for (int i = 0; i < a.g; ++i) {
      if (!TahIsFinite(tile[i])) {
        atomicMin(&a.flags[kFirstNonFinite], static_cast<unsigned long long>(k * a.g + i));
        break;
      }
    }
  }
}

// RankUnits for tokens: the row's tile sums added in double in tile order.
__global__ void RowEntropy(const float* abs_sum, const float* abs_log_sum, int64_t rows,
                           int64_t per_row, uint32_t* keys) {
  const int64_t r = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (r >= rows) return;
  double sum = 0, log_sum = 0;
  for (int64_t k = r * per_row; k < (r + 1) * per_row; ++k) {
    sum += abs_sum[k];
    log_sum += abs_log_sum[k];
  }
  keys[r] = TahOrderedKey(TahTokenEntropy(sum, log_sum));
}

// ---- Tile groups: the threads sharing a tile ----------------------------------------------------

// P <= 32: an aligned run of P lanes of one warp; `mask` holds every lane taking part.
template <int P>
struct WarpGroup {
  static constexpr int kP = P;
  unsigned mask;
  int j;  // this thread's group of 8 values in the tile

  __device__ int MinInt(int v) const {
    for (int m = P / 2; m >= 1; m >>= 1) v = min(v, __shfl_xor_sync(mask, v, m));
    return v;
  }
  __device__ float MinF(float v) const {
    for (int m = P / 2; m >= 1; m >>= 1) v = TahMin(v, __shfl_xor_sync(mask, v, m));
    return v;
  }
  __device__ float MaxF(float v) const {
    for (int m = P / 2; m >= 1; m >>= 1) v = TahMax(v, __shfl_xor_sync(mask, v, m));
    return v;
  }
  __device__ float Broadcast(float v, int from) const {
    if (P == 1) return v;
    return __shfl_sync(mask, v, from, P);
  }
  __device__ void Exchange(const float v[8], float other[8], int m) const {
    for (int i = 0; i < 8; ++i) other[i] = __shfl_xor_sync(mask, v[i], m);
  }
};

// P = 64 or 128: the whole block (blockDim.x == P) is one tile. Every member function is called
// by all threads of the block (whether a tile rotates is the same for all of them).
template <int P>
struct BlockGroup {
  static constexpr int kP = P;
  static constexpr int kWarps = P / 32;
  int j;

  __device__ int MinInt(int v) const {
    __shared__ int partial[kWarps];
    for (int m = 16; m >= 1; m >>= 1) v = min(v, __shfl_xor_sync(kFullMask, v, m));
    if ((j & 31) == 0) partial[j >> 5] = v;
    __syncthreads();
    int r = partial[0];
    for (int w = 1; w < kWarps; ++w) r = min(r, partial[w]);
    __syncthreads();
    return r;
  }
  template <bool kMin>
  __device__ float Reduce(float v) const {
    __shared__ float partial[kWarps];
    for (int m = 16; m >= 1; m >>= 1) {
      const float o = __shfl_xor_sync(kFullMask, v, m);
      v = kMin ? TahMin(v, o) : TahMax(v, o);
    }
    if ((j & 31) == 0) partial[j >> 5] = v;
    __syncthreads();
    float r = partial[0];
    for (int w = 1; w < kWarps; ++w) r = kMin ? TahMin(r, partial[w]) : TahMax(r, partial[w]);
    __syncthreads();
    return r;
  }
  __device__ float MinF(float v) const { return Reduce<true>(v); }
  __device__ float MaxF(float v) const { return Reduce<false>(v); }
  __device__ float Broadcast(float v, int from) const {
    __shared__ float value;
    if (j == from) value = v;
    __syncthreads();
    const float r = value;
    __syncthreads();
    return r;
  }
  __device__ void Exchange(const float v[8], float other[8], int m) const {
    if (m < 32) {
      for (int i = 0; i < 8; ++i) other[i] = __shfl_xor_sync(kFullMask, v[i], m);
      return;
    }
    __shared__ float exchange[8][P];  // [element][thread]: conflict-free
    for (int i = 0; i < 8; ++i) exchange[i][j] = v[i];
    __syncthreads();
    for (int i = 0; i < 8; ++i) other[i] = exchange[i][j ^ m];
    __syncthreads();
  }
};

// x·H_G/√G over the tile: stages h = 1, 2, 4 in registers, then h = 8·m between groups, in
// ascending order, then the product by the normaliser (OrthonormalHadamardScalar's arithmetic).
template <class Group>
__device__ inline void GroupHadamard(const Group& group, float v[8], float normalizer) {
  TahHadamard8(v);
  for (int m = 1; m < Group::kP; m <<= 1) {
    float other[8];
    group.Exchange(v, other, m);
    TahButterflyGroups(v, other, (group.j & m) == 0);
  }
  TahScaleGroup(v, normalizer);
}

// std::swap(tile[0], tile[pivot]).
template <class Group>
__device__ inline void GroupSwap(const Group& group, float v[8], int pivot) {
  const float v0 = group.Broadcast(v[0], 0);
  const float vp = group.Broadcast(TahPick(v, pivot & 7), pivot >> 3);
  TahSwapPivot(v, group.j, pivot, v0, vp);
}

// QuantizeRows for a rotated tile: pivot, swap, transform, range.
template <class Group>
__device__ inline void RotateForEncode(const Group& group, float v[8], float top, int g,
                                       float normalizer, int* pivot, float* lo, float* hi) {
  const int first = group.MinInt(TahGroupPivot(v, top, group.j, g));
  const int p = first < g ? first : 0;  // TahFirstIndexOfAbs's 0 when nothing matches
  GroupSwap(group, v, p);
  GroupHadamard(group, v, normalizer);
  float l, h;
  TahGroupMinMax(v, &l, &h);
  *lo = group.MinF(l) + 0.0f;  // TahTileMinMax's + 0
  *hi = group.MaxF(h) + 0.0f;
  *pivot = p;
}

__device__ inline void LoadValues(const float* p, bool aligned, float v[8]) {
  if (aligned) {
    const float4 a = reinterpret_cast<const float4*>(p)[0];
    const float4 b = reinterpret_cast<const float4*>(p)[1];
    v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w;
    v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
  } else {
    for (int i = 0; i < 8; ++i) v[i] = p[i];
  }
}

__device__ inline void StoreValues(const float v[8], bool aligned, float* p) {
  if (aligned) {
    reinterpret_cast<float4*>(p)[0] = make_float4(v[0], v[1], v[2], v[3]);
    reinterpret_cast<float4*>(p)[1] = make_float4(v[4], v[5], v[6], v[7]);
  } else {
    for (int i = 0; i < 8; ++i) p[i] = v[i];
  }
}

// Which bits tile k uses and how many high tiles precede it.
struct TileBits {
  int bits;
  uint64_t high_before;
};

__device__ inline TileBits BitsOfTile(int64_t k, bool token, int64_t tiles_per_row,
                                      const uint8_t* unit_map, const uint32_t* unit_prefix,
                                      int high_bits, int low_bits) {
  const int64_t unit = token ? k / tiles_per_row : k;
  const bool high = TahBit(unit_map, static_cast<uint64_t>(unit));
  TileBits b;
  b.bits = high ? high_bits : low_bits;
  b.high_before = TahHighTilesBefore(
      token, k, tiles_per_row, TahRank(unit_map, unit_prefix, static_cast<uint64_t>(unit)), high);
  return b;
}

// ---- Pass 2 -----------------------------------------------------------------------------------

struct QuantizeArgs {
  const float* x;
  int64_t tiles, tiles_per_row;
  int g, high_bits, low_bits;
  bool token, f32, aligned;
  float normalizer;
  float *min, *max;
  const float* abs_max;
  const uint8_t* unit_map;  // in the payload
  const uint32_t* unit_prefix;
  const uint8_t* tile_map;  // in the payload
  const uint32_t* tile_prefix;
  uint16_t* pivots;
  uint8_t *scales, *codes;  // payload sections
  unsigned long long* flags;
  double* sums;
};

__device__ inline void AddToSlots(double err, double norm, double* sums) {
  for (int o = 16; o > 0; o >>= 1) {
    err += __shfl_down_sync(kFullMask, err, o);
    norm += __shfl_down_sync(kFullMask, norm, o);
  }
  if ((threadIdx.x & 31) == 0 && (err != 0 || norm != 0)) {
    const int slot =
        static_cast<int>((blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32) % kSumSlots);
    atomicAdd(&sums[2 * slot], err);
    atomicAdd(&sums[2 * slot + 1], norm);
  }
}

template <int P>
__global__ void __launch_bounds__(P > 32 ? P : kThreads) QuantizeTiles(QuantizeArgs a) {
  const int64_t t = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int64_t k = t / P;
  const int j = static_cast<int>(t % P);
  const bool active = k < a.tiles;
  float v[8] = {};
  bool rotated = false;
  TileBits tb{a.low_bits, 0};
  if (active) {
    LoadValues(a.x + k * a.g + 8 * j, a.aligned, v);
    rotated = TahBit(a.tile_map, static_cast<uint64_t>(k));
    tb =
        BitsOfTile(k, a.token, a.tiles_per_row, a.unit_map, a.unit_prefix, a.high_bits, a.low_bits);
  }
  float lo = 0, hi = 0;
  int pivot = 0;
  if constexpr (P <= 32) {
    const unsigned mask = __ballot_sync(kFullMask, rotated);
    if (rotated) {
      RotateForEncode(WarpGroup<P>{mask, j}, v, a.abs_max[k], a.g, a.normalizer, &pivot, &lo, &hi);
    }
  } else {
    if (rotated) {  // the same for every thread of the block
      RotateForEncode(BlockGroup<P>{j}, v, a.abs_max[k], a.g, a.normalizer, &pivot, &lo, &hi);
    }
  }
  double err = 0, norm = 0;
  if (active) {
    if (!rotated) {
      lo = a.min[k];
      hi = a.max[k];
    } else if (j == 0) {
      a.pivots[TahRank(a.tile_map, a.tile_prefix, static_cast<uint64_t>(k))] =
          static_cast<uint16_t>(pivot);
      a.min[k] = lo;  // the rotated range, as the CPU codec's stats hold it for its messages
      a.max[k] = hi;
    }
    TahScale s;
    if (a.f32) {
      s = TahChooseScaleF32(lo, hi, tb.bits);
      if (j == 0) {
        TahWriteScaleF32(s, k, a.scales);
        if (!TahScaleIsSafe(s, tb.bits, a.g, rotated)) {
          atomicMin(&a.flags[kFirstUnsafeTile], static_cast<unsigned long long>(k));
        }
      }
    } else {
      uint16_t wire[2];
      s = TahChooseScaleF16(lo, hi, tb.bits, wire);
      if (j == 0) TahWriteScaleF16(wire, k, a.scales);
    }
    uint8_t codes[8];
    TahQuantizeGroup(v, s, tb.bits, codes, &err, &norm);
    TahStoreGroup(codes, tb.bits,
                  a.codes + TahCodeOffset(k, tb.high_before, a.g, a.high_bits, a.low_bits) +
                      static_cast<uint64_t>(j) * tb.bits);
  }
  AddToSlots(err, norm, a.sums);
}

// ---- Decode -----------------------------------------------------------------------------------

struct DecodeArgs {
  const uint8_t* unit_map;
  const uint8_t* tile_map;
  const uint8_t* pivots;
  const uint8_t* scales;
  const uint8_t* codes;
  const uint32_t* unit_prefix;
  const uint32_t* tile_prefix;
  int64_t tiles, tiles_per_row;
  int g, high_bits, low_bits, pivot_bits;
  bool token, f32, aligned;
  float normalizer;
  float* out;
};

template <int P>
__global__ void __launch_bounds__(P > 32 ? P : kThreads) DecodeTiles(DecodeArgs a) {
  const int64_t t = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int64_t k = t / P;
  const int j = static_cast<int>(t % P);
  const bool active = k < a.tiles;
  float v[8] = {};
  bool rotated = false;
  int pivot = 0;
  if (active) {
    rotated = TahBit(a.tile_map, static_cast<uint64_t>(k));
    const TileBits tb =
        BitsOfTile(k, a.token, a.tiles_per_row, a.unit_map, a.unit_prefix, a.high_bits, a.low_bits);
    const TahScale s = TahReadScale(a.scales, k, a.f32);
    uint8_t codes[8];
    TahLoadGroup(a.codes + TahCodeOffset(k, tb.high_before, a.g, a.high_bits, a.low_bits) +
                     static_cast<uint64_t>(j) * tb.bits,
                 tb.bits, codes);
    TahDequantizeGroup(codes, s, v);
    if (rotated) {
      pivot = TahReadField(a.pivots, TahRank(a.tile_map, a.tile_prefix, static_cast<uint64_t>(k)),
                           a.pivot_bits);
    }
  }
  if constexpr (P <= 32) {
    const unsigned mask = __ballot_sync(kFullMask, rotated);
    if (rotated) {
      const WarpGroup<P> group{mask, j};
      GroupHadamard(group, v, a.normalizer);
      GroupSwap(group, v, pivot);
    }
  } else {
    if (rotated) {
      const BlockGroup<P> group{j};
      GroupHadamard(group, v, a.normalizer);
      GroupSwap(group, v, pivot);
    }
  }
  if (active) StoreValues(v, a.aligned, a.out + k * a.g + 8 * j);
}

// ---- Launch helpers -----------------------------------------------------------------------------

// A tile's P lanes: tiles of up to a warp share blocks of kThreads, larger ones get a block each.
struct TileLaunch {
  unsigned blocks;
  int threads;
};

template <int P>
TileLaunch TileLaunchFor(int64_t tiles) {
  if (P <= 32) return {Blocks(CeilDiv(tiles * P, kThreads)), kThreads};
  return {Blocks(tiles), P};
}

// Calls launch.template operator()<G / 8>() for the tile size g.
template <class Launch>
Status ForTileSize(int g, const Launch& launch) {
  switch (g) {
    case 8:
      launch.template operator()<1>();
      break;
    case 16:
      launch.template operator()<2>();
      break;
    case 32:
      launch.template operator()<4>();
      break;
    case 64:
      launch.template operator()<8>();
      break;
    case 128:
      launch.template operator()<16>();
      break;
    case 256:
      launch.template operator()<32>();
      break;
    case 512:
      launch.template operator()<64>();
      break;
    case 1024:
      launch.template operator()<128>();
      break;
    default:
      return InvalidArgument("tile_size: " + std::to_string(g) +
                             " is not a power of two in 8..1024");
  }
  return OkStatus();
}

struct QuantizeLauncher {
  const QuantizeArgs& a;
  Stream stream;
  template <int P>
  void operator()() const {
    const TileLaunch launch = TileLaunchFor<P>(a.tiles);
    QuantizeTiles<P><<<launch.blocks, launch.threads, 0, stream>>>(a);
  }
};

struct DecodeLauncher {
  const DecodeArgs& a;
  Stream stream;
  template <int P>
  void operator()() const {
    const TileLaunch launch = TileLaunchFor<P>(a.tiles);
    DecodeTiles<P><<<launch.blocks, launch.threads, 0, stream>>>(a);
  }
};

size_t ScanTempBytes(int64_t items, Stream stream) {
  size_t bytes = 0;
  cub::DeviceScan::ExclusiveSum(nullptr, bytes, static_cast<uint32_t*>(nullptr),
                                static_cast<uint32_t*>(nullptr), items, stream);
  return bytes;
}

// prefix[0 .. bytes] = exclusive prefix sums of the popcounts of map's `bytes` bytes.
Status ScanBitmap(const uint8_t* map, int64_t bytes, uint32_t* prefix, DeviceBytes* temp,
                  Stream stream) {
  BytePopcounts<<<Blocks(CeilDiv(bytes + 1, kThreads)), kThreads, 0, stream>>>(map, bytes, prefix);
  size_t temp_bytes = temp->capacity();
  return CudaCall(
      cub::DeviceScan::ExclusiveSum(temp->data(), temp_bytes, prefix, prefix, bytes + 1, stream),
      "tah bitmap scan");
}

Status ReserveTileArrays(TahDeviceWorkspace* ws, int64_t tiles, int64_t units, bool token) {
  const size_t n = static_cast<size_t>(std::max<int64_t>(tiles, 1));
  const size_t u = static_cast<size_t>(std::max<int64_t>(units, 1));
  GEOTRAIN_RETURN_IF_ERROR(ws->min.Reserve(n));
  GEOTRAIN_RETURN_IF_ERROR(ws->max.Reserve(n));
  GEOTRAIN_RETURN_IF_ERROR(ws->abs_max.Reserve(n));
  if (token) {
    GEOTRAIN_RETURN_IF_ERROR(ws->abs_sum.Reserve(n));
    GEOTRAIN_RETURN_IF_ERROR(ws->abs_log_sum.Reserve(n));
  }
  GEOTRAIN_RETURN_IF_ERROR(ws->rotated.Reserve(n));
  GEOTRAIN_RETURN_IF_ERROR(ws->pivots.Reserve(n));
  GEOTRAIN_RETURN_IF_ERROR(ws->keys.Reserve(u));
  GEOTRAIN_RETURN_IF_ERROR(ws->keys_sorted.Reserve(u));
  GEOTRAIN_RETURN_IF_ERROR(ws->order.Reserve(u));
  GEOTRAIN_RETURN_IF_ERROR(ws->order_sorted.Reserve(u));
  GEOTRAIN_RETURN_IF_ERROR(ws->unit_high.Reserve(u));
  GEOTRAIN_RETURN_IF_ERROR(ws->flags.Reserve(kFlagCount));
  GEOTRAIN_RETURN_IF_ERROR(ws->sums.Reserve(2 * kSumSlots));
  return OkStatus();
}

bool Aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

StatusOr<uint64_t> EncodeTahOnDevice(const float* x, const TahGeometry& geo,
                                     const TahEncodeSettings& settings, TahDeviceWorkspace* ws,
                                     TahParams* params, ErrorSums* error, Stream stream) {
  const int64_t tiles = geo.tiles, units = geo.units;
  const int g = geo.tile_size;
  const bool token = geo.entropy_unit == EntropyUnit::kToken;
  TahParams p;
  p.tile_size = g;
  p.high_bits = settings.high_bits;
  p.low_bits = settings.low_bits;
  p.entropy_unit = geo.entropy_unit;
  const int64_t high = HighUnitCount(units, settings.high_ratio);
  const int64_t low = units - high;
  p.high_units = static_cast<uint64_t>(high);
  if (tiles == 0) {  // then units == 0 too: an empty payload
    *params = p;
    return uint64_t{0};
  }

  // Sizes, scratch and the largest payload (outlier count and scale width come later).
  const int64_t unit_bytes = static_cast<int64_t>(BitmapBytes(units));
  const int64_t tile_bytes = static_cast<int64_t>(BitmapBytes(tiles));
  const uint64_t code_bytes = TahCodeBytes(geo, p.high_bits, p.low_bits, p.high_units);
  const uint64_t max_payload =
      unit_bytes + tile_bytes + PackedFieldBytes(tiles, geo.pivot_bits) + 8 * tiles + code_bytes;
  GEOTRAIN_RETURN_IF_ERROR(ReserveTileArrays(ws, tiles, units, token));
  GEOTRAIN_RETURN_IF_ERROR(ws->unit_prefix.Reserve(unit_bytes + 1));
  GEOTRAIN_RETURN_IF_ERROR(ws->tile_prefix.Reserve(tile_bytes + 1));
  GEOTRAIN_RETURN_IF_ERROR(ws->payload.Reserve(max_payload));
  GEOTRAIN_RETURN_IF_ERROR(ws->readback.Reserve(64 + 16 * kSumSlots));
  const bool rank_by_sort = high > 0 && low > 0;
  size_t temp =
      std::max(ScanTempBytes(unit_bytes + 1, stream), ScanTempBytes(tile_bytes + 1, stream));
  if (rank_by_sort) {
    size_t sort_bytes = 0;
    GEOTRAIN_RETURN_IF_ERROR(
        CudaCall(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, ws->keys.data(),
                                                 ws->keys_sorted.data(), ws->order.data(),
                                                 ws->order_sorted.data(), units, 0, 32, stream),
                 "tah ranking sort (size)"));
    temp = std::max(temp, sort_bytes);
  }
  GEOTRAIN_RETURN_IF_ERROR(ws->cub_temp.Reserve(std::max<size_t>(temp, 1)));
  auto* payload = static_cast<uint8_t*>(ws->payload.data());
  uint8_t* unit_map = payload;
  uint8_t* tile_map = payload + unit_bytes;

  // 1-2. Statistics, rotation flags, entropy keys.
  InitFlags<<<1, 2 * kSumSlots, 0, stream>>>(ws->flags.data(), ws->sums.data());
  StatsArgs sa;
  sa.x = x;
  sa.tiles = tiles;
  sa.g = g;
  sa.token = token;
  sa.tau = settings.outlier_threshold;
  sa.sqrt_g = std::sqrt(static_cast<double>(g));
  sa.min = ws->min.data();
  sa.max = ws->max.data();
  sa.abs_max = ws->abs_max.data();
  sa.abs_sum = ws->abs_sum.data();
  sa.abs_log_sum = ws->abs_log_sum.data();
  sa.keys = ws->keys.data();
  sa.rotated = ws->rotated.data();
  sa.flags = ws->flags.data();
  TileStats<<<Blocks(CeilDiv(tiles * 8, kThreads)), kThreads, 0, stream>>>(sa);
  if (token) {
    RowEntropy<<<Blocks(CeilDiv(geo.rows, kThreads)), kThreads, 0, stream>>>(
        ws->abs_sum.data(), ws->abs_log_sum.data(), geo.rows, geo.tiles_per_row, ws->keys.data());
  }
  GEOTRAIN_RETURN_IF_ERROR(LastCudaStatus("tah statistics kernels"));

  // 3. Ranking.
  if (rank_by_sort) {
    Iota<<<Blocks(CeilDiv(units, kThreads)), kThreads, 0, stream>>>(ws->order.data(), units);
    size_t temp_bytes = ws->cub_temp.capacity();
    GEOTRAIN_RETURN_IF_ERROR(
        CudaCall(cub::DeviceRadixSort::SortPairs(ws->cub_temp.data(), temp_bytes, ws->keys.data(),
                                                 ws->keys_sorted.data(), ws->order.data(),
                                                 ws->order_sorted.data(), units, 0, 32, stream),
                 "tah ranking sort"));
    MarkHigh<<<Blocks(CeilDiv(units, kThreads)), kThreads, 0, stream>>>(
        ws->order_sorted.data(), units, low, ws->unit_high.data());
  } else {
    GEOTRAIN_RETURN_IF_ERROR(CudaCall(
        cudaMemsetAsync(ws->unit_high.data(), high > 0 ? 1 : 0, units, stream), "tah unit flags"));
  }

  // 4. Bitmaps and their prefix counts.
  PackBitmap<<<Blocks(CeilDiv(unit_bytes, kThreads)), kThreads, 0, stream>>>(
      ws->unit_high.data(), units, unit_bytes, unit_map);
  PackBitmap<<<Blocks(CeilDiv(tile_bytes, kThreads)), kThreads, 0, stream>>>(
      ws->rotated.data(), tiles, tile_bytes, tile_map);
  GEOTRAIN_RETURN_IF_ERROR(
      ScanBitmap(unit_map, unit_bytes, ws->unit_prefix.data(), &ws->cub_temp, stream));
  GEOTRAIN_RETURN_IF_ERROR(
      ScanBitmap(tile_map, tile_bytes, ws->tile_prefix.data(), &ws->cub_temp, stream));
  GEOTRAIN_RETURN_IF_ERROR(LastCudaStatus("tah ranking and bitmap kernels"));

  // 5. Flags and the outlier count.
  auto* flags = reinterpret_cast<unsigned long long*>(ws->readback.data());
  auto* outliers = reinterpret_cast<uint32_t*>(ws->readback.data() + 8 * kFlagCount);
  auto* probe = reinterpret_cast<float*>(ws->readback.data() + 8 * kFlagCount + 8);
  auto* sums = reinterpret_cast<double*>(ws->readback.data() + 64);
  GEOTRAIN_RETURN_IF_ERROR(
      CopyToHost(flags, ws->flags.data(), sizeof(unsigned long long) * kFlagCount, stream));
  GEOTRAIN_RETURN_IF_ERROR(
      CopyToHost(outliers, ws->tile_prefix.data() + tile_bytes, sizeof(uint32_t), stream));
  GEOTRAIN_RETURN_IF_ERROR(Synchronize(stream, "tah statistics"));
  if (flags[kFirstNonFinite] != kNone) {
    const unsigned long long at = flags[kFirstNonFinite];
    GEOTRAIN_RETURN_IF_ERROR(CopyToHost(probe, x + at, sizeof(float), stream));
    GEOTRAIN_RETURN_IF_ERROR(Synchronize(stream, "tah non-finite input"));
    return InvalidArgument("input[" + std::to_string(at) +
                           "]: " + (std::isnan(probe[0]) ? "NaN" : "infinity") +
                           " cannot be quantized (tah needs finite values)");
  }
  p.f32_scales = flags[kUnfitHalf] != 0;
  p.outlier_tiles = *outliers;

  // 6-7. Rotation, zero/scale, codes, pivots.
  const uint64_t pivots_at = unit_bytes + tile_bytes;
  const uint64_t pivot_bytes = PackedFieldBytes(p.outlier_tiles, geo.pivot_bits);
  const uint64_t scales_at = pivots_at + pivot_bytes;
  const uint64_t codes_at = scales_at + static_cast<uint64_t>(tiles) * (p.f32_scales ? 8 : 4);
  const uint64_t size = codes_at + code_bytes;
  QuantizeArgs qa;
  qa.x = x;
  qa.tiles = tiles;
  qa.tiles_per_row = geo.tiles_per_row;
  qa.g = g;
  qa.high_bits = p.high_bits;
  qa.low_bits = p.low_bits;
  qa.token = token;
  qa.f32 = p.f32_scales;
  qa.aligned = Aligned16(x);
  qa.normalizer = HadamardNormalizer(g);
  qa.min = ws->min.data();
  qa.max = ws->max.data();
  qa.abs_max = ws->abs_max.data();
  qa.unit_map = unit_map;
  qa.unit_prefix = ws->unit_prefix.data();
  qa.tile_map = tile_map;
  qa.tile_prefix = ws->tile_prefix.data();
  qa.pivots = ws->pivots.data();
  qa.scales = payload + scales_at;
  qa.codes = payload + codes_at;
  qa.flags = ws->flags.data();
  qa.sums = ws->sums.data();
  GEOTRAIN_RETURN_IF_ERROR(ForTileSize(g, QuantizeLauncher{qa, stream}));
  if (pivot_bytes > 0) {
    PackPivots<<<Blocks(CeilDiv(pivot_bytes, kThreads)), kThreads, 0, stream>>>(
        ws->pivots.data(), static_cast<int64_t>(p.outlier_tiles), geo.pivot_bits,
        static_cast<int64_t>(pivot_bytes), payload + pivots_at);
  }
  GEOTRAIN_RETURN_IF_ERROR(LastCudaStatus("tah quantize kernels"));
  GEOTRAIN_RETURN_IF_ERROR(CopyToHost(&flags[kFirstUnsafeTile], &ws->flags.data()[kFirstUnsafeTile],
                                      sizeof(unsigned long long), stream));
  GEOTRAIN_RETURN_IF_ERROR(
      CopyToHost(sums, ws->sums.data(), sizeof(double) * 2 * kSumSlots, stream));
  GEOTRAIN_RETURN_IF_ERROR(Synchronize(stream, "tah quantize"));
  if (flags[kFirstUnsafeTile] != kNone) {
    const unsigned long long k = flags[kFirstUnsafeTile];
    GEOTRAIN_RETURN_IF_ERROR(CopyToHost(&probe[0], ws->min.data() + k, sizeof(float), stream));
    GEOTRAIN_RETURN_IF_ERROR(CopyToHost(&probe[1], ws->max.data() + k, sizeof(float), stream));
    GEOTRAIN_RETURN_IF_ERROR(Synchronize(stream, "tah tile range"));
    return InvalidArgument("input: tile " + std::to_string(k) + " spans [" +
                           std::to_string(probe[0]) + ", " + std::to_string(probe[1]) +
                           "], too close to the float limit for tah to quantize");
  }
  if (error) {
    for (int s = 0; s < kSumSlots; ++s) {
      error->error_sq += sums[2 * s];
      error->norm_sq += sums[2 * s + 1];
    }
  }
  *params = p;
  return size;
}

Status DecodeTahOnDevice(const TahFrameLayout& l, Span<const uint8_t> payload,
                         TahDeviceWorkspace* ws, float* out, Stream stream) {
  const TahGeometry& geo = l.geo;
  if (geo.tiles == 0) return OkStatus();
  const int64_t unit_bytes = static_cast<int64_t>(BitmapBytes(geo.units));
  const int64_t tile_bytes = static_cast<int64_t>(BitmapBytes(geo.tiles));
  GEOTRAIN_RETURN_IF_ERROR(ws->payload.Reserve(std::max<size_t>(payload.size(), 1)));
  GEOTRAIN_RETURN_IF_ERROR(ws->unit_prefix.Reserve(unit_bytes + 1));
  GEOTRAIN_RETURN_IF_ERROR(ws->tile_prefix.Reserve(tile_bytes + 1));
  const size_t temp =
      std::max(ScanTempBytes(unit_bytes + 1, stream), ScanTempBytes(tile_bytes + 1, stream));
  GEOTRAIN_RETURN_IF_ERROR(ws->cub_temp.Reserve(std::max<size_t>(temp, 1)));
  auto* device = static_cast<uint8_t*>(ws->payload.data());
  GEOTRAIN_RETURN_IF_ERROR(CopyToDevice(device, payload.data(), payload.size(), stream));
  GEOTRAIN_RETURN_IF_ERROR(ScanBitmap(device + l.unit_map_at, unit_bytes, ws->unit_prefix.data(),
                                      &ws->cub_temp, stream));
  GEOTRAIN_RETURN_IF_ERROR(ScanBitmap(device + l.tile_map_at, tile_bytes, ws->tile_prefix.data(),
                                      &ws->cub_temp, stream));
  DecodeArgs da;
  da.unit_map = device + l.unit_map_at;
  da.tile_map = device + l.tile_map_at;
  da.pivots = device + l.pivots_at;
  da.scales = device + l.scales_at;
  da.codes = device + l.codes_at;
  da.unit_prefix = ws->unit_prefix.data();
  da.tile_prefix = ws->tile_prefix.data();
  da.tiles = geo.tiles;
  da.tiles_per_row = geo.tiles_per_row;
  da.g = geo.tile_size;
  da.high_bits = l.params.high_bits;
  da.low_bits = l.params.low_bits;
  da.pivot_bits = geo.pivot_bits;
  da.token = geo.entropy_unit == EntropyUnit::kToken;
  da.f32 = l.params.f32_scales;
  da.aligned = Aligned16(out);
  da.normalizer = HadamardNormalizer(geo.tile_size);
  da.out = out;
  GEOTRAIN_RETURN_IF_ERROR(ForTileSize(geo.tile_size, DecodeLauncher{da, stream}));
  return LastCudaStatus("tah decode kernels");
}

}  // namespace geotrain::compression::cuda
