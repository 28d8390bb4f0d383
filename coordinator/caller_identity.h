// CallerIdentity: who made a worker call, as CoordinatorCore and RendezvousService see it (the
// core takes it without gRPC; worker_identity.h reads it off a call). Plain value.
#pragma once

#include <string>

namespace geotrain::coordinator {

// Who made a call.
struct CallerIdentity {
  // The TLS handshake verified a client certificate.
  bool certified = false;
  // The worker name of that certificate; empty without one (loopback development mode, or a
  // shared certificate without identity under --allow-shared-worker-cert).
  std::string name;

  // Calls of an identity are bound to it; calls without one behave as before identities existed.
  bool bound() const { return !name.empty(); }
  // "worker identity 'w1'" / "a caller without worker identity", for logs and errors.
  std::string Describe() const {
    if (bound()) return "worker identity '" + name + "'";
    return certified ? "a worker certificate without identity" : "a caller without certificate";
  }
};

}  // namespace geotrain::coordinator
