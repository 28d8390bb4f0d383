// SessionStream: the SessionSink of one gRPC Session stream.
//
// Send() only queues; a writer thread of its own drains the queue into the stream, so the core
// (which sends under its mutex) never waits on a slow or stuck worker. The stream's reader loop
// stays on the gRPC handler thread (coordinator_service.cc); gRPC allows one reader and one
// writer at a time on a ServerReaderWriter.
#pragma once

#include <grpcpp/grpcpp.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "coordinator/session_sink.h"
#include "geotrain/v1/coordinator.grpc.pb.h"

namespace geotrain::coordinator {

class SessionStream final : public SessionSink {
 public:
  using Stream = grpc::ServerReaderWriter<v1::CoordinatorMessage, v1::WorkerMessage>;

  // `context` and `stream` belong to the RPC handler and must outlive Finish().
  SessionStream(grpc::ServerContext* context, Stream* stream);
  ~SessionStream() override;  // Finish()

  void Send(const v1::CoordinatorMessage& message) override;
  void Close() override;

  // Writes what is queued, then stops the writer thread; the handler calls it before it returns
  // (gRPC requires every write to be done by then). Idempotent.
  void Finish();

 private:
  void WriteLoop();

  grpc::ServerContext* context_;
  Stream* stream_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<v1::CoordinatorMessage> queue_;
  bool closed_ = false;     // no more sends are accepted
  bool finishing_ = false;  // the writer stops once the queue is empty; Close leaves the context be
  std::thread writer_;
};

}  // namespace geotrain::coordinator
