#include "cli/submit_model_shape.h"

#include "models/model_config.h"
#include "runtime/job_spec.h"

namespace geotrain::cli {

std::optional<v1::ModelShape> SubmitModelShape(const std::string& spec_yaml) {
  const StatusOr<runtime::JobSpec> spec = runtime::ParseJobSpec(spec_yaml);
  if (!spec.ok()) return std::nullopt;
  const StatusOr<models::ModelConfig> config = models::LoadModelConfig(spec->base.model_dir);
  if (!config.ok()) return std::nullopt;
  v1::ModelShape shape;
  shape.set_hidden_size(config->hidden_size);
  shape.set_layers(config->num_layers);
  shape.set_vocab_size(config->vocab_size);
  shape.set_tied_embeddings(config->tie_word_embeddings);
  return shape;
}

}  // namespace geotrain::cli
