// quantized-momentum: AC-SGD's "end-to-end" data-parallel option — the replicas average Adam's
// first moment, not the gradient, and every value of it travels quantized.
//
// Each replica updates its moments from its own gradient (AdamW::UpdateMoments); AfterMoments then
// averages the first moments through the sharded exchange (dp_sharded_exchange.h) with fixpoint
// codecs and explicit error feedback on both sides: a worker sends m + e_w and keeps what did not
// arrive in e_w, a chunk's owner does the same with e_s on the average it sends back. Every
// replica replaces its first moments with the decoded average, so they agree bit for bit; the
// second moments stay local, as in the original.
//
// The codec: settings.codec when it names fixpoint (bits, rounding; its tile when it is in
// per-tile mode), else AC-SGD's default of 8 bits with one scale per 512 values. A bucket is a
// flat vector of many tensors' moments, in which per-channel or per-row scales mean nothing, so
// the scales are always per tile.
//
// The optimizer's first parameters must be the groups' parameters, in group order: its moments
// are matched to the buckets by position (AdamW does not expose its parameters). Parameters
// after those (a tied embedding synced by the fused embedding all-reduce) are left alone.
#include "common/hash_random.h"
#include "runtime/dp_modes.h"
#include "runtime/dp_replicas.h"
#include "runtime/dp_sharded_exchange.h"

namespace geotrain::runtime {
namespace {

namespace cz = compression;

constexpr char kMode[] = "quantized-momentum";
constexpr int kDefaultBits = 8;
constexpr int kDefaultTile = 512;

class QuantizedMomentumSync final : public DataParallelSync {
 public:
  QuantizedMomentumSync(const DataParallelContext& context, std::vector<int64_t> elements,
                        std::vector<ShardCodecs> codecs)
      : replicas_(context),
        optimizer_(context.optimizer),
        exchange_(context.group, context.timeout, std::move(elements), std::move(codecs),
                  ShardedExchangeOptions{true, true}) {}

  Status BeforeClip(int64_t step, bool compress) override {
    return compress ? OkStatus() : replicas_.AverageGradients(kMode, step);
  }

  Status AfterMoments(int64_t step, bool compress) override {
    if (!compress) return OkStatus();
    const std::string context = StepContext(kMode, step);
    return CatchTorchErrors(context, [&]() -> Status {
      std::vector<std::vector<at::Tensor>> moments = MomentsByBucket();
      std::vector<at::Tensor> inputs;
      for (const auto& bucket : moments) inputs.push_back(FlattenToCpu(bucket));
      std::vector<ShardedExchange::Result> results;
      GEOTRAIN_RETURN_IF_ERROR(
          replicas_.meter
              .Measure(RingAllReduceBytes(replicas_.elements(), replicas_.size()),
                       [&] { return exchange_.Run(static_cast<uint64_t>(step), inputs, &results); })
              .WithContext(context));
      for (size_t b = 0; b < moments.size(); ++b) CopyFromFlat(results[b].average, moments[b]);
      return OkStatus();
    });
  }

  Status AfterUpdate(int64_t, bool) override { return OkStatus(); }
  Status Flush() override { return OkStatus(); }

  std::map<std::string, at::Tensor> StateTensors() override {
    std::map<std::string, at::Tensor> state;
    for (size_t b = 0; b < replicas_.buckets.size(); ++b) {
      state[WorkerName(b)] = ToTensor(exchange_.worker_error(b));
      state[ServerName(b)] = ToTensor(exchange_.server_error(b));
    }
    return state;
  }

  Status LoadStateTensors(const std::map<std::string, at::Tensor>& state) override {
    return CatchTorchErrors(std::string(kMode) + " state", [&]() -> Status {
      std::vector<at::Tensor> worker, server;  // checked first: a failed load changes nothing
      for (size_t b = 0; b < replicas_.buckets.size(); ++b) {
        GEOTRAIN_ASSIGN_OR_RETURN(at::Tensor w,
                                  Find(state, WorkerName(b), exchange_.worker_error(b).size()));
        GEOTRAIN_ASSIGN_OR_RETURN(at::Tensor s,
                                  Find(state, ServerName(b), exchange_.server_error(b).size()));
        worker.push_back(w);
        server.push_back(s);
      }
      for (size_t b = 0; b < replicas_.buckets.size(); ++b) {
        CopyInto(worker[b], &exchange_.worker_error(b));
        CopyInto(server[b], &exchange_.server_error(b));
      }
      return OkStatus();
    });
  }

  TrafficCount traffic() const override { return replicas_.meter.totals(); }

 private:
  std::string WorkerName(size_t bucket) const {
    return "qmomentum.g" + std::to_string(bucket) + ".worker";
  }
  std::string ServerName(size_t bucket) const {
    return "qmomentum.g" + std::to_string(bucket) + ".server" + std::to_string(replicas_.rank());
  }
  static at::Tensor ToTensor(const std::vector<float>& values) {
    return at::from_blob(const_cast<float*>(values.data()), {static_cast<int64_t>(values.size())},
                         at::kFloat)
        .clone();
  }
  static void CopyInto(const at::Tensor& flat, std::vector<float>* values) {
    const float* data = flat.data_ptr<float>();
    values->assign(data, data + flat.numel());
  }

  // The float32 CPU contiguous vector `name` of `state`, which must have `elements` values.
  static StatusOr<at::Tensor> Find(const std::map<std::string, at::Tensor>& state,
                                   const std::string& name, size_t elements) {
    auto it = state.find(name);
    if (it == state.end())
      return InvalidArgument(std::string(kMode) + " state: " + name + ": missing");
    if (it->second.sizes() != at::IntArrayRef{static_cast<int64_t>(elements)}) {
      return InvalidArgument(std::string(kMode) + " state: " + name + ": shape " +
                             c10::str(it->second.sizes()) + " where [" + std::to_string(elements) +
                             "] was expected");
    }
    return it->second.to(at::kCPU, at::kFloat).contiguous();
  }

  // The optimizer's first moments cut by bucket. Read anew each step: AdamW::LoadStateTensors
  // replaces the tensors.
  std::vector<std::vector<at::Tensor>> MomentsByBucket() const {
    const std::vector<at::Tensor>& all = optimizer_->first_moments();
    std::vector<std::vector<at::Tensor>> moments;
    size_t next = 0;
    for (const ParameterBucket& bucket : replicas_.buckets) {
      const size_t count = bucket.parameters().size();
      moments.emplace_back(all.begin() + next, all.begin() + next + count);
      next += count;
    }
    return moments;
  }

  ReplicaGroup replicas_;
  AdamW* optimizer_;
  ShardedExchange exchange_;
};

// The fixpoint configuration of the moments (see the file comment).
cz::CodecConfig MomentCodec(const cz::CodecConfig& requested) {
  cz::CodecConfig config;
  config.codec = cz::CodecId::kFixpoint;
  config.scale_mode = cz::ScaleMode::kPerTile;
  config.bits = kDefaultBits;
  config.tile_size = kDefaultTile;
  if (requested.codec == cz::CodecId::kFixpoint) {
    config.bits = requested.bits;
    config.rounding = requested.rounding;
    if (requested.scale_mode == cz::ScaleMode::kPerTile) config.tile_size = requested.tile_size;
  }
  return config;
}

// OK when the optimizer's leading first moments line up with the groups' parameters.
Status CheckMoments(const DataParallelContext& context) {
  if (context.optimizer == nullptr) return InvalidArgument("context.optimizer: missing");
  const std::vector<at::Tensor>& moments = context.optimizer->first_moments();
  size_t next = 0;
  for (const auto& group : context.groups) {
    for (const models::NamedParameter& p : group) {
      if (next >= moments.size() || moments[next].sizes() != p.tensor.sizes()) {
        return InvalidArgument(
            "context.optimizer: its parameters must be the groups' parameters "
            "in group order; moment " +
            std::to_string(next) + " does not match parameter '" + p.name + "'");
      }
      ++next;
    }
  }
  return OkStatus();
}

}  // namespace

StatusOr<std::unique_ptr<DataParallelSync>> NewQuantizedMomentumSync(
    const DataParallelSettings& settings, const DataParallelContext& context) {
  GEOTRAIN_RETURN_IF_ERROR(CheckMoments(context));
  const int replicas = context.group->size();
  const int own = context.group->rank();
  std::vector<int64_t> elements;
  std::vector<ShardCodecs> codecs(context.groups.size());
  for (size_t b = 0; b < context.groups.size(); ++b) {
    elements.push_back(ParameterBucket(context.groups[b]).elements());
    for (int chunk = 0; chunk < replicas; ++chunk) {
      cz::CodecConfig config = MomentCodec(settings.codec);
      config.seed = HashCounter(context.seed, b, chunk);  // stochastic rounding, if chosen
      GEOTRAIN_RETURN_IF_ERROR(config.Validate().WithContext("codec"));
      GEOTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<cz::Codec> worker, cz::MakeCodec(config));
      codecs[b].workers.push_back(std::move(worker));
      if (chunk != own) continue;
      GEOTRAIN_ASSIGN_OR_RETURN(codecs[b].server, cz::MakeCodec(config));
    }
  }
  return std::unique_ptr<DataParallelSync>(
      new QuantizedMomentumSync(context, std::move(elements), std::move(codecs)));
}

}  // namespace geotrain::runtime
