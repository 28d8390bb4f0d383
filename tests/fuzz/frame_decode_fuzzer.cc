// libFuzzer target: decoding arbitrary bytes as a stream of frames must end in a clean Status,
// never a crash, an out-of-bounds access (ASan) or undefined behaviour (UBSan).
#include <cstdint>
#include <vector>

#include "compression/link_decoder.h"
#include "tests/fuzz/fuzz_frames.h"

using namespace geotrain;
using namespace geotrain::compression;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const bool reseal = data[0] & fuzz::kControlReseal;
  const FrameLimits limits = fuzz::FuzzLimits();
  LinkDecoder decoder(fuzz::FuzzReceiverConfig(), limits);
  size_t pos = 1;
  while (pos + kFrameHeaderBytes <= size) {
    auto frame_size = FrameSize(Span<const uint8_t>(data + pos, size - pos), limits);
    if (!frame_size.ok() || *frame_size > size - pos) return 0;
    std::vector<uint8_t> frame(data + pos, data + pos + *frame_size);
    pos += *frame_size;
    if (reseal) UpdateFrameChecksum(frame.data(), frame.size());
    DecodedTensor out;
    if (!decoder.Decode(frame, &out).ok()) return 0;
    if (out.values.size() != static_cast<size_t>(NumElements(out.shape))) __builtin_trap();
  }
  return 0;
}
