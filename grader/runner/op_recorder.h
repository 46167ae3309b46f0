// Records which LibTorch operators run while learner code executes, through a
// global RecordFunction callback, so the grader can tell from what actually ran
// (not from the source text) whether a forbidden built-in was used, whether
// the work grows with a loop over heads, and whether tensors are made on a
// fixed device or read back to the host inside forward.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "wire/trace.h"

namespace grader {

class OpRecorder {
 public:
  OpRecorder();
  ~OpRecorder();
  OpRecorder(const OpRecorder&) = delete;
  OpRecorder& operator=(const OpRecorder&) = delete;

  // Clears the counts and begins counting. `forward_marker`: the name of the
  // user scope the driver opens around learner code (grader::driver::ForwardScope),
  // inside which the device watch looks at what learner code calls.
  void start(const std::string& forward_marker = "");
  std::map<std::string, long> stop();  // op name -> calls since start()
  // What the device watch saw since start(), each once, sorted: an operator
  // that met a tensor a factory made on the CPU (no device given) with
  // tensors that follow the inputs (mixed), a value read back to the host
  // (.item(): item), a tensor on an accelerator moved to the CPU (to_host).
  std::vector<wire::DeviceEvent> device_events() const;
  // The largest storage an operator returned inside the forward scope since
  // start(); nothing when none.
  std::optional<wire::LargestOutput> largest_output() const;
  // The work of each entry into the forward scope since start(), in order:
  // the multiply-adds of matrix products and convolutions by operator name
  // (mm, addmm, bmm, baddbmm, addbmm, mv, dot, convolution, at any depth),
  // the elements of the new tensors the learner's own operator calls
  // returned, and the multiply-adds the count_computed counter saw.
  std::vector<wire::ScopeWork> scope_work() const;
  // The finite values learner code filled tensors with since start() (masked_fill, where, full, fill_),
  // each once, at most wire::kMaxFillValues.
  std::vector<double> fill_values() const;
  // Operators learner code called itself in the scope with grad mode on and
  // an input that requires grad, and the first one's name (wire::Trace::graph_ops).
  std::pair<long, std::string> graph_built() const;
  // False if learner code switched recording off or removed the callback.
  bool intact() const;
  // Called as each entry into the forward scope begins and ends (the runner's
  // heap accounting, grader/runner/heap.h); none by default.
  void on_scope(void (*entered)(), void (*left)());
  // A count of computed multiply-adds (grader/runner/blas_count.h): what it
  // grows by during each entry into the forward scope is that call's third
  // figure in scope_work(). None by default (0).
  void count_computed(uint64_t (*now)());
};

}  // namespace grader
