// Reaching the activation cache inside a `delta` or `delta-lowbits` codec (built by MakeCodec).
//
// The runtime calls Clear() on both ends after a checkpoint resume (caches start empty, first
// visits resend the full activation); tests compare the two ends' caches. The cache belongs to
// the codec and lives as long as it; the same single-thread rule applies.
#pragma once

#include "compression/activation_cache.h"
#include "compression/codec.h"

namespace geotrain::compression {

// The codec's cache, or nullptr if `codec` is not a delta codec.
ActivationCache* DeltaCodecCache(Codec* codec);
const ActivationCache* DeltaCodecCache(const Codec& codec);

}  // namespace geotrain::compression
