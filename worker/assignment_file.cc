#include "worker/assignment_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace geotrain::worker {
namespace fs = std::filesystem;

namespace {

// An Assignment carries a job YAML (limited to 1 MiB by the job parser) and a few numbers.
constexpr uintmax_t kMaxFileBytes = 4u << 20;
// Assignment.frame_key: empty (frames in the clear) or the job's AES-256 key.
constexpr size_t kFrameKeyBytes = 32;

std::string JobIdProblem(const std::string& id) {
  if (id.empty()) return "empty";
  if (id.size() > 128) return "longer than 128 characters";
  if (id.front() == '.') return "\"" + id + "\" starts with '.'";
  for (const char c : id) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') {
      return "\"" + id + "\" has a character other than letters, digits, '.', '_' and '-'";
    }
  }
  return "";
}

}  // namespace

Status ValidateAssignment(const geotrain::v1::Assignment& assignment) {
  std::string problems;
  auto add = [&](const std::string& problem) {
    problems += (problems.empty() ? "" : "\n") + problem;
  };
  if (std::string p = JobIdProblem(assignment.job_id()); !p.empty()) add("assignment.job_id: " + p);
  if (assignment.stage() < 0) {
    add("assignment.stage: " + std::to_string(assignment.stage()) + " is negative");
  }
  if (assignment.replica() < 0) {
    add("assignment.replica: " + std::to_string(assignment.replica()) + " is negative");
  }
  if (assignment.spec_yaml().empty()) add("assignment.spec_yaml: empty");
  // Only the length: the bytes are a secret.
  if (!assignment.frame_key().empty() && assignment.frame_key().size() != kFrameKeyBytes) {
    add("assignment.frame_key: " + std::to_string(assignment.frame_key().size()) +
        " bytes, expected " + std::to_string(kFrameKeyBytes));
  }
  if (!problems.empty()) return InvalidArgument(problems);
  return OkStatus();
}

Status WriteAssignmentFile(const std::string& path, const geotrain::v1::Assignment& assignment) {
  std::string bytes;
  if (!assignment.SerializeToString(&bytes)) {
    return Internal(path + ": cannot serialise the assignment");
  }
  const std::string temp = path + ".tmp";
  {
    // Owner-only from the first byte: the assignment holds the job's frame key. fchmod covers a
    // temp file left behind with other permissions.
    const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return Unavailable(temp + ": cannot write the assignment: " + std::strerror(errno));
    bool written = ::fchmod(fd, 0600) == 0;
    for (size_t done = 0; written && done < bytes.size();) {
      const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      written = n > 0;
      if (written) done += static_cast<size_t>(n);
    }
    const int saved = errno;
    ::close(fd);
    if (!written) {
      return Unavailable(temp + ": cannot write the assignment: " + std::strerror(saved));
    }
  }
  std::error_code ec;
  fs::rename(temp, path, ec);
  if (ec) return Unavailable(path + ": cannot store the assignment: " + ec.message());
  return OkStatus();
}

StatusOr<geotrain::v1::Assignment> ReadAssignmentFile(const std::string& path) {
  std::error_code ec;
  const uintmax_t size = fs::file_size(path, ec);
  if (ec) return NotFound(path + ": cannot read the assignment file: " + ec.message());
  if (size > kMaxFileBytes) {
    return InvalidArgument(path + ": " + std::to_string(size) +
                           " bytes is too large for an assignment file");
  }
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (!in) return Unavailable(path + ": cannot read the assignment file: " + std::strerror(errno));
  geotrain::v1::Assignment assignment;
  if (!assignment.ParseFromString(bytes.str())) {
    return InvalidArgument(path + ": not a serialised geotrain.v1.Assignment");
  }
  if (Status valid = ValidateAssignment(assignment); !valid.ok()) {
    return InvalidArgument(path + ": not a valid Assignment:\n" + valid.message());
  }
  return assignment;
}

}  // namespace geotrain::worker
