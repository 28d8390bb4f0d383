// libFuzzer target: a jsonl corpus file (models/data/source_documents.h). ForEachDocument must end
// in a Status. The documents are decoded JSON strings, and a JSON string never decodes longer
// than its text, so together they can never exceed the input's size.
#include <cstdint>
#include <string>
#include <string_view>

#include "models/data/source_documents.h"

using namespace geotrain;
using namespace geotrain::models::data;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view contents(reinterpret_cast<const char*>(data), size);
  size_t total = 0;
  const Status status = ForEachDocument(contents, "fuzz.jsonl", SourceFormat::kJsonl, "text",
                                        [&](std::string_view document) {
                                          total += document.size();
                                          if (total > size) __builtin_trap();
                                        });
  if (!status.ok() && status.message().empty()) __builtin_trap();
  return 0;
}
