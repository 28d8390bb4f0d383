#include "runtime/checkpoint_store.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <filesystem>

#include "common/io/atomic_file_writer.h"
#include "common/io/file_contents.h"
#include "common/io/strict_json.h"
#include "common/span.h"
#include "models/data/content_fingerprint.h"
#include "models/safetensors.h"
#include "models/safetensors_writer.h"
#include "runtime/checkpoint_integer_tensors.h"

namespace geotrain::runtime {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr char kPartFormat[] = "geotrain-rank-checkpoint";
constexpr char kJobFormat[] = "geotrain-checkpoint-job";
constexpr char kMarkerFormat[] = "geotrain-checkpoint-marker";
constexpr int kFormatVersion = 1;
constexpr char kJobFile[] = "job.json";
constexpr char kStateFile[] = "state.json";
constexpr char kMarkerSuffix[] = ".done";
constexpr size_t kMaxSmallJsonBytes = 1 << 16;     // job.json, markers
constexpr size_t kMaxStateJsonBytes = 256u << 20;  // state.json with the caller's state

// The three tensor files of a part, with the RankCheckpoint member each holds.
struct TensorSection {
  const char* name;  // "model": file model.safetensors, integer_tensors.model
  std::map<std::string, at::Tensor> RankCheckpoint::*member;
};
constexpr TensorSection kSections[] = {{"model", &RankCheckpoint::model},
                                       {"optimizer", &RankCheckpoint::optimizer},
                                       {"extra", &RankCheckpoint::extra}};

std::string UniqueSuffix() {
  static std::atomic<uint64_t> counter{0};
  return std::to_string(::getpid()) + "-" + std::to_string(counter.fetch_add(1));
}

std::string StepName(int64_t step) {
  char name[32];
  std::snprintf(name, sizeof(name), "step-%08" PRId64, step);
  return name;
}

// "step-00000100" -> 100; anything else (a step being deleted, a stray file) -> nullopt.
std::optional<int64_t> ParseStepName(const std::string& name) {
  constexpr size_t kPrefix = 5;
  if (name.size() < kPrefix + 8 || name.size() > kPrefix + 18 ||
      name.compare(0, kPrefix, "step-")) {
    return std::nullopt;
  }
  int64_t step = 0;
  for (size_t i = kPrefix; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return std::nullopt;
    step = step * 10 + (name[i] - '0');
  }
  return step;
}

std::string RankName(int stage, int replica) {
  char name[48];
  std::snprintf(name, sizeof(name), "stage-%02d.replica-%02d", stage, replica);
  return name;
}

std::string Hex64(uint64_t value) {
  char text[17];
  std::snprintf(text, sizeof(text), "%016" PRIx64, value);
  return text;
}

// Size and fingerprint of a whole file (models/data/content_fingerprint.h).
struct FileDigest {
  uint64_t bytes = 0;
  uint64_t fingerprint = 0;
};
StatusOr<FileDigest> DigestFile(io::Env* env, const std::string& path) {
  GEOTRAIN_ASSIGN_OR_RETURN(auto mapped, env->MapFile(path));
  models::data::ContentFingerprint fingerprint;
  fingerprint.Update(mapped->bytes().data(), mapped->bytes().size());
  return FileDigest{mapped->bytes().size(), fingerprint.Finish()};
}

Status WriteJsonFile(io::Env* env, const std::string& path, const json& value) {
  std::string text;
  try {
    text = value.dump(1) + "\n";
  } catch (const json::exception& e) {
    return InvalidArgument(path + ": cannot serialise: " + e.what());
  }
  GEOTRAIN_ASSIGN_OR_RETURN(auto writer, io::AtomicFileWriter::Create(path, env));
  GEOTRAIN_RETURN_IF_ERROR(writer->Append(text.data(), text.size()));
  return writer->Commit();
}

StatusOr<json> ReadJsonFile(io::Env* env, const std::string& path, size_t max_bytes) {
  GEOTRAIN_ASSIGN_OR_RETURN(std::string text, io::ReadFileContents(path, max_bytes, env));
  GEOTRAIN_ASSIGN_OR_RETURN(json value, io::ParseStrictJson(text, path));
  if (!value.is_object()) {
    return DataLoss(path + ": expected an object, got " + io::JsonKindName(value));
  }
  return value;
}

// Field readers for the files we parse: errors are "<file>: <field>: <reason>".
StatusOr<const json*> Field(const json& object, const std::string& key, const std::string& file,
                            const std::string& path) {
  const auto it = object.find(key);
  if (it == object.end()) return DataLoss(file + ": " + path + ": missing");
  return &*it;
}
StatusOr<int64_t> IntField(const json& object, const std::string& key, const std::string& file,
                           const std::string& path) {
  GEOTRAIN_ASSIGN_OR_RETURN(const json* value, Field(object, key, file, path));
  if (!value->is_number_integer()) {
    return DataLoss(file + ": " + path + ": expected an integer, got " + io::JsonKindName(*value));
  }
  if (value->is_number_unsigned() && value->get<uint64_t>() > uint64_t{INT64_MAX}) {
    return DataLoss(file + ": " + path + ": out of range");
  }
  return value->get<int64_t>();
}
Status ExpectInt(const json& object, const std::string& key, int64_t expected,
                 const std::string& file) {
  GEOTRAIN_ASSIGN_OR_RETURN(int64_t value, IntField(object, key, file, key));
  if (value == expected) return OkStatus();
  return DataLoss(file + ": " + key + ": " + std::to_string(value) + ", expected " +
                  std::to_string(expected));
}
Status ExpectHeader(const json& object, const char* format, const std::string& file) {
  GEOTRAIN_ASSIGN_OR_RETURN(const json* value, Field(object, "format", file, "format"));
  if (!value->is_string() || value->get<std::string>() != format) {
    return DataLoss(file + ": format: expected \"" + format + "\", got " + value->dump());
  }
  return ExpectInt(object, "version", kFormatVersion, file);
}

// Adds a section's tensors to `writer` (floating point, as float32) or `integers` (JSON).
// `keep_alive` holds the float32 copies the writer borrows until it has written.
Status CollectTensors(const std::map<std::string, at::Tensor>& tensors, const std::string& section,
                      models::SafetensorsWriter* writer, std::vector<at::Tensor>* keep_alive,
                      json* integers) {
  for (const auto& [name, tensor] : tensors) {
    const std::string field = section + "[\"" + name + "\"]";
    if (!tensor.defined()) return InvalidArgument(field + ": undefined tensor");
    try {
      const at::ScalarType type = tensor.scalar_type();
      if (at::isFloatingType(type)) {
        at::Tensor values = tensor.detach().to(at::kCPU, at::kFloat).contiguous();
        keep_alive->push_back(values);
        GEOTRAIN_RETURN_IF_ERROR(
            writer
                ->AddFloat32(name, values.sizes().vec(),
                             Span<const float>(values.data_ptr<float>(), values.numel()))
                .WithContext(field));
        continue;
      }
      GEOTRAIN_ASSIGN_OR_RETURN((*integers)[name], IntegerTensorToJson(tensor, field));
    } catch (const c10::Error& e) {
      return InvalidArgument(field + ": " + e.what_without_backtrace());
    }
  }
  return OkStatus();
}

// A tensor file whose size and fingerprint state.json recorded, read back as float32 tensors.
StatusOr<std::map<std::string, at::Tensor>> ReadTensorFile(io::Env* env, const std::string& path,
                                                           const json& digest,
                                                           const std::string& state_file) {
  const std::string field = "files." + fs::path(path).filename().string();
  GEOTRAIN_ASSIGN_OR_RETURN(int64_t bytes, IntField(digest, "bytes", state_file, field + ".bytes"));
  GEOTRAIN_ASSIGN_OR_RETURN(const json* fingerprint,
                            Field(digest, "fingerprint", state_file, field + ".fingerprint"));
  GEOTRAIN_ASSIGN_OR_RETURN(FileDigest actual, DigestFile(env, path));
  if (static_cast<int64_t>(actual.bytes) != bytes) {
    return DataLoss(path + ": " + std::to_string(actual.bytes) + " bytes, " + state_file +
                    " records " + std::to_string(bytes) + " (truncated or replaced)");
  }
  if (!fingerprint->is_string() || fingerprint->get<std::string>() != Hex64(actual.fingerprint)) {
    return DataLoss(path + ": fingerprint " + Hex64(actual.fingerprint) + " differs from " +
                    fingerprint->dump() + " recorded in " + state_file + " (corrupt)");
  }
  GEOTRAIN_ASSIGN_OR_RETURN(auto file, models::SafetensorsFile::Open(path));
  std::map<std::string, at::Tensor> tensors;
  for (const std::string& name : file->TensorNames()) {
    GEOTRAIN_ASSIGN_OR_RETURN(models::TensorView view, file->Get(name));
    at::Tensor tensor = at::empty(view.shape, at::kFloat);
    GEOTRAIN_RETURN_IF_ERROR(
        models::ConvertToFloat32(view, Span<float>(tensor.data_ptr<float>(), tensor.numel()))
            .WithContext(path));
    tensors.emplace(name, std::move(tensor));
  }
  return tensors;
}

// Moves a finished temporary part directory onto `part`, atomically where the filesystem can.
Status MoveIntoPlace(io::Env* env, const std::string& temp, const std::string& part) {
  // One writer per rank, so nothing else creates `part` between this check and the rename.
  if (!env->IsDirectory(part)) return env->Rename(temp, part);
  // The part exists (a rewrite): swap the two, then delete the old one, now at `temp`.
  std::string old = temp;
  const Status exchanged = env->Exchange(temp, part);
  if (exchanged.code() == StatusCode::kFailedPrecondition) {
    // No RENAME_EXCHANGE here (e.g. NFS): the part is briefly absent, its marker still present,
    // so a concurrent Read fails rather than reading a mix.
    old = part + ".old-" + UniqueSuffix();
    GEOTRAIN_RETURN_IF_ERROR(env->Rename(part, old));
    GEOTRAIN_RETURN_IF_ERROR(env->Rename(temp, part));
  } else if (!exchanged.ok()) {
    return exchanged;
  }
  (void)env->RemoveAll(old);  // the new part is in place; a leftover is swept by the next write
  return OkStatus();
}

}  // namespace

StatusOr<CheckpointStore> CheckpointStore::Open(const std::string& dir, int stage, int num_stages,
                                                int dp_rank, int dp_size, io::Env* env) {
  if (dir.empty()) return InvalidArgument("checkpoint directory: empty");
  if (num_stages < 1 || dp_size < 1) {
    return InvalidArgument("checkpoint layout: " + std::to_string(num_stages) + " stages x " +
                           std::to_string(dp_size) + " replicas is not positive");
  }
  if (stage < 0 || stage >= num_stages || dp_rank < 0 || dp_rank >= dp_size) {
    return InvalidArgument("checkpoint rank: stage " + std::to_string(stage) + ", replica " +
                           std::to_string(dp_rank) + " is outside " + std::to_string(num_stages) +
                           " stages x " + std::to_string(dp_size) + " replicas");
  }
  GEOTRAIN_RETURN_IF_ERROR(env->CreateDirectories(dir).WithContext("checkpoint directory"));
  return CheckpointStore(env, dir, stage, num_stages, dp_rank, dp_size);
}

std::string CheckpointStore::StepDir(int64_t step) const { return dir_ + "/" + StepName(step); }
std::string CheckpointStore::PartName() const { return RankName(stage_, dp_rank_); }

StatusOr<std::vector<int64_t>> CheckpointStore::ListSteps() const {
  StatusOr<std::vector<std::string>> names = env_->ListDirectory(dir_);
  if (!names.ok()) return names.status().WithContext("checkpoints");
  std::vector<int64_t> steps;
  for (const std::string& name : *names) {
    if (auto step = ParseStepName(name)) steps.push_back(*step);
  }
  std::sort(steps.rbegin(), steps.rend());
  return steps;
}

std::vector<std::string> CheckpointStore::MissingMarkers(int64_t step) const {
  std::vector<std::string> missing;
  const std::string step_dir = StepDir(step);
  for (int replica = 0; replica < dp_size_; ++replica) {
    for (int stage = 0; stage < num_stages_; ++stage) {
      const std::string marker = RankName(stage, replica) + kMarkerSuffix;
      if (!env_->IsRegularFile(step_dir + "/" + marker)) missing.push_back(marker);
    }
  }
  return missing;
}

Status CheckpointStore::CheckJobFile(int64_t step, bool* present) const {
  const std::string path = StepDir(step) + "/" + kJobFile;
  StatusOr<json> job = ReadJsonFile(env_, path, kMaxSmallJsonBytes);
  *present = job.status().code() != StatusCode::kNotFound;
  if (!*present) return OkStatus();
  if (!job.ok()) return job.status();
  GEOTRAIN_RETURN_IF_ERROR(ExpectHeader(*job, kJobFormat, path));
  GEOTRAIN_ASSIGN_OR_RETURN(int64_t stages, IntField(*job, "num_stages", path, "num_stages"));
  GEOTRAIN_ASSIGN_OR_RETURN(int64_t replicas, IntField(*job, "dp_size", path, "dp_size"));
  if (stages != num_stages_ || replicas != dp_size_) {
    return FailedPrecondition(path + ": checkpoint of a job with " + std::to_string(stages) +
                              " stages x " + std::to_string(replicas) + " replicas; this job has " +
                              std::to_string(num_stages_) + " x " + std::to_string(dp_size_) +
                              " (use another checkpoint_dir, or the same layout)");
  }
  return OkStatus();
}

Status CheckpointStore::WriteJobFile(int64_t step) const {
  return WriteJsonFile(env_, StepDir(step) + "/" + kJobFile,
                       {{"format", kJobFormat},
                        {"version", kFormatVersion},
                        {"num_stages", num_stages_},
                        {"dp_size", dp_size_}});
}

Status CheckpointStore::WritePart(const RankCheckpoint& checkpoint,
                                  const std::string& part_dir) const {
  json files = json::object();
  json integers = json::object();
  for (const TensorSection& section : kSections) {
    models::SafetensorsWriter writer;
    if (section.member == &RankCheckpoint::model) writer.SetMetadata("format", "pt");
    std::vector<at::Tensor> keep_alive;
    json& section_integers = integers[section.name] = json::object();
    GEOTRAIN_RETURN_IF_ERROR(CollectTensors(checkpoint.*section.member, section.name, &writer,
                                            &keep_alive, &section_integers));
    const std::string file = std::string(section.name) + ".safetensors";
    GEOTRAIN_RETURN_IF_ERROR(writer.Write(part_dir + "/" + file, env_));
    GEOTRAIN_ASSIGN_OR_RETURN(FileDigest digest, DigestFile(env_, part_dir + "/" + file));
    files[file] = {{"bytes", digest.bytes}, {"fingerprint", Hex64(digest.fingerprint)}};
  }
  return WriteJsonFile(env_, part_dir + "/" + kStateFile,
                       {{"format", kPartFormat},
                        {"version", kFormatVersion},
                        {"step", checkpoint.step},
                        {"stage", stage_},
                        {"num_stages", num_stages_},
                        {"replica", dp_rank_},
                        {"dp_size", dp_size_},
                        {"files", files},
                        {"integer_tensors", integers},
                        {"state", checkpoint.state}});
}

Status CheckpointStore::Write(const RankCheckpoint& checkpoint) {
  const std::string context = StepName(checkpoint.step) + "/" + PartName();
  if (checkpoint.step < 0) return InvalidArgument(context + ": step is negative");
  const std::string step_dir = StepDir(checkpoint.step);
  GEOTRAIN_RETURN_IF_ERROR(env_->CreateDirectories(step_dir));
  bool job_present = false;
  GEOTRAIN_RETURN_IF_ERROR(CheckJobFile(checkpoint.step, &job_present));
  if (!job_present) GEOTRAIN_RETURN_IF_ERROR(WriteJobFile(checkpoint.step));

  // Temporaries of this rank left by a crashed write (one writer per rank, so none is live).
  const std::string temp_prefix = PartName() + ".tmp-";
  if (StatusOr<std::vector<std::string>> names = env_->ListDirectory(step_dir); names.ok()) {
    for (const std::string& name : *names) {
      if (name.rfind(temp_prefix, 0) == 0) (void)env_->RemoveAll(step_dir + "/" + name);
    }
  }

  const std::string part = step_dir + "/" + PartName();
  const std::string temp = step_dir + "/" + temp_prefix + UniqueSuffix();
  GEOTRAIN_RETURN_IF_ERROR(env_->CreateDirectory(temp));
  Status status = WritePart(checkpoint, temp);
  if (status.ok()) status = env_->SyncDirectory(temp);
  if (status.ok()) status = MoveIntoPlace(env_, temp, part);
  if (!status.ok()) {
    (void)env_->RemoveAll(temp);  // the failure reported is `status`
    return status.WithContext("writing checkpoint " + context);
  }
  GEOTRAIN_RETURN_IF_ERROR(env_->SyncDirectory(step_dir));
  return WriteJsonFile(env_, part + kMarkerSuffix,
                       {{"format", kMarkerFormat},
                        {"version", kFormatVersion},
                        {"step", checkpoint.step},
                        {"stage", stage_},
                        {"replica", dp_rank_}});
}

StatusOr<std::optional<int64_t>> CheckpointStore::NewestComplete() const {
  GEOTRAIN_ASSIGN_OR_RETURN(std::vector<int64_t> steps, ListSteps());
  for (int64_t step : steps) {
    bool job_present = false;
    GEOTRAIN_RETURN_IF_ERROR(CheckJobFile(step, &job_present));
    if (job_present && MissingMarkers(step).empty()) return std::optional<int64_t>(step);
  }
  return std::optional<int64_t>();
}

Status CheckpointStore::CheckMarker(int64_t step) const {
  const std::string path = StepDir(step) + "/" + PartName() + kMarkerSuffix;
  GEOTRAIN_ASSIGN_OR_RETURN(json marker, ReadJsonFile(env_, path, kMaxSmallJsonBytes));
  GEOTRAIN_RETURN_IF_ERROR(ExpectHeader(marker, kMarkerFormat, path));
  GEOTRAIN_RETURN_IF_ERROR(ExpectInt(marker, "step", step, path));
  GEOTRAIN_RETURN_IF_ERROR(ExpectInt(marker, "stage", stage_, path));
  return ExpectInt(marker, "replica", dp_rank_, path);
}

StatusOr<RankCheckpoint> CheckpointStore::Read(int64_t step) const {
  if (step < 0) return InvalidArgument("checkpoint step " + std::to_string(step) + ": negative");
  const std::string step_dir = StepDir(step);
  if (!env_->IsDirectory(step_dir)) return NotFound(step_dir + ": no such checkpoint");
  bool job_present = false;
  GEOTRAIN_RETURN_IF_ERROR(CheckJobFile(step, &job_present));
  const std::vector<std::string> missing = MissingMarkers(step);
  if (!job_present || !missing.empty()) {
    return FailedPrecondition(step_dir + ": incomplete checkpoint (missing " +
                              (job_present ? missing.front() : std::string(kJobFile)) +
                              (missing.size() > 1
                                   ? " and " + std::to_string(missing.size() - 1) + " more markers)"
                                   : ")"));
  }
  GEOTRAIN_RETURN_IF_ERROR(CheckMarker(step));

  const std::string part = step_dir + "/" + PartName();
  const std::string state_file = part + "/" + kStateFile;
  GEOTRAIN_ASSIGN_OR_RETURN(json state, ReadJsonFile(env_, state_file, kMaxStateJsonBytes));
  GEOTRAIN_RETURN_IF_ERROR(ExpectHeader(state, kPartFormat, state_file));
  GEOTRAIN_RETURN_IF_ERROR(ExpectInt(state, "step", step, state_file));
  GEOTRAIN_RETURN_IF_ERROR(ExpectInt(state, "stage", stage_, state_file));
  GEOTRAIN_RETURN_IF_ERROR(ExpectInt(state, "num_stages", num_stages_, state_file));
  GEOTRAIN_RETURN_IF_ERROR(ExpectInt(state, "replica", dp_rank_, state_file));
  GEOTRAIN_RETURN_IF_ERROR(ExpectInt(state, "dp_size", dp_size_, state_file));
  GEOTRAIN_ASSIGN_OR_RETURN(const json* files, Field(state, "files", state_file, "files"));
  GEOTRAIN_ASSIGN_OR_RETURN(const json* integers,
                            Field(state, "integer_tensors", state_file, "integer_tensors"));
  GEOTRAIN_ASSIGN_OR_RETURN(const json* user_state, Field(state, "state", state_file, "state"));
  if (!files->is_object() || !integers->is_object()) {
    return DataLoss(state_file + ": files, integer_tensors: expected objects");
  }

  RankCheckpoint checkpoint;
  checkpoint.step = step;
  checkpoint.state = *user_state;
  for (const TensorSection& section : kSections) {
    const std::string file = std::string(section.name) + ".safetensors";
    GEOTRAIN_ASSIGN_OR_RETURN(const json* digest, Field(*files, file, state_file, "files." + file));
    if (!digest->is_object()) return DataLoss(state_file + ": files." + file + ": not an object");
    std::map<std::string, at::Tensor>& tensors = checkpoint.*section.member;
    GEOTRAIN_ASSIGN_OR_RETURN(tensors,
                              ReadTensorFile(env_, part + "/" + file, *digest, state_file));

    const std::string section_path = std::string("integer_tensors.") + section.name;
    GEOTRAIN_ASSIGN_OR_RETURN(const json* section_integers,
                              Field(*integers, section.name, state_file, section_path));
    if (!section_integers->is_object()) {
      return DataLoss(state_file + ": " + section_path + ": not an object");
    }
    for (const auto& [name, entry] : section_integers->items()) {
      const std::string path = section_path + "[\"" + name + "\"]";
      GEOTRAIN_ASSIGN_OR_RETURN(at::Tensor tensor, IntegerTensorFromJson(entry, state_file, path));
      if (!tensors.emplace(name, std::move(tensor)).second) {
        return DataLoss(state_file + ": " + path + ": also in " + file);
      }
    }
  }
  return checkpoint;
}

Status CheckpointStore::DeleteStep(int64_t step) const {
  const std::string step_dir = StepDir(step);
  const std::string aside = step_dir + ".deleting-" + UniqueSuffix();
  const Status moved = env_->Rename(step_dir, aside);
  if (moved.code() == StatusCode::kNotFound) return OkStatus();  // another rank's Prune took it
  GEOTRAIN_RETURN_IF_ERROR(moved.WithContext("moving a step aside for deletion"));
  // A tree already gone is OK: another rank's Prune is sweeping this leftover too (see Prune).
  return env_->RemoveAll(aside);
}

Status CheckpointStore::Prune(int keep) {
  if (keep < 1) return InvalidArgument("keep_checkpoints: " + std::to_string(keep) + " < 1");
  GEOTRAIN_ASSIGN_OR_RETURN(std::vector<int64_t> steps, ListSteps());
  int complete = 0;
  for (int64_t step : steps) {
    bool job_present = false;
    GEOTRAIN_RETURN_IF_ERROR(CheckJobFile(step, &job_present));
    const bool is_complete = job_present && MissingMarkers(step).empty();
    if (is_complete) ++complete;
    if ((is_complete && complete > keep) || (!is_complete && complete > 0)) {
      GEOTRAIN_RETURN_IF_ERROR(DeleteStep(step));
    }
  }
  // Steps renamed aside by a Prune that died before deleting them. Another Prune may be deleting
  // one right now, so errors (the directory vanishing underneath) are not failures.
  if (StatusOr<std::vector<std::string>> names = env_->ListDirectory(dir_); names.ok()) {
    for (const std::string& name : *names) {
      if (name.rfind("step-", 0) == 0 && name.find(".deleting-") != std::string::npos) {
        (void)env_->RemoveAll(dir_ + "/" + name);
      }
    }
  }
  return OkStatus();
}

}  // namespace geotrain::runtime
