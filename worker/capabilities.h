// DetectCapabilities: what this machine offers, as the coordinator's WorkerCapabilities message
// (sent at every registration, shown by `geotrain workers`, used by placement).
//
// The device is the one the training children will use: CUDA when the linked LibTorch can use a
// GPU here (so a CPU-only LibTorch on a GPU machine honestly reports "cpu"), the CPU otherwise.
// Thread-safe; reads the system each call.
#pragma once

#include <cstdint>
#include <string>

#include "geotrain/v1/worker.pb.h"

namespace geotrain::worker {

// The parts of the capabilities that come from the daemon's flags.
struct CapabilityFlags {
  std::string advertise_address;  // --advertise
  std::string region;             // --region
  uint32_t data_port_min = 0;     // --port-min (0 and 0: ephemeral ports)
  uint32_t data_port_max = 0;     // --port-max
  uint32_t probe_port = 0;        // the bound port of --probe-listen (0: no probe server)
};

geotrain::v1::WorkerCapabilities DetectCapabilities(const CapabilityFlags& flags);

// The geotrain version this binary was built as.
const char* WorkerVersion();

}  // namespace geotrain::worker
