// The thin LibTorch adapter of the codec core: at::Tensor in, frames out, and back.
//
// Tensors on another device or non-contiguous are copied to contiguous CPU memory first (the CUDA
// codecs of compression/cuda/ avoid that copy). LibTorch exceptions are caught here and returned
// as Status, so callers above never see them.
#pragma once

#include <ATen/ATen.h>

#include <vector>

#include "compression/codec.h"
#include "compression/frame.h"
#include "compression/link_decoder.h"

namespace geotrain::compression {

StatusOr<DType> DTypeOf(const at::Tensor& tensor);
at::ScalarType ScalarTypeOf(DType dtype);

// Encodes `tensor` (float32, float16 or bfloat16) with `codec` into `frame`.
Status EncodeTensor(Codec& codec, const at::Tensor& tensor, Span<const uint64_t> sample_ids,
                    uint64_t step, std::vector<uint8_t>* frame, EncodeStats* stats = nullptr);

// Decodes `frame` into a new CPU tensor with the sender's dtype and shape.
StatusOr<at::Tensor> DecodeTensor(LinkDecoder& decoder, Span<const uint8_t> frame);

}  // namespace geotrain::compression
