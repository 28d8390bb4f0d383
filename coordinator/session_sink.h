// SessionSink: the down direction of one worker's Session stream, as the coordinator core sees
// it. The gRPC implementation is session_stream.h; the core never names it.
#pragma once

#include "geotrain/v1/coordinator.pb.h"

namespace geotrain::coordinator {

class SessionSink {
 public:
  virtual ~SessionSink() = default;
  // Queues `message` for the worker and returns at once: the core calls this under its mutex,
  // so it must never wait for the network. Messages to a closed session are dropped (the
  // worker's next SessionHello reconciles whatever it missed).
  virtual void Send(const v1::CoordinatorMessage& message) = 0;
  // Ends the stream from the coordinator's side (a newer session replaced it, or the worker was
  // declared dead). Returns at once.
  virtual void Close() = 0;
};

}  // namespace geotrain::coordinator
