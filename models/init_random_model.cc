#include "models/init_random_model.h"

#include <cmath>
#include <filesystem>
#include <vector>

#include "common/hash_random.h"
#include "common/io/atomic_file_writer.h"
#include "models/model_layout.h"
#include "models/safetensors_checkpoint.h"
#include "models/safetensors_writer.h"

namespace geotrain::models {
namespace {

// FNV-1a: a stable stream id per tensor name (std::hash may differ between standard libraries).
uint64_t NameStream(const std::string& name) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (unsigned char c : name) hash = (hash ^ c) * 0x100000001b3ull;
  return hash;
}

std::vector<float> InitialValues(const TensorSpec& spec, const ModelConfig& config, uint64_t seed) {
  int64_t count = 1;
  for (int64_t dim : spec.shape) count *= dim;
  switch (spec.init) {
    case TensorInit::kZeros:
      return std::vector<float>(count, 0.0f);
    case TensorInit::kOnes:
      return std::vector<float>(count, 1.0f);
    case TensorInit::kNormal:
    case TensorInit::kNormalResidual:
      break;
  }
  double std_dev = config.initializer_range;
  if (spec.init == TensorInit::kNormalResidual) {
    std_dev /= std::sqrt(2.0 * static_cast<double>(config.num_layers));
  }
  SplitMix64 random(HashCounter(seed, NameStream(spec.name), 0));
  std::vector<float> values(count);
  for (float& v : values) v = static_cast<float>(std_dev * random.Normal());
  return values;
}

Status WriteTextFile(const std::string& path, const std::string& text) {
  GEOTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<io::AtomicFileWriter> writer,
                            io::AtomicFileWriter::Create(path));
  GEOTRAIN_RETURN_IF_ERROR(writer->Append(text.data(), text.size()));
  return writer->Commit();
}

}  // namespace

Status InitRandomModel(const ModelConfig& config, const std::string& out_dir, uint64_t seed) {
  GEOTRAIN_RETURN_IF_ERROR(ValidateModelConfig(config, "model config"));
  std::error_code error;
  std::filesystem::create_directories(out_dir, error);
  if (error) return Unavailable(out_dir + ": cannot create directory: " + error.message());
  // A loader would prefer a stale index over the new single file.
  if (std::filesystem::exists(out_dir + "/" + kSafetensorsIndexFile, error)) {
    return FailedPrecondition(out_dir + ": holds a sharded checkpoint (" + kSafetensorsIndexFile +
                              "); refusing to write a second model beside it");
  }

  const std::vector<TensorSpec> specs = ModelTensorSpecs(config);
  // The writer borrows the buffers until Write returns.
  std::vector<std::vector<float>> buffers;
  buffers.reserve(specs.size());
  SafetensorsWriter writer;
  writer.SetMetadata("format", "pt");
  for (const TensorSpec& spec : specs) {
    buffers.push_back(InitialValues(spec, config, seed));
    GEOTRAIN_RETURN_IF_ERROR(writer.AddFloat32(spec.name, spec.shape, buffers.back()));
  }
  GEOTRAIN_RETURN_IF_ERROR(writer.Write(out_dir + "/" + kSafetensorsSingleFile));
  return WriteTextFile(out_dir + "/config.json", ModelConfigToJson(config));
}

}  // namespace geotrain::models
