#include "coordinator/job_figures.h"

namespace geotrain::coordinator {

StepFigures StepFiguresOf(const runtime::JobSpec& spec) {
  const runtime::TrainingSettings& training = spec.base.training;
  StepFigures figures;
  figures.num_stages = spec.num_stages;
  figures.replicas = spec.dp_size;
  figures.tokens_per_step =
      training.micro_batch_size * training.micro_batches * spec.base.data.seq_length * spec.dp_size;
  // In epochs, the length is known only once the ranks read the data (they report it).
  figures.total_steps = training.epochs > 0 ? 0 : training.total_steps;
  return figures;
}

int MaxRestartsOf(const runtime::JobSpec& spec) { return spec.max_restarts; }

}  // namespace geotrain::coordinator
