#include "net/gloo_address.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstring>

namespace geotrain::net {
namespace {

static_assert(sizeof(sockaddr_storage) == 128, "Gloo's address blob holds a sockaddr_storage");
static_assert(sizeof(ssize_t) == 8, "Gloo's address blob ends in an ssize_t");

sa_family_t FamilyOf(const uint8_t* blob) {
  sa_family_t family = 0;
  std::memcpy(&family, blob + offsetof(sockaddr_storage, ss_family), sizeof(family));
  return family;
}

bool IsIp(const uint8_t* blob) {
  const sa_family_t family = FamilyOf(blob);
  return family == AF_INET || family == AF_INET6;
}

bool IsBlobList(const std::vector<uint8_t>& value) {
  if (value.empty() || value.size() % kGlooAddressBytes != 0) return false;
  for (size_t at = 0; at < value.size(); at += kGlooAddressBytes) {
    if (!IsIp(value.data() + at)) return false;
  }
  return true;
}

// Rebuilds the sockaddr of one blob from its meaningful fields into zeroed storage.
void ZeroOne(uint8_t* blob) {
  sockaddr_storage clean;
  std::memset(&clean, 0, sizeof(clean));
  if (FamilyOf(blob) == AF_INET) {
    sockaddr_in in;
    std::memcpy(&in, blob, sizeof(in));
    auto* out = reinterpret_cast<sockaddr_in*>(&clean);
    out->sin_family = AF_INET;
    out->sin_port = in.sin_port;
    out->sin_addr = in.sin_addr;
  } else {
    sockaddr_in6 in;
    std::memcpy(&in, blob, sizeof(in));
    auto* out = reinterpret_cast<sockaddr_in6*>(&clean);
    out->sin6_family = AF_INET6;
    out->sin6_port = in.sin6_port;
    out->sin6_flowinfo = in.sin6_flowinfo;
    out->sin6_addr = in.sin6_addr;
    out->sin6_scope_id = in.sin6_scope_id;
  }
  std::memcpy(blob, &clean, sizeof(clean));  // the sequence number after it stays
}

}  // namespace

bool ZeroGlooAddressPadding(std::vector<uint8_t>* value) {
  if (!IsBlobList(*value)) return false;
  for (size_t at = 0; at < value->size(); at += kGlooAddressBytes) ZeroOne(value->data() + at);
  return true;
}

std::string DescribeGlooAddress(const std::vector<uint8_t>& value, size_t index) {
  const size_t at = index * kGlooAddressBytes;
  if (at + kGlooAddressBytes > value.size() || !IsIp(value.data() + at)) return "";
  char text[INET6_ADDRSTRLEN] = {};
  if (FamilyOf(value.data() + at) == AF_INET) {
    sockaddr_in in;
    std::memcpy(&in, value.data() + at, sizeof(in));
    if (inet_ntop(AF_INET, &in.sin_addr, text, sizeof(text)) == nullptr) return "";
    return std::string(text) + ":" + std::to_string(ntohs(in.sin_port));
  }
  sockaddr_in6 in;
  std::memcpy(&in, value.data() + at, sizeof(in));
  if (inet_ntop(AF_INET6, &in.sin6_addr, text, sizeof(text)) == nullptr) return "";
  return "[" + std::string(text) + "]:" + std::to_string(ntohs(in.sin6_port));
}

}  // namespace geotrain::net
