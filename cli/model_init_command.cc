#include "cli/model_init_command.h"

#include "common/io/file_contents.h"
#include "models/init_random_model.h"
#include "models/model_config.h"

namespace geotrain::cli {

namespace {
constexpr size_t kMaxConfigBytes = 1 << 20;
}  // namespace

Status RunModelInit(const ModelInitOptions& options) {
  GEOTRAIN_ASSIGN_OR_RETURN(std::string text,
                            io::ReadFileContents(options.config_path, kMaxConfigBytes));
  GEOTRAIN_ASSIGN_OR_RETURN(models::ModelConfig config,
                            models::ParseModelConfig(text, options.config_path));
  return models::InitRandomModel(config, options.out_dir, options.seed)
      .WithContext("--out " + options.out_dir);
}

}  // namespace geotrain::cli
