#include "runtime/checkpoint_integer_tensors.h"

#include <algorithm>
#include <iterator>
#include <utility>
#include <vector>

namespace geotrain::runtime {
namespace {

using nlohmann::json;

// Integer dtypes kept in state.json, by their spelling there.
constexpr std::pair<const char*, at::ScalarType> kIntegerDTypes[] = {
    {"int64", at::kLong}, {"int32", at::kInt},  {"int16", at::kShort},
    {"int8", at::kChar},  {"uint8", at::kByte}, {"bool", at::kBool}};

StatusOr<const json*> Member(const json& entry, const char* key, const std::string& file,
                             const std::string& path) {
  const auto it = entry.find(key);
  if (it == entry.end()) return DataLoss(file + ": " + path + "." + key + ": missing");
  return &*it;
}

StatusOr<std::vector<int64_t>> ParseShape(const json& entry, const std::string& file,
                                          const std::string& path, int64_t* elements) {
  GEOTRAIN_ASSIGN_OR_RETURN(const json* shape_json, Member(entry, "shape", file, path));
  if (!shape_json->is_array() || shape_json->size() > 16) {
    return DataLoss(file + ": " + path + ".shape: expected an array of at most 16 sizes");
  }
  std::vector<int64_t> shape;
  *elements = 1;
  for (const json& size : *shape_json) {
    if (!size.is_number_unsigned() || size.get<uint64_t>() > uint64_t{kMaxIntegerTensorElements}) {
      return DataLoss(file + ": " + path + ".shape: " + size.dump() + " is not a valid size");
    }
    shape.push_back(size.get<int64_t>());
    *elements *= shape.back();
    if (*elements > kMaxIntegerTensorElements) {
      return DataLoss(file + ": " + path + ".shape: too many elements");
    }
  }
  return shape;
}

}  // namespace

StatusOr<json> IntegerTensorToJson(const at::Tensor& tensor, const std::string& field) {
  const at::ScalarType type = tensor.scalar_type();
  const auto dtype = std::find_if(std::begin(kIntegerDTypes), std::end(kIntegerDTypes),
                                  [&](const auto& entry) { return entry.second == type; });
  if (dtype == std::end(kIntegerDTypes)) {
    return InvalidArgument(field + ": dtype " + std::string(c10::toString(type)) +
                           " is neither floating point nor integer");
  }
  if (tensor.numel() > kMaxIntegerTensorElements) {
    return InvalidArgument(field + ": " + std::to_string(tensor.numel()) +
                           " integer elements exceed the limit of " +
                           std::to_string(kMaxIntegerTensorElements) +
                           " (integers are stored in state.json; store data as floats)");
  }
  at::Tensor values = tensor.detach().to(at::kCPU, at::kLong).contiguous();
  const int64_t* data = values.data_ptr<int64_t>();
  return json{{"dtype", dtype->first},
              {"shape", values.sizes().vec()},
              {"values", std::vector<int64_t>(data, data + values.numel())}};
}

StatusOr<at::Tensor> IntegerTensorFromJson(const json& entry, const std::string& file,
                                           const std::string& path) {
  if (!entry.is_object()) return DataLoss(file + ": " + path + ": expected an object");
  GEOTRAIN_ASSIGN_OR_RETURN(const json* dtype_json, Member(entry, "dtype", file, path));
  const auto dtype =
      std::find_if(std::begin(kIntegerDTypes), std::end(kIntegerDTypes), [&](const auto& known) {
        return dtype_json->is_string() && dtype_json->get<std::string>() == known.first;
      });
  if (dtype == std::end(kIntegerDTypes)) {
    return DataLoss(file + ": " + path + ".dtype: unknown " + dtype_json->dump());
  }
  int64_t elements = 0;
  GEOTRAIN_ASSIGN_OR_RETURN(std::vector<int64_t> shape, ParseShape(entry, file, path, &elements));
  GEOTRAIN_ASSIGN_OR_RETURN(const json* values, Member(entry, "values", file, path));
  if (!values->is_array() || static_cast<int64_t>(values->size()) != elements) {
    return DataLoss(file + ": " + path + ".values: expected an array of " +
                    std::to_string(elements) + " integers");
  }
  at::Tensor tensor = at::empty(shape, at::kLong);
  int64_t* data = tensor.data_ptr<int64_t>();
  for (const json& value : *values) {
    if (!value.is_number_integer() ||
        (value.is_number_unsigned() && value.get<uint64_t>() > uint64_t{INT64_MAX})) {
      return DataLoss(file + ": " + path + ".values: " + value.dump() + " is not an int64");
    }
    *data++ = value.get<int64_t>();
  }
  return tensor.to(dtype->second);
}

}  // namespace geotrain::runtime
