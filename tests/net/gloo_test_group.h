// Gloo groups for tests: N ranks as threads of this process over loopback, rendezvous through a
// FileStore in a fresh temp directory, every link on an OS-chosen port.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "net/gloo_transport.h"
#include "tests/net/transport_test_util.h"

namespace geotrain::net::testing {

// A group name no other test of this process uses (Gloo's keys are never deleted).
inline std::string UniqueGroupName(const std::string& prefix) {
  static std::atomic<int> counter{0};
  return prefix + std::to_string(counter++);
}

// `adjust` may change each rank's options before it joins (limits, timeouts).
inline TransportGroup CreateGlooGroup(
    int size, const std::function<void(GlooTransportOptions*)>& adjust = nullptr) {
  TransportGroup group;
  auto dir = std::make_shared<TempDir>();
  group.resources = dir;
  const std::string store_path = dir->File("store");
  const std::string name = UniqueGroupName("test");
  std::vector<std::unique_ptr<Transport>> ranks(size);
  std::vector<Status> statuses(size);
  RunOnEveryRank(size, [&](int rank) {
    auto store = CreateFileStore(store_path, size, milliseconds(10000));
    if (!store.ok()) {
      statuses[rank] = store.status();
      return;
    }
    GlooTransportOptions options;
    options.rank = rank;
    options.size = size;
    options.group_name = name;
    options.connect_timeout = milliseconds(10000);
    if (adjust) adjust(&options);
    auto transport = CreateGlooTransport(options, *store);
    if (!transport.ok()) {
      statuses[rank] = transport.status();
      return;
    }
    ranks[rank] = std::move(transport).value();
  });
  for (const Status& status : statuses) {
    if (!status.ok()) {
      group.status = status;
      return group;
    }
  }
  group.ranks = std::move(ranks);
  return group;
}

}  // namespace geotrain::net::testing
