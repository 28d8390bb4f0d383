// Kernels of cocktail_device.h: CocktailSGD's mask, top-k, bitmap and scatter on a CUDA device,
// writing the bytes CocktailCodec (compression/cocktail_codec.cc) writes. The per-index
// arithmetic is in cocktail_math.h, tested on the CPU against the CPU codec.
//
// Encode, for n values and m sampled ones (m ~ p·n), k kept (k ~ topk_ratio·m):
//   1. FoldInput (grid-stride over n): v = x, or residual += x in place (error feedback); Σv² in
//      double; the first non-finite x (atomicMax of ~index) and whether some v is not finite.
//   2. Sampling. Rolling masks: m in closed form, RollingGather copies v[offset + j·stride].
//      Seeded masks: SeededMembers hashes every coordinate and ballots 32 of them into a word
//      (member lanes, popcount), cub::DeviceScan::ExclusiveSum over the word counts gives each
//      word's first sampled position, and after one synchronisation (m and the finiteness flags
//      come back together) SeededCompact writes each sampled value and coordinate at
//      scan[w] + rank in its word. Nothing else waits on the host until the fixpoint quantizer.
//   3. Top-k threshold: a most-significant-digit radix select on the 31-bit magnitude keys, three
//      passes of 11, 11 and 9 bits (FindMagnitudeThreshold's digits). Each pass is DigitHistogram
//      (grid-stride over the m sampled values, shared-memory histogram of the keys that share the
//      digits found so far, flushed with global atomics) then ChooseDigit (one block: a BlockScan
//      over the bins from the top finds the digit holding the need-th largest key). The state
//      (prefix, need) stays in device memory, so the select is 6 small launches and no round
//      trip: O(m) work per pass instead of a sort's O(m·32/8) passes of data movement.
//      After the last pass: T = the k-th largest key, ties = k - #(keys > T), equal = #(keys == T).
//   4. Keep and compact: ClassifyWords ballots, per word of 32 sampled positions, the lanes > T and
//      == T and packs their counts (PackCounts); one 64-bit ExclusiveSum gives each word's count of
//      greater and equal keys before it; EmitKept applies the tie rule (the first `ties` equal keys
//      in sampled order, KeepLaneBits), writes the 4 bitmap bytes of the word (MSB-first, the bit
//      reversal of the lane bits) and stores each kept value and its coordinate at
//      KeptBefore + rank: the kept values in sampled order, with no sort.
//   5. The kept values go through EncodeFixpointBlockOnDevice ([1, k], per tile of quant_group),
//      whose x̂ feeds KeptSums (error statistics) and SubtractSent (residual -= x̂ at the kept
//      coordinates: the CPU codec's lazy subtraction done at once, the same float operation).
// Decode: the host checks every field; then BitmapWordCounts + ExclusiveSum rank the set bits,
// the fixpoint block decodes the k values, and ScatterKept writes each to its coordinate over a
// zeroed output (seeded masks first rebuild the sampled coordinates as in step 2).
#include <cuda_runtime.h>

#include <algorithm>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_scan.cuh>
#include <string>

#include "compression/cuda/cocktail_device.h"
#include "compression/cuda/kernel_launch.h"

namespace geotrain::compression::cuda {
namespace {

constexpr unsigned kFullMask = 0xffffffffu;
// Grid of the grid-stride kernels: enough blocks to fill any current GPU, few enough that the
// per-block flushes (atomics of partial sums and histograms) stay cheap.
constexpr int64_t kMaxGrid = 2048;
static_assert(kMaxDigitBins % kThreads == 0, "each ChooseDigit thread owns whole bins");
static_assert(kThreads % kWordBits == 0, "blocks hold whole words");

unsigned StridedGrid(int64_t n) {
  return Blocks(std::min<int64_t>(CeilDiv(n, kThreads), kMaxGrid));
}
// One thread per index of `words` whole words.
unsigned WordGrid(int64_t words) { return Blocks(CeilDiv(words * kWordBits, kThreads)); }

Status FromCuda(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return OkStatus();
  cudaGetLastError();
  const std::string message = std::string(what) + ": " + cudaGetErrorString(error);
  if (error == cudaErrorMemoryAllocation) return ResourceExhausted(message);
  return Internal(message);
}

template <typename T>
Status ExclusiveSum(const T* in, T* out, int64_t count, DeviceBytes* temp, Stream stream) {
  size_t bytes = 0;
  const int items = static_cast<int>(count);  // at most 2^27 words
  GEOTRAIN_RETURN_IF_ERROR(FromCuda(
      cub::DeviceScan::ExclusiveSum(nullptr, bytes, in, out, items, stream), "sizing a scan"));
  GEOTRAIN_RETURN_IF_ERROR(temp->Reserve(std::max<size_t>(bytes, 1)));
  return FromCuda(cub::DeviceScan::ExclusiveSum(temp->data(), bytes, in, out, items, stream),
                  "cocktail scan");
}

__device__ inline double WarpSum(double v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(kFullMask, v, o);
  return v;
}

__device__ inline int64_t GlobalThread() {
  return blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
}

// flags: [0] ~(first index of a non-finite x), 0 when none; [1] 1 when some v is not finite;
// [2] m (seeded masks). sums: [0] Σv², [1] kept Σv², [2] kept Σ(v - x̂)².
__global__ void FoldInput(const float* x, float* residual, int64_t n, double* sums,
                          unsigned long long* flags) {
  double squares = 0;
  unsigned long long first_bad = 0;
  bool v_bad = false;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = GlobalThread(); i < n; i += step) {
    const float xi = x[i];
    if (!isfinite(xi)) first_bad = max(first_bad, ~static_cast<unsigned long long>(i));
    float v = xi;
    if (residual != nullptr) {
      v = residual[i] + xi;  // CocktailCodec: r[i] += x[i]
      residual[i] = v;
    }
    v_bad |= !isfinite(v);
    squares += static_cast<double>(v) * v;
  }
  squares = WarpSum(squares);
  if ((threadIdx.x & 31) == 0 && squares != 0) atomicAdd(&sums[0], squares);
  if (first_bad != 0) atomicMax(&flags[0], first_bad);
  if (v_bad) atomicOr(&flags[1], 1ull);
}

__global__ void RollingGather(const float* v, CocktailMaskParams p, int64_t m, float* sampled) {
  const int64_t j = GlobalThread();
  if (j < m) sampled[j] = v[RollingCoordinate(p, j)];
}

// One thread per coordinate; lane 0 of each warp stores the word's member lanes and popcount.
__global__ void SeededMembers(CocktailMaskParams p, int64_t n, int64_t words,
                              uint32_t* member_words, uint32_t* counts) {
  const int64_t i = GlobalThread();
  const bool member = i < n && SeededContains(p, static_cast<uint64_t>(i));
  const uint32_t bits = __ballot_sync(kFullMask, member);
  const int64_t w = i / kWordBits;
  if ((threadIdx.x & 31) == 0 && w < words) {
    member_words[w] = bits;
    counts[w] = static_cast<uint32_t>(__popc(bits));
  }
}

__global__ void StoreTotal(const uint32_t* before, const uint32_t* counts, int64_t words,
                           unsigned long long* total) {
  *total = words > 0 ? static_cast<unsigned long long>(before[words - 1]) + counts[words - 1] : 0;
}

__global__ void SeededCompact(const float* v, int64_t n, const uint32_t* member_words,
                              const uint32_t* before, float* sampled, uint32_t* sampled_index) {
  const int64_t i = GlobalThread();
  if (i >= n) return;
  const int64_t w = i / kWordBits;
  const int lane = static_cast<int>(i % kWordBits);
  const uint32_t bits = member_words[w];
  if (((bits >> lane) & 1u) == 0) return;
  const uint64_t pos = SampledPosition(before[w], bits, lane);
  sampled_index[pos] = static_cast<uint32_t>(i);
  if (v != nullptr) sampled[pos] = v[i];
}

__global__ void InitSelect(SelectState* state, uint32_t k) { *state = InitialSelectState(k); }

__global__ void DigitHistogram(const float* values, int64_t m, int pass, const SelectState* state,
                               uint32_t* histogram) {
  __shared__ uint32_t bins[kMaxDigitBins];
  const RadixDigit d = SelectDigit(pass);
  const int nbins = 1 << d.width;
  for (int b = threadIdx.x; b < nbins; b += blockDim.x) bins[b] = 0;
  const SelectState s = *state;
  __syncthreads();
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t j = GlobalThread(); j < m; j += step) {
    const uint32_t key = MagnitudeKey(values[j]);
    if (SharesPrefix(key, s)) atomicAdd(&bins[DigitOf(key, d)], 1u);
  }
  __syncthreads();
  for (int b = threadIdx.x; b < nbins; b += blockDim.x) {
    if (bins[b] != 0) atomicAdd(&histogram[b], bins[b]);
  }
}

// One block of kThreads: thread t owns bins/kThreads bins, the highest digits first; the thread
// whose bins hold the need-th largest key walks them and records the digit.
__global__ void ChooseDigit(const uint32_t* histogram, int pass, SelectState* state) {
  using Scan = cub::BlockScan<uint32_t, kThreads>;
  __shared__ typename Scan::TempStorage temp;
  const RadixDigit d = SelectDigit(pass);
  const int nbins = 1 << d.width;
  const int per_thread = nbins / kThreads;
  const uint32_t hi = ChunkTop(nbins, per_thread, threadIdx.x);
  uint32_t total = 0;
  for (int c = 0; c < per_thread; ++c) total += histogram[hi - c];
  const uint32_t need = state->need;
  __syncthreads();  // every thread has read the state before one writes it
  uint32_t inclusive;
  Scan(temp).InclusiveSum(total, inclusive);
  const uint32_t exclusive = inclusive - total;
  if (exclusive < need && need <= inclusive) {
    uint32_t rank = need - exclusive;
    const uint32_t digit = WalkDigits(histogram, hi, per_thread, &rank);
    SelectState s = *state;
    ApplyDigit(d, digit, rank, histogram[digit], &s);
    *state = s;
  }
}

__global__ void ClassifyWords(const float* sampled, int64_t m, int64_t words,
                              const SelectState* state, uint32_t* greater_words,
                              uint32_t* equal_words, uint64_t* counts) {
  const int64_t j = GlobalThread();
  const bool in = j < m;
  const uint32_t key = in ? MagnitudeKey(sampled[j]) : 0;
  const uint32_t threshold = state->prefix;
  const uint32_t greater = __ballot_sync(kFullMask, in && key > threshold);
  const uint32_t equal = __ballot_sync(kFullMask, in && key == threshold);
  const int64_t w = j / kWordBits;
  if ((threadIdx.x & 31) == 0 && w < words) {
    greater_words[w] = greater;
    equal_words[w] = equal;
    counts[w] = PackCounts(__popc(greater), __popc(equal));
  }
}

struct EmitArgs {
  CocktailMaskParams mask;
  int64_t m;
  int64_t words;
  uint64_t bitmap_bytes;
};

__global__ void EmitKept(const float* sampled, const uint32_t* sampled_index, EmitArgs a,
                         const uint32_t* greater_words, const uint32_t* equal_words,
                         const uint64_t* before, const SelectState* state, uint8_t* bitmap,
                         float* kept, uint32_t* kept_coords) {
  const int64_t j = GlobalThread();
  const int64_t w = j / kWordBits;
  if (w >= a.words) return;
  const int lane = static_cast<int>(j % kWordBits);
  const uint32_t ties = state->need;
  const uint64_t packed_before = before[w];
  const uint32_t keep =
      KeepLaneBits(greater_words[w], equal_words[w], EqualOf(packed_before), ties);
  const uint64_t byte = 4 * static_cast<uint64_t>(w) + lane;
  if (lane < 4 && byte < a.bitmap_bytes) {
    bitmap[byte] = BitmapWordByte(BitmapWordOfLanes(keep), lane);
  }
  if (j < a.m && ((keep >> lane) & 1u) != 0) {
    const uint64_t r = KeptBefore(packed_before, ties) + RankInLaneBits(keep, lane);
    kept[r] = sampled[j];
    kept_coords[r] = SampledCoordinate(a.mask, static_cast<uint64_t>(j), sampled_index);
  }
}

__global__ void KeptSums(const float* kept, const float* decoded, int64_t k, double* sums) {
  double norm = 0, error = 0;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t c = GlobalThread(); c < k; c += step) {
    const double a = kept[c];
    const double e = a - decoded[c];
    norm += a * a;
    error += e * e;
  }
  norm = WarpSum(norm);
  error = WarpSum(error);
  if ((threadIdx.x & 31) == 0 && (norm != 0 || error != 0)) {
    atomicAdd(&sums[1], norm);
    atomicAdd(&sums[2], error);
  }
}

__global__ void SubtractSent(const uint32_t* coords, const float* decoded, int64_t k,
                             float* residual) {
  const int64_t c = GlobalThread();
  if (c < k) residual[coords[c]] -= decoded[c];  // CocktailCodec::ApplyPendingSends
}

__global__ void BitmapWordCounts(const uint8_t* bitmap, uint64_t bytes, int64_t words,
                                 uint32_t* counts) {
  const int64_t w = GlobalThread();
  if (w < words) counts[w] = static_cast<uint32_t>(__popc(LoadBitmapWord(bitmap, bytes, w)));
}

__global__ void ScatterKept(const uint8_t* bitmap, uint64_t bytes, int64_t m,
                            const uint32_t* before, const float* decoded, CocktailMaskParams p,
                            const uint32_t* sampled_index, float* out) {
  const int64_t j = GlobalThread();
  if (j >= m) return;
  const int64_t w = j / kWordBits;
  const int lane = static_cast<int>(j % kWordBits);
  const uint32_t word = LoadBitmapWord(bitmap, bytes, w);
  if (!BitmapWordHas(word, lane)) return;
  out[SampledCoordinate(p, static_cast<uint64_t>(j), sampled_index)] =
      decoded[before[w] + BitmapRank(word, lane)];
}

// Seeded masks: member words, their scan, and m into ws->flags[2] (not yet read back).
Status LaunchSeededCount(const CocktailMaskParams& mask, int64_t n, CocktailWorkspace* ws,
                         Stream stream) {
  const int64_t words = static_cast<int64_t>(WordCount(n));
  GEOTRAIN_RETURN_IF_ERROR(ws->words_a.Reserve(std::max<int64_t>(words, 1)));
  GEOTRAIN_RETURN_IF_ERROR(ws->counts32.Reserve(std::max<int64_t>(words, 1)));
  GEOTRAIN_RETURN_IF_ERROR(ws->before32.Reserve(std::max<int64_t>(words, 1)));
  if (words == 0) return OkStatus();
  SeededMembers<<<WordGrid(words), kThreads, 0, stream>>>(mask, n, words, ws->words_a.data(),
                                                          ws->counts32.data());
  GEOTRAIN_RETURN_IF_ERROR(LastCudaStatus("cocktail seeded mask kernel"));
  GEOTRAIN_RETURN_IF_ERROR(
      ExclusiveSum(ws->counts32.data(), ws->before32.data(), words, &ws->scan_temp, stream));
  StoreTotal<<<1, 1, 0, stream>>>(ws->before32.data(), ws->counts32.data(), words,
                                  ws->flags.data() + 2);
  return LastCudaStatus("cocktail seeded count kernel");
}

Status ReserveFlags(CocktailWorkspace* ws, Stream stream) {
  GEOTRAIN_RETURN_IF_ERROR(ws->flags.Reserve(3));
  GEOTRAIN_RETURN_IF_ERROR(ws->sums.Reserve(3));
  GEOTRAIN_RETURN_IF_ERROR(ws->readback.Reserve(3 * sizeof(unsigned long long)));
  GEOTRAIN_RETURN_IF_ERROR(ZeroDevice(ws->flags.data(), 3 * sizeof(unsigned long long), stream));
  return ZeroDevice(ws->sums.data(), 3 * sizeof(double), stream);
}

}  // namespace

Status CocktailSample(const float* x, float* residual, int64_t n, const CocktailMaskParams& mask,
                      CocktailWorkspace* ws, CocktailSampleInfo* info, Stream stream) {
  *info = CocktailSampleInfo();
  GEOTRAIN_RETURN_IF_ERROR(ReserveFlags(ws, stream));
  if (n > 0) {
    FoldInput<<<StridedGrid(n), kThreads, 0, stream>>>(x, residual, n, ws->sums.data(),
                                                       ws->flags.data());
    GEOTRAIN_RETURN_IF_ERROR(LastCudaStatus("cocktail fold kernel"));
  }
  if (!mask.rolling) GEOTRAIN_RETURN_IF_ERROR(LaunchSeededCount(mask, n, ws, stream));
  auto* flags = reinterpret_cast<unsigned long long*>(ws->readback.data());
  GEOTRAIN_RETURN_IF_ERROR(
      CopyToHost(flags, ws->flags.data(), 3 * sizeof(unsigned long long), stream));
  GEOTRAIN_RETURN_IF_ERROR(Synchronize(stream, "cocktail sampling"));
  info->x_not_finite = flags[0] != 0;
  info->first_bad_x = ~flags[0];
  info->v_not_finite = flags[1] != 0;
  info->m = mask.rolling ? RollingCount(mask, static_cast<uint64_t>(n)) : flags[2];
  if (info->x_not_finite || info->v_not_finite || info->m == 0) return OkStatus();

  const int64_t m = static_cast<int64_t>(info->m);
  const float* v = residual != nullptr ? residual : x;
  GEOTRAIN_RETURN_IF_ERROR(ws->sampled.Reserve(m));
  if (mask.rolling) {
    RollingGather<<<Blocks(CeilDiv(m, kThreads)), kThreads, 0, stream>>>(v, mask, m,
                                                                         ws->sampled.data());
  } else {
    GEOTRAIN_RETURN_IF_ERROR(ws->sampled_index.Reserve(m));
    SeededCompact<<<Blocks(CeilDiv(n, kThreads)), kThreads, 0, stream>>>(
        v, n, ws->words_a.data(), ws->before32.data(), ws->sampled.data(),
        ws->sampled_index.data());
  }
  return LastCudaStatus("cocktail gather kernel");
}

Status CocktailSelectTopK(int64_t m, int64_t k, const CocktailMaskParams& mask,
                          CocktailWorkspace* ws, Stream stream) {
  if (m < 1 || k < 1 || k > m) {
    return InvalidArgument("cocktail top-k: k = " + std::to_string(k) +
                           " of m = " + std::to_string(m) + " (needs 1 <= k <= m)");
  }
  const int64_t words = static_cast<int64_t>(WordCount(m));
  const uint64_t bitmap_bytes = (static_cast<uint64_t>(m) + 7) / 8;
  GEOTRAIN_RETURN_IF_ERROR(ws->histograms.Reserve(kSelectPasses * kMaxDigitBins));
  GEOTRAIN_RETURN_IF_ERROR(ws->select_state.Reserve(sizeof(SelectState) / sizeof(uint32_t)));
  GEOTRAIN_RETURN_IF_ERROR(ws->words_a.Reserve(words));
  GEOTRAIN_RETURN_IF_ERROR(ws->words_b.Reserve(words));
  GEOTRAIN_RETURN_IF_ERROR(ws->counts64.Reserve(words));
  GEOTRAIN_RETURN_IF_ERROR(ws->before64.Reserve(words));
  GEOTRAIN_RETURN_IF_ERROR(ws->bitmap.Reserve(bitmap_bytes));
  GEOTRAIN_RETURN_IF_ERROR(ws->kept.Reserve(k));
  GEOTRAIN_RETURN_IF_ERROR(ws->kept_coords.Reserve(k));
  GEOTRAIN_RETURN_IF_ERROR(ws->kept_decoded.Reserve(k));
  auto* state = reinterpret_cast<SelectState*>(ws->select_state.data());
  const float* sampled = ws->sampled.data();

  GEOTRAIN_RETURN_IF_ERROR(
      ZeroDevice(ws->histograms.data(), kSelectPasses * kMaxDigitBins * sizeof(uint32_t), stream));
  InitSelect<<<1, 1, 0, stream>>>(state, static_cast<uint32_t>(k));
  for (int pass = 0; pass < kSelectPasses; ++pass) {
    uint32_t* histogram = ws->histograms.data() + pass * kMaxDigitBins;
    DigitHistogram<<<StridedGrid(m), kThreads, 0, stream>>>(sampled, m, pass, state, histogram);
    ChooseDigit<<<1, kThreads, 0, stream>>>(histogram, pass, state);
  }
  GEOTRAIN_RETURN_IF_ERROR(LastCudaStatus("cocktail radix select kernels"));

  ClassifyWords<<<WordGrid(words), kThreads, 0, stream>>>(
      sampled, m, words, state, ws->words_a.data(), ws->words_b.data(), ws->counts64.data());
  GEOTRAIN_RETURN_IF_ERROR(LastCudaStatus("cocktail classify kernel"));
  GEOTRAIN_RETURN_IF_ERROR(
      ExclusiveSum(ws->counts64.data(), ws->before64.data(), words, &ws->scan_temp, stream));
  const EmitArgs args{mask, m, words, bitmap_bytes};
  EmitKept<<<WordGrid(words), kThreads, 0, stream>>>(
      sampled, mask.rolling ? nullptr : ws->sampled_index.data(), args, ws->words_a.data(),
      ws->words_b.data(), ws->before64.data(), state, ws->bitmap.data(), ws->kept.data(),
      ws->kept_coords.data());
  return LastCudaStatus("cocktail emit kernel");
}

Status CocktailKeptSums(int64_t k, CocktailWorkspace* ws, Stream stream) {
  if (k <= 0) return OkStatus();
  KeptSums<<<StridedGrid(k), kThreads, 0, stream>>>(ws->kept.data(), ws->kept_decoded.data(), k,
                                                    ws->sums.data());
  return LastCudaStatus("cocktail error sums kernel");
}

Status CocktailSubtractSent(int64_t k, CocktailWorkspace* ws, float* residual, Stream stream) {
  if (k <= 0) return OkStatus();
  SubtractSent<<<Blocks(CeilDiv(k, kThreads)), kThreads, 0, stream>>>(
      ws->kept_coords.data(), ws->kept_decoded.data(), k, residual);
  return LastCudaStatus("cocktail residual kernel");
}

Status CocktailSeededIndices(const CocktailMaskParams& mask, int64_t n, CocktailWorkspace* ws,
                             uint64_t* m, Stream stream) {
  GEOTRAIN_RETURN_IF_ERROR(ReserveFlags(ws, stream));
  GEOTRAIN_RETURN_IF_ERROR(LaunchSeededCount(mask, n, ws, stream));
  auto* flags = reinterpret_cast<unsigned long long*>(ws->readback.data());
  GEOTRAIN_RETURN_IF_ERROR(
      CopyToHost(flags, ws->flags.data(), 3 * sizeof(unsigned long long), stream));
  GEOTRAIN_RETURN_IF_ERROR(Synchronize(stream, "cocktail seeded mask"));
  *m = flags[2];
  if (*m == 0) return OkStatus();
  GEOTRAIN_RETURN_IF_ERROR(ws->sampled_index.Reserve(*m));
  SeededCompact<<<Blocks(CeilDiv(n, kThreads)), kThreads, 0, stream>>>(
      nullptr, n, ws->words_a.data(), ws->before32.data(), nullptr, ws->sampled_index.data());
  return LastCudaStatus("cocktail seeded index kernel");
}

Status CocktailScatter(const uint8_t* bitmap, int64_t m, int64_t n, const CocktailMaskParams& mask,
                       const float* decoded, CocktailWorkspace* ws, float* out, Stream stream) {
  if (n > 0) GEOTRAIN_RETURN_IF_ERROR(ZeroDevice(out, n * sizeof(float), stream));
  if (m <= 0) return OkStatus();
  const int64_t words = static_cast<int64_t>(WordCount(m));
  const uint64_t bytes = (static_cast<uint64_t>(m) + 7) / 8;
  GEOTRAIN_RETURN_IF_ERROR(ws->counts32.Reserve(words));
  GEOTRAIN_RETURN_IF_ERROR(ws->before32.Reserve(words));
  BitmapWordCounts<<<Blocks(CeilDiv(words, kThreads)), kThreads, 0, stream>>>(bitmap, bytes, words,
                                                                              ws->counts32.data());
  GEOTRAIN_RETURN_IF_ERROR(LastCudaStatus("cocktail bitmap count kernel"));
  GEOTRAIN_RETURN_IF_ERROR(
      ExclusiveSum(ws->counts32.data(), ws->before32.data(), words, &ws->scan_temp, stream));
  ScatterKept<<<Blocks(CeilDiv(m, kThreads)), kThreads, 0, stream>>>(
      bitmap, bytes, m, ws->before32.data(), decoded, mask,
      mask.rolling ? nullptr : ws->sampled_index.data(), out);
  return LastCudaStatus("cocktail scatter kernel");
}

}  // namespace geotrain::compression::cuda
