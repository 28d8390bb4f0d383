// The Gloo transport: Transport (transport.h) over LibTorch c10d ProcessGroupGloo on TCP, and the
// c10d stores its rendezvous goes through.
//
// One Gloo group per Transport: the ranks of a group all call CreateGlooTransport with the same
// group_name and store; it returns once every rank has connected to every other (a full mesh of
// TCP links, each on an OS-chosen port), or fails within connect_timeout. The coordinator's
// key-value store is a c10d::Store too; tests use CreateFileStore.
//
// Only point-to-point c10d calls are used; the collectives are built on them (see collectives.h
// for why). Every c10d/Gloo exception is caught in gloo_transport.cc and becomes a Status; all
// LibTorch version differences live there. This header needs only c10d's Store (a few seconds of
// compile time); ProcessGroupGloo and ATen stay inside the .cc.
//
// Side effect: creating a transport sets SIGPIPE to be ignored in the process (once, if it was
// at its default), because a write to a peer that just died would otherwise kill this process
// instead of failing the operation. Every network server does the same.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <torch/csrc/distributed/c10d/Store.hpp>  // complete type: callers hold and copy stores

#include "common/status.h"
#include "net/deadline.h"
#include "net/transport.h"

namespace geotrain::net {

struct GlooTransportOptions {
  int rank = 0;  // this process's rank in the group, 0 <= rank < size
  int size = 1;  // ranks in the group
  // Local address the TCP links bind to (each link on its own OS-chosen port); peers connect to it,
  // so workers set the address they advertise. Empty: whatever this host's name resolves to
  // (c10d's createDefaultDevice). The default suits tests on one machine.
  std::string bind_address = "127.0.0.1";
  // The group's name in the store; its keys live under "geotrain/net/<group_name>/". Gloo never
  // deletes its rendezvous keys, so the name must be new for every incarnation of a group in one
  // store: a rebuilt group uses another name (e.g. "dp0/attempt2").
  std::string group_name = "default";
  // How long rendezvous and connecting may take: every rank must call CreateGlooTransport within
  // it. (Also Gloo's own default operation timeout, which no geotrain operation relies on: each
  // passes its own.)
  Timeout connect_timeout = std::chrono::seconds(60);
  // When set, the connect ends by this deadline instead of connect_timeout from the call: one
  // budget for several groups joined one after another (a rank's connect phase), so that N groups
  // cannot take N timeouts. Errors quote its budget.
  std::optional<Deadline> connect_deadline;
  // Largest frame Recv accepts. A larger announced length fails with DATA_LOSS before anything is
  // allocated, so a corrupt length cannot exhaust memory.
  uint64_t max_frame_bytes = uint64_t{4} << 30;
  // The job's frame key (net/frame_sealer.h: kFrameKeyBytes raw bytes), or empty: frames in the
  // clear. With a key every byte the group moves is sealed with AES-256-GCM under a subkey
  // derived from it and group_name (so group_name must also be new per incarnation, which it
  // already is), and a frame forged, replayed, reordered or from another job fails with DATA_LOSS.
  std::string frame_key;
};

// Joins the group described by `options` through `store` (shared by all ranks; any number of
// groups may share one store under different names). Blocks until all ranks are connected, or
// until the connect deadline: then DEADLINE_EXCEEDED naming the step and the peer ("connecting
// to rank 1 at 10.0.0.2:41234", "waiting for rank 1 to publish its address in the store"). The
// connect runs on a thread of its own (gloo_transport.cc says why); one abandoned at the
// deadline ends by itself within about one more budget, holding `store` until then.
StatusOr<std::unique_ptr<Transport>> CreateGlooTransport(const GlooTransportOptions& options,
                                                         c10::intrusive_ptr<c10d::Store> store);

// A c10d::FileStore at `path` (created if absent) for `num_workers` processes or threads on one
// machine or a shared file system; waits for keys at most `timeout` (c10d 1.13 counts that wait in
// whole seconds, so a rendezvous over a FileStore may overrun connect_timeout by up to 1 s). The
// last of them to destroy its store removes the file.
StatusOr<c10::intrusive_ptr<c10d::Store>> CreateFileStore(
    const std::string& path, int num_workers, Timeout timeout = std::chrono::seconds(60));

struct TcpStoreOptions {
  std::string host = "127.0.0.1";  // the server's address (clients connect to it)
  uint16_t port = 0;               // server: 0 lets the OS choose (read it from *bound_port)
  bool is_server = false;          // exactly one process runs the server
  Timeout timeout = std::chrono::seconds(60);  // connecting, and waiting for keys
};

// A c10d::TCPStore client or server. For a server, *bound_port (if given) receives the port.
StatusOr<c10::intrusive_ptr<c10d::Store>> CreateTcpStore(const TcpStoreOptions& options,
                                                         uint16_t* bound_port = nullptr);

}  // namespace geotrain::net
