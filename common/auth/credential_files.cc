#include "common/auth/credential_files.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace geotrain::auth {
namespace {

StatusOr<std::string> ReadWhole(const CredentialFile& file, const char* what) {
  if (!file.given()) return InvalidArgument(file.origin + ": no " + what + " file given");
  std::ifstream in(file.path, std::ios::binary);
  if (!in) {
    return InvalidArgument(file.origin + ": cannot read " + what + " file " + file.path + ": " +
                           std::strerror(errno));
  }
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

StatusOr<std::string> ReadPemFile(const CredentialFile& file) {
  GEOTRAIN_ASSIGN_OR_RETURN(std::string text, ReadWhole(file, "PEM"));
  if (text.find("-----BEGIN ") == std::string::npos) {
    return InvalidArgument(file.origin + ": " + file.path +
                           " holds no PEM block (expected \"-----BEGIN ...\"; made by "
                           "`geotrain certs init`?)");
  }
  return text;
}

StatusOr<std::string> ReadTokenFile(const CredentialFile& file) {
  struct stat info {};
  if (file.given() && ::stat(file.path.c_str(), &info) == 0 &&
      (info.st_mode & (S_IRGRP | S_IROTH)) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(info.st_mode & 07777));
    return InvalidArgument(file.origin + ": " + file.path + " has mode " + mode +
                           ": a token file must not be readable by group or others (chmod 600 " +
                           file.path + ")");
  }
  GEOTRAIN_ASSIGN_OR_RETURN(std::string text, ReadWhole(file, "token"));
  if (!text.empty() && text.back() == '\n') text.pop_back();
  if (!text.empty() && text.back() == '\r') text.pop_back();
  if (text.find('\n') != std::string::npos) {
    return InvalidArgument(file.origin + ": " + file.path +
                           " has more than one line (a token "
                           "file holds the token alone)");
  }
  for (const char c : text) {
    if (c <= ' ' || c > '~') {
      return InvalidArgument(file.origin + ": " + file.path +
                             " holds a space or a non-printable character (a token is printable "
                             "ASCII without spaces)");
    }
  }
  if (text.size() < kMinTokenLength) {
    return InvalidArgument(file.origin + ": the token in " + file.path + " has " +
                           std::to_string(text.size()) + " characters; at least " +
                           std::to_string(kMinTokenLength) +
                           " are needed (`geotrain certs init` writes 64)");
  }
  return text;
}

}  // namespace geotrain::auth
