#include "coordinator/revoked_workers.h"

#include <spdlog/spdlog.h>

#include <cctype>

#include "common/auth/deployment_certs.h"
#include "common/io/file_contents.h"

namespace geotrain::coordinator {
namespace {

constexpr size_t kMaxFileBytes = 4 << 20;
constexpr int64_t kRecheckMs = 1000;
constexpr std::string_view kFingerprintPrefix = "sha256:";

bool IsFingerprint(const std::string& entry) {
  if (entry.rfind(kFingerprintPrefix, 0) != 0) return false;
  if (entry.size() != kFingerprintPrefix.size() + 64) return false;
  for (size_t i = kFingerprintPrefix.size(); i < entry.size(); ++i) {
    const char c = entry[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

std::string Trim(const std::string& text) {
  const size_t begin = text.find_first_not_of(" \t\r");
  if (begin == std::string::npos) return "";
  const size_t end = text.find_last_not_of(" \t\r");
  return text.substr(begin, end - begin + 1);
}

}  // namespace

StatusOr<std::set<std::string>> RevokedWorkers::Parse(const std::string& text,
                                                      const std::string& path) {
  std::set<std::string> entries;
  size_t begin = 0;
  int line_number = 0;
  while (begin < text.size()) {
    const size_t newline = text.find('\n', begin);
    std::string line =
        text.substr(begin, newline == std::string::npos ? std::string::npos : newline - begin);
    begin = newline == std::string::npos ? text.size() : newline + 1;
    ++line_number;
    if (const size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    line = Trim(line);
    if (line.empty()) continue;
    // Hex digests are compared in lower case, as add-worker prints them.
    if (line.rfind(kFingerprintPrefix, 0) == 0) {
      for (char& c : line) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (!IsFingerprint(line)) {
        return InvalidArgument("--revoked-workers: " + path + " line " +
                               std::to_string(line_number) +
                               ": a fingerprint is sha256: and 64 hex digits");
      }
    } else if (!auth::CheckWorkerName(line).ok()) {
      return InvalidArgument("--revoked-workers: " + path + " line " + std::to_string(line_number) +
                             ": neither a worker name (letters, digits, . _ -) nor sha256:<hex>");
    }
    entries.insert(line);
  }
  return entries;
}

StatusOr<std::unique_ptr<RevokedWorkers>> RevokedWorkers::Open(const std::string& path,
                                                               Clock* clock) {
  std::unique_ptr<RevokedWorkers> list(new RevokedWorkers(path, clock));
  std::lock_guard<std::mutex> lock(list->mu_);
  GEOTRAIN_RETURN_IF_ERROR(list->RefreshLocked());
  spdlog::info("revoked workers: {} entries in {}", list->entries_.size(), path);
  return list;
}

Status RevokedWorkers::RefreshLocked() {
  // stat(2) only tells whether to read again; the read goes through common/io.
  struct stat info {};
  if (::stat(path_.c_str(), &info) != 0) {
    return Unavailable("--revoked-workers: cannot stat " + path_);
  }
  if (size_ == info.st_size && inode_ == info.st_ino && mtime_.tv_sec == info.st_mtim.tv_sec &&
      mtime_.tv_nsec == info.st_mtim.tv_nsec) {
    return OkStatus();
  }
  StatusOr<std::string> text = io::ReadFileContents(path_, kMaxFileBytes);
  if (!text.ok())
    return Status(text.status().code(), "--revoked-workers: " + text.status().message());
  GEOTRAIN_ASSIGN_OR_RETURN(std::set<std::string> entries, Parse(*text, path_));
  if (size_ >= 0) {
    spdlog::info("revoked workers: {} re-read, {} entries (was {})", path_, entries.size(),
                 entries_.size());
  }
  entries_ = std::move(entries);
  size_ = info.st_size;
  inode_ = info.st_ino;
  mtime_ = info.st_mtim;
  return OkStatus();
}

std::string RevokedWorkers::RevocationOf(const std::string& name, const std::string& fingerprint) {
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t now = clock_->NowMonotonicMs();
  if (now - last_check_ms_ >= kRecheckMs) {
    last_check_ms_ = now;
    if (const Status refreshed = RefreshLocked(); !refreshed.ok()) {
      spdlog::error("{}; the last good list ({} entries) stays in force", refreshed.message(),
                    entries_.size());
    }
  }
  if (!name.empty() && entries_.count(name) != 0) return "name '" + name + "'";
  if (!fingerprint.empty() && entries_.count(fingerprint) != 0) {
    return "fingerprint " + fingerprint;
  }
  return "";
}

}  // namespace geotrain::coordinator
