// StageAssignment: everything one rank needs to train its pipeline stage in its replica.
//
// A plain value: geotrain-run fills it from the seed projects' flags or a job YAML
// (run_config.h), the worker daemon from the coordinator's Assignment protobuf, tests by hand.
// The runtime never reads flags, files of settings or the network to learn what to do.
//
// Rank layout of a job with S stages and D replicas (global rank = dp_rank * S + stage):
//   stage s of replica r talks to stage s-1 and s+1 of replica r (pipeline links), and to
//   stage s of every replica (its data-parallel group). See stage_links.h for the groups.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/weighted_source_list.h"
#include "compression/codec_config.h"

namespace geotrain::runtime {

enum class ScheduleKind : uint8_t {
  kGPipe = 0,     // all forwards of a step, then all backwards
  kOneFOneB = 1,  // 1F1B: warm-up forwards, then alternate, then drain backwards
};
enum class LrDecay : uint8_t { kConstant = 0, kLinear = 1, kCosine = 2 };

// How the replicas of a stage agree on their parameters.
enum class DataParallelMode : uint8_t {
  kAllReduce = 0,          // average the gradients (float32 all-reduce)
  kPowerSgd = 1,           // Optimus-CC: PowerSGD gradients on the first K stages, all-reduce after
  kCocktail = 2,           // CocktailSGD: model differences, sharded compressed exchange
  kQuantizedMomentum = 3,  // AC-SGD end-to-end: Adam's first moment, 8-bit with error feedback
};

// Mixed precision of a stage's compute (model.autocast).
enum class Autocast : uint8_t {
  kOff = 0,   // everything in `dtype`
  kBf16 = 1,  // CUDA autocast to bfloat16: float32 parameters, matmuls in bfloat16
};

// What the last stage learns.
enum class Task : uint8_t {
  kCausalLm = 0,                // next-token prediction on packed text blocks
  kSequenceClassification = 1,  // one label per example (encoders; models::data::ClassificationSet)
};

const char* AutocastName(Autocast autocast);  // "off", "bf16"
// Refuses f16 by name: float16 autocast needs loss scaling, which geotrain does not have.
StatusOr<Autocast> ParseAutocast(const std::string& name);

// A parsed model.device: "cpu", "cuda" (device 0, the first CUDA_VISIBLE_DEVICES lists) or
// "cuda:N". LibTorch-free: the runtime turns it into an at::Device (runtime/stage_device.h).
struct DeviceName {
  bool cuda = false;
  int index = 0;  // the CUDA device; 0 for "cuda" and "cpu"
};
// InvalidArgument without a field prefix: "\"gpu\" is not cpu, cuda or cuda:N".
StatusOr<DeviceName> ParseDeviceName(const std::string& device);

const char* TaskName(Task task);  // "causal_lm", "sequence_classification"
StatusOr<Task> ParseTask(const std::string& name);
const char* ScheduleKindName(ScheduleKind kind);  // "gpipe", "1f1b"
StatusOr<ScheduleKind> ParseScheduleKind(const std::string& name);
const char* LrDecayName(LrDecay decay);  // "constant", "linear", "cosine"
StatusOr<LrDecay> ParseLrDecay(const std::string& name);
const char* DataParallelModeName(DataParallelMode mode);  // "allreduce", "powersgd", "cocktail",
                                                          // "quantized-momentum"
StatusOr<DataParallelMode> ParseDataParallelMode(const std::string& name);

struct OptimizerSettings {
  double lr = 1e-4;             // peak learning rate
  double min_lr = 0.0;          // where linear / cosine decay ends
  int64_t lr_warmup_steps = 0;  // linear ramp from 0 to lr over these steps
  LrDecay lr_decay = LrDecay::kLinear;
  double weight_decay = 0.01;  // decoupled (AdamW); not applied to 1-D tensors (norms, biases)
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double max_grad_norm = 1.0;  // global norm over every stage; 0 turns clipping off
};

struct DataSettings {
  // kSequenceClassification needs a classifier model (config.json num_labels / id2label).
  Task task = Task::kCausalLm;
  std::vector<WeightedSource> train;  // the mixture (path:weight)
  std::vector<WeightedSource> valid;  // evaluation sources; empty: no evaluation
  std::string tokenizer_dir;          // vocab.json + merges.txt or tokenizer.json; empty: model_dir
  std::string cache_dir;              // token cache; empty: none
  int64_t seq_length = 128;
  // Samples per epoch over all replicas; 0: every block of the mixture once.
  uint64_t samples_per_epoch = 0;
  // The fields of an example (jsonl keys; tsv column names, or numbers for a headerless file):
  // its text (also the document field of jsonl corpora for kCausalLm), the optional second text
  // of a pair, and its label. `labels` names string labels in class order (empty: integers).
  std::string text_field = "text";
  std::string pair_field;
  std::string label_field = "label";
  std::vector<std::string> labels;
  // Every replica keeps the samples of its first epoch (BatchOptions::stable_shards). Always on
  // with a delta forward codec, whose per-replica activation cache only pays when a sample comes
  // back to the same replica.
  bool stable_shards = false;
};

struct DataParallelSettings {
  DataParallelMode mode = DataParallelMode::kAllReduce;
  // kPowerSgd: rank, and the stages compressed (Optimus-CC selective stage compression: stages
  // < compressed_stages; -1: all).
  int powersgd_rank = 128;
  int compressed_stages = -1;
  // kCocktail: the codec (random_ratio, topk_ratio, quant_bits, quant_group, mask_mode, seed);
  // kQuantizedMomentum: the fixpoint codec of the momentum (bits, tile).
  compression::CodecConfig codec;
  // kCocktail: run the exchange of step t during step t+1's compute (one step stale).
  bool overlap = true;
};

// compression.adaptive: the coordinator picks each rank's bits per link and direction at run time
// (coordinator/adaptive_controller.h, docs/adaptive.md). The runtime itself only applies the
// ConfigChanges it is sent; these settings are the controller's.
struct AdaptiveCompressionSettings {
  // In the job YAML, `adaptive: true` or a mapping of these keys (on unless enabled: false).
  // When on, the job needs an adjustable send: stages > 1 with a forward or backward codec of
  // fixpoint/delta/delta-lowbits/tah, or replicas > 1 with data-parallel mode cocktail.
  bool enabled = false;
  // The range of bits it may choose (forward/backward bits, tah high_bits; cocktail
  // quant_bits), within 2..8. tah never goes below 3: its low units take bits - 1.
  int min_bits = 2;
  int max_bits = 8;
  // The error floor: never fewer bits than keep a pipeline link's estimated relative error
  // ||x - x̂|| / ||x|| at or below this.
  double max_relative_error = 0.3;
  // Lower the bits when a link's transfer would take more than hide_fraction of the compute it
  // hides behind; raise them only when the higher setting would take at most raise_fraction of
  // it (the gap between the two is the hysteresis that stops flapping).
  double hide_fraction = 0.8;
  double raise_fraction = 0.5;
  // At least this many steps between two changes of one link.
  int64_t interval_steps = 3;
  // A change takes effect this many steps after the newest step the coordinator heard of.
  int64_t announce_steps = 2;
  // cocktail: below min_bits the controller halves topk_ratio, down to this.
  double min_topk_ratio = 0.02;
};

struct CompressionSettings {
  compression::CodecConfig forward;   // activations sent downstream
  compression::CodecConfig backward;  // activation gradients sent upstream
  // Optimus-CC: compress only the backward sends of the pipeline's drain phase.
  bool backward_epilogue_only = false;
  // MCBench learned autoencoder on every pipeline link: hidden -> dim at the end of a stage,
  // dim -> hidden at the start of the next, trained with the model. 0: off. The encoded values
  // then travel through `forward` / `backward` like any activation.
  int autoencoder_dim = 0;
  DataParallelSettings data_parallel;
  // Everything goes uncompressed (codec none, plain all-reduce) for the first warmup_steps steps,
  // and for the first warmup_epochs epochs (AC-SGD fills its caches in the first epoch).
  int64_t warmup_steps = 0;
  int64_t warmup_epochs = 0;
  // Optimus-CC fused embedding synchronisation of tied embeddings (one all-reduce over the first
  // and last stages of every replica instead of two).
  bool fused_embedding_sync = true;
  // CocktailSGD mode: compress the tied embedding's first <-> last stage gradient sum with the
  // data-parallel codec and error feedback (embedding_sync.h). Off by default: in the pipeline
  // benchmark it cut that traffic 175x but cost 5% of final loss on gpt2-tiny, whose embedding is
  // 94% of its weights; Megatron and Optimus-CC keep this sum uncompressed.
  bool compress_embedding_sync = false;
  AdaptiveCompressionSettings adaptive;
};

struct TrainingSettings {
  int64_t micro_batch_size = 1;  // samples per micro-batch
  int64_t micro_batches = 1;     // micro-batches per step per replica
  int64_t total_steps = 100;
  // When > 0, overrides total_steps with epochs x the steps of one epoch (AC-SGD's --n-epochs).
  int64_t epochs = 0;
  ScheduleKind schedule = ScheduleKind::kGPipe;
  uint64_t seed = 42;            // data order, codec seeds, initial weights of new parts
  int64_t eval_every = 0;        // steps between evaluations; 0: never
  int64_t eval_batches = 4;      // micro-batches per evaluation
  int64_t checkpoint_every = 0;  // steps between checkpoints; 0: never
  int keep_checkpoints = 3;      // complete checkpoints kept; older ones are deleted
  std::string checkpoint_dir;    // shared by all ranks; empty: no checkpoints, no resume
  bool resume = true;            // continue from the newest complete checkpoint if there is one
  std::string profile_path;      // Chrome trace of this rank; empty: none
  double timeout_seconds = 300;  // every transport operation
};

// One thing wrong with a StageAssignment: the field, as its path in the struct
// ("compression.forward.bits"), and why ("9 is outside 2..8"). `also_reads` names the other fields
// the check compared it with, so that a caller who knows one of those to be wrong already (a job
// file whose key failed to parse) can drop the consequence instead of reporting it twice.
struct FieldProblem {
  std::string field;
  std::string reason;
  std::vector<std::string> also_reads;

  std::string ToString() const { return field + ": " + reason; }  // "field: reason"
};

// One InvalidArgument that lists `problems` (each "field: reason"): the problem itself when there
// is one, else "N problems:" followed by one indented problem per line. OK when there are none.
Status ProblemListStatus(const std::vector<std::string>& problems);

struct StageAssignment {
  std::string model_dir;  // Hugging Face directory: config.json + *.safetensors
  // When set and model_dir holds no *.safetensors: start from weights initialised from
  // config.json with this seed (models/init_random_model.h), identical on every rank.
  std::optional<uint64_t> model_init_seed;
  int stage = 0;
  int num_stages = 1;
  // Layers [first_layer, last_layer) of this stage; both -1: an even split (SplitLayersEvenly).
  int64_t first_layer = -1;
  int64_t last_layer = -1;
  int dp_rank = 0;
  int dp_size = 1;
  std::string dtype = "f32";  // parameters and compute: f32, bf16, f16
  // Where the stage computes (ParseDeviceName): "cpu", "cuda" or "cuda:N". A CUDA device needs a
  // CUDA build of LibTorch and a visible GPU; StageRuntime::Create refuses it otherwise.
  std::string device = "cpu";
  // kBf16: forward and loss under CUDA autocast to bfloat16, parameters, gradients and AdamW
  // state in float32 (needs dtype f32 and a CUDA device).
  Autocast autocast = Autocast::kOff;
  // The region of every rank of the job, indexed by global rank, as the placement knows them
  // (the worker daemon fills it from Assignment.placements; geotrain-run leaves it empty). Empty,
  // or "" for a rank: unknown. It only decides whether a stage's replicas may all-reduce their
  // gradients over NCCL (runtime/dp_backend.h), which needs them all known to share a region.
  std::vector<std::string> rank_regions;

  OptimizerSettings optimizer;
  DataSettings data;
  CompressionSettings compression;
  TrainingSettings training;

  int global_rank() const { return dp_rank * num_stages + stage; }
  int world_size() const { return dp_size * num_stages; }
  bool is_first_stage() const { return stage == 0; }
  bool is_last_stage() const { return stage == num_stages - 1; }

  // Every range or combination that is wrong, in the order of the struct; empty when valid.
  // A check that depends on a field already reported (stage against a non-positive num_stages)
  // is skipped, so each mistake is reported once.
  std::vector<FieldProblem> Problems() const;
  // The first of Problems() as InvalidArgument ("training.micro_batches: 0 is not positive"), or
  // OK.
  Status Validate() const;
};

}  // namespace geotrain::runtime
