// CudaCodec: a codec whose input and output live in CUDA device memory.
//
// Each one writes the same params and payload bytes as the CPU codec of the same CodecConfig for
// the same input (tests/compression/cuda/ checks it byte for byte on a GPU), so a frame encoded
// on a GPU decodes on a CPU receiver and the reverse. The payload is built on the device and comes
// to the host once, through a pinned staging buffer; the host builds the frame around it
// (EncodeFrameWith). Codecs without kernels here stay on the CPU codec (HasCudaKernels).
//
// Not thread-safe: one thread per instance at a time. Work runs on the stream given at creation.
#pragma once

#include <memory>

#include "common/bytes.h"
#include "compression/codec_config.h"
#include "compression/cuda/device_memory.h"
#include "compression/frame.h"
#include "compression/types.h"

namespace geotrain::compression::cuda {

class CudaCodec {
 public:
  virtual ~CudaCodec() = default;
  CudaCodec(const CudaCodec&) = delete;
  CudaCodec& operator=(const CudaCodec&) = delete;

  CodecId id() const { return config_.codec; }
  const CodecConfig& config() const { return config_; }
  Stream stream() const { return stream_; }

  // As Codec::Encode, with `input.data` pointing to float32 values in device memory. Returns once
  // the payload is on the host.
  virtual Status Encode(const EncodeInput& input, ByteWriter* params, ByteWriter* payload,
                        ErrorSums* error) = 0;
  // As Codec::Decode, into `out`: frame.elements floats of device memory. The frame (host
  // memory) is validated field by field before anything is written.
  virtual Status Decode(const FrameContent& frame, float* out) = 0;
  // As Codec::Reconfigure.
  virtual Status Reconfigure(const CodecConfig& config);

 protected:
  CudaCodec(CodecConfig config, Stream stream) : config_(std::move(config)), stream_(stream) {}

  // Copies `bytes` device bytes to the end of `payload` through the pinned staging buffer.
  Status AppendFromDevice(const void* device, size_t bytes, ByteWriter* payload);

  CodecConfig config_;
  Stream stream_;
  PinnedBytes staging_;
};

// Whether `codec` has CUDA kernels: fixpoint, delta (fp16 caches; delta-lowbits stays on the
// CPU), tah and cocktail.
bool HasCudaKernels(CodecId codec);

// Builds the CUDA codec `config.codec` names (validating `config`); FAILED_PRECONDITION for
// codecs without kernels.
StatusOr<std::unique_ptr<CudaCodec>> MakeCudaCodec(const CodecConfig& config,
                                                   Stream stream = nullptr);

class DeviceActivationCache;
// The activation cache of a CUDA delta codec (to Clear after a checkpoint resume); nullptr for
// other codecs.
DeviceActivationCache* DeltaCudaCodecCache(CudaCodec* codec);

// EncodeFrame for device input: float32, float16 or bfloat16 values in device memory (the 16-bit
// ones are widened on the device). The frame is byte-identical to EncodeFrame's with the CPU codec.
Status EncodeDeviceFrame(CudaCodec& codec, const TensorView& device_input,
                         std::vector<uint8_t>* frame, EncodeStats* stats = nullptr);

// A frame decoded into device memory: float32 values, and the dtype and shape the sender held.
struct DeviceDecodedTensor {
  DType dtype = DType::kFloat32;
  Shape shape;
  DeviceArray<float> values;  // NumElements(shape) values
};

// DecodeFrame into device memory (ParseFrame's checks, then the codec's).
Status DecodeDeviceFrame(CudaCodec& codec, Span<const uint8_t> frame, const FrameLimits& limits,
                         DeviceDecodedTensor* out);

}  // namespace geotrain::compression::cuda
