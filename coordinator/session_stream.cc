#include "coordinator/session_stream.h"

namespace geotrain::coordinator {

SessionStream::SessionStream(grpc::ServerContext* context, Stream* stream)
    : context_(context), stream_(stream) {
  writer_ = std::thread([this] { WriteLoop(); });
}

SessionStream::~SessionStream() { Finish(); }

void SessionStream::Send(const v1::CoordinatorMessage& message) {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) return;
  queue_.push_back(message);
  cv_.notify_one();
}

void SessionStream::Close() {
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = true;
  queue_.clear();
  cv_.notify_one();
  // Ends the handler's blocking Read and any Write in flight; after Finish the RPC (and its
  // context) may be gone.
  if (!finishing_) context_->TryCancel();
}

void SessionStream::Finish() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    finishing_ = true;
    cv_.notify_one();
  }
  if (writer_.joinable()) writer_.join();
}

void SessionStream::WriteLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [this] { return !queue_.empty() || closed_ || finishing_; });
    if (queue_.empty()) {
      if (closed_ || finishing_) return;
      continue;
    }
    v1::CoordinatorMessage message = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    const bool written = stream_->Write(message);
    lock.lock();
    if (!written) {
      // The stream broke; the reader loop sees it too and ends the session.
      closed_ = true;
      queue_.clear();
    }
  }
}

}  // namespace geotrain::coordinator
