#include "models/safetensors.h"

namespace geotrain::models {

StatusOr<std::unique_ptr<SafetensorsFile>> SafetensorsFile::Open(const std::string& path) {
  GEOTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<io::MappedFile> file, io::MappedFile::Open(path));
  auto header = ParseSafetensorsHeader(file->bytes());
  if (!header.ok()) return header.status().WithContext(path);
  return std::unique_ptr<SafetensorsFile>(
      new SafetensorsFile(std::move(file), std::move(header).value()));
}

std::vector<std::string> SafetensorsFile::TensorNames() const {
  std::vector<std::string> names;
  names.reserve(header_.tensors.size());
  for (const auto& entry : header_.tensors) names.push_back(entry.first);
  return names;
}

const SafetensorsTensorInfo* SafetensorsFile::Find(const std::string& name) const {
  auto it = header_.tensors.find(name);
  return it == header_.tensors.end() ? nullptr : &it->second;
}

StatusOr<TensorView> SafetensorsFile::Get(const std::string& name) const {
  const SafetensorsTensorInfo* info = Find(name);
  if (info == nullptr) return NotFound(path() + ": no tensor named \"" + name + "\"");
  TensorView view;
  view.name = name;
  view.dtype = info->dtype;
  view.shape = info->shape;
  view.bytes = file_->bytes().subspan(header_.data_offset + info->data_begin,
                                      info->data_end - info->data_begin);
  return view;
}

StatusOr<std::vector<float>> SafetensorsFile::ReadFloat32(const std::string& name) const {
  GEOTRAIN_ASSIGN_OR_RETURN(TensorView view, Get(name));
  auto values = ConvertToFloat32(view);
  if (!values.ok()) return values.status().WithContext(path());
  return values;
}

}  // namespace geotrain::models
