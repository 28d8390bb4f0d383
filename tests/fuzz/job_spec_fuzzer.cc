// libFuzzer target: a job YAML as a user or a SubmitJob RPC hands it over. ParseJobSpec must end
// in a Status: a yaml-cpp exception escaping it aborts the fuzzer (uncaught exception), a crash or
// undefined behaviour is caught by the sanitizers. An accepted spec must survive the round trip
// through JobSpecToYaml, and every rank's assignment must be derivable from it.
#include <cstdint>
#include <string>

#include "runtime/job_spec.h"

using namespace geotrain;
using namespace geotrain::runtime;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  StatusOr<JobSpec> spec = ParseJobSpec(text);
  if (!spec.ok()) {
    if (spec.status().message().empty()) __builtin_trap();
    return 0;
  }
  StatusOr<JobSpec> again = ParseJobSpec(JobSpecToYaml(*spec));
  if (!again.ok()) __builtin_trap();
  if (static_cast<int64_t>(spec->num_stages) * spec->dp_size <= 64) {
    for (int stage = 0; stage < spec->num_stages; ++stage) {
      for (int rank = 0; rank < spec->dp_size; ++rank) (void)AssignmentFor(*spec, stage, rank);
    }
  }
  return 0;
}
