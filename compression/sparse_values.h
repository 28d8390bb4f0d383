// The sparse wire format shared by topk and randk (MCBench's "with indices" variants): the kept
// values and their explicit positions; every other value decodes to zero.
//
//   params:  u8 value dtype (0 = f32, 1 = f16)
//   payload: u64 count, u32 indices[count] (strictly increasing, < elements),
//            values[count] in the value dtype
//
// f16 values that would overflow (|v| >= 65520) make the encoder send that frame's values as f32
// instead: the dtype in params is the one on the wire, so a receiver never sees an infinity that
// the sender did not have. Stateless free functions; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "common/bytes.h"
#include "compression/types.h"

namespace geotrain::compression {

// u32 indices address at most 2^32 values.
constexpr int64_t kMaxSparseElements = int64_t{1} << 32;

// Values kept out of n at `density`: max(1, round(density * n)), at most n; 0 when n is 0.
int64_t SparseCount(double density, int64_t n);

// INVALID_ARGUMENT ("topk.input: ...") when n exceeds what u32 indices can address.
Status CheckSparseElements(const char* codec, int64_t n);

// Writes params and payload for the values of finite `x` (n floats) at `indices` (strictly
// increasing, < n) and adds the error of the decoded tensor to `error`. `norm_sq` is Σx² over
// all of x (the caller has it from its own pass).
void EncodeSparseValues(const float* x, int64_t n, const std::vector<uint32_t>& indices,
                        DType value_dtype, double norm_sq, ByteWriter* params, ByteWriter* payload,
                        ErrorSums* error);

// Decodes a frame written by EncodeSparseValues into `out` (frame.elements floats), validating
// every field; errors are DATA_LOSS and named after `codec` ("randk.indices[7]: ...").
Status DecodeSparseValues(const char* codec, const FrameContent& frame, float* out);

}  // namespace geotrain::compression
