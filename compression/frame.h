// Frames: the self-describing wire format of every tensor that crosses a link.
//
// Layout (little-endian; docs/wire-format.md is the normative description):
//   0  u32 magic "GTF1"      4  u8 version        5  u8 codec id     6  u8 dtype
//   7  u8 flags (bit 0: payload is zstd-compressed; other bits must be 0)
//   8  u8 ndim (0..8)        9  u8[3] reserved (0)
//   12 u32 params_len        16 u64 payload_len (bytes in the frame)
//   24 u64 raw_payload_len (before zstd; equals payload_len without zstd)
//   32 u64 checksum: XXH3-64 of the frame from byte 40 on, seeded with XXH3-64 of bytes 0..31
//   40 i64 shape[ndim], then payload_len payload bytes, then params_len codec parameter bytes.
// The receiver decodes from the frame alone (plus, for delta, its activation cache), so frames of
// different codecs or bits may follow each other on one link.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "common/span.h"
#include "common/status.h"
#include "compression/codec.h"
#include "compression/types.h"

namespace geotrain::compression {

constexpr uint32_t kFrameMagic = 0x31465447;  // bytes 'G' 'T' 'F' '1'
constexpr uint8_t kFrameVersion = 1;
constexpr size_t kFrameHeaderBytes = 40;
constexpr int kMaxFrameRank = 8;
constexpr uint8_t kFrameFlagZstd = 1;

// Hard limits a receiver enforces before it allocates or reads anything.
struct FrameLimits {
  int64_t max_elements = int64_t{1} << 28;         // values in one tensor (1 GiB of f32)
  uint64_t max_payload_bytes = uint64_t{1} << 34;  // payload after zstd decompression
  uint32_t max_params_bytes = 1u << 24;
  int max_zstd_window_log = 27;  // 128 MiB decompression window
};

// A tensor as the caller holds it.
struct TensorView {
  const void* data = nullptr;
  DType dtype = DType::kFloat32;
  Shape shape;
  Span<const uint64_t> sample_ids;  // see EncodeInput
  uint64_t step = 0;
};

struct EncodeStats {
  uint64_t raw_bytes = 0;   // the input as held (elements * dtype size)
  uint64_t wire_bytes = 0;  // the whole frame
  double rel_error = 0;     // ||x - x̂|| / ||x||
  double Ratio() const { return wire_bytes ? static_cast<double>(raw_bytes) / wire_bytes : 0; }
};

// Encodes `input` with `codec` into `frame`, replacing its contents (its capacity is reused, so
// callers keep one vector per link). A codec whose config has zstd_level > 0 gets its payload
// compressed with zstd at that level.
Status EncodeFrame(Codec& codec, const TensorView& input, std::vector<uint8_t>* frame,
                   EncodeStats* stats = nullptr);

// A codec's encode step: what EncodeFrameWith runs between its checks and the sealing.
using EncodeStep = std::function<Status(const EncodeInput& input, ByteWriter* params,
                                        ByteWriter* payload, ErrorSums* error)>;

// EncodeFrame with the encode step given, for codecs that are not a `Codec` (the CUDA codecs of
// compression/cuda/, whose input lives in device memory): `input.data` reaches `encode` as it is,
// without a dtype conversion, so it must already be float32 values where `encode` reads them;
// `input.dtype` is only recorded in the header. Frames are byte-identical to EncodeFrame's for the
// same params and payload.
Status EncodeFrameWith(CodecId codec, int zstd_level, const TensorView& input,
                       const EncodeStep& encode, std::vector<uint8_t>* frame,
                       EncodeStats* stats = nullptr);

// The total size of the frame whose first kFrameHeaderBytes bytes are `header`: lets a transport
// read a header, check it, then read exactly the rest.
StatusOr<uint64_t> FrameSize(Span<const uint8_t> header, const FrameLimits& limits = {});

// Checks everything in `frame` that does not depend on the codec: magic, version, ids, shape and
// element limits, lengths, checksum, and zstd decompression (into `scratch`). On success `content`
// points into `frame` or `scratch`.
Status ParseFrame(Span<const uint8_t> frame, const FrameLimits& limits,
                  std::vector<uint8_t>* scratch, FrameContent* content);

// A decoded tensor: float32 values plus the dtype and shape the sender held.
struct DecodedTensor {
  DType dtype = DType::kFloat32;
  Shape shape;
  std::vector<float> values;
};

// Decodes parsed `content` with `codec` (which must match the frame's codec id).
Status DecodeContent(Codec& codec, const FrameContent& content, DecodedTensor* out);

// Parses `frame` and decodes it with `codec` (which must match the frame's codec id).
Status DecodeFrame(Codec& codec, Span<const uint8_t> frame, const FrameLimits& limits,
                   DecodedTensor* out);

// Recomputes the checksum of a complete frame in place: for tools and fuzzers that build or
// mutate frames by hand. Senders never need it (EncodeFrame seals every frame).
void UpdateFrameChecksum(uint8_t* frame, size_t size);

// Converts float32 values to `dtype` (round to nearest even) into `out`.
void ConvertFromFloat(const float* in, DType dtype, void* out, size_t n);
// Converts `dtype` values to float32.
void ConvertToFloat(const void* in, DType dtype, float* out, size_t n);

}  // namespace geotrain::compression
