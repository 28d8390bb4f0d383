#include "models/data/tokenizer_fingerprint.h"

#include <string>
#include <vector>

#include "models/data/content_fingerprint.h"

namespace geotrain::models::data {

uint64_t TokenizerFingerprint(const Tokenizer& tokenizer) {
  ContentFingerprint fingerprint;
  fingerprint.Update("geotrain tokenizer fingerprint v1");
  fingerprint.UpdateU64(static_cast<uint64_t>(tokenizer.vocab_size()));
  // Only when there is one, so that BPE fingerprints (and their caches) stay what they were.
  const std::string behaviour = tokenizer.BehaviourKey();
  if (!behaviour.empty()) {
    fingerprint.Update("behaviour");
    fingerprint.UpdateU64(behaviour.size());
    fingerprint.Update(behaviour);
  }
  for (const AddedToken& added : tokenizer.added_tokens()) {
    fingerprint.UpdateU64(static_cast<uint64_t>(added.id));
    fingerprint.UpdateU64(added.special ? 1 : 0);
    fingerprint.UpdateU64(added.content.size());
    fingerprint.Update(added.content);
  }
  for (int32_t id = 0; id < tokenizer.vocab_size(); ++id) {
    fingerprint.UpdateU64(static_cast<uint64_t>(id));
    auto bytes = tokenizer.Decode(Span<const int32_t>(&id, 1));
    if (!bytes.ok()) {  // a gap in the ids
      fingerprint.UpdateU64(~0ull);
      continue;
    }
    fingerprint.UpdateU64(bytes->size());
    fingerprint.Update(*bytes);
    // The merges decide how these bytes split; a changed merge list changes some of these ids.
    const std::vector<int32_t> ids = tokenizer.EncodeOrdinary(*bytes);
    fingerprint.UpdateU64(ids.size());
    fingerprint.Update(ids.data(), ids.size() * sizeof(int32_t));
  }
  return fingerprint.Finish();
}

}  // namespace geotrain::models::data
