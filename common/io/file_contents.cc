#include "common/io/file_contents.h"

namespace geotrain::io {

StatusOr<std::string> ReadFileContents(const std::string& path, size_t max_bytes, Env* env) {
  return env->ReadFile(path, max_bytes);
}

}  // namespace geotrain::io
