// cocktail: CocktailSGD — the replicas exchange model differences, not gradients.
//
// Each replica steps its optimizer on its own gradient and keeps a float32 "global" copy of every
// bucket, equal on all replicas. After the update of step t it sends Δ = local - global through
// the sharded exchange (dp_sharded_exchange.h) with cocktail codecs (random subset, top-k, 4-bit
// values); the exchange returns D, the decoded average of every replica's compressed Δ, and
// C, what this replica's own frames decode to. Then
//     global += D;    local += D - C
// so every global copy moves by the same D, and the part of Δ this replica did not send stays in
// local - global for later steps (the implicit worker error feedback of the paper). The owner of
// a chunk keeps the server error inside its server codec.
//
// Overlap: the exchange of step t runs in a background thread on a snapshot of Δ taken in
// AfterUpdate(t), while the runtime computes step t+1; AfterUpdate(t+1) (or Flush) waits for it
// and applies it before snapshotting its own Δ. A failed exchange leaves the copies out of step
// with the other replicas, so its error sticks: every later hook returns it.
//
// During the warm-up the gradients are all-reduced and global follows local after each update.
//
// Adaptive compression (AdjustCodec) changes quant_bits / topk_ratio of every codec in place,
// keeping the server residuals, and only in AfterUpdate between the exchange it finishes and the
// one it starts: the exchange thread owns the codecs while it runs, and every replica starts
// the same exchange with the same settings. random_ratio and the seeds never change, so the
// replicas keep sampling the same coordinates.
#include <atomic>
#include <optional>
#include <system_error>
#include <thread>

#include "common/hash_random.h"
#include "compression/cocktail_codec.h"
#include "runtime/dp_modes.h"
#include "runtime/dp_replicas.h"
#include "runtime/dp_sharded_exchange.h"

namespace geotrain::runtime {
namespace {

namespace cz = compression;

constexpr char kMode[] = "cocktail";

class CocktailSync final : public DataParallelSync {
 public:
  CocktailSync(const DataParallelContext& context, bool overlap, std::vector<at::Tensor> global,
               std::vector<cz::CocktailCodec*> servers, std::vector<ShardCodecs> codecs)
      : replicas_(context),
        overlap_(overlap),
        global_(std::move(global)),
        servers_(std::move(servers)),
        codecs_(AllCodecs(codecs)),
        exchange_(context.group, context.timeout, BucketElements(replicas_), std::move(codecs),
                  ShardedExchangeOptions{}) {}

  ~CocktailSync() override {
    if (worker_.joinable()) worker_.join();
  }

  Status BeforeClip(int64_t step, bool compress) override {
    if (compress) return BackgroundFailure();
    GEOTRAIN_RETURN_IF_ERROR(Finish());
    return replicas_.AverageGradients(kMode, step);
  }

  Status AfterMoments(int64_t, bool compress) override {
    return compress ? BackgroundFailure() : Finish();
  }

  Status AfterUpdate(int64_t step, bool compress) override {
    GEOTRAIN_RETURN_IF_ERROR(Finish());
    const std::string context = StepContext(kMode, step);
    GEOTRAIN_RETURN_IF_ERROR(ApplyAdjustment().WithContext(context));
    if (!compress) {
      return CatchTorchErrors(context, [&] {
        for (size_t b = 0; b < global_.size(); ++b)
          global_[b] = replicas_.buckets[b].GatherParams();
        return OkStatus();
      });
    }
    std::vector<at::Tensor> deltas;
    GEOTRAIN_RETURN_IF_ERROR(CatchTorchErrors(context, [&] {
      for (size_t b = 0; b < global_.size(); ++b) {
        deltas.push_back(replicas_.buckets[b].GatherParams().sub_(global_[b]));
      }
      return OkStatus();
    }));
    exchange_step_ = step;
    pending_ = true;
    if (!overlap_) {
      RunExchange(step, deltas);
      return Finish();
    }
    done_ = false;
    try {
      worker_ = std::thread([this, step, deltas = std::move(deltas)] {
        RunExchange(step, deltas);
        done_ = true;
      });
    } catch (const std::system_error& e) {
      pending_ = false;
      failed_ = Internal(context + ": cannot start the exchange thread: " + e.what());
    }
    return failed_;
  }

  Status Flush() override { return Finish(); }

  std::map<std::string, at::Tensor> StateTensors() override {
    // The server residuals belong to the exchange thread while it runs. A failure is sticky, so
    // the next hook reports it.
    static_cast<void>(Finish());
    std::map<std::string, at::Tensor> state;
    const int own = replicas_.rank();
    for (size_t b = 0; b < global_.size(); ++b) {
      state[GlobalName(b)] = global_[b].clone();
      const ChunkRange range = exchange_.chunk(b, own);
      const Span<const float> residual = servers_[b]->residual();
      state[ServerName(b, own)] =
          residual.empty()
              ? at::zeros({range.size}, at::kFloat)
              : at::from_blob(const_cast<float*>(residual.data()), {range.size}, at::kFloat)
                    .clone();
    }
    return state;
  }

  Status LoadStateTensors(const std::map<std::string, at::Tensor>& state) override {
    if (pending_) {
      return FailedPrecondition("cocktail state: an exchange is not applied yet (Flush first)");
    }
    return CatchTorchErrors("cocktail state", [&]() -> Status {
      const int own = replicas_.rank();
      std::vector<at::Tensor> global, server;  // checked first: a failed load changes nothing
      for (size_t b = 0; b < global_.size(); ++b) {
        GEOTRAIN_ASSIGN_OR_RETURN(at::Tensor g,
                                  Find(state, GlobalName(b), replicas_.buckets[b].elements()));
        GEOTRAIN_ASSIGN_OR_RETURN(at::Tensor s,
                                  Find(state, ServerName(b, own), exchange_.chunk(b, own).size));
        global.push_back(g.clone());
        server.push_back(s);
      }
      for (size_t b = 0; b < global_.size(); ++b) {
        const Span<const float> values(server[b].data_ptr<float>(), server[b].numel());
        GEOTRAIN_RETURN_IF_ERROR(servers_[b]
                                     ->RestoreResidual({server[b].numel()}, values)
                                     .WithContext("cocktail state: " + ServerName(b, own)));
      }
      global_ = std::move(global);
      return OkStatus();
    });
  }

  TrafficCount traffic() const override { return replicas_.meter.totals(); }

  Status AdjustCodec(uint32_t quant_bits, double topk_ratio) override {
    // Checked now, on a copy, so that a bad value is refused here rather than failing the
    // exchange it was meant for.
    Adjustment next = adjustment_.value_or(Adjustment{});
    if (quant_bits != 0) next.quant_bits = static_cast<int>(quant_bits);
    if (topk_ratio != 0) next.topk_ratio = topk_ratio;
    if (!codecs_.empty()) {
      GEOTRAIN_RETURN_IF_ERROR(Adjusted(codecs_.front()->config(), next).Validate());
    }
    adjustment_ = next;
    return OkStatus();
  }

 private:
  // The parameters AdjustCodec changes; 0 keeps the codec's.
  struct Adjustment {
    int quant_bits = 0;
    double topk_ratio = 0;
  };
  static cz::CodecConfig Adjusted(cz::CodecConfig config, const Adjustment& adjustment) {
    if (adjustment.quant_bits != 0) config.quant_bits = adjustment.quant_bits;
    if (adjustment.topk_ratio != 0) config.topk_ratio = adjustment.topk_ratio;
    return config;
  }
  static std::vector<cz::Codec*> AllCodecs(const std::vector<ShardCodecs>& codecs) {
    std::vector<cz::Codec*> all;
    for (const ShardCodecs& bucket : codecs) {
      for (const auto& worker : bucket.workers) all.push_back(worker.get());
      if (bucket.server) all.push_back(bucket.server.get());
    }
    return all;
  }
  // Reconfigures every codec with the pending adjustment. Only with no exchange in flight.
  Status ApplyAdjustment() {
    if (!adjustment_) return OkStatus();
    for (cz::Codec* codec : codecs_) {
      GEOTRAIN_RETURN_IF_ERROR(codec->Reconfigure(Adjusted(codec->config(), *adjustment_)));
    }
    adjustment_.reset();
    return OkStatus();
  }

  static std::vector<int64_t> BucketElements(const ReplicaGroup& replicas) {
    std::vector<int64_t> elements;
    for (const ParameterBucket& bucket : replicas.buckets) elements.push_back(bucket.elements());
    return elements;
  }
  static std::string GlobalName(size_t bucket) {
    return "cocktail.g" + std::to_string(bucket) + ".global";
  }
  static std::string ServerName(size_t bucket, int chunk) {
    return "cocktail.g" + std::to_string(bucket) + ".server" + std::to_string(chunk);
  }

  // The float32 CPU contiguous vector `name` of `state`, which must have `elements` values.
  static StatusOr<at::Tensor> Find(const std::map<std::string, at::Tensor>& state,
                                   const std::string& name, int64_t elements) {
    auto it = state.find(name);
    if (it == state.end()) return InvalidArgument("cocktail state: " + name + ": missing");
    if (it->second.sizes() != at::IntArrayRef{elements}) {
      return InvalidArgument("cocktail state: " + name + ": shape " + c10::str(it->second.sizes()) +
                             " where [" + std::to_string(elements) + "] was expected");
    }
    at::Tensor values = it->second.to(at::kCPU, at::kFloat).contiguous();
    if (!at::isfinite(values).all().item<bool>()) {
      return InvalidArgument("cocktail state: " + name + ": not finite");
    }
    return values;
  }

  // The exchange of `step`, in whichever thread runs it; its outcome waits in exchange_status_
  // and results_ for Finish.
  void RunExchange(int64_t step, const std::vector<at::Tensor>& deltas) {
    int64_t elements = 0;
    for (const at::Tensor& d : deltas) elements += d.numel();
    const std::string context = StepContext("cocktail exchange", step);
    exchange_status_ = CatchTorchErrors(context, [&] {
      return replicas_.meter
          .Measure(RingAllReduceBytes(elements, replicas_.size()),
                   [&] { return exchange_.Run(static_cast<uint64_t>(step), deltas, &results_); })
          .WithContext(context);
    });
  }

  // Waits for the exchange in flight, if any, and applies it: global += D; local += D - C.
  // Returns the sticky error of a failed exchange.
  Status Finish() {
    if (worker_.joinable()) worker_.join();
    if (!pending_) return failed_;
    pending_ = false;
    Status status = exchange_status_;
    if (status.ok()) {
      status = CatchTorchErrors(StepContext("cocktail apply", exchange_step_), [&] {
        for (size_t b = 0; b < global_.size(); ++b) {
          global_[b].add_(results_[b].average);
          replicas_.buckets[b].AddToParams(results_[b].average - results_[b].sent);
        }
        return OkStatus();
      });
    }
    results_.clear();
    if (!status.ok()) failed_ = status;
    return failed_;
  }

  // The error of a background exchange that has already failed, without waiting for one that
  // still runs: BeforeClip and AfterMoments must neither serialise the overlap nor apply a
  // result early (the optimizer's weight decay does not commute with it, and applying whenever
  // the thread happens to be done would make training depend on timing).
  Status BackgroundFailure() {
    if (worker_.joinable() && done_) {
      worker_.join();
      if (!exchange_status_.ok()) {
        pending_ = false;
        results_.clear();
        failed_ = exchange_status_;
      }
    }
    return failed_;
  }

  ReplicaGroup replicas_;
  const bool overlap_;
  std::vector<at::Tensor> global_;           // per bucket, CPU float32
  std::vector<cz::CocktailCodec*> servers_;  // per bucket; owned by exchange_
  std::vector<cz::Codec*> codecs_;           // every worker and server codec; owned by exchange_
  std::optional<Adjustment> adjustment_;     // AdjustCodec's, until the next exchange starts
  ShardedExchange exchange_;

  std::thread worker_;
  std::atomic<bool> done_{false};  // the exchange thread has finished
  bool pending_ = false;           // an exchange ran or runs, and is not applied yet
  int64_t exchange_step_ = 0;
  Status exchange_status_;                        // written by the exchange, read after join
  std::vector<ShardedExchange::Result> results_;  // likewise
  Status failed_;                                 // sticky
};

}  // namespace

StatusOr<std::unique_ptr<DataParallelSync>> NewCocktailSync(const DataParallelSettings& settings,
                                                            const DataParallelContext& context) {
  const int replicas = context.group->size();
  const int own = context.group->rank();
  std::vector<at::Tensor> global;
  GEOTRAIN_RETURN_IF_ERROR(CatchTorchErrors("global copy", [&] {
    for (const auto& group : context.groups)
      global.push_back(ParameterBucket(group).GatherParams());
    return OkStatus();
  }));
  std::vector<cz::CocktailCodec*> servers;
  std::vector<ShardCodecs> codecs(context.groups.size());
  for (size_t b = 0; b < context.groups.size(); ++b) {
    for (int chunk = 0; chunk < replicas; ++chunk) {
      cz::CodecConfig config = settings.codec;
      config.codec = cz::CodecId::kCocktail;
      // Workers and the owner of a chunk share the seed, so seeded masks sample the same
      // coordinates on every replica and the server frame covers all the workers sent.
      config.seed = HashCounter(context.seed, b, chunk);
      config.error_feedback = false;
      GEOTRAIN_ASSIGN_OR_RETURN(auto worker, cz::CocktailCodec::Create(config));
      codecs[b].workers.push_back(std::move(worker));
      if (chunk != own) continue;
      config.error_feedback = true;
      GEOTRAIN_ASSIGN_OR_RETURN(auto server, cz::CocktailCodec::Create(config));
      servers.push_back(server.get());
      codecs[b].server = std::move(server);
    }
  }
  return std::unique_ptr<DataParallelSync>(new CocktailSync(
      context, settings.overlap, std::move(global), std::move(servers), std::move(codecs)));
}

}  // namespace geotrain::runtime
