// Records which LibTorch operators run while learner code executes, through a
// global RecordFunction callback, so the grader can tell from what actually ran
// (not from the source text) whether a forbidden built-in was used or whether
// the work grows with a loop over heads.
#pragma once

#include <map>
#include <string>

#include "wire.h"

namespace grader {

class OpRecorder {
 public:
  OpRecorder();
  ~OpRecorder();
  OpRecorder(const OpRecorder&) = delete;
  OpRecorder& operator=(const OpRecorder&) = delete;

  void start();                        // clears the counts and begins counting
  std::map<std::string, long> stop();  // op name -> calls since start()
  // False if learner code switched recording off or removed the callback.
  bool intact() const;
};

// The counts travel as integers of the case's response record, one per
// operator under "op:<name>": length-prefixed like every wire field, so no name
// (a learner can record any name, spaces and newlines included) can shift
// another. Names longer than kMaxOpName are cut (the wire caps keys).
constexpr size_t kMaxOpName = 200;
void put_op_counts(wire::Record& response, const std::map<std::string, long>& counts);
std::map<std::string, long> op_counts(const wire::Record& response);

}  // namespace grader
