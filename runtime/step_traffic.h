// StepTrafficMeter: what crossed each of one rank's links between two step reports, per peer,
// kind and direction, read from the transports' own LinkStats (net/link_stats.h).
//
// Each Measure() reads the four transports of the rank (stage_links.h) into a TrafficCounter
// (traffic_counter.h) and reports the difference from the previous reading, so whatever ran between
// two reports (an evaluation's activations, the data-parallel flush before a checkpoint, a
// background exchange) counts in the report that follows it. Group ranks become (stage, replica) as
// stage_links.h lays the groups out; the kind follows from the group and the direction:
//   upstream pair    sent: gradient       received: activation
//   downstream pair  sent: activation     received: gradient
//   data_parallel    data_parallel        embedding group  embedding
// The pair groups also carry the gradient-norm all-reduce (8-byte frames); it is folded into
// the pipeline kinds by direction, being negligible next to them.
//
// Raw bytes: the pipeline links' frames declare theirs (the sender's raw_bytes, the decoder's
// AddRawBytesReceived). Collectives move already-encoded bytes, so for the data-parallel and
// embedding groups the frame bytes are scaled by the sync's own raw/wire ratio over the period,
// which the caller passes as cumulative totals: raw/wire is then the real compression ratio. (A
// period with frames but no accounting, which a background exchange finishing after the
// snapshot causes, takes the cumulative ratio.)
//
// Not thread-safe: the runtime thread that owns the links calls it (LinkStats itself may be
// updated by the links' send threads meanwhile).
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "compression/codec_config.h"
#include "net/link_stats.h"
#include "net/transport.h"
#include "runtime/data_parallel_sync.h"
#include "runtime/stage_assignment.h"
#include "runtime/stage_links.h"
#include "runtime/step_result.h"
#include "runtime/traffic_counter.h"

namespace geotrain::runtime {

// Frames up to this size count as latency samples.
inline constexpr uint64_t kLatencySampleMaxBytes = 4096;

// Bits per value a pipeline codec puts on the wire: the code width of the quantisers
// (fixpoint, delta, delta-lowbits, cocktail), the wire dtype of none (32 or 16); 0 where there
// is no single width (tah mixes two, topk / randk / powersgd send a selection or factors).
uint32_t CodecBits(const compression::CodecConfig& config);

// Bits per value of stage `stage`'s data-parallel sync once compression is on: 32 for plain
// all-reduce (and powersgd's uncompressed stages), the quantiser's bits for cocktail and
// quantized-momentum, 0 for powersgd's low-rank factors.
uint32_t DataParallelBits(const DataParallelSettings& settings, int stage);

// What the runtime knows of the period a Measure() closes, beyond the transports' counters.
struct TrafficPeriod {
  uint32_t activation_bits = 32;
  uint32_t gradient_bits = 32;
  // The received pipeline frames' bits when they may differ from the sent ones (adaptive
  // compression changes each rank's sends on their own); unset: the sent kind's bits.
  std::optional<uint32_t> received_activation_bits;
  std::optional<uint32_t> received_gradient_bits;
  uint32_t data_parallel_bits = 32;
  uint32_t embedding_bits = 32;
  double activation_relative_error = 0;  // mean over the activation frames this rank sent
  double gradient_relative_error = 0;    // mean over the gradient frames this rank sent
  // Cumulative raw (float32-equivalent) and wire bytes by the syncs' own accounting; their
  // ratio over the period scales the collectives' frame bytes.
  TrafficCount data_parallel;
  TrafficCount embedding;
};

class StepTrafficMeter {
 public:
  // Reads the transports in `links` (which must outlive the meter) as the rank `assignment`
  // describes sees them; their counters as they are now are the first baseline (the syncs'
  // totals start at zero).
  StepTrafficMeter(const StageAssignment& assignment, const StageLinks& links);

  // Replaces *traffic by one entry per (peer, kind, direction) with wire bytes since the previous
  // call, in link order (upstream, downstream, data-parallel, embedding) then peer rank, sent
  // before received.
  void Measure(const TrafficPeriod& period, std::vector<LinkTraffic>* traffic);

 private:
  enum class Group { kUpstream, kDownstream, kDataParallel, kEmbedding };
  struct Link {
    Group group;
    net::Transport* transport;
    std::vector<std::pair<int, int>> peers;  // (stage, replica) by group rank
  };

  void Add(Group group, net::Transport* transport, const StageAssignment& assignment);
  // The key of group rank `peer`'s frames in direction `sent` (see the table above).
  TrafficKey KeyOf(const Link& link, int peer, bool sent) const;
  // Sets each peer's counters of `link` (a snapshot of its transport) into *counter.
  void Read(const Link& link, const std::vector<net::LinkCounters>& counters,
            TrafficCounter* counter) const;

  std::vector<Link> links_;
  TrafficCounter previous_;  // the transports and the syncs at the previous Measure
};

}  // namespace geotrain::runtime
