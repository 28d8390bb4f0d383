#include "runtime/micro_batch_message.h"

#include <string>

#include "common/bytes.h"

namespace geotrain::runtime {
namespace {

constexpr uint32_t kMagic = 0x424D5447;  // "GTMB" little-endian
constexpr uint8_t kVersion = 1;
// More samples than any micro-batch holds; bounds what a corrupt count can make us allocate.
constexpr uint32_t kMaxSamples = 1 << 20;

const char* KindName(MessageKind kind) {
  switch (kind) {
    case MessageKind::kActivation:
      return "activation";
    case MessageKind::kGradient:
      return "gradient";
    case MessageKind::kEvalActivation:
      return "evaluation activation";
  }
  return "unknown message";
}

}  // namespace

void WriteMicroBatchHeader(const MicroBatchHeader& header, std::vector<uint8_t>* out) {
  out->clear();
  ByteWriter writer(out);
  writer.Put(kMagic);
  writer.Put(kVersion);
  writer.Put(static_cast<uint8_t>(header.kind));
  writer.Put(uint16_t{0});
  writer.Put(header.step);
  writer.Put(header.micro_batch);
  writer.Put(static_cast<uint32_t>(header.sample_ids.size()));
  writer.PutBytes(header.sample_ids.data(), header.sample_ids.size() * sizeof(uint64_t));
}

Status ParseMicroBatchMessage(Span<const uint8_t> message, MicroBatchHeader* header,
                              Span<const uint8_t>* frame) {
  ByteReader reader(message);
  uint32_t magic = 0;
  uint8_t version = 0, kind = 0;
  uint16_t reserved = 0;
  uint32_t count = 0;
  GEOTRAIN_RETURN_IF_ERROR(reader.Get(&magic, "message.magic"));
  if (magic != kMagic) return DataLoss("message.magic: not a geotrain micro-batch message");
  GEOTRAIN_RETURN_IF_ERROR(reader.Get(&version, "message.version"));
  if (version != kVersion) {
    return DataLoss("message.version: " + std::to_string(version) + " is not supported (expected " +
                    std::to_string(kVersion) + ")");
  }
  GEOTRAIN_RETURN_IF_ERROR(reader.Get(&kind, "message.kind"));
  if (kind > static_cast<uint8_t>(MessageKind::kEvalActivation)) {
    return DataLoss("message.kind: unknown kind " + std::to_string(kind));
  }
  GEOTRAIN_RETURN_IF_ERROR(reader.Get(&reserved, "message.reserved"));
  if (reserved != 0) return DataLoss("message.reserved: not zero");
  header->kind = static_cast<MessageKind>(kind);
  GEOTRAIN_RETURN_IF_ERROR(reader.Get(&header->step, "message.step"));
  GEOTRAIN_RETURN_IF_ERROR(reader.Get(&header->micro_batch, "message.micro_batch"));
  GEOTRAIN_RETURN_IF_ERROR(reader.Get(&count, "message.sample_count"));
  if (count > kMaxSamples || count * sizeof(uint64_t) > reader.remaining()) {
    return DataLoss("message.sample_count: " + std::to_string(count) +
                    " samples do not fit in the message");
  }
  Span<const uint8_t> ids;
  GEOTRAIN_RETURN_IF_ERROR(reader.GetSpan(count * sizeof(uint64_t), &ids, "message.sample_ids"));
  header->sample_ids.resize(count);
  if (count) std::memcpy(header->sample_ids.data(), ids.data(), ids.size());
  *frame = message.subspan(reader.position(), reader.remaining());
  return OkStatus();
}

Status CheckExpected(const MicroBatchHeader& header, MessageKind kind, uint64_t step,
                     uint32_t micro_batch) {
  if (header.kind == kind && header.step == step && header.micro_batch == micro_batch) {
    return OkStatus();
  }
  return DataLoss(std::string("expected the ") + KindName(kind) + " of step " +
                  std::to_string(step) + " micro-batch " + std::to_string(micro_batch) +
                  ", got the " + KindName(header.kind) + " of step " + std::to_string(header.step) +
                  " micro-batch " + std::to_string(header.micro_batch));
}

}  // namespace geotrain::runtime
