#include "runtime/checkpoint_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "common/span.h"
#include "models/atomic_file_writer.h"
#include "models/data/content_fingerprint.h"
#include "models/file_contents.h"
#include "models/mapped_file.h"
#include "models/safetensors.h"
#include "models/safetensors_writer.h"
#include "models/strict_json.h"

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

// Integer dtypes kept in state.json, by their spelling there.
constexpr std::pair<const char*, at::ScalarType> kIntegerDTypes[] = {
    {"int64", at::kLong}, {"int32", at::kInt},  {"int16", at::kShort},
    {"int8", at::kChar},  {"uint8", at::kByte}, {"bool", at::kBool}};

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
  if (name.size() < kPrefix + 8 || name.size() > kPrefix + 18 || name.compare(0, kPrefix, "step-")) {
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

// A filesystem error as a Status: a full disk is ResourceExhausted and says so in words an
// operator greps for, anything else Unavailable.
Status FileSystemError(const std::string& what, const std::error_code& error) {
  if (error.value() == ENOSPC || error.value() == EDQUOT) {
    return ResourceExhausted(what + ": " + error.message() + " (ENOSPC: the disk is full)");
  }
  return Unavailable(what + ": " + error.message());
}

Status FsyncDirectory(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Unavailable(path + ": cannot open directory: " + std::strerror(errno));
  const int result = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (result != 0) {
    return FileSystemError(path + ": fsync failed", std::error_code(err, std::generic_category()));
  }
  return OkStatus();
}

// Size and fingerprint of a whole file (models/data/content_fingerprint.h).
struct FileDigest {
  uint64_t bytes = 0;
  uint64_t fingerprint = 0;
};
StatusOr<FileDigest> DigestFile(const std::string& path) {
  GEOTRAIN_ASSIGN_OR_RETURN(auto mapped, models::MappedFile::Open(path));
  models::data::ContentFingerprint fingerprint;
  fingerprint.Update(mapped->bytes().data(), mapped->bytes().size());
  return FileDigest{mapped->bytes().size(), fingerprint.Finish()};
}

Status WriteJsonFile(const std::string& path, const json& value) {
  std::string text;
  try {
    text = value.dump(1) + "\n";
  } catch (const json::exception& e) {
    return InvalidArgument(path + ": cannot serialise: " + e.what());
  }
  GEOTRAIN_ASSIGN_OR_RETURN(auto writer, models::AtomicFileWriter::Create(path));
  GEOTRAIN_RETURN_IF_ERROR(writer->Append(text.data(), text.size()));
  return writer->Commit();
}

StatusOr<json> ReadJsonFile(const std::string& path, size_t max_bytes) {
  GEOTRAIN_ASSIGN_OR_RETURN(std::string text, models::ReadFileContents(path, max_bytes));
  GEOTRAIN_ASSIGN_OR_RETURN(json value, models::ParseStrictJson(text, path));
  if (!value.is_object()) {
    return DataLoss(path + ": expected an object, got " + models::JsonKindName(value));
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
    return DataLoss(file + ": " + path + ": expected an integer, got " +
                    models::JsonKindName(*value));
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
      const auto dtype = std::find_if(std::begin(kIntegerDTypes), std::end(kIntegerDTypes),
                                      [&](const auto& entry) { return entry.second == type; });
      if (dtype == std::end(kIntegerDTypes)) {
        return InvalidArgument(field + ": dtype " + std::string(c10::toString(type)) +
                               " is neither floating point nor integer");
      }
      if (tensor.numel() > CheckpointStore::kMaxIntegerElements) {
        return InvalidArgument(field + ": " + std::to_string(tensor.numel()) +
                               " integer elements exceed the limit of " +
                               std::to_string(CheckpointStore::kMaxIntegerElements) +
                               " (integers are stored in state.json; store data as floats)");
      }
      at::Tensor values = tensor.detach().to(at::kCPU, at::kLong).contiguous();
      const int64_t* data = values.data_ptr<int64_t>();
      (*integers)[name] = {{"dtype", dtype->first},
                           {"shape", values.sizes().vec()},
                           {"values", std::vector<int64_t>(data, data + values.numel())}};
    } catch (const c10::Error& e) {
      return InvalidArgument(field + ": " + e.what_without_backtrace());
    }
  }
  return OkStatus();
}

StatusOr<std::vector<int64_t>> ParseShape(const json& entry, const std::string& file,
                                          const std::string& path, int64_t* elements) {
  GEOTRAIN_ASSIGN_OR_RETURN(const json* shape_json, Field(entry, "shape", file, path + ".shape"));
  if (!shape_json->is_array() || shape_json->size() > 16) {
    return DataLoss(file + ": " + path + ".shape: expected an array of at most 16 sizes");
  }
  std::vector<int64_t> shape;
  *elements = 1;
  for (const json& size : *shape_json) {
    if (!size.is_number_unsigned() ||
        size.get<uint64_t>() > uint64_t{CheckpointStore::kMaxIntegerElements}) {
      return DataLoss(file + ": " + path + ".shape: " + size.dump() + " is not a valid size");
    }
    shape.push_back(size.get<int64_t>());
    *elements *= shape.back();
    if (*elements > CheckpointStore::kMaxIntegerElements) {
      return DataLoss(file + ": " + path + ".shape: too many elements");
    }
  }
  return shape;
}

// One entry of state.json's integer_tensors back into a tensor of its dtype.
StatusOr<at::Tensor> ParseIntegerTensor(const json& entry, const std::string& file,
                                        const std::string& path) {
  if (!entry.is_object()) return DataLoss(file + ": " + path + ": expected an object");
  GEOTRAIN_ASSIGN_OR_RETURN(const json* dtype_json, Field(entry, "dtype", file, path + ".dtype"));
  const auto dtype =
      std::find_if(std::begin(kIntegerDTypes), std::end(kIntegerDTypes), [&](const auto& known) {
        return dtype_json->is_string() && dtype_json->get<std::string>() == known.first;
      });
  if (dtype == std::end(kIntegerDTypes)) {
    return DataLoss(file + ": " + path + ".dtype: unknown " + dtype_json->dump());
  }
  int64_t elements = 0;
  GEOTRAIN_ASSIGN_OR_RETURN(std::vector<int64_t> shape, ParseShape(entry, file, path, &elements));
  GEOTRAIN_ASSIGN_OR_RETURN(const json* values, Field(entry, "values", file, path + ".values"));
  if (!values->is_array() || static_cast<int64_t>(values->size()) != elements) {
    return DataLoss(file + ": " + path + ".values: expected an array of " +
                    std::to_string(elements) + " integers");
  }
  at::Tensor tensor = at::empty(shape, at::kLong);
  int64_t* data = tensor.data_ptr<int64_t>();
  for (const json& value : *values) {
    if (!value.is_number_integer() ||
        (value.is_number_unsigned() && value.get<uint64_t>() > uint64_t{INT64_MAX})) {
      return DataLoss(file + ": " + path + ".values: " + value.dump() + " is not an int64");
    }
    *data++ = value.get<int64_t>();
  }
  return tensor.to(dtype->second);
}

// A tensor file whose size and fingerprint state.json recorded, read back as float32 tensors.
StatusOr<std::map<std::string, at::Tensor>> ReadTensorFile(const std::string& path,
                                                           const json& digest,
                                                           const std::string& state_file) {
  const std::string field = "files." + fs::path(path).filename().string();
  GEOTRAIN_ASSIGN_OR_RETURN(int64_t bytes, IntField(digest, "bytes", state_file, field + ".bytes"));
  GEOTRAIN_ASSIGN_OR_RETURN(const json* fingerprint,
                            Field(digest, "fingerprint", state_file, field + ".fingerprint"));
  GEOTRAIN_ASSIGN_OR_RETURN(FileDigest actual, DigestFile(path));
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
Status MoveIntoPlace(const std::string& temp, const std::string& part) {
  if (::rename(temp.c_str(), part.c_str()) == 0) return OkStatus();
  if (errno != ENOTEMPTY && errno != EEXIST) {
    return Unavailable(part + ": rename from " + temp + " failed: " + std::strerror(errno));
  }
  // The part exists (a rewrite): swap the two, then delete the old one, now at `temp`.
  std::string old = temp;
  if (::renameat2(AT_FDCWD, temp.c_str(), AT_FDCWD, part.c_str(), RENAME_EXCHANGE) != 0) {
    if (errno != EINVAL && errno != ENOSYS) {
      return Unavailable(part + ": exchange with " + temp + " failed: " + std::strerror(errno));
    }
    // No RENAME_EXCHANGE here (e.g. NFS): the part is briefly absent, its marker still present,
    // so a concurrent Read fails rather than reading a mix.
    old = part + ".old-" + UniqueSuffix();
    if (::rename(part.c_str(), old.c_str()) != 0 || ::rename(temp.c_str(), part.c_str()) != 0) {
      return Unavailable(part + ": replacing with " + temp + " failed: " + std::strerror(errno));
    }
  }
  std::error_code ignored;
  fs::remove_all(old, ignored);
  return OkStatus();
}

}  // namespace

StatusOr<CheckpointStore> CheckpointStore::Open(const std::string& dir, int stage, int num_stages,
                                                int dp_rank, int dp_size) {
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
  std::error_code error;
  fs::create_directories(dir, error);
  if (error) return Unavailable(dir + ": cannot create checkpoint directory: " + error.message());
  return CheckpointStore(dir, stage, num_stages, dp_rank, dp_size);
}

std::string CheckpointStore::StepDir(int64_t step) const { return dir_ + "/" + StepName(step); }
std::string CheckpointStore::PartName() const { return RankName(stage_, dp_rank_); }

StatusOr<std::vector<int64_t>> CheckpointStore::ListSteps() const {
  std::vector<int64_t> steps;
  std::error_code error;
  for (fs::directory_iterator it(dir_, error), end; !error && it != end; it.increment(error)) {
    if (auto step = ParseStepName(it->path().filename().string())) steps.push_back(*step);
  }
  if (error) return Unavailable(dir_ + ": cannot list checkpoints: " + error.message());
  std::sort(steps.rbegin(), steps.rend());
  return steps;
}

std::vector<std::string> CheckpointStore::MissingMarkers(int64_t step) const {
  std::vector<std::string> missing;
  const std::string step_dir = StepDir(step);
  for (int replica = 0; replica < dp_size_; ++replica) {
    for (int stage = 0; stage < num_stages_; ++stage) {
      const std::string marker = RankName(stage, replica) + kMarkerSuffix;
      std::error_code error;
      if (!fs::is_regular_file(step_dir + "/" + marker, error)) missing.push_back(marker);
    }
  }
  return missing;
}

Status CheckpointStore::CheckJobFile(int64_t step, bool* present) const {
  const std::string path = StepDir(step) + "/" + kJobFile;
  StatusOr<json> job = ReadJsonFile(path, kMaxSmallJsonBytes);
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
  return WriteJsonFile(StepDir(step) + "/" + kJobFile, {{"format", kJobFormat},
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
    GEOTRAIN_RETURN_IF_ERROR(writer.Write(part_dir + "/" + file));
    GEOTRAIN_ASSIGN_OR_RETURN(FileDigest digest, DigestFile(part_dir + "/" + file));
    files[file] = {{"bytes", digest.bytes}, {"fingerprint", Hex64(digest.fingerprint)}};
  }
  return WriteJsonFile(part_dir + "/" + kStateFile, {{"format", kPartFormat},
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
  Status status = WriteOnce(checkpoint);
  if (status.code() == StatusCode::kResourceExhausted &&
      status.message().find("ENOSPC") == std::string::npos) {
    // The writers below report strerror's words; name the errno too.
    status = ResourceExhausted(status.message() + " (ENOSPC: the disk is full)");
  }
  return status;
}

Status CheckpointStore::WriteOnce(const RankCheckpoint& checkpoint) {
  const std::string context = StepName(checkpoint.step) + "/" + PartName();
  if (checkpoint.step < 0) return InvalidArgument(context + ": step is negative");
  const std::string step_dir = StepDir(checkpoint.step);
  std::error_code error;
  fs::create_directories(step_dir, error);
  if (error) return FileSystemError(step_dir + ": cannot create", error);
  bool job_present = false;
  GEOTRAIN_RETURN_IF_ERROR(CheckJobFile(checkpoint.step, &job_present));
  if (!job_present) GEOTRAIN_RETURN_IF_ERROR(WriteJobFile(checkpoint.step));

  // Temporaries of this rank left by a crashed write (one writer per rank, so none is live).
  const std::string temp_prefix = PartName() + ".tmp-";
  for (fs::directory_iterator it(step_dir, error), end; !error && it != end; it.increment(error)) {
    if (it->path().filename().string().rfind(temp_prefix, 0) == 0) {
      std::error_code ignored;
      fs::remove_all(it->path(), ignored);
    }
  }

  const std::string part = step_dir + "/" + PartName();
  const std::string temp = step_dir + "/" + temp_prefix + UniqueSuffix();
  fs::create_directory(temp, error);
  if (error) return FileSystemError(temp + ": cannot create", error);
  Status status = WritePart(checkpoint, temp);
  if (status.ok()) status = FsyncDirectory(temp);
  if (status.ok()) status = MoveIntoPlace(temp, part);
  if (!status.ok()) {
    std::error_code ignored;
    fs::remove_all(temp, ignored);
    return status.WithContext("writing checkpoint " + context);
  }
  GEOTRAIN_RETURN_IF_ERROR(FsyncDirectory(step_dir));
  return WriteJsonFile(part + kMarkerSuffix, {{"format", kMarkerFormat},
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
  GEOTRAIN_ASSIGN_OR_RETURN(json marker, ReadJsonFile(path, kMaxSmallJsonBytes));
  GEOTRAIN_RETURN_IF_ERROR(ExpectHeader(marker, kMarkerFormat, path));
  GEOTRAIN_RETURN_IF_ERROR(ExpectInt(marker, "step", step, path));
  GEOTRAIN_RETURN_IF_ERROR(ExpectInt(marker, "stage", stage_, path));
  return ExpectInt(marker, "replica", dp_rank_, path);
}

StatusOr<RankCheckpoint> CheckpointStore::Read(int64_t step) const {
  if (step < 0) return InvalidArgument("checkpoint step " + std::to_string(step) + ": negative");
  const std::string step_dir = StepDir(step);
  std::error_code error;
  if (!fs::is_directory(step_dir, error)) return NotFound(step_dir + ": no such checkpoint");
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
  GEOTRAIN_ASSIGN_OR_RETURN(json state, ReadJsonFile(state_file, kMaxStateJsonBytes));
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
    GEOTRAIN_ASSIGN_OR_RETURN(tensors, ReadTensorFile(part + "/" + file, *digest, state_file));

    const std::string section_path = std::string("integer_tensors.") + section.name;
    GEOTRAIN_ASSIGN_OR_RETURN(const json* section_integers,
                              Field(*integers, section.name, state_file, section_path));
    if (!section_integers->is_object()) {
      return DataLoss(state_file + ": " + section_path + ": not an object");
    }
    for (const auto& [name, entry] : section_integers->items()) {
      const std::string path = section_path + "[\"" + name + "\"]";
      GEOTRAIN_ASSIGN_OR_RETURN(at::Tensor tensor, ParseIntegerTensor(entry, state_file, path));
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
  if (::rename(step_dir.c_str(), aside.c_str()) != 0) {
    if (errno == ENOENT) return OkStatus();  // another rank's Prune took it
    return Unavailable(step_dir + ": cannot move aside for deletion: " + std::strerror(errno));
  }
  std::error_code error;
  fs::remove_all(aside, error);
  // ENOENT: another rank's Prune is sweeping this leftover too (see Prune).
  if (error && error != std::errc::no_such_file_or_directory) {
    return Unavailable(aside + ": cannot delete: " + error.message());
  }
  return OkStatus();
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
  std::error_code error;
  for (fs::directory_iterator it(dir_, error), end; !error && it != end; it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("step-", 0) == 0 && name.find(".deleting-") != std::string::npos) {
      std::error_code ignored;
      fs::remove_all(it->path(), ignored);
    }
  }
  return OkStatus();
}

}  // namespace geotrain::runtime
