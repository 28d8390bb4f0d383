#include "compression/frame.h"

#define XXH_INLINE_ALL  // compiled with our -march, so XXH3 uses AVX2 whatever the packaged library
                        // does
#include <xxhash.h>
#define ZSTD_STATIC_LINKING_ONLY  // ZSTD_d_windowLogMax
#include <zstd.h>

#include <cstring>
#include <limits>

#include "common/bytes.h"
#include "common/half.h"

namespace geotrain::compression {
namespace {

uint64_t FrameChecksum(const uint8_t* frame, uint64_t size) {
  const uint64_t header_hash = XXH3_64bits(frame, 32);
  return XXH3_64bits_withSeed(frame + kFrameHeaderBytes, size - kFrameHeaderBytes, header_hash);
}

struct Header {
  uint32_t magic;
  uint8_t version, codec, dtype, flags, ndim;
  uint32_t params_len;
  uint64_t payload_len, raw_payload_len, checksum;
};

void ReadHeader(const uint8_t* p, Header* h) {
  std::memcpy(&h->magic, p, 4);
  h->version = p[4];
  h->codec = p[5];
  h->dtype = p[6];
  h->flags = p[7];
  h->ndim = p[8];
  std::memcpy(&h->params_len, p + 12, 4);
  std::memcpy(&h->payload_len, p + 16, 8);
  std::memcpy(&h->raw_payload_len, p + 24, 8);
  std::memcpy(&h->checksum, p + 32, 8);
}

Status CheckHeader(const uint8_t* p, const FrameLimits& limits, Header* h) {
  ReadHeader(p, h);
  if (h->magic != kFrameMagic) return DataLoss("frame.magic: not a geotrain frame");
  if (h->version != kFrameVersion) {
    return DataLoss("frame.version: " + std::to_string(h->version) +
                    " is not supported (this build reads " + std::to_string(kFrameVersion) + ")");
  }
  if (h->codec >= kNumCodecs)
    return DataLoss("frame.codec: unknown id " + std::to_string(h->codec));
  if (h->dtype >= kNumDTypes)
    return DataLoss("frame.dtype: unknown id " + std::to_string(h->dtype));
  if (h->flags & ~kFrameFlagZstd) return DataLoss("frame.flags: unknown bits set");
  if (p[9] || p[10] || p[11]) return DataLoss("frame.reserved: must be zero");
  if (h->ndim > kMaxFrameRank) {
    return DataLoss("frame.ndim: " + std::to_string(h->ndim) + " exceeds the maximum of " +
                    std::to_string(kMaxFrameRank));
  }
  if (h->params_len > limits.max_params_bytes) {
    return DataLoss("frame.params_len: " + std::to_string(h->params_len) +
                    " exceeds the limit of " + std::to_string(limits.max_params_bytes));
  }
  if (h->raw_payload_len > limits.max_payload_bytes || h->payload_len > limits.max_payload_bytes) {
    return DataLoss("frame.payload_len: exceeds the limit of " +
                    std::to_string(limits.max_payload_bytes) + " bytes");
  }
  if (!(h->flags & kFrameFlagZstd) && h->payload_len != h->raw_payload_len) {
    return DataLoss("frame.raw_payload_len: differs from payload_len without zstd");
  }
  return OkStatus();
}

Status CompressPayload(int level, std::vector<uint8_t>* frame, size_t payload_at, size_t n) {
  std::vector<uint8_t> packed(ZSTD_compressBound(n));
  const size_t got =
      ZSTD_compress(packed.data(), packed.size(), frame->data() + payload_at, n, level);
  if (ZSTD_isError(got)) return Internal(std::string("zstd: ") + ZSTD_getErrorName(got));
  frame->resize(payload_at + got);
  std::memcpy(frame->data() + payload_at, packed.data(), got);
  return OkStatus();
}

Status DecompressPayload(Span<const uint8_t> in, uint64_t raw_len, const FrameLimits& limits,
                         std::vector<uint8_t>* out) {
  const unsigned long long declared = ZSTD_getFrameContentSize(in.data(), in.size());
  if (declared == ZSTD_CONTENTSIZE_ERROR || declared != raw_len) {
    return DataLoss("frame.payload: zstd content size does not match raw_payload_len");
  }
  std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> dctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
  ZSTD_DCtx_setParameter(dctx.get(), ZSTD_d_windowLogMax, limits.max_zstd_window_log);
  out->resize(raw_len);
  const size_t got = ZSTD_decompressDCtx(dctx.get(), out->data(), raw_len, in.data(), in.size());
  if (ZSTD_isError(got))
    return DataLoss(std::string("frame.payload: zstd: ") + ZSTD_getErrorName(got));
  if (got != raw_len) return DataLoss("frame.payload: zstd produced fewer bytes than declared");
  return OkStatus();
}

}  // namespace

void ConvertFromFloat(const float* in, DType dtype, void* out, size_t n) {
  switch (dtype) {
    case DType::kFloat32:
      if (n) std::memcpy(out, in, n * 4);
      break;
    case DType::kFloat16:
      FloatToHalf(in, static_cast<uint16_t*>(out), n);
      break;
    case DType::kBFloat16:
      FloatToBFloat16(in, static_cast<uint16_t*>(out), n);
      break;
  }
}

void ConvertToFloat(const void* in, DType dtype, float* out, size_t n) {
  switch (dtype) {
    case DType::kFloat32:
      if (n) std::memcpy(out, in, n * 4);
      break;
    case DType::kFloat16:
      HalfToFloat(static_cast<const uint16_t*>(in), out, n);
      break;
    case DType::kBFloat16:
      BFloat16ToFloat(static_cast<const uint16_t*>(in), out, n);
      break;
  }
}

namespace {

// The element count of `shape`, checked against the frame limits.
StatusOr<int64_t> CheckedElements(const Shape& shape) {
  if (shape.size() > kMaxFrameRank) {
    return InvalidArgument("input.shape: rank " + std::to_string(shape.size()) +
                           " exceeds the maximum of " + std::to_string(kMaxFrameRank));
  }
  int64_t elements = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    const int64_t d = shape[i];
    if (d < 0) return InvalidArgument("input.shape[" + std::to_string(i) + "]: negative");
    if (d > FrameLimits().max_elements) {
      return InvalidArgument("input.shape[" + std::to_string(i) + "]: " + std::to_string(d) +
                             " exceeds the frame limit of " +
                             std::to_string(FrameLimits().max_elements) + " values");
    }
    if (d > 0 && elements > std::numeric_limits<int64_t>::max() / d) {
      return InvalidArgument("input.shape: element count overflows");
    }
    elements *= d;
  }
  return elements;
}

}  // namespace

Status EncodeFrame(Codec& codec, const TensorView& input, std::vector<uint8_t>* frame,
                   EncodeStats* stats) {
  GEOTRAIN_ASSIGN_OR_RETURN(const int64_t elements, CheckedElements(input.shape));
  if (elements > 0 && input.data == nullptr) return InvalidArgument("input.data: null");
  std::vector<float> converted;
  TensorView as_float = input;
  if (input.dtype != DType::kFloat32) {
    converted.resize(elements);
    ConvertToFloat(input.data, input.dtype, converted.data(), elements);
    as_float.data = converted.data();
  }
  return EncodeFrameWith(
      codec.id(), codec.config().zstd_level, as_float,
      [&codec](const EncodeInput& in, ByteWriter* params, ByteWriter* payload, ErrorSums* error) {
        return codec.Encode(in, params, payload, error);
      },
      frame, stats);
}

Status EncodeFrameWith(CodecId codec, int zstd_level, const TensorView& input,
                       const EncodeStep& encode, std::vector<uint8_t>* frame, EncodeStats* stats) {
  GEOTRAIN_ASSIGN_OR_RETURN(const int64_t elements, CheckedElements(input.shape));
  if (elements > 0 && input.data == nullptr) return InvalidArgument("input.data: null");

  frame->clear();
  const size_t payload_at = kFrameHeaderBytes + 8 * input.shape.size();
  frame->resize(payload_at);
  if (!input.shape.empty()) {
    std::memcpy(frame->data() + kFrameHeaderBytes, input.shape.data(), 8 * input.shape.size());
  }

  EncodeInput in;
  in.data = static_cast<const float*>(input.data);
  in.shape = input.shape;
  in.elements = elements;
  in.sample_ids = input.sample_ids;
  in.step = input.step;
  std::vector<uint8_t> params;
  ByteWriter params_writer(&params);
  ByteWriter payload_writer(frame);
  ErrorSums error;
  GEOTRAIN_RETURN_IF_ERROR(encode(in, &params_writer, &payload_writer, &error)
                               .WithContext(std::string("encoding with ") + CodecName(codec)));

  const uint64_t raw_payload_len = frame->size() - payload_at;
  uint8_t flags = 0;
  if (zstd_level > 0) {
    GEOTRAIN_RETURN_IF_ERROR(CompressPayload(zstd_level, frame, payload_at, raw_payload_len));
    flags |= kFrameFlagZstd;
  }
  const uint64_t payload_len = frame->size() - payload_at;
  frame->insert(frame->end(), params.begin(), params.end());

  uint8_t* h = frame->data();
  const uint32_t magic = kFrameMagic;
  const uint32_t params_len = static_cast<uint32_t>(params.size());
  std::memcpy(h, &magic, 4);
  h[4] = kFrameVersion;
  h[5] = static_cast<uint8_t>(codec);
  h[6] = static_cast<uint8_t>(input.dtype);
  h[7] = flags;
  h[8] = static_cast<uint8_t>(input.shape.size());
  h[9] = h[10] = h[11] = 0;
  std::memcpy(h + 12, &params_len, 4);
  std::memcpy(h + 16, &payload_len, 8);
  std::memcpy(h + 24, &raw_payload_len, 8);
  const uint64_t checksum = FrameChecksum(h, frame->size());
  std::memcpy(h + 32, &checksum, 8);

  if (stats) {
    stats->raw_bytes = static_cast<uint64_t>(elements) * DTypeSize(input.dtype);
    stats->wire_bytes = frame->size();
    stats->rel_error = error.RelativeError();
  }
  return OkStatus();
}

void UpdateFrameChecksum(uint8_t* frame, size_t size) {
  if (size < kFrameHeaderBytes) return;
  const uint64_t checksum = FrameChecksum(frame, size);
  std::memcpy(frame + 32, &checksum, 8);
}

StatusOr<uint64_t> FrameSize(Span<const uint8_t> header, const FrameLimits& limits) {
  if (header.size() < kFrameHeaderBytes) return DataLoss("frame: shorter than its header");
  Header h;
  GEOTRAIN_RETURN_IF_ERROR(CheckHeader(header.data(), limits, &h));
  return kFrameHeaderBytes + 8ull * h.ndim + h.payload_len + h.params_len;
}

Status ParseFrame(Span<const uint8_t> frame, const FrameLimits& limits,
                  std::vector<uint8_t>* scratch, FrameContent* content) {
  GEOTRAIN_ASSIGN_OR_RETURN(const uint64_t size, FrameSize(frame, limits));
  if (frame.size() != size) {
    return DataLoss("frame: " + std::to_string(frame.size()) + " bytes, header declares " +
                    std::to_string(size));
  }
  Header h;
  ReadHeader(frame.data(), &h);
  if (FrameChecksum(frame.data(), frame.size()) != h.checksum) {
    return DataLoss("frame.checksum: mismatch (corrupted in transit)");
  }
  content->codec = static_cast<CodecId>(h.codec);
  content->dtype = static_cast<DType>(h.dtype);
  content->shape.resize(h.ndim);
  if (h.ndim > 0) std::memcpy(content->shape.data(), frame.data() + kFrameHeaderBytes, 8 * h.ndim);
  int64_t elements = 1;
  for (int i = 0; i < h.ndim; ++i) {
    const int64_t d = content->shape[i];
    // Each dimension is bounded on its own too: [0, 2^62] holds no values but would make a
    // codec size its per-column buffers by 2^62.
    if (d < 0 || d > limits.max_elements || (d > 0 && elements > limits.max_elements / d)) {
      return DataLoss("frame.shape[" + std::to_string(i) + "]: " + std::to_string(d) +
                      " is negative or makes the tensor exceed " +
                      std::to_string(limits.max_elements) + " elements");
    }
    elements *= d;
  }
  content->elements = elements;
  const size_t payload_at = kFrameHeaderBytes + 8 * h.ndim;
  content->payload = frame.subspan(payload_at, h.payload_len);
  content->params = frame.subspan(payload_at + h.payload_len, h.params_len);
  if (h.flags & kFrameFlagZstd) {
    GEOTRAIN_RETURN_IF_ERROR(
        DecompressPayload(content->payload, h.raw_payload_len, limits, scratch));
    content->payload = Span<const uint8_t>(scratch->data(), scratch->size());
  }
  return OkStatus();
}

Status DecodeContent(Codec& codec, const FrameContent& content, DecodedTensor* out) {
  if (content.codec != codec.id()) {
    return FailedPrecondition(std::string("frame.codec: ") + CodecName(content.codec) +
                              " frame given to a " + CodecName(codec.id()) + " decoder");
  }
  out->dtype = content.dtype;
  out->shape = content.shape;
  out->values.resize(content.elements);
  return codec.Decode(content, out->values.data())
      .WithContext(std::string("decoding ") + CodecName(content.codec) + " frame");
}

Status DecodeFrame(Codec& codec, Span<const uint8_t> frame, const FrameLimits& limits,
                   DecodedTensor* out) {
  std::vector<uint8_t> scratch;
  FrameContent content;
  GEOTRAIN_RETURN_IF_ERROR(ParseFrame(frame, limits, &scratch, &content));
  return DecodeContent(codec, content, out);
}

}  // namespace geotrain::compression
