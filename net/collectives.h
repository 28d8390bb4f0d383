// Collective algorithms built from point-to-point exchange steps.
//
// Why not c10d's own collectives: in LibTorch 1.13 ProcessGroupGloo's collectives run on worker
// threads under the group-wide Gloo timeout and ignore a per-call one, so a stuck collective would
// outlive the caller's timeout (and block the group's destruction); they also cannot say which
// peer's bytes took how long. Built from steps, every wait honours the caller's deadline, every
// byte is charged to the link that carried it, and the fake and Gloo run the very same algorithm.
//
// All functions are pure algorithm: `run_step` moves the bytes (ExchangeTransport passes its
// counted, deadline-bound step). Every rank calls the same function with matching arguments.
// Errors are those of run_step; nothing here retries.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "common/span.h"
#include "common/status.h"
#include "net/peer_exchange.h"

namespace geotrain::net {

using RunStep = std::function<Status(const ExchangeStep&)>;

// Ring all-reduce (reduce-scatter, then all-gather): 2(size-1) steps, each rank sending about
// 2(size-1)/size of the buffer, the bandwidth-optimal volume, after one step that checks that all
// ranks have the same length (INVALID_ARGUMENT otherwise). Chunk c is summed in the fixed order
// c, c+1, ... of the ring, so every rank ends with bit-identical values whatever the timing.
Status RingAllReduceSum(int rank, int size, Span<float> values, const RunStep& run_step);

// Ring all-gather of buffers of any (unequal) sizes: size-1 steps, each forwarding one block with
// its length. Returns the blocks indexed by rank.
StatusOr<std::vector<std::vector<uint8_t>>> RingAllGather(int rank, int size,
                                                          Span<const uint8_t> mine,
                                                          const RunStep& run_step);

// Pairwise all-to-all: in step s every rank sends to rank+s and receives from rank-s, so all
// links are busy at once and no rank waits on a busy one. `to_each_rank` has `size` entries.
StatusOr<std::vector<std::vector<uint8_t>>> PairwiseAllToAll(
    int rank, int size, const std::vector<std::vector<uint8_t>>& to_each_rank,
    const RunStep& run_step);

// Dissemination barrier: ceil(log2 size) rounds of one-byte tokens to rank+2^k.
Status DisseminationBarrier(int rank, int size, const RunStep& run_step);

}  // namespace geotrain::net
