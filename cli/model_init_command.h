// `geotrain model init --config FILE --out DIR --seed N`: a randomly initialised Hugging Face
// model directory (config.json + model.safetensors) from a config.json such as
// examples/models/gpt2-tiny/config.json. The same seed gives the same bytes on every machine.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"

namespace geotrain::cli {

struct ModelInitOptions {
  std::string config_path;  // a Hugging Face config.json
  std::string out_dir;      // created when missing
  uint64_t seed = 0;
};

Status RunModelInit(const ModelInitOptions& options);

}  // namespace geotrain::cli
