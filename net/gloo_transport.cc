// The one translation unit of net/ that includes LibTorch: the c10d/Gloo adapter.
//
// Written against LibTorch 1.13 (Debian bookworm); it must also build against the PyTorch 2.x
// wheel's LibTorch. The differences that touch this file, all marked "2.x:" below:
// - ProcessGroupGloo derives from c10d::Backend instead of c10d::ProcessGroup (2.0). Its
//   constructor (store, rank, size, options), Options::create(timeout), Options::devices/threads,
//   send/recv(std::vector<at::Tensor>&, rank, tag) and c10d::Work::wait(timeout) are unchanged.
// - createDeviceForHostname gained a trailing `lazyInit` argument with a default (2.5).
// - Later 2.x honour AllreduceOptions::timeout in Gloo collectives; we use no c10d collectives.
// - TCPStoreOptions gained `useLibUV` (2.2, default on in 2.4); we leave it at its default.
// c10d declares ProcessGroupGloo only under USE_C10D_GLOO, which net/CMakeLists.txt defines for
// this file (Debian's Torch config exports it too; the PyTorch wheel's does not always).
#include "net/gloo_transport.h"

#include <ATen/Functions.h>
#include <c10/util/Exception.h>
#include <signal.h>

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <utility>
#include <vector>

#include "net/exchange_transport.h"
#include "net/frame_sealer.h"
#include "net/peer_exchange.h"
#include "net/rendezvous_store.h"
#include "net/sealed_peer_exchange.h"

namespace geotrain::net {
namespace {

using c10d::ProcessGroupGloo;

std::string RankName(int rank) { return "rank " + std::to_string(rank); }

// One line of an exception's text: c10::Error without its C++ backtrace, Gloo's without the
// "[file.cc:123] " it starts with.
std::string Describe(const std::exception& e) {
  const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
  std::string text = c10_error ? c10_error->what_without_backtrace() : e.what();
  text = text.substr(0, text.find('\n'));
  if (!text.empty() && text[0] == '[') {
    const size_t end = text.find("] ");
    if (end != std::string::npos) text = text.substr(end + 2);
  }
  return text;
}

// Runs `body`, turning whatever c10d or Gloo throws into a Status via `to_status(what)`.
template <typename Body, typename ToStatus>
Status CatchAll(Body&& body, ToStatus&& to_status) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return to_status(std::string("out of memory"));
  } catch (const std::exception& e) {
    return to_status(Describe(e));
  } catch (...) {
    return to_status(std::string("unknown exception"));
  }
}

void IgnoreSigpipeOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction current {};
    if (sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) {
      ::signal(SIGPIPE, SIG_IGN);
    }
  });
}

// Tags keep the channels (and a frame's length from its bytes) apart between two ranks; Gloo
// matches sends to receives per (peer, tag) in order.
enum class Part { kLength = 0, kBytes = 1 };
int Tag(Channel channel, Part part) {
  return static_cast<int>(channel) * 2 + static_cast<int>(part);
}

class GlooPeerExchange final : public PeerExchange {
 public:
  GlooPeerExchange(c10::intrusive_ptr<ProcessGroupGloo> group, const GlooTransportOptions& options)
      : group_(std::move(group)),
        rank_(options.rank),
        size_(options.size),
        max_frame_bytes_(options.max_frame_bytes) {}

  ~GlooPeerExchange() override { Close(); }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Status Exchange(Channel channel, const ExchangeStep& step, const Deadline& deadline) override;
  void Close() override;

 private:
  // Where a failure happened, to name it: "recv from rank 2".
  struct Direction {
    const char* verb;
    int peer;
    std::string Name() const { return std::string(verb) + " " + RankName(peer); }
  };

  c10::intrusive_ptr<ProcessGroupGloo> Group() const {
    std::lock_guard<std::mutex> lock(mu_);
    return group_;
  }
  Status FromFailure(const Direction& where, const Deadline& deadline,
                     const std::string& what) const;
  // Posts a send or receive of `bytes` bytes at `data` (non-owning: the caller keeps it alive until
  // the work is waited for or destroyed; destroying pending work is safe, Gloo unregisters it).
  Status Post(ProcessGroupGloo& group, const Direction& where, bool is_send, void* data,
              size_t bytes, int tag, const Deadline& deadline,
              c10::intrusive_ptr<c10d::Work>* work) const;
  Status Wait(const c10::intrusive_ptr<c10d::Work>& work, const Direction& where,
              const Deadline& deadline) const;

  mutable std::mutex mu_;
  c10::intrusive_ptr<ProcessGroupGloo> group_;  // null once closed; guarded by mu_
  const int rank_;
  const int size_;
  const uint64_t max_frame_bytes_;
};

Status GlooPeerExchange::FromFailure(const Direction& where, const Deadline& deadline,
                                     const std::string& what) const {
  // Gloo reports a timeout as an IoException "Timed out waiting ..." or, once a wait's timeout
  // has closed the pair, "Application timeout caused pair closure". Past our deadline, whatever
  // the text, the caller's budget ran out, so say so in the caller's terms.
  if (deadline.Expired() || what.find("Timed out") != std::string::npos ||
      what.find("Application timeout") != std::string::npos) {
    return Status(
        StatusCode::kDeadlineExceeded,
        where.Name() + ": timed out after " + std::to_string(deadline.budget().count()) + " ms");
  }
  return Unavailable(where.Name() + ": link to " + RankName(where.peer) + " failed: " + what);
}

Status GlooPeerExchange::Post(ProcessGroupGloo& group, const Direction& where, bool is_send,
                              void* data, size_t bytes, int tag, const Deadline& deadline,
                              c10::intrusive_ptr<c10d::Work>* work) const {
  return CatchAll(
      [&]() -> Status {
        std::vector<at::Tensor> tensors{at::from_blob(data, {static_cast<int64_t>(bytes)},
                                                      at::TensorOptions().dtype(at::kByte))};
        *work =
            is_send ? group.send(tensors, where.peer, tag) : group.recv(tensors, where.peer, tag);
        return OkStatus();
      },
      [&](const std::string& what) { return FromFailure(where, deadline, what); });
}

Status GlooPeerExchange::Wait(const c10::intrusive_ptr<c10d::Work>& work, const Direction& where,
                              const Deadline& deadline) const {
  if (!work) return OkStatus();
  return CatchAll(
      [&]() -> Status {
        // c10d reads a 0 ms timeout as "Gloo's default", so never pass less than 1 ms. A Gloo
        // timeout closes all of this group's links, which the error policy would do anyway.
        const auto timeout = std::max(deadline.Remaining(), std::chrono::milliseconds(1));
        if (!work->wait(timeout)) {
          return Unavailable(where.Name() + ": aborted");
        }
        return OkStatus();
      },
      [&](const std::string& what) { return FromFailure(where, deadline, what); });
}

Status GlooPeerExchange::Exchange(Channel channel, const ExchangeStep& step,
                                  const Deadline& deadline) {
  const Direction to{"send to", step.send_to};
  const Direction from{"recv from", step.recv_from};
  const c10::intrusive_ptr<ProcessGroupGloo> group = Group();
  if (!group) {
    return Unavailable((step.send_to != kNoPeer ? to : from).Name() + ": this transport is closed");
  }
  // Buffers the pending works point into are declared before the works, so that on an early
  // return the works (and Gloo's references to the buffers) are destroyed first.
  uint64_t send_length = step.send.size();
  uint64_t recv_length = 0;
  c10::intrusive_ptr<c10d::Work> send_length_work, send_bytes_work, recv_length_work,
      recv_bytes_work;
  void* send_data = const_cast<uint8_t*>(step.send.data());  // Gloo only reads a send's buffer

  // Post both sends first: they only go out once the receivers post theirs, so posting before
  // receiving is what lets a ring (everyone sends and receives at once) make progress.
  if (step.send_to != kNoPeer) {
    if (!step.sizes_known) {
      GEOTRAIN_RETURN_IF_ERROR(Post(*group, to, true, &send_length, sizeof(send_length),
                                    Tag(channel, Part::kLength), deadline, &send_length_work));
    }
    if (!step.send.empty()) {
      GEOTRAIN_RETURN_IF_ERROR(Post(*group, to, true, send_data, step.send.size(),
                                    Tag(channel, Part::kBytes), deadline, &send_bytes_work));
    }
  }
  if (step.recv_from != kNoPeer) {
    if (!step.sizes_known) {
      GEOTRAIN_RETURN_IF_ERROR(Post(*group, from, false, &recv_length, sizeof(recv_length),
                                    Tag(channel, Part::kLength), deadline, &recv_length_work));
      GEOTRAIN_RETURN_IF_ERROR(Wait(recv_length_work, from, deadline));
      if (recv_length > max_frame_bytes_) {
        return DataLoss(from.Name() + ": the peer announced a frame of " +
                        std::to_string(recv_length) + " bytes, over max_frame_bytes (" +
                        std::to_string(max_frame_bytes_) + ")");
      }
      Status resized = CatchAll(
          [&]() -> Status {
            step.recv->resize(recv_length);
            return OkStatus();
          },
          [&](const std::string& what) {
            return ResourceExhausted(from.Name() + ": cannot hold a frame of " +
                                     std::to_string(recv_length) + " bytes: " + what);
          });
      GEOTRAIN_RETURN_IF_ERROR(resized);
    }
    if (!step.recv->empty()) {
      Status received = Post(*group, from, false, step.recv->data(), step.recv->size(),
                             Tag(channel, Part::kBytes), deadline, &recv_bytes_work);
      if (received.ok()) received = Wait(recv_bytes_work, from, deadline);
      if (!received.ok() && !step.sizes_known && received.code() == StatusCode::kUnavailable) {
        // The length arrived and the link failed before the bytes did: the frame is cut short,
        // which is data lost, not a link to wait for.
        return DataLoss(
            from.Name() + ": frame truncated: the peer announced " + std::to_string(recv_length) +
            " bytes and the link closed before they arrived (" + received.message() + ")");
      }
      GEOTRAIN_RETURN_IF_ERROR(received);
    }
  }
  GEOTRAIN_RETURN_IF_ERROR(Wait(send_length_work, to, deadline));
  GEOTRAIN_RETURN_IF_ERROR(Wait(send_bytes_work, to, deadline));
  return OkStatus();
}

void GlooPeerExchange::Close() {
  c10::intrusive_ptr<ProcessGroupGloo> group;
  {
    std::lock_guard<std::mutex> lock(mu_);
    group = std::move(group_);
  }
  // Destroying the group (here, or when the last Exchange in flight drops its reference) closes
  // its TCP links; peers see the connection close and fail at once. ~ProcessGroupGloo only waits
  // for queued c10d work, and we queue none.
  try {
    group.reset();
  } catch (...) {
    // A destructor that throws has nothing left to tell us.
  }
}

std::shared_ptr<::gloo::transport::Device> CreateDevice(const std::string& bind_address) {
  // 2.x: createDeviceForHostname(hostname, lazyInit = false) in 2.5+; the call below still fits.
  if (bind_address.empty()) return ProcessGroupGloo::createDefaultDevice();
  return ProcessGroupGloo::createDeviceForHostname(bind_address);
}

// A group being connected on a thread of its own, and what became of it. Shared by the caller
// and that thread: whichever is last to let go frees it.
struct PendingGroup {
  std::mutex mu;
  std::condition_variable done_cv;
  bool done = false;                           // guarded by mu
  bool abandoned = false;                      // guarded by mu: the caller gave up waiting
  std::string failure;                         // guarded by mu: what c10d or Gloo threw
  c10::intrusive_ptr<ProcessGroupGloo> group;  // guarded by mu
};

// Builds the ProcessGroupGloo (rendezvous through the store, then one TCP connection per peer)
// and returns it, or fails by `deadline` naming the step and the peer.
//
// Why a thread: Gloo's pair connect has no deadline of its own, only the context timeout, and it
// waits five times that for a peer to connect to it (gloo/transport/tcp/pair.h, waitUntil); a
// store write or a TCP connect to a peer that accepts and never answers blocks under timeouts
// Gloo and c10d choose. So the caller waits on the thread until `deadline` and no longer. The
// thread is told to stop waiting too: every store wait gets only what is left of the budget
// (RendezvousStore), and Gloo's timeout is a fifth of it, so an abandoned thread ends within
// about one more budget and destroys what it built (closing its sockets).
StatusOr<c10::intrusive_ptr<ProcessGroupGloo>> ConnectWithin(const GlooTransportOptions& options,
                                                             c10::intrusive_ptr<c10d::Store> store,
                                                             const Deadline& deadline) {
  const std::string group_name = "gloo group '" + options.group_name + "', rank " +
                                 std::to_string(options.rank) + " of " +
                                 std::to_string(options.size);
  c10::intrusive_ptr<RendezvousStore> rendezvous;
  c10::intrusive_ptr<ProcessGroupGloo::Options> gloo_options;
  Status prepared = CatchAll(
      [&]() -> Status {
        auto prefixed =
            c10::make_intrusive<c10d::PrefixStore>("geotrain/net/" + options.group_name, store);
        rendezvous = c10::make_intrusive<RendezvousStore>(prefixed, deadline, options.rank);
        // Gloo waits 5 x this for a peer's connection; 1 ms at least, as 0 means "default".
        const auto gloo_timeout =
            std::max(std::chrono::ceil<std::chrono::milliseconds>(deadline.Remaining() / 5.0),
                     std::chrono::milliseconds(1));
        // 2.x: Options derives from Backend::Options; create(timeout) is the same.
        gloo_options = ProcessGroupGloo::Options::create(gloo_timeout);
        gloo_options->devices.push_back(CreateDevice(options.bind_address));
        gloo_options->threads = 1;  // c10d's worker threads run collectives; we post none
        return OkStatus();
      },
      [&](const std::string& what) {
        return Unavailable(group_name + ": cannot connect: " + what);
      });
  GEOTRAIN_RETURN_IF_ERROR(prepared);

  auto pending = std::make_shared<PendingGroup>();
  std::thread([pending, rendezvous, gloo_options, rank = options.rank, size = options.size] {
    c10::intrusive_ptr<ProcessGroupGloo> group;
    const Status built = CatchAll(
        [&]() -> Status {
          group = c10::make_intrusive<ProcessGroupGloo>(rendezvous, rank, size, gloo_options);
          return OkStatus();
        },
        [&](const std::string& what) { return Unavailable(what); });
    std::unique_lock<std::mutex> lock(pending->mu);
    if (!pending->abandoned) {
      pending->failure = built.message();
      pending->group = std::move(group);
      pending->done = true;
      pending->done_cv.notify_all();
      return;
    }
    lock.unlock();
    group.reset();  // nobody waits for it: close its links
  }).detach();

  std::unique_lock<std::mutex> lock(pending->mu);
  const bool done = pending->done_cv.wait_until(lock, deadline.at(), [&] { return pending->done; });
  const std::string phase = rendezvous->Phase();
  const std::string at = phase.empty() ? std::string() : " (" + phase + ")";
  if (!done) {
    pending->abandoned = true;
    return Status(StatusCode::kDeadlineExceeded,
                  group_name + ": cannot connect within " +
                      std::to_string(deadline.budget().count()) + " ms" + at +
                      " (do all ranks use this store and group name, and is every peer's address "
                      "a geotrain rank?)");
  }
  if (pending->group) return std::move(pending->group);
  if (deadline.Expired() || pending->failure.find("imeout") != std::string::npos ||
      pending->failure.find("timed out") != std::string::npos) {
    return Status(StatusCode::kDeadlineExceeded, group_name + ": cannot connect within " +
                                                     std::to_string(deadline.budget().count()) +
                                                     " ms" + at + ": " + pending->failure);
  }
  return Unavailable(group_name + ": cannot connect" + at + ": " + pending->failure);
}

}  // namespace

StatusOr<std::unique_ptr<Transport>> CreateGlooTransport(const GlooTransportOptions& options,
                                                         c10::intrusive_ptr<c10d::Store> store) {
  const std::string group = "gloo group '" + options.group_name + "'";
  if (options.size < 1 || options.rank < 0 || options.rank >= options.size) {
    return InvalidArgument(group + ": rank " + std::to_string(options.rank) + " is not in 0.." +
                           std::to_string(options.size - 1));
  }
  if (options.group_name.empty()) return InvalidArgument("gloo group: empty group_name");
  if (options.connect_timeout.count() <= 0) {
    return InvalidArgument(group + ": connect_timeout must be positive");
  }
  if (!store) return InvalidArgument(group + ": no store");
  if (!options.frame_key.empty() && options.frame_key.size() != kFrameKeyBytes) {
    return InvalidArgument(group + ": frame_key: " + std::to_string(options.frame_key.size()) +
                           " bytes, expected " + std::to_string(kFrameKeyBytes));
  }
  IgnoreSigpipeOnce();

  const Deadline deadline =
      options.connect_deadline ? *options.connect_deadline : Deadline(options.connect_timeout);
  GEOTRAIN_ASSIGN_OR_RETURN(c10::intrusive_ptr<ProcessGroupGloo> process_group,
                            ConnectWithin(options, std::move(store), deadline));
  if (options.frame_key.empty()) {
    return std::unique_ptr<Transport>(std::make_unique<ExchangeTransport>(
        std::make_unique<GlooPeerExchange>(std::move(process_group), options)));
  }
  // The limit is on frames as the caller sees them; on the wire they carry the seal too.
  GlooTransportOptions wire_options = options;
  wire_options.max_frame_bytes = options.max_frame_bytes + kSealOverhead;
  GEOTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<SealedPeerExchange> sealed,
                            SealedPeerExchange::Create(std::make_unique<GlooPeerExchange>(
                                                           std::move(process_group), wire_options),
                                                       options.frame_key, options.group_name));
  return std::unique_ptr<Transport>(std::make_unique<ExchangeTransport>(std::move(sealed)));
}

StatusOr<c10::intrusive_ptr<c10d::Store>> CreateFileStore(const std::string& path, int num_workers,
                                                          Timeout timeout) {
  if (num_workers < 1) return InvalidArgument("file store " + path + ": num_workers < 1");
  c10::intrusive_ptr<c10d::Store> store;
  Status created = CatchAll(
      [&]() -> Status {
        store = c10::make_intrusive<c10d::FileStore>(path, num_workers);
        store->setTimeout(timeout);
        return OkStatus();
      },
      [&](const std::string& what) { return Unavailable("file store " + path + ": " + what); });
  GEOTRAIN_RETURN_IF_ERROR(created);
  return store;
}

StatusOr<c10::intrusive_ptr<c10d::Store>> CreateTcpStore(const TcpStoreOptions& options,
                                                         uint16_t* bound_port) {
  const std::string name = "tcp store " + options.host + ":" + std::to_string(options.port);
  c10::intrusive_ptr<c10d::TCPStore> store;
  Status created = CatchAll(
      [&]() -> Status {
        c10d::TCPStoreOptions tcp_options;
        tcp_options.port = options.port;
        tcp_options.isServer = options.is_server;
        tcp_options.waitWorkers = false;  // ranks find each other through Gloo's own keys
        tcp_options.timeout = options.timeout;
        store = c10::make_intrusive<c10d::TCPStore>(options.host, tcp_options);
        return OkStatus();
      },
      [&](const std::string& what) { return Unavailable(name + ": " + what); });
  GEOTRAIN_RETURN_IF_ERROR(created);
  if (bound_port != nullptr) *bound_port = store->getPort();
  return c10::intrusive_ptr<c10d::Store>(std::move(store));
}

}  // namespace geotrain::net
