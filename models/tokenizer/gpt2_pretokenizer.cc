#include "models/tokenizer/gpt2_pretokenizer.h"

#include "common/utf8.h"
#include "models/tokenizer/unicode_classes.h"

namespace geotrain::models {
namespace {

// Length of the contraction ('s 't 're 've 'm 'll 'd) starting at text[pos], or 0. Comparing bytes
// is exact: in UTF-8 an ASCII byte always is that ASCII character.
size_t ContractionLength(std::string_view text, size_t pos) {
  if (text[pos] != '\'' || pos + 1 >= text.size()) return 0;
  const char a = text[pos + 1];
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if (pos + 2 >= text.size()) return 0;
  const char b = text[pos + 2];
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  return 0;
}

struct ClassifiedCodePoint {
  CodePointClass klass;
  size_t length;
};

ClassifiedCodePoint ClassifyAt(std::string_view text, size_t pos) {
  const DecodedCodePoint d = DecodeUtf8(text, pos);
  return {ClassifyCodePoint(d.code_point), d.length};
}

// End of the run of `klass` characters starting at `pos`.
size_t RunEnd(std::string_view text, size_t pos, CodePointClass klass) {
  while (pos < text.size()) {
    const ClassifiedCodePoint c = ClassifyAt(text, pos);
    if (c.klass != klass) break;
    pos += c.length;
  }
  return pos;
}

}  // namespace

void SplitGpt2Pretokens(std::string_view text, std::vector<std::string_view>* pieces) {
  size_t pos = 0;
  while (pos < text.size()) {
    // 's|'t|'re|'ve|'m|'ll|'d
    if (const size_t n = ContractionLength(text, pos)) {
      pieces->push_back(text.substr(pos, n));
      pos += n;
      continue;
    }
    const ClassifiedCodePoint first = ClassifyAt(text, pos);
    // ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`: the class of the run is that of the first
    // character after an optional single leading space.
    size_t run_start = pos;
    CodePointClass run_class = first.klass;
    if (text[pos] == ' ' && pos + 1 < text.size()) {
      const ClassifiedCodePoint next = ClassifyAt(text, pos + 1);
      if (next.klass != CodePointClass::kWhitespace) {
        run_start = pos + 1;
        run_class = next.klass;
      }
    }
    if (run_class != CodePointClass::kWhitespace) {
      const size_t end = RunEnd(text, run_start, run_class);
      pieces->push_back(text.substr(pos, end - pos));
      pos = end;
      continue;
    }
    // `\s+(?!\S)` then `\s+`: a white-space run, minus its last character when a non-space follows
    // and the run has more than one character.
    size_t end = pos;
    size_t last_start = pos;
    while (end < text.size()) {
      const ClassifiedCodePoint c = ClassifyAt(text, end);
      if (c.klass != CodePointClass::kWhitespace) break;
      last_start = end;
      end += c.length;
    }
    if (end < text.size() && last_start > pos) end = last_start;
    pieces->push_back(text.substr(pos, end - pos));
    pos = end;
  }
}

}  // namespace geotrain::models
