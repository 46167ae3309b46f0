// What the runner recorded of one case's run (runner/op_recorder.h), as data:
// the operators that ran, what the device watch saw, the largest tensor made
// inside forward, the work of each learner call, the heap, and whether
// recording stayed on. The runner puts it in the case's response
// (put_trace); the grader's checks read it back (trace_of). The one place
// that knows how it travels.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "wire/wire.h"

namespace grader::wire {

// Something forward did that a GPU would punish.
struct DeviceEvent {
  enum class Kind { mixed, item, to_host };
  Kind kind = Kind::mixed;
  std::string op;       // the operator ("aten::masked_fill")
  std::string factory;  // mixed: the factory that made the CPU tensor ("aten::ones"); else empty
  bool operator<(const DeviceEvent& other) const;
  bool operator==(const DeviceEvent& other) const;
};

// The largest storage an operator returned inside the forward scope.
struct LargestOutput {
  int64_t bytes = 0;
  std::string op;
  std::vector<int64_t> sizes;
};

// The work of one entry into the forward scope (one learner call): the
// multiply-adds of matrix products and convolutions, the elements of the new
// tensors its own operator calls returned, the multiply-adds the BLAS counter
// saw (0 where none was counted), how many operators the learner's code
// called itself (depth 0, whatever their names: a loop shows in it), and the
// CPU time the process spent in the call (nanoseconds, the kernel's clock of
// every thread: work in loops of the learner's own shows in it).
struct ScopeWork {
  double macs = 0, elements = 0, computed = 0, calls = 0, cpu_ns = 0;
};

struct Trace {
  std::map<std::string, long> op_counts;     // operator name -> calls
  std::vector<DeviceEvent> device_events;    // sorted, each once
  std::optional<LargestOutput> largest_output;
  std::vector<ScopeWork> scope_work;         // in call order
  // The finite values learner code filled with (the scalar of masked_fill,
  // where, full, fill_), each once, at most kMaxFillValues: a
  // dtype-independent -1e9 cannot hold in float16, measured where float16
  // itself cannot run.
  std::vector<double> fill_values;
  int64_t heap_growth = 0;                   // bytes the heap grew by inside forward (runner/heap.h)
  int64_t static_bytes = 0;                  // bytes of the learner library's static data
  bool recording_intact = false;             // operator recording still on at the end
  // Operators the learner's code called itself inside the scope with grad
  // mode on and an input that requires grad: an autograd graph built (where
  // the code runs inside a custom Function's forward or backward, whose
  // grad mode autograd switches off, it switched it on). The first one's name.
  int64_t graph_ops = 0;
  std::string graph_op;
};

// Operator names longer than this are cut (the wire caps keys).
constexpr size_t kMaxOpName = 200;
constexpr size_t kMaxFillValues = 8;

// Writes `trace` into a case's response. Operator counts travel as integers
// "op:<name>", length-prefixed like every wire field, so no name (a learner
// can record any name, spaces and newlines included) can shift another.
void put_trace(Record& response, const Trace& trace);
// Reads it back; what is missing or unreadable is left empty (a response
// from code that stopped early has no trace).
Trace trace_of(const Record& response);
// The trace in a response, its fields taken out of the record; none where
// the response has none of them (a timed run is not traced).
std::optional<Trace> take_trace(Record& response);

}  // namespace grader::wire
