// Records which LibTorch operators run while learner code executes, through a
// global RecordFunction callback, so the grader can tell from what actually ran
// (not from the source text) whether a forbidden built-in was used or whether
// the work grows with a loop over heads.
#pragma once

#include <map>
#include <string>

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

// "name count" lines, the form the counts travel in.
std::string format_op_counts(const std::map<std::string, long>& counts);
std::map<std::string, long> parse_op_counts(const std::string& text);

}  // namespace grader
