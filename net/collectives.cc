#include "net/collectives.h"

#include <cstring>
#include <string>

namespace geotrain::net {
namespace {

int Wrap(int x, int size) { return ((x % size) + size) % size; }

// The ring all-reduce's chunks: `size` contiguous ranges whose lengths differ by at most one.
struct Chunk {
  size_t begin = 0;
  size_t count = 0;
};

Chunk ChunkOf(size_t n, int size, int c) {
  const size_t base = n / size;
  const size_t extra = n % size;
  const size_t uc = static_cast<size_t>(c);
  return {uc * base + (uc < extra ? uc : extra), base + (uc < extra ? 1 : 0)};
}

Span<const uint8_t> BytesOf(Span<float> values, Chunk chunk) {
  return Span<const uint8_t>(reinterpret_cast<const uint8_t*>(values.data() + chunk.begin),
                             chunk.count * sizeof(float));
}

// One ring step with sizes both ends derive from the arguments; empty directions are skipped on
// both ends alike, so no zero-length message ever crosses the wire.
Status RingStep(int left, int right, Span<const uint8_t> send, size_t recv_bytes,
                std::vector<uint8_t>* recv, const RunStep& run_step) {
  ExchangeStep step;
  step.sizes_known = true;
  if (!send.empty()) {
    step.send_to = right;
    step.send = send;
  }
  if (recv_bytes > 0) {
    recv->resize(recv_bytes);
    step.recv_from = left;
    step.recv = recv;
  }
  if (step.send_to == kNoPeer && step.recv_from == kNoPeer) return OkStatus();
  return run_step(step);
}

}  // namespace

Status RingAllReduceSum(int rank, int size, Span<float> values, const RunStep& run_step) {
  if (size <= 1) return OkStatus();
  const int left = Wrap(rank - 1, size);
  const int right = Wrap(rank + 1, size);
  std::vector<uint8_t> incoming;
  std::vector<float> addend;

  // Every rank checks that its left neighbour has as many values as itself, so around the ring all
  // agree. The chunks below are sized from the length alone; a rank with another length would
  // send chunks of other sizes, which Gloo may take silently in part or refuse in its I/O thread.
  const uint64_t length = values.size();
  GEOTRAIN_RETURN_IF_ERROR(RingStep(
      left, right, Span<const uint8_t>(reinterpret_cast<const uint8_t*>(&length), sizeof(length)),
      sizeof(length), &incoming, run_step));
  uint64_t left_length = 0;
  std::memcpy(&left_length, incoming.data(), sizeof(left_length));
  if (left_length != length) {
    return InvalidArgument("rank " + std::to_string(left) + " has " + std::to_string(left_length) +
                           " values, this rank " + std::to_string(length));
  }

  // Reduce-scatter: after step s, the chunk received holds the sum over s+2 ranks; after size-1
  // steps rank r holds the complete sum of chunk r+1.
  for (int s = 0; s < size - 1; ++s) {
    const Chunk out = ChunkOf(values.size(), size, Wrap(rank - s, size));
    const Chunk in = ChunkOf(values.size(), size, Wrap(rank - s - 1, size));
    GEOTRAIN_RETURN_IF_ERROR(
        RingStep(left, right, BytesOf(values, out), in.count * sizeof(float), &incoming, run_step));
    if (in.count == 0) continue;
    addend.resize(in.count);
    std::memcpy(addend.data(), incoming.data(), in.count * sizeof(float));
    float* mine = values.data() + in.begin;
    for (size_t i = 0; i < in.count; ++i) mine[i] += addend[i];
  }
  // All-gather: pass the complete chunks around the ring.
  for (int s = 0; s < size - 1; ++s) {
    const Chunk out = ChunkOf(values.size(), size, Wrap(rank + 1 - s, size));
    const Chunk in = ChunkOf(values.size(), size, Wrap(rank - s, size));
    GEOTRAIN_RETURN_IF_ERROR(
        RingStep(left, right, BytesOf(values, out), in.count * sizeof(float), &incoming, run_step));
    if (in.count > 0) {
      std::memcpy(values.data() + in.begin, incoming.data(), in.count * sizeof(float));
    }
  }
  return OkStatus();
}

StatusOr<std::vector<std::vector<uint8_t>>> RingAllGather(int rank, int size,
                                                          Span<const uint8_t> mine,
                                                          const RunStep& run_step) {
  std::vector<std::vector<uint8_t>> blocks(size);
  blocks[rank].assign(mine.begin(), mine.end());
  const int left = Wrap(rank - 1, size);
  const int right = Wrap(rank + 1, size);
  // In step s rank r forwards the block it got in step s-1 (its own first) and receives the block
  // of rank r-s-1; lengths travel with the blocks.
  for (int s = 0; s < size - 1; ++s) {
    ExchangeStep step;
    step.send_to = right;
    step.send = blocks[Wrap(rank - s, size)];
    step.recv_from = left;
    step.recv = &blocks[Wrap(rank - s - 1, size)];
    GEOTRAIN_RETURN_IF_ERROR(run_step(step));
  }
  return blocks;
}

StatusOr<std::vector<std::vector<uint8_t>>> PairwiseAllToAll(
    int rank, int size, const std::vector<std::vector<uint8_t>>& to_each_rank,
    const RunStep& run_step) {
  std::vector<std::vector<uint8_t>> received(size);
  received[rank] = to_each_rank[rank];
  for (int s = 1; s < size; ++s) {
    ExchangeStep step;
    step.send_to = Wrap(rank + s, size);
    step.send = to_each_rank[step.send_to];
    step.recv_from = Wrap(rank - s, size);
    step.recv = &received[step.recv_from];
    GEOTRAIN_RETURN_IF_ERROR(run_step(step));
  }
  return received;
}

Status DisseminationBarrier(int rank, int size, const RunStep& run_step) {
  const uint8_t token = 1;
  std::vector<uint8_t> incoming(1);
  // After round k every rank has heard, directly or through others, from the 2^(k+1) ranks before
  // it; once 2^k >= size that is everyone.
  for (int distance = 1; distance < size; distance *= 2) {
    ExchangeStep step;
    step.sizes_known = true;
    step.send_to = Wrap(rank + distance, size);
    step.send = Span<const uint8_t>(&token, 1);
    step.recv_from = Wrap(rank - distance, size);
    step.recv = &incoming;
    GEOTRAIN_RETURN_IF_ERROR(run_step(step));
  }
  return OkStatus();
}

}  // namespace geotrain::net
