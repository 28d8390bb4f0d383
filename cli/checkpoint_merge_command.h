// `geotrain checkpoint merge`: joins the per-stage safetensors shards of a run into one Hugging
// Face model directory that LoadStage and transformers read.
//
// Inputs are safetensors files (what Stage::Save writes, Hugging Face tensor names) or
// directories, of which every *.safetensors file below them is taken (a run directory). The
// merged tensors are checked against the config's complete tensor list (models/model_layout.h):
// a missing tensor (e.g. a layer no shard holds), an unexpected one, a wrong shape, or one name
// held by two shards with different values (a tied embedding the runtime failed to keep in sync)
// is an error naming the tensor and the files; nothing is written then. The output is built in a
// temporary directory next to --out and renamed into place, so --out is either absent or complete.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace geotrain::cli {

struct CheckpointMergeOptions {
  std::vector<std::string> inputs;  // safetensors files and/or directories searched recursively
  // config.json to copy into the output. Empty: config.json of the first input directory, or next
  // to the first input file.
  std::string config_path;
  std::string out_dir;  // must not exist, or be an empty directory
  // Largest output file; a larger model is written as model-0000i-of-0000N.safetensors plus
  // model.safetensors.index.json. Default 5 GiB (transformers' save_pretrained default).
  uint64_t max_shard_bytes = uint64_t{5} << 30;
};

struct CheckpointMergeResult {
  size_t tensors = 0;       // tensors written
  size_t input_files = 0;   // shard files read
  size_t output_files = 0;  // safetensors files written
  uint64_t bytes = 0;       // tensor bytes written
};

StatusOr<CheckpointMergeResult> RunCheckpointMerge(const CheckpointMergeOptions& options);

}  // namespace geotrain::cli
