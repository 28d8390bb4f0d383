// CodecChange: adaptive compression's new bits for one rank's sends, and the file that carries
// them from the worker daemon to the running task.
//
// The coordinator sends a rank a ConfigChange (proto/geotrain/v1/job.proto); the daemon appends
// it to the task's config-changes.jsonl as one JSON line (CodecChangeLine), and the training
// process polls that file before every step (CodecChangeFile) and hands what is new to
// StageRuntime::ScheduleCodecChange. A file rather than a pipe or a socket: it survives either
// side restarting, it is a plain record of what was asked, and geotrain-run takes the same file
// (--config-changes) without a coordinator.
//
// One line:
//   {"effective_step": 12, "forward_bits": 4, "backward_bits": 3, "dp_bits": 2,
//    "dp_topk_ratio": 0.1, "reason": "link 1 -> 2 at 6.1 MB/s"}
// effective_step is required (the 1-based step that first uses the new settings, as in the step
// reports); the others are optional and 0 (or absent) keeps the current value.
//
// LibTorch-free (library geotrain_runtime_config). The free functions are thread-safe; a
// CodecChangeFile belongs to one thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "compression/codec_config.h"
#include "runtime/stage_assignment.h"

namespace geotrain::runtime {

struct CodecChange {
  int64_t effective_step = 0;  // the first step (1-based) that uses the new settings
  uint32_t forward_bits = 0;   // this rank's activations to stage + 1; 0: keep
  uint32_t backward_bits = 0;  // its gradients to stage - 1; 0: keep
  uint32_t dp_bits = 0;        // cocktail quant_bits of its data-parallel sync; 0: keep
  double dp_topk_ratio = 0;    // cocktail topk_ratio; 0: keep
  std::string reason;          // for the logs
};

// Parses one line. Strict, so that a mistake is seen rather than half applied: unknown keys,
// wrong types, bits outside 2..8, a ratio outside (0, 1], a negative or missing effective_step
// and a change that changes nothing are errors naming the key ("forward_bits: 9 is outside
// 2..8").
StatusOr<CodecChange> ParseCodecChangeLine(const std::string& json_line);

// The change as one JSON line without the newline; ParseCodecChangeLine reads it back. Keys
// that keep their value (0) are left out.
std::string CodecChangeLine(const CodecChange& change);

// `config` with its width set to `bits` (2..8): fixpoint, delta and delta-lowbits take it as
// `bits`; tah as `high_bits`, its `low_bits` becoming min(low_bits, bits - 1) but at least 2.
// Every other codec has no single width to change: FailedPrecondition naming the codec. The
// result passes CodecConfig::Validate().
StatusOr<compression::CodecConfig> WithPipelineBits(const compression::CodecConfig& config,
                                                    uint32_t bits);

// The data-parallel settings with cocktail's quant_bits / topk_ratio replaced (0 keeps one).
// Other modes have no codec to change: FailedPrecondition naming the mode.
StatusOr<DataParallelSettings> WithDataParallelChange(const DataParallelSettings& settings,
                                                      uint32_t quant_bits, double topk_ratio);

// One complete line of the file, read by a Poll.
struct CodecChangeFileLine {
  int64_t number = 0;  // 1-based line number in the file
  Status status;       // why the line is not a change; OK: `change` holds it
  CodecChange change;
};

// Reads the changes appended to a file since the previous Poll. It keeps its byte offset, so
// each complete line is returned once; a last line without its newline yet waits for the next
// Poll (the writer may be mid-write). A missing file means no changes yet. Blank lines are
// skipped. A bad line comes back with its error and is not read again: the caller logs it and
// training goes on.
class CodecChangeFile {
 public:
  explicit CodecChangeFile(std::string path) : path_(std::move(path)) {}

  // The lines completed since the previous call, in file order. An error only when the file
  // exists but cannot be read (or shrank, which an append-only file never does: reading then
  // goes on from its new end).
  StatusOr<std::vector<CodecChangeFileLine>> Poll();

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  uint64_t offset_ = 0;     // bytes consumed: always just after a newline
  int64_t lines_read_ = 0;  // complete lines consumed
};

}  // namespace geotrain::runtime
