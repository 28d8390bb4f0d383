// KvStoreScopes: the RendezvousScopes of the coordinator's in-memory KvStore.
#pragma once

#include <memory>

#include "coordinator/rendezvous_scopes.h"

namespace geotrain::coordinator {

class KvStore;

// `store` is not owned and must outlive the result. Thread-safe (KvStore is).
std::unique_ptr<RendezvousScopes> KvStoreScopes(KvStore* store);

}  // namespace geotrain::coordinator
