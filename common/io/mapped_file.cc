#include "common/io/mapped_file.h"

#include <sys/mman.h>

#include "common/io/env.h"

namespace geotrain::io {

StatusOr<std::unique_ptr<MappedFile>> MappedFile::Open(const std::string& path) {
  return Env::Default()->MapFile(path);
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace geotrain::io
