// Splitting a corpus file into documents: plain text or jsonl.
//
//  - Plain text: the whole file is one document. Its bytes go to the tokenizer as they are, valid
//    UTF-8 or not: GPT-2's tokenizer is byte-level, so every byte has a token and decoding gives
//    the original bytes back. Replacing invalid sequences with U+FFFD would silently change the
//    data, and refusing them would reject real-world corpora over one stray Latin-1 byte.
//  - jsonl: one JSON object per line ('\n', optionally preceded by '\r'), each with a string field
//    (`field`, "text" by default) holding the document. A line that is not valid JSON, is not an
//    object, lacks the field, or whose field is not a string is an error naming the file, the
//    1-based line and the field; so is an empty line in the middle of the file. Nothing is ever
//    skipped silently. The newline after the last line is optional. Other fields are ignored.
//    JSON strings must be valid UTF-8 (the JSON parser checks).
// Thread-safe (no shared state).
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace geotrain::models::data {

enum class SourceFormat { kText, kJsonl };

// kJsonl for names ending in ".jsonl" or ".ndjson", kText otherwise.
SourceFormat SourceFormatForPath(const std::string& path);
const char* SourceFormatName(SourceFormat format);

// Calls `on_document` for each document of `contents` (the bytes of the file `path`, which only
// names it in errors), in file order; stops at the first error.
Status ForEachDocument(std::string_view contents, const std::string& path, SourceFormat format,
                       const std::string& field,
                       const std::function<void(std::string_view document)>& on_document);

}  // namespace geotrain::models::data
