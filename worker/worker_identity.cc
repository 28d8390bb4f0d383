#include "worker/worker_identity.h"

#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace geotrain::worker {
namespace fs = std::filesystem;

namespace {

constexpr size_t kMaxIdLength = 128;

}  // namespace

std::string WorkerIdPath(const std::string& work_dir) {
  return (fs::path(work_dir) / "worker-id").string();
}

bool IsValidWorkerId(const std::string& id) {
  if (id.empty() || id.size() > kMaxIdLength) return false;
  for (const char c : id) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') {
      return false;
    }
  }
  return true;
}

StatusOr<std::string> LoadWorkerId(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    if (ec) return Unavailable(path + ": cannot check for the worker id file: " + ec.message());
    return std::string();
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Unavailable(path + ": cannot read the worker id file: " + std::strerror(errno));
  }
  std::string contents(kMaxIdLength + 2, '\0');
  in.read(contents.data(), static_cast<std::streamsize>(contents.size()));
  contents.resize(static_cast<size_t>(in.gcount()));
  if (!contents.empty() && contents.back() == '\n') contents.pop_back();
  if (!IsValidWorkerId(contents)) {
    return DataLoss(path + ": the worker id file is corrupt (expected one id of at most " +
                    std::to_string(kMaxIdLength) +
                    " letters, digits, '.', '_' or '-'); fix or remove it to register as a new "
                    "worker");
  }
  return contents;
}

Status SaveWorkerId(const std::string& path, const std::string& id) {
  if (!IsValidWorkerId(id)) {
    return InvalidArgument("worker id \"" + id + "\" from the coordinator is not a valid id");
  }
  const std::string temp = path + ".tmp";
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out << id << '\n';
    out.flush();
    if (!out) return Unavailable(temp + ": cannot write the worker id: " + std::strerror(errno));
  }
  std::error_code ec;
  fs::rename(temp, path, ec);
  if (ec) return Unavailable(path + ": cannot store the worker id: " + ec.message());
  return OkStatus();
}

}  // namespace geotrain::worker
