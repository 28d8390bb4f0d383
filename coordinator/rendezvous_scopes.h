// RendezvousScopes: what the coordinator core does to the rendezvous key-value store when a
// job's placement is abandoned or the job ends. The core sees only this seam; kv_store_scopes.h
// adapts the real KvStore to it.
#pragma once

#include <cstdint>
#include <string>

namespace geotrain::coordinator {

class RendezvousScopes {
 public:
  virtual ~RendezvousScopes() = default;
  // Forgets the keys of one placement (its ranks are stopped; the next one gets a new scope).
  virtual void DropScope(const std::string& job_id, uint32_t generation) = 0;
  // Forgets every key of an ended job.
  virtual void DropJob(const std::string& job_id) = 0;
};

}  // namespace geotrain::coordinator
