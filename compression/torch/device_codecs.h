// The CUDA codecs (compression/cuda/) for LibTorch tensors: a stage on a CUDA device encodes its
// activations and gradients where they are, so only the compressed payload crosses to the host,
// and decodes received frames straight into device memory.
//
// Available when the build has a CUDA LibTorch and the CUDA codecs (GEOTRAIN_TORCH_CUDA and
// GEOTRAIN_WITH_CUDA_CODECS); elsewhere DeviceCodecsFor is false and Create refuses. Which codec
// encodes is fixed per link end at creation, so a codec's state (a delta cache, a cocktail
// residual) lives in one place; frames are the CPU codecs' bytes either way, so the other end
// may decode on a CPU. Not thread-safe: one thread per instance.
#pragma once

#include <ATen/ATen.h>

#include <array>
#include <memory>
#include <vector>

#include "compression/codec_config.h"
#include "compression/frame.h"
#include "compression/link_decoder.h"

namespace geotrain::compression {

// Whether tensors on `device` get CUDA codecs in this build, and which codecs have kernels.
bool DeviceCodecsFor(const at::Device& device);
bool DeviceCodecHasKernels(CodecId codec);

class DeviceTensorEncoder {
 public:
  // `config.codec` must have kernels. Work is queued on `device`'s current CUDA stream.
  static StatusOr<std::unique_ptr<DeviceTensorEncoder>> Create(const CodecConfig& config,
                                                               const at::Device& device);
  virtual ~DeviceTensorEncoder() = default;

  // Encodes `tensor` (float32, float16 or bfloat16 on the device) into `frame`; returns once
  // the frame is complete on the host.
  virtual Status Encode(const at::Tensor& tensor, Span<const uint64_t> sample_ids, uint64_t step,
                        std::vector<uint8_t>* frame, EncodeStats* stats) = 0;
  virtual Status Reconfigure(const CodecConfig& config) = 0;
  virtual const CodecConfig& config() const = 0;
};

class DeviceTensorDecoder {
 public:
  // `receiver_config` as for LinkDecoder.
  static StatusOr<std::unique_ptr<DeviceTensorDecoder>> Create(CodecConfig receiver_config,
                                                               const at::Device& device);
  virtual ~DeviceTensorDecoder() = default;

  // Decodes a frame of a codec with kernels into a tensor on the device, any other frame with
  // the CPU LinkDecoder into a CPU tensor (the caller moves it); the sender's dtype and shape.
  virtual StatusOr<at::Tensor> Decode(Span<const uint8_t> frame) = 0;
};

}  // namespace geotrain::compression
