#include "common/auth/credential_files.h"

#include <sys/stat.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
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

std::string TokenWeakness(const std::string& token) {
  bool digit = false, lower = false, upper = false, other = false;
  bool seen[128] = {};
  size_t distinct = 0;
  size_t consecutive = 0;  // adjacent pairs that step by +-1 ("ab", "98")
  for (size_t i = 0; i < token.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(token[i]);
    digit |= std::isdigit(c) != 0;
    lower |= std::islower(c) != 0;
    upper |= std::isupper(c) != 0;
    other |= std::ispunct(c) != 0;
    if (c < 128 && !seen[c]) {
      seen[c] = true;
      ++distinct;
    }
    if (i > 0 && std::abs(static_cast<int>(c) - static_cast<unsigned char>(token[i - 1])) == 1) {
      ++consecutive;
    }
  }
  const int alphabet = (digit ? 10 : 0) + (lower ? 26 : 0) + (upper ? 26 : 0) + (other ? 32 : 0);
  const double bits = alphabet > 1 ? static_cast<double>(token.size()) * std::log2(alphabet) : 0;
  if (bits < kMinTokenBits) {
    char text[160];
    std::snprintf(text, sizeof(text),
                  "%zu characters from an alphabet of %d give about %.0f bits; at least %.0f are "
                  "needed",
                  token.size(), alphabet, bits, kMinTokenBits);
    return text;
  }
  if (distinct < kMinDistinctTokenCharacters) {
    return "only " + std::to_string(distinct) + " different characters (at least " +
           std::to_string(kMinDistinctTokenCharacters) + " are needed)";
  }
  for (size_t period = 1; period <= token.size() / 2; ++period) {
    if (token.compare(period, std::string::npos, token, 0, token.size() - period) == 0) {
      return "it repeats a pattern of " + std::to_string(period) + " characters";
    }
  }
  if (token.size() > 1 && consecutive * 2 >= token.size() - 1) {
    return "it is mostly runs of consecutive characters (\"abcd\", \"1234\")";
  }
  return "";
}

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
  if (const std::string weakness = TokenWeakness(text); !weakness.empty()) {
    return InvalidArgument(file.origin + ": the token in " + file.path + " is too easy to guess: " +
                           weakness + " (use `geotrain certs init`'s, or `openssl rand -hex 32`)");
  }
  return text;
}

}  // namespace geotrain::auth
