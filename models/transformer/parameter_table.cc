#include "models/transformer/parameter_table.h"

#include "models/transformer/torch_status.h"

namespace geotrain::models {
namespace {

std::string ShapeString(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    text += (i ? ", " : "") + std::to_string(shape[i]);
  }
  return text + "]";
}

// The checkpoint's name for `spec`: its name, else its legacy name.
StatusOr<std::string> FindInCheckpoint(const SafetensorsCheckpoint& checkpoint,
                                       const TensorSpec& spec) {
  if (checkpoint.Contains(spec.name)) return spec.name;
  if (!spec.legacy_name.empty() && checkpoint.Contains(spec.legacy_name)) return spec.legacy_name;
  return NotFound("checkpoint has no tensor " + spec.name +
                  (spec.legacy_name.empty() ? "" : " (nor " + spec.legacy_name + ")"));
}

StatusOr<at::Tensor> LoadTensor(SafetensorsCheckpoint& checkpoint, const std::string& name,
                                const TensorSpec& spec, at::Device device, at::ScalarType dtype) {
  GEOTRAIN_ASSIGN_OR_RETURN(TensorView view, checkpoint.Get(name));
  if (view.shape != spec.shape) {
    return InvalidArgument(name + ": shape " + ShapeString(view.shape) +
                           " in the checkpoint, but config.json implies " +
                           ShapeString(spec.shape));
  }
  GEOTRAIN_ASSIGN_OR_RETURN(at::Tensor staging, CatchTorchErrors("allocating " + name, [&] {
                              return at::empty(spec.shape, at::TensorOptions().dtype(at::kFloat));
                            }));
  // Converts straight from the mapped bytes into the tensor's storage: one copy.
  GEOTRAIN_RETURN_IF_ERROR(
      ConvertToFloat32(view, Span<float>(staging.data_ptr<float>(), staging.numel())));
  return CatchTorchErrors("placing " + name, [&] {
    at::Tensor tensor = staging.to(device, dtype);
    tensor.requires_grad_(true);
    return tensor;
  });
}

}  // namespace

StatusOr<ParameterTable> ParameterTable::Load(SafetensorsCheckpoint& checkpoint,
                                              const std::vector<TensorSpec>& specs,
                                              at::Device device, at::ScalarType dtype) {
  ParameterTable table;
  for (const TensorSpec& spec : specs) {
    GEOTRAIN_ASSIGN_OR_RETURN(std::string name, FindInCheckpoint(checkpoint, spec));
    GEOTRAIN_ASSIGN_OR_RETURN(at::Tensor tensor, LoadTensor(checkpoint, name, spec, device, dtype));
    table.order_.push_back(spec.name);
    table.entries_[spec.name] = Entry{name, std::move(tensor)};
  }
  return table;
}

at::Tensor ParameterTable::Get(const std::string& name) {
  auto it = entries_.find(name);
  if (it == entries_.end()) {
    if (missing_.empty()) missing_ = name;
    return at::Tensor();
  }
  it->second.used = true;
  return it->second.tensor;
}

Status ParameterTable::CheckComplete() const {
  if (!missing_.empty()) {
    return Internal("model layout lists no tensor " + missing_ + ", but the model uses it");
  }
  for (const auto& [name, entry] : entries_) {
    if (!entry.used) return Internal("model layout lists " + name + ", but the model ignores it");
  }
  return OkStatus();
}

std::vector<NamedParameter> ParameterTable::Parameters() const {
  std::vector<NamedParameter> parameters;
  for (const std::string& name : order_) {
    const Entry& entry = entries_.at(name);
    parameters.push_back(NamedParameter{entry.checkpoint_name, entry.tensor});
  }
  return parameters;
}

}  // namespace geotrain::models
