#include "runtime/frame_key_file.h"

#include <algorithm>

#include <openssl/rand.h>
#include <sys/stat.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

namespace geotrain::runtime {
namespace {

constexpr size_t kKeyBytes = 32;
constexpr size_t kRunNameBytes = 16;
constexpr const char* kRunNameKey = "geotrain-run/run-name";

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string Hex(const unsigned char* bytes, size_t size) {
  static const char* kDigits = "0123456789abcdef";
  std::string text;
  for (size_t i = 0; i < size; ++i) {
    text += kDigits[bytes[i] >> 4];
    text += kDigits[bytes[i] & 15];
  }
  return text;
}

}  // namespace

StatusOr<std::string> ReadFrameKeyFile(const std::string& path, std::string* warning) {
  const std::string flag = "--frame-key-file " + path;
  std::ifstream in(path, std::ios::binary);
  if (!in) return InvalidArgument(flag + ": cannot read: " + std::strerror(errno));
  std::ostringstream contents;
  contents << in.rdbuf();
  const std::string bytes = contents.str();
  if (warning != nullptr) {
    warning->clear();
    struct stat info {};
    if (::stat(path.c_str(), &info) == 0 && (info.st_mode & 077) != 0) {
      *warning = flag + ": others may read the key (chmod 600 it)";
    }
  }
  if (bytes.size() == kKeyBytes) return bytes;

  size_t begin = 0;
  size_t end = bytes.size();
  while (begin < end && std::isspace(static_cast<unsigned char>(bytes[begin]))) ++begin;
  while (end > begin && std::isspace(static_cast<unsigned char>(bytes[end - 1]))) --end;
  const std::string expected = "expected 32 raw bytes or 64 hex digits";
  if (end - begin != 2 * kKeyBytes) {
    return InvalidArgument(flag + ": " + std::to_string(bytes.size()) + " bytes; " + expected);
  }
  std::string key(kKeyBytes, '\0');
  for (size_t i = 0; i < kKeyBytes; ++i) {
    const int high = HexValue(bytes[begin + 2 * i]);
    const int low = HexValue(bytes[begin + 2 * i + 1]);
    if (high < 0 || low < 0) {
      return InvalidArgument(flag + ": 64 characters but not all hex digits; " + expected);
    }
    key[i] = static_cast<char>(high * 16 + low);
  }
  return key;
}

StatusOr<std::string> AgreeOnRunName(c10d::Store& store, int rank, net::Timeout timeout) {
  try {
    if (rank == 0) {
      unsigned char random[kRunNameBytes];
      if (RAND_bytes(random, sizeof(random)) != 1) {
        return Internal("cannot draw a run name: the random generator failed");
      }
      const std::string name = Hex(random, sizeof(random));
      store.set(kRunNameKey, std::vector<uint8_t>(name.begin(), name.end()));
      return name;
    }
    store.setTimeout(timeout);
    // c10d reads 0 ms as "no timeout"; never pass less than 1 ms.
    store.wait({kRunNameKey}, std::max(timeout, net::Timeout(1)));
    const std::vector<uint8_t> name = store.get(kRunNameKey);
    return std::string(name.begin(), name.end());
  } catch (const std::exception& e) {
    std::string what = e.what();
    what = what.substr(0, what.find('\n'));
    const std::string message = "agreeing on the run's name through the rendezvous store";
    // c10d's stores say "Wait timeout", "Socket Timeout" or "timed out".
    if (what.find("imeout") != std::string::npos || what.find("timed out") != std::string::npos) {
      return Status(StatusCode::kDeadlineExceeded, message + ": rank 0 did not publish it within " +
                                                       std::to_string(timeout.count()) +
                                                       " ms: " + what);
    }
    return Unavailable(message + ": " + what);
  }
}

}  // namespace geotrain::runtime
