// Records which LibTorch operators run while learner code executes, through a
// global RecordFunction callback, so the grader can tell from what actually ran
// (not from the source text) whether a forbidden built-in was used, whether
// the work grows with a loop over heads, and whether tensors are made on a
// fixed device or read back to the host inside forward.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "wire/wire.h"

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
  // What the device watch saw since start(), one line each:
  //   "mixed <op> <factory>"  <op> met a tensor <factory> made on the CPU (no
  //                           device given) with tensors that follow the inputs
  //   "item <op>"             a value read back to the host (.item())
  //   "to_host <op>"          a tensor on an accelerator moved to the CPU
  std::vector<std::string> device_events() const;
  // The largest storage an operator returned inside the forward scope since
  // start(): "<bytes> <op> <size> <size> ...", empty when none.
  std::string largest_output() const;
  // The work of each entry into the forward scope since start(), in order, one
  // "<macs>/<elements>/<computed>" per learner call, space-separated: the
  // multiply-adds of matrix products and convolutions by operator name (mm,
  // addmm, bmm, baddbmm, addbmm, mv, dot, convolution, at any depth), the
  // elements of the new tensors the learner's own operator calls returned,
  // and the multiply-adds the count_computed counter saw. Empty when none.
  std::string scope_work() const;
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

// The counts travel as integers of the case's response record, one per
// operator under "op:<name>": length-prefixed like every wire field, so no name
// (a learner can record any name, spaces and newlines included) can shift
// another. Names longer than kMaxOpName are cut (the wire caps keys).
constexpr size_t kMaxOpName = 200;
void put_op_counts(wire::Record& response, const std::map<std::string, long>& counts);
std::map<std::string, long> op_counts(const wire::Record& response);

// The work of each entry into the forward scope, read back from a response's
// "scope_work" (OpRecorder::scope_work): in order, up to the first entry that
// does not read as one (computed is 0 where the runner counted none).
struct ScopeWorkEntry {
  double macs = 0, elements = 0, computed = 0;
};
std::vector<ScopeWorkEntry> scope_work_of(const wire::Record& response);

}  // namespace grader
