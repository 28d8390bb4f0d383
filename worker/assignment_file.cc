#include "worker/assignment_file.h"

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
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) return Unavailable(temp + ": cannot write the assignment: " + std::strerror(errno));
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
