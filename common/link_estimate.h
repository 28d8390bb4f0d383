// LinkEstimate: the throughput estimate of one directed link (this worker to or from one peer),
// a bias-corrected exponentially weighted mean of its samples, as Adam corrects its moments:
//
//   m_t = b m_{t-1} + (1 - b) x_t,   estimate_t = m_t / (1 - b^t)
//
// Without the correction a fresh estimate would start near 0 and crawl up over ~1/(1-b) samples;
// with it the first sample is returned exactly and a constant series stays constant, while old
// samples still fade by b per new one (b = 0.8: a sample's weight halves in about 3 samples).
// It is kept as the equal ratio S_t / W_t with S_t = b S_{t-1} + x_t and W_t = b W_{t-1} + 1
// (both sides of Adam's form times 1 / (1 - b)), so that "exactly" holds in floating point too.
//
// Samples come from two places: passive ones, the bytes and seconds a step's transfers to or
// from a peer took (PassiveThroughputSample turns them into one sample, or none when the step
// moved too little to measure bandwidth), and, with issue 7, active probes. Both feed the same
// estimator. Values are bytes per second, but nothing here depends on the unit.
//
// A plain value type; not thread-safe (the owner guards it).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/status.h"

namespace geotrain {

// Below this many bytes a step's transfers to one peer measure latency (per-frame overheads,
// round trips), not bandwidth, and are no throughput sample.
constexpr uint64_t kMinPassiveSampleBytes = 64 * 1024;

// bytes / seconds when bytes >= kMinPassiveSampleBytes and seconds is positive and finite.
std::optional<double> PassiveThroughputSample(uint64_t bytes, double seconds);

class LinkEstimate {
 public:
  static constexpr double kDefaultDecay = 0.8;

  // `decay` is b; it must lie in [0, 1) (CheckDecay says why not, for values read from input).
  explicit LinkEstimate(double decay = kDefaultDecay);

  // "NAME: 1.5 is outside [0, 1)" or OK; `name` is the field or flag the value came from.
  static Status CheckDecay(const std::string& name, double decay);

  // Adds one sample; a negative or non-finite one is ignored (false).
  bool Add(double sample);

  // The bias-corrected mean; 0 before the first sample.
  double value() const;
  // Samples added so far.
  uint64_t samples() const { return samples_; }

 private:
  double decay_;
  double weighted_sum_ = 0;  // S_t = sum of b^(t-i) x_i
  double weight_ = 0;        // W_t = sum of b^(t-i) = (1 - b^t) / (1 - b)
  uint64_t samples_ = 0;
};

}  // namespace geotrain
