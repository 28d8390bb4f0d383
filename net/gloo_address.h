// Gloo's TCP address blobs: what a rank publishes in the rendezvous store so that its peers can
// connect to it, read and cleaned up by geotrain (net/rendezvous_store.h).
//
// Layout (libgloo 0.0~git20220518, Debian bookworm; gloo/transport/tcp/address.h): one blob per
// peer, kGlooAddressBytes each, concatenated in peer order (ranks other than the publisher,
// ascending). A blob is Gloo's trivially copyable Address::Impl: a sockaddr_storage (128 bytes)
// then a sequence number (ssize_t). Gloo fills the sockaddr_storage with getsockname() on an
// uninitialised stack variable and copies all of it, so the bytes past the address (and
// sockaddr_in's sin_zero) are whatever the stack held: process memory published to every rank
// that may read the store. ZeroGlooAddressPadding clears them before the blob leaves the process.
//
// Pure functions over bytes; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace geotrain::net {

// sizeof(gloo::transport::tcp::Address::Impl) in the libgloo this project links.
inline constexpr size_t kGlooAddressBytes = 128 + 8;

// If `value` is a list of Gloo address blobs (a positive multiple of kGlooAddressBytes, each an
// AF_INET or AF_INET6 address), zeroes every byte of each blob that is not the family, port,
// address (and for IPv6 flow info and scope id) or the sequence number, and returns true. Any
// other value is left as it is (false): the store carries other keys too.
bool ZeroGlooAddressPadding(std::vector<uint8_t>* value);

// "10.0.0.2:41234" or "[fd00::2]:41234" for blob `index` of `value`, or "" when `value` has no
// such blob or it is not an IP address. For error messages.
std::string DescribeGlooAddress(const std::vector<uint8_t>& value, size_t index);

}  // namespace geotrain::net
