// libFuzzer target: the bytes of a safetensors file as a reader sees them. ParseSafetensorsHeader
// must end in a Status; when it accepts, every tensor's byte range must lie inside the file and
// match its dtype and shape, which the views built here (as SafetensorsFile::Get builds them) and
// the float conversion check under ASan.
#include <cstdint>
#include <vector>

#include "models/safetensors_header.h"
#include "models/tensor_view.h"

using namespace geotrain;
using namespace geotrain::models;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Span<const uint8_t> file(data, size);
  StatusOr<SafetensorsHeader> header = ParseSafetensorsHeader(file);
  if (!header.ok()) {
    if (header.status().message().empty()) __builtin_trap();
    return 0;
  }
  if (header->data_offset + header->data_size != size) __builtin_trap();
  for (const auto& [name, info] : header->tensors) {
    if (info.data_begin > info.data_end || info.data_end > header->data_size) __builtin_trap();
    TensorView view;
    view.name = name;
    view.dtype = info.dtype;
    view.shape = info.shape;
    view.bytes =
        file.subspan(header->data_offset + info.data_begin, info.data_end - info.data_begin);
    // Bounded work: the conversion allocates 4 bytes per element.
    if (info.NumElements() <= (1 << 16)) (void)ConvertToFloat32(view);
  }
  return 0;
}
