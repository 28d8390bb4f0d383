#include "models/safetensors_header.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <string_view>
#include <tuple>

#include "common/io/strict_json.h"

namespace geotrain::models {
namespace {

using nlohmann::json;

constexpr char kMetadataKey[] = "__metadata__";

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

Status ParseMetadata(const json& value, std::map<std::string, std::string>* metadata) {
  if (!value.is_object()) {
    return InvalidArgument("__metadata__: expected an object, got " + io::JsonKindName(value));
  }
  for (const auto& [key, entry] : value.items()) {
    if (!entry.is_string()) {
      return InvalidArgument("__metadata__[\"" + key + "\"]: expected a string, got " +
                             io::JsonKindName(entry));
    }
    (*metadata)[key] = entry.get<std::string>();
  }
  return OkStatus();
}

StatusOr<SafetensorsTensorInfo> ParseTensorEntry(const json& entry, uint64_t data_size) {
  if (!entry.is_object()) {
    return InvalidArgument("expected an object, got " + io::JsonKindName(entry));
  }
  for (const char* field : {"dtype", "shape", "data_offsets"}) {
    if (!entry.contains(field)) return InvalidArgument(std::string("missing field ") + field);
  }
  SafetensorsTensorInfo info;

  const json& dtype = entry["dtype"];
  if (!dtype.is_string()) {
    return InvalidArgument("dtype: expected a string, got " + io::JsonKindName(dtype));
  }
  const auto parsed_dtype = ParseDTypeName(dtype.get<std::string>());
  if (!parsed_dtype) {
    return InvalidArgument("dtype: " + dtype.dump() + " is not a safetensors dtype");
  }
  info.dtype = *parsed_dtype;

  const json& shape = entry["shape"];
  if (!shape.is_array()) {
    return InvalidArgument("shape: expected an array, got " + io::JsonKindName(shape));
  }
  if (shape.size() > kMaxSafetensorsRank) {
    return InvalidArgument("shape: " + std::to_string(shape.size()) +
                           " dimensions exceed the limit of " +
                           std::to_string(kMaxSafetensorsRank));
  }
  uint64_t elements = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    GEOTRAIN_ASSIGN_OR_RETURN(
        const uint64_t dim,
        io::JsonToUnsigned(shape[i], "shape[" + std::to_string(i) + "]",
                           static_cast<uint64_t>(std::numeric_limits<int64_t>::max())));
    if (__builtin_mul_overflow(elements, dim, &elements) ||
        elements > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return InvalidArgument("shape: the element count overflows 64 bits");
    }
    info.shape.push_back(static_cast<int64_t>(dim));
  }

  const json& offsets = entry["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2) {
    return InvalidArgument("data_offsets: expected an array of two integers, got " +
                           (offsets.is_array() ? "an array of " + std::to_string(offsets.size())
                                               : io::JsonKindName(offsets)));
  }
  const uint64_t no_limit = std::numeric_limits<uint64_t>::max();
  GEOTRAIN_ASSIGN_OR_RETURN(info.data_begin,
                            io::JsonToUnsigned(offsets[0], "data_offsets[0]", no_limit));
  GEOTRAIN_ASSIGN_OR_RETURN(info.data_end,
                            io::JsonToUnsigned(offsets[1], "data_offsets[1]", no_limit));
  if (info.data_end < info.data_begin) {
    return InvalidArgument("data_offsets: end " + std::to_string(info.data_end) +
                           " is before begin " + std::to_string(info.data_begin));
  }
  if (info.data_end > data_size) {
    return DataLoss("data_offsets: end " + std::to_string(info.data_end) +
                    " is beyond the data section of " + std::to_string(data_size) + " bytes");
  }
  uint64_t expected_bytes;
  const bool overflow = __builtin_mul_overflow(
      elements, static_cast<uint64_t>(DTypeSize(info.dtype)), &expected_bytes);
  if (overflow || expected_bytes != info.data_end - info.data_begin) {
    return InvalidArgument(
        "data_offsets: span of " + std::to_string(info.data_end - info.data_begin) +
        " bytes, but dtype " + DTypeName(info.dtype) + " x shape " + ShapeText(info.shape) +
        " needs " + (overflow ? std::string("more than 2^64") : std::to_string(expected_bytes)) +
        " bytes");
  }
  return info;
}

// Tensors may leave gaps but must never share a byte: a writer that overlaps them is broken, and a
// reader would hand out aliased views.
Status CheckNoOverlap(const std::map<std::string, SafetensorsTensorInfo>& tensors) {
  std::vector<std::tuple<uint64_t, uint64_t, const std::string*>> spans;
  for (const auto& [name, info] : tensors) {
    if (info.data_end > info.data_begin) spans.emplace_back(info.data_begin, info.data_end, &name);
  }
  std::sort(spans.begin(), spans.end());
  for (size_t i = 1; i < spans.size(); ++i) {
    const auto& [prev_begin, prev_end, prev_name] = spans[i - 1];
    const auto& [begin, end, name] = spans[i];
    if (begin < prev_end) {
      return InvalidArgument("data_offsets: tensors \"" + *prev_name + "\" [" +
                             std::to_string(prev_begin) + ", " + std::to_string(prev_end) +
                             ") and \"" + *name + "\" [" + std::to_string(begin) + ", " +
                             std::to_string(end) + ") overlap");
    }
  }
  return OkStatus();
}

}  // namespace

int64_t SafetensorsTensorInfo::NumElements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;  // validated against overflow when parsed
  return n;
}

StatusOr<SafetensorsHeader> ParseSafetensorsHeader(Span<const uint8_t> file) {
  if (file.size() < 8) {
    return DataLoss("header length: the file has " + std::to_string(file.size()) +
                    " bytes, fewer than the 8-byte length field");
  }
  uint64_t header_length;
  std::memcpy(&header_length, file.data(), 8);  // little-endian hosts only (checked in CMake)
  if (header_length > kMaxSafetensorsHeaderBytes) {
    return OutOfRange("header length: " + std::to_string(header_length) +
                      " bytes exceeds the limit of " + std::to_string(kMaxSafetensorsHeaderBytes));
  }
  if (header_length > file.size() - 8) {
    return DataLoss("header length: " + std::to_string(header_length) + " bytes, but only " +
                    std::to_string(file.size() - 8) + " bytes follow the length field");
  }
  const std::string_view text(reinterpret_cast<const char*>(file.data() + 8), header_length);
  GEOTRAIN_ASSIGN_OR_RETURN(json root, io::ParseStrictJson(text, "header"));
  if (!root.is_object()) {
    return InvalidArgument("header: expected a JSON object, got " + io::JsonKindName(root));
  }

  SafetensorsHeader header;
  header.data_offset = 8 + header_length;
  header.data_size = file.size() - header.data_offset;
  for (const auto& [name, entry] : root.items()) {
    if (name == kMetadataKey) {
      GEOTRAIN_RETURN_IF_ERROR(ParseMetadata(entry, &header.metadata));
      continue;
    }
    auto info = ParseTensorEntry(entry, header.data_size);
    if (!info.ok()) return info.status().WithContext("tensor \"" + name + "\"");
    header.tensors.emplace(name, std::move(info).value());
  }
  GEOTRAIN_RETURN_IF_ERROR(CheckNoOverlap(header.tensors));
  return header;
}

}  // namespace geotrain::models
