#include "coordinator/frame_key.h"

#include <openssl/rand.h>

namespace geotrain::coordinator {

StatusOr<std::string> NewFrameKey() {
  std::string key(kFrameKeyBytes, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(key.data()), static_cast<int>(key.size())) != 1) {
    return Internal("cannot generate a job's frame key: the random generator failed");
  }
  return key;
}

}  // namespace geotrain::coordinator
