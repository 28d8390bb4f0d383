// powersgd: Optimus-CC's selective stage compression, data-parallel side — PowerSGD (rank r, error
// feedback, warm-started Q) on the gradients of the first K pipeline stages, a plain all-reduce
// on the later stages, for 1-D tensors and during the warm-up.
//
// One compressed step, with every matrix of the stage handled together so that the whole sync
// costs two all-reduces (two WAN round trips) however many tensors the stage has:
//   M = g + E;  P = M Q                      for every matrix
//   all-reduce [P of every matrix | the uncompressed gradients]   (sum; P's scale does not matter)
//   orthonormalise P;  Q = Mᵀ P               for every matrix
//   all-reduce [Q of every matrix], / D       (mean: P Qᵀ = P Pᵀ mean(M))
//   E = M - P Qᵀ;  g = P Qᵀ                   every replica ends with the same g, P and Q
// E is the one buffer of its size: M is formed in it and the residual overwrites it in place.
// Q starts from InitQ of a seed shared by the replicas and is kept for the next step.
//
// A matrix that PowerSGD cannot shrink (r (n + m) >= n m, e.g. a thin [2, 768] weight) is
// all-reduced as it is: fewer bytes and exact.
#include <cmath>
#include <cstring>

#include "common/hash_random.h"
#include "compression/powersgd.h"
#include "runtime/dp_modes.h"
#include "runtime/dp_replicas.h"

namespace geotrain::runtime {
namespace {

namespace cz = compression;

constexpr char kMode[] = "powersgd";

// A gradient compressed with PowerSGD, viewed as [rows, cols] (cols = its last dimension).
struct Matrix {
  models::NamedParameter parameter;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t rank = 0;
  uint64_t seed = 0;
  int64_t p_offset = 0;      // of its P in the first all-reduce
  int64_t q_offset = 0;      // of its Q in the second
  std::vector<float> error;  // E [rows, cols]
  std::vector<float> q;      // [cols, rank]

  void Reset() {
    error.assign(rows * cols, 0.0f);
    q.resize(cols * rank);
    cz::InitQ(seed, cols, rank, q.data());
  }
};

bool AllFinite(const float* values, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(values[i])) return false;
  }
  return true;
}

class PowerSgdSync final : public DataParallelSync {
 public:
  PowerSgdSync(const DataParallelSettings& settings, const DataParallelContext& context)
      : replicas_(context) {
    const bool compressed_stage =
        settings.compressed_stages < 0 || context.stage < settings.compressed_stages;
    int64_t p_size = 0, q_size = 0;
    for (const ParameterBucket& bucket : replicas_.buckets) {
      for (const models::NamedParameter& p : bucket.parameters()) {
        Matrix matrix;
        if (p.tensor.dim() >= 2) {
          matrix.cols = p.tensor.size(-1);
          matrix.rows = matrix.cols == 0 ? 0 : p.tensor.numel() / matrix.cols;
          matrix.rank = cz::EffectiveRank(settings.powersgd_rank, matrix.rows, matrix.cols);
        }
        if (!compressed_stage ||
            matrix.rank * (matrix.rows + matrix.cols) >= matrix.rows * matrix.cols) {
          plain_.push_back(p.tensor);
          plain_elements_ += p.tensor.numel();
          continue;
        }
        matrix.parameter = p;
        matrix.seed = HashCounter(context.seed, matrices_.size(), 0);
        matrix.p_offset = p_size;
        matrix.q_offset = q_size;
        p_size += matrix.rows * matrix.rank;
        q_size += matrix.cols * matrix.rank;
        matrix.Reset();
        matrices_.push_back(std::move(matrix));
      }
    }
    p_elements_ = p_size;
    q_all_.resize(q_size);
  }

  Status BeforeClip(int64_t step, bool compress) override {
    if (!compress || matrices_.empty()) return replicas_.AverageGradients(kMode, step);
    const std::string context = StepContext(kMode, step);
    return CatchTorchErrors(context, [&] { return CompressedAverage(context); });
  }
  Status AfterMoments(int64_t, bool) override { return OkStatus(); }
  Status AfterUpdate(int64_t, bool) override { return OkStatus(); }
  Status Flush() override { return OkStatus(); }

  std::map<std::string, at::Tensor> StateTensors() override {
    std::map<std::string, at::Tensor> state;
    for (const Matrix& m : matrices_) {
      state[ErrorName(m)] = ToTensor(m.error, {m.rows, m.cols});
      state[QName(m)] = ToTensor(m.q, {m.cols, m.rank});
    }
    return state;
  }

  Status LoadStateTensors(const std::map<std::string, at::Tensor>& state) override {
    return CatchTorchErrors(std::string(kMode) + " state", [&]() -> Status {
      std::vector<at::Tensor> errors, qs;  // checked first: a failed load changes nothing
      for (const Matrix& m : matrices_) {
        GEOTRAIN_ASSIGN_OR_RETURN(at::Tensor e, Find(state, ErrorName(m), {m.rows, m.cols}));
        GEOTRAIN_ASSIGN_OR_RETURN(at::Tensor q, Find(state, QName(m), {m.cols, m.rank}));
        errors.push_back(e);
        qs.push_back(q);
      }
      for (size_t i = 0; i < matrices_.size(); ++i) {
        Matrix& m = matrices_[i];
        std::memcpy(m.error.data(), errors[i].data_ptr<float>(), m.error.size() * sizeof(float));
        std::memcpy(m.q.data(), qs[i].data_ptr<float>(), m.q.size() * sizeof(float));
      }
      return OkStatus();
    });
  }

  TrafficCount traffic() const override { return replicas_.meter.totals(); }

 private:
  static std::string ErrorName(const Matrix& m) {
    return "powersgd." + m.parameter.name + ".error";
  }
  static std::string QName(const Matrix& m) { return "powersgd." + m.parameter.name + ".q"; }

  static at::Tensor ToTensor(const std::vector<float>& values, std::vector<int64_t> shape) {
    return at::from_blob(const_cast<float*>(values.data()), shape, at::kFloat).clone();
  }

  // The float32 CPU contiguous tensor `name` of `state`, which must have `shape`.
  static StatusOr<at::Tensor> Find(const std::map<std::string, at::Tensor>& state,
                                   const std::string& name, std::vector<int64_t> shape) {
    auto it = state.find(name);
    if (it == state.end())
      return InvalidArgument(std::string(kMode) + " state: " + name + ": missing");
    if (it->second.sizes() != at::IntArrayRef(shape)) {
      return InvalidArgument(std::string(kMode) + " state: " + name + ": shape " +
                             c10::str(it->second.sizes()) + " where " +
                             c10::str(at::IntArrayRef(shape)) + " was expected");
    }
    return it->second.to(at::kCPU, at::kFloat).contiguous();
  }

  Status CompressedAverage(const std::string& context) {
    const int replicas = replicas_.size();
    for (const ParameterBucket& bucket : replicas_.buckets) bucket.DefineMissingGrads();
    reduce_.resize(p_elements_ + plain_elements_);
    for (Matrix& m : matrices_) {
      const at::Tensor g = m.parameter.tensor.grad().to(at::kCPU, at::kFloat).contiguous();
      const float* gp = g.data_ptr<float>();
      for (size_t i = 0; i < m.error.size(); ++i) m.error[i] += gp[i];  // M = g + E
      cz::ComputeP(m.error.data(), m.q.data(), m.rows, m.cols, m.rank, &reduce_[m.p_offset]);
    }
    if (plain_elements_ > 0) {
      const at::Tensor plain = FlattenToCpu(Grads(plain_));
      std::memcpy(&reduce_[p_elements_], plain.data_ptr<float>(), plain_elements_ * sizeof(float));
    }

    Status exchanged = replicas_.meter.Measure(
        RingAllReduceBytes(replicas_.elements(), replicas), [&]() -> Status {
          GEOTRAIN_RETURN_IF_ERROR(replicas_.transport->AllReduceSum(reduce_, replicas_.timeout)
                                       .WithContext("all-reduce of P"));
          // Every replica sees the same sums, so all of them take this branch together.
          if (!AllFinite(reduce_.data(), p_elements_)) return NonFinite();
          for (Matrix& m : matrices_) {
            cz::Orthonormalize(&reduce_[m.p_offset], m.rows, m.rank);
            cz::ComputeQ(m.error.data(), &reduce_[m.p_offset], m.rows, m.cols, m.rank,
                         &q_all_[m.q_offset]);
          }
          return replicas_.transport->AllReduceSum(q_all_, replicas_.timeout)
              .WithContext("all-reduce of Q");
        });
    GEOTRAIN_RETURN_IF_ERROR(exchanged.WithContext(context));
    for (float& q : q_all_) q /= static_cast<float>(replicas);
    if (!AllFinite(q_all_.data(), q_all_.size())) return NonFinite().WithContext(context);

    for (Matrix& m : matrices_) {
      const float* p = &reduce_[m.p_offset];
      std::memcpy(m.q.data(), &q_all_[m.q_offset], m.q.size() * sizeof(float));
      at::Tensor reconstructed = at::empty({m.rows, m.cols}, at::kFloat);
      cz::Reconstruct(p, m.q.data(), m.rows, m.cols, m.rank, reconstructed.data_ptr<float>());
      cz::Residual(m.error.data(), p, m.q.data(), m.rows, m.cols, m.rank, m.error.data());
      m.parameter.tensor.grad().copy_(reconstructed.view(m.parameter.tensor.sizes()));
    }
    if (plain_elements_ > 0) {
      at::Tensor plain = at::from_blob(&reduce_[p_elements_], {plain_elements_}, at::kFloat);
      CopyFromFlat(plain.div(replicas), Grads(plain_));
    }
    return OkStatus();
  }

  // A replica's gradient (or M = g + E) was not finite, or overflowed a product: the error
  // buffers would carry it into every later step, so all replicas drop them and restart Q.
  Status NonFinite() {
    for (Matrix& m : matrices_) m.Reset();
    return InvalidArgument(
        "a replica's gradient is not finite or overflowed; error feedback and Q were reset");
  }

  static std::vector<at::Tensor> Grads(const std::vector<at::Tensor>& parameters) {
    std::vector<at::Tensor> grads;
    grads.reserve(parameters.size());
    for (const at::Tensor& p : parameters) grads.push_back(p.grad());
    return grads;
  }

  ReplicaGroup replicas_;
  std::vector<Matrix> matrices_;
  std::vector<at::Tensor> plain_;  // parameters whose gradients are all-reduced as they are
  int64_t plain_elements_ = 0;
  int64_t p_elements_ = 0;
  std::vector<float> reduce_;  // [P of every matrix | plain gradients]
  std::vector<float> q_all_;   // [Q of every matrix]
};

}  // namespace

StatusOr<std::unique_ptr<DataParallelSync>> NewPowerSgdSync(const DataParallelSettings& settings,
                                                            const DataParallelContext& context) {
  if (settings.powersgd_rank <= 0) {
    return InvalidArgument("powersgd_rank: " + std::to_string(settings.powersgd_rank) +
                           " is not positive");
  }
  return std::unique_ptr<DataParallelSync>(new PowerSgdSync(settings, context));
}

}  // namespace geotrain::runtime
