// MicroBatchMessage: what crosses a pipeline link for one micro-batch, in one transport frame.
//
//   u32 magic "GTMB"  u8 version (1)  u8 kind  u16 zero  u64 step  u32 micro_batch
//   u32 sample count n  n x u64 sample ids  then one codec frame (compression/frame.h) to the end
//
// The header tells the receiver which step and micro-batch the tensor belongs to (a schedule bug
// or a stale frame becomes a clear error rather than a silent mix-up) and which dataset samples it
// holds: the delta codec keys its cache by them and the last stage looks up its labels by them,
// so every stage agrees on the samples without reading the data order itself. One frame instead
// of two halves the round trips on a high-latency link. Little-endian, like every geotrain frame.
#pragma once

#include <cstdint>
#include <vector>

#include "common/span.h"
#include "common/status.h"

namespace geotrain::runtime {

enum class MessageKind : uint8_t {
  kActivation = 0,      // training forward: stage s -> s+1
  kGradient = 1,        // training backward: stage s+1 -> s
  kEvalActivation = 2,  // evaluation forward (uncompressed, never touches codec state)
};

struct MicroBatchHeader {
  MessageKind kind = MessageKind::kActivation;
  uint64_t step = 0;
  uint32_t micro_batch = 0;
  std::vector<uint64_t> sample_ids;
};

// Appends the header to `out` (cleared first); the caller appends the codec frame.
void WriteMicroBatchHeader(const MicroBatchHeader& header, std::vector<uint8_t>* out);

// Parses a received message: the header, and the codec frame that follows it in `frame`.
// DATA_LOSS naming the field for a malformed header.
Status ParseMicroBatchMessage(Span<const uint8_t> message, MicroBatchHeader* header,
                              Span<const uint8_t>* frame);

// DATA_LOSS unless `header` is the message the schedule expects next ("expected the gradient of
// step 3 micro-batch 1, got the activation of step 3 micro-batch 2").
Status CheckExpected(const MicroBatchHeader& header, MessageKind kind, uint64_t step,
                     uint32_t micro_batch);

}  // namespace geotrain::runtime
