#include "runtime/config_change.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

namespace geotrain::runtime {
namespace {

using nlohmann::json;
namespace cz = compression;

constexpr uint32_t kMinBits = 2;
constexpr uint32_t kMaxBits = 8;

// Reads an optional non-negative integer key; absent keeps *out.
Status ReadCount(const json& object, const char* key, uint64_t* out) {
  const auto it = object.find(key);
  if (it == object.end()) return OkStatus();
  if (it->is_number_unsigned()) {
    *out = it->get<uint64_t>();
    return OkStatus();
  }
  if (it->is_number_integer()) {
    return InvalidArgument(std::string(key) + ": " + std::to_string(it->get<int64_t>()) +
                           " is negative");
  }
  return InvalidArgument(std::string(key) + ": expected an integer, got " +
                         (it->is_number_float() ? "a fraction" : it->type_name()));
}

// Bits keys: 0 keeps the setting, else 2..8.
Status ReadBits(const json& object, const char* key, uint32_t* out) {
  uint64_t bits = 0;
  GEOTRAIN_RETURN_IF_ERROR(ReadCount(object, key, &bits));
  if (bits != 0 && (bits < kMinBits || bits > kMaxBits)) {
    return InvalidArgument(std::string(key) + ": " + std::to_string(bits) + " is outside " +
                           std::to_string(kMinBits) + ".." + std::to_string(kMaxBits));
  }
  *out = static_cast<uint32_t>(bits);
  return OkStatus();
}

std::string Number(double value) {
  std::ostringstream s;
  s << value;
  return s.str();
}

}  // namespace

StatusOr<CodecChange> ParseCodecChangeLine(const std::string& json_line) {
  const json line = json::parse(json_line, nullptr, /*allow_exceptions=*/false);
  if (line.is_discarded()) return InvalidArgument("not a JSON value");
  if (!line.is_object()) {
    return InvalidArgument(std::string("expected a JSON object, got ") + line.type_name());
  }
  static const char* const kKeys[] = {"effective_step", "forward_bits",  "backward_bits",
                                      "dp_bits",        "dp_topk_ratio", "reason"};
  for (const auto& item : line.items()) {
    if (std::find_if(std::begin(kKeys), std::end(kKeys),
                     [&](const char* known) { return item.key() == known; }) == std::end(kKeys)) {
      return InvalidArgument(item.key() +
                             ": unknown key (effective_step, forward_bits, backward_bits, "
                             "dp_bits, dp_topk_ratio, reason)");
    }
  }
  CodecChange change;
  if (!line.contains("effective_step")) return InvalidArgument("effective_step: missing");
  uint64_t step = 0;
  GEOTRAIN_RETURN_IF_ERROR(ReadCount(line, "effective_step", &step));
  if (step > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return InvalidArgument("effective_step: " + std::to_string(step) + " is too large");
  }
  change.effective_step = static_cast<int64_t>(step);
  GEOTRAIN_RETURN_IF_ERROR(ReadBits(line, "forward_bits", &change.forward_bits));
  GEOTRAIN_RETURN_IF_ERROR(ReadBits(line, "backward_bits", &change.backward_bits));
  GEOTRAIN_RETURN_IF_ERROR(ReadBits(line, "dp_bits", &change.dp_bits));
  if (const auto it = line.find("dp_topk_ratio"); it != line.end()) {
    if (!it->is_number()) {
      return InvalidArgument(std::string("dp_topk_ratio: expected a number, got ") +
                             it->type_name());
    }
    const double ratio = it->get<double>();
    // 0 is "keep", as in the protobuf's CodecOverride.
    if (!(ratio >= 0 && ratio <= 1)) {
      return InvalidArgument("dp_topk_ratio: " + Number(ratio) + " is outside (0, 1]");
    }
    change.dp_topk_ratio = ratio;
  }
  if (const auto it = line.find("reason"); it != line.end()) {
    if (!it->is_string()) {
      return InvalidArgument(std::string("reason: expected a string, got ") + it->type_name());
    }
    change.reason = it->get<std::string>();
  }
  if (change.forward_bits == 0 && change.backward_bits == 0 && change.dp_bits == 0 &&
      change.dp_topk_ratio == 0) {
    return InvalidArgument(
        "the change sets none of forward_bits, backward_bits, dp_bits, dp_topk_ratio");
  }
  return change;
}

std::string CodecChangeLine(const CodecChange& change) {
  // In the order of the struct, for people reading the file.
  nlohmann::ordered_json line = {{"effective_step", change.effective_step}};
  if (change.forward_bits != 0) line["forward_bits"] = change.forward_bits;
  if (change.backward_bits != 0) line["backward_bits"] = change.backward_bits;
  if (change.dp_bits != 0) line["dp_bits"] = change.dp_bits;
  if (change.dp_topk_ratio != 0) line["dp_topk_ratio"] = change.dp_topk_ratio;
  if (!change.reason.empty()) line["reason"] = change.reason;
  // Replacing bad UTF-8 in a reason keeps the line parseable whatever the coordinator wrote.
  return line.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

StatusOr<cz::CodecConfig> WithPipelineBits(const cz::CodecConfig& config, uint32_t bits) {
  if (bits < kMinBits || bits > kMaxBits) {
    return InvalidArgument("bits: " + std::to_string(bits) + " is outside 2..8");
  }
  cz::CodecConfig changed = config;
  const int b = static_cast<int>(bits);
  switch (config.codec) {
    case cz::CodecId::kFixpoint:
    case cz::CodecId::kDelta:
    case cz::CodecId::kDeltaLowBits:
      changed.bits = b;
      break;
    case cz::CodecId::kTah:
      changed.high_bits = b;
      changed.low_bits = std::max(2, std::min(config.low_bits, b - 1));
      break;
    default:
      return FailedPrecondition(std::string("codec ") + cz::CodecName(config.codec) +
                                " has no bit width to change");
  }
  GEOTRAIN_RETURN_IF_ERROR(changed.Validate());
  return changed;
}

StatusOr<DataParallelSettings> WithDataParallelChange(const DataParallelSettings& settings,
                                                      uint32_t quant_bits, double topk_ratio) {
  if (settings.mode != DataParallelMode::kCocktail) {
    return FailedPrecondition(std::string("data-parallel mode ") +
                              DataParallelModeName(settings.mode) +
                              " has no adjustable codec (only cocktail's)");
  }
  if (quant_bits != 0 && (quant_bits < kMinBits || quant_bits > kMaxBits)) {
    return InvalidArgument("quant_bits: " + std::to_string(quant_bits) + " is outside 2..8");
  }
  if (!(topk_ratio >= 0 && topk_ratio <= 1)) {
    return InvalidArgument("topk_ratio: " + Number(topk_ratio) + " is outside (0, 1]");
  }
  DataParallelSettings changed = settings;
  if (quant_bits != 0) changed.codec.quant_bits = static_cast<int>(quant_bits);
  if (topk_ratio != 0) changed.codec.topk_ratio = topk_ratio;
  return changed;
}

StatusOr<std::vector<CodecChangeFileLine>> CodecChangeFile::Poll() {
  std::vector<CodecChangeFileLine> lines;
  const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return lines;  // the writer has not made it yet
    return Unavailable(path_ + ": cannot open: " + std::strerror(errno));
  }
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    const int error = errno;
    ::close(fd);
    return Unavailable(path_ + ": cannot stat: " + std::strerror(error));
  }
  const uint64_t size = static_cast<uint64_t>(info.st_size);
  if (size < offset_) {
    ::close(fd);
    const uint64_t was = offset_;
    offset_ = size;
    return FailedPrecondition(path_ + ": shrank from " + std::to_string(was) + " to " +
                              std::to_string(size) +
                              " bytes; only appended lines are read, from its new end on");
  }
  std::string text(size - offset_, '\0');
  size_t got = 0;
  while (got < text.size()) {
    const ssize_t n =
        ::pread(fd, text.data() + got, text.size() - got, static_cast<off_t>(offset_ + got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      ::close(fd);
      return Unavailable(path_ + ": cannot read: " + std::strerror(error));
    }
    if (n == 0) break;  // truncated meanwhile: the next Poll sees it
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  text.resize(got);

  size_t start = 0;
  for (size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1) {
    ++lines_read_;
    std::string line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    CodecChangeFileLine entry;
    entry.number = lines_read_;
    StatusOr<CodecChange> change = ParseCodecChangeLine(line);
    if (change.ok()) {
      entry.change = std::move(change).value();
    } else {
      entry.status = change.status();
    }
    lines.push_back(std::move(entry));
  }
  offset_ += start;
  return lines;
}

}  // namespace geotrain::runtime
