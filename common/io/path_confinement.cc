#include "common/io/path_confinement.h"

#include <filesystem>
#include <system_error>

namespace geotrain::io {
namespace fs = std::filesystem;
namespace {

// `dir` as a canonical directory; `what` names it in errors.
StatusOr<std::string> CanonicalDirectory(const std::string& what, const std::string& dir) {
  if (dir.empty()) return InvalidArgument(what + ": empty");
  std::error_code ec;
  const fs::path canonical = fs::canonical(fs::absolute(dir, ec), ec);
  if (ec) return InvalidArgument(what + " " + dir + ": " + ec.message());
  if (!fs::is_directory(canonical, ec)) {
    return InvalidArgument(what + " " + dir + ": not a directory");
  }
  return canonical.string();
}

// `inner` is `outer` or below it; both canonical, so a prefix test on whole components is enough.
bool IsWithin(const std::string& inner, const std::string& outer) {
  if (outer == "/") return true;
  if (inner.compare(0, outer.size(), outer) != 0) return false;
  return inner.size() == outer.size() || inner[outer.size()] == '/';
}

}  // namespace

StatusOr<PathConfinement> PathConfinement::Create(const std::string& root,
                                                  const std::vector<std::string>& allowed) {
  GEOTRAIN_ASSIGN_OR_RETURN(std::string canonical_root, CanonicalDirectory("data root", root));
  std::vector<std::string> canonical_allowed;
  for (const std::string& dir : allowed) {
    GEOTRAIN_ASSIGN_OR_RETURN(std::string canonical, CanonicalDirectory("allowed path", dir));
    canonical_allowed.push_back(std::move(canonical));
  }
  return PathConfinement(std::move(canonical_root), std::move(canonical_allowed));
}

StatusOr<std::string> PathConfinement::Resolve(const std::string& field,
                                               const std::string& path) const {
  if (path.empty()) return InvalidArgument(field + ": empty path");
  if (path.find('\0') != std::string::npos) {
    return InvalidArgument(field + ": the path holds a NUL byte");
  }
  const fs::path written(path);
  // Lexical first: afterwards no ".." is left to walk out of a directory that does not exist yet
  // (weakly_canonical stops following the file system at the first missing component).
  const fs::path joined =
      (written.is_absolute() ? written : fs::path(root_) / written).lexically_normal();
  std::error_code ec;
  fs::path resolved = fs::weakly_canonical(joined, ec);
  if (ec) return InvalidArgument(field + ": " + path + ": cannot resolve: " + ec.message());
  std::string canonical = resolved.string();
  // weakly_canonical keeps a trailing separator of the input ("dir/"); containment and callers
  // want the directory's own name.
  while (canonical.size() > 1 && canonical.back() == '/') canonical.pop_back();
  // weakly_canonical treats a symlink whose target does not exist as a missing leaf, so
  // "root/link" with link -> /etc/new would pass and the job would then create /etc/new
  // through it. The first missing component must be missing itself, not a dangling link.
  fs::path prefix;
  for (const fs::path& part : fs::path(canonical)) {
    prefix /= part;
    if (fs::exists(prefix, ec)) continue;
    if (fs::is_symlink(fs::symlink_status(prefix, ec))) {
      return InvalidArgument(field + ": " + path + " goes through " + prefix.string() +
                             ", a symlink to a path that does not exist; refused, since what it "
                             "would create could lie anywhere");
    }
    break;
  }
  if (!Contains(canonical)) {
    return InvalidArgument(field + ": " + path + " resolves to " + canonical + ", outside " +
                           Where() + "; a worker reads and writes only there (docs/security.md)");
  }
  return canonical;
}

bool PathConfinement::Contains(const std::string& canonical) const {
  if (IsWithin(canonical, root_)) return true;
  for (const std::string& dir : allowed_) {
    if (IsWithin(canonical, dir)) return true;
  }
  return false;
}

std::string PathConfinement::Where() const {
  std::string text = "the data root " + root_;
  if (allowed_.empty()) return text;
  text += " (and the allowed paths";
  for (size_t i = 0; i < allowed_.size(); ++i) text += (i == 0 ? " " : ", ") + allowed_[i];
  return text + ")";
}

}  // namespace geotrain::io
