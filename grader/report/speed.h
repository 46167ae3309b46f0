// Speed on a GPU, for information: once every check of a grade on the GPU
// has passed, one more run times the learner's forward at the sizes of
// exercise.yaml's `speed:` against the same attention in plain LibTorch
// operations ("unfused") and LibTorch's fused scaled_dot_product_attention
// (grader/runner/speed_timer.h does the timing in the child). Speed never
// changes a verdict; a result no correct forward could give (faster than the
// GPU can move its bytes or do its arithmetic, as measured in the same run;
// the same output for different inputs; an output far from the fused
// kernel's) is flagged as suspicious.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "exercise/exercise.h"
#include "wire/messages.h"
#include "wire/wire.h"

namespace grader {

struct SpeedRow {
  std::string size;                // "B=1 H=16 N=8192 d_k=64 d_v=64"
  double learner_ms = 0;           // medians; 0: not measured
  double unfused_ms = 0;
  double fused_ms = 0;             // 0 where this LibTorch has no fused kernel
  double learner_peak_mb = -1;     // memory allocated beyond the inputs during one forward; -1: unknown
  double unfused_peak_mb = -1;
  double fused_peak_mb = -1;
  double attention_matrix_mb = 0;  // one (B, H, Nq, Nk) float32 matrix: what a flash-style kernel never stores
  std::string error;               // the learner's code failed at this size
  std::string baseline_error;      // the grader's baselines failed at this size (not the learner's doing)
  std::vector<std::string> flags;  // why the result is suspicious
};

struct SpeedReport {
  bool ran = false;
  std::string note;  // why it was not timed, or what the numbers are
  std::string device_name;
  std::string method;        // "CUDA events", ...
  double copy_gb_s = 0;      // device copy, bytes read and written per second
  double matmul_tflops = 0;  // float32 8192 x 8192 x 8192
  std::vector<SpeedRow> rows;
  bool suspicious() const;
};

// The one request of the speed run (kind "speed", float32, on `device`).
// Throws ConfigError when `speed:` does not fit the signature (a size lacks a
// dimension, the sizes give the module different constructor arguments).
wire::Record plan_speed(const Exercise& exercise, uint64_t seed, const std::string& device);

// Reads the run's response into rows, flagging what no correct forward could do.
SpeedReport read_speed(const Exercise& exercise, const wire::Record& request, const wire::CaseReply& reply);

// The table of a report, for the terminal (no colour).
std::string speed_text(const SpeedReport& report);

}  // namespace grader
