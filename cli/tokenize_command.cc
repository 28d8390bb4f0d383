#include "cli/tokenize_command.h"

#include <istream>
#include <iterator>
#include <ostream>
#include <vector>

#include "models/tokenizer/tokenizer_loaders.h"

namespace geotrain::cli {

Status RunTokenize(const TokenizeOptions& options, std::istream& in, std::ostream& out) {
  GEOTRAIN_ASSIGN_OR_RETURN(auto tokenizer, models::LoadTokenizerDirectory(options.tokenizer_dir));
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return Unavailable("stdin: read error");
  const std::vector<int32_t> ids = tokenizer->Encode(text);
  // Written by hand rather than through nlohmann: a large corpus gives millions of ids.
  std::string line = "[";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) line += ',';
    line += std::to_string(ids[i]);
  }
  line += "]\n";
  out << line;
  out.flush();
  if (!out) return Unavailable("stdout: write error");
  return OkStatus();
}

}  // namespace geotrain::cli
