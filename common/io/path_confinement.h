// PathConfinement: keeps the paths a job names inside the directories a worker's operator gave it
// (the --data-root, plus any --allow-path), so that a job spec cannot read or write the rest of
// the worker's file system (issue 20; docs/security.md, "files on the worker").
//
// Resolve(field, path) is the one check: a relative path is taken relative to the root, an
// absolute one as it is; the result is normalised lexically ("a/../b" is "b", so a `..` can
// never hide behind a directory that does not exist yet) and then its longest existing prefix is
// resolved with every symlink followed (std::filesystem::weakly_canonical). That canonical path
// must be the root or an allowed directory or lie below one of them; otherwise the error names
// the job-spec field, the path as written, where it leads and why. A symlink inside the root that
// points outside is therefore refused, one that stays inside is fine, and a leaf that does not
// exist yet (a checkpoint directory the job will create) is checked through its parent.
//
// Callers use the returned canonical path from then on, never the one written, so what was
// checked is what is opened (up to a symlink planted afterwards by someone who can already write
// inside the root, which is outside this model). Only the path itself is resolved: files found
// later inside a confined directory (a model directory's *.safetensors) are the operator's.
//
// Resolution reads file metadata only (stat, readlink), through std::filesystem: io::Env has no
// path resolution, and nothing here writes. Immutable after Create; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace geotrain::io {

class PathConfinement {
 public:
  // `root` and each of `allowed` must be existing directories; they are kept canonical (symlinks
  // resolved). Errors name the directory: "data root /x: not a directory".
  static StatusOr<PathConfinement> Create(const std::string& root,
                                          const std::vector<std::string>& allowed = {});

  // The canonical absolute path `path` stands for, when it lies inside the root or an allowed
  // directory. `field` names where the path came from ("data.train[0]"); every error starts with
  // it: InvalidArgument "data.train[0]: ../x resolves to /x, outside the data root /srv/geotrain
  // (and the allowed paths /mnt/ckpt)". An empty path is an error too (callers skip unset fields).
  StatusOr<std::string> Resolve(const std::string& field, const std::string& path) const;

  const std::string& root() const { return root_; }
  const std::vector<std::string>& allowed() const { return allowed_; }

 private:
  PathConfinement(std::string root, std::vector<std::string> allowed)
      : root_(std::move(root)), allowed_(std::move(allowed)) {}
  bool Contains(const std::string& canonical) const;
  std::string Where() const;  // "the data root R (and the allowed paths A, B)"

  std::string root_;
  std::vector<std::string> allowed_;
};

}  // namespace geotrain::io
