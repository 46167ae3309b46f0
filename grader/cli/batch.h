// A batch of grades (several files, a class folder, one file on several
// seeds) graded in parallel, and the merge of a class's result files into a
// gradebook: `grade EXERCISE --submission DIR`, `grade class`, `grade merge`.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "judge/grade.h"

namespace grader::cli {
namespace fs = std::filesystem;

// Each --submission value: a file, or a folder whose *.cpp files are graded.
std::vector<fs::path> expand_submissions(const std::vector<std::string>& values);

// The verdict of a report for an error that kept a grade from running.
std::string error_verdict(int exit_code);

// What `grade class` and a batch were asked for.
struct ManyRequest {
  bool class_mode;
  const std::vector<std::string>& paths;        // class: the class folder
  std::vector<fs::path> files;                  // a batch's files
  const std::vector<std::string>& submissions;  // as given
  const std::string& results;                   // --results (empty: none)
  const std::string& shard_text;                // --shard (empty: all)
  const std::vector<std::string>& class_exercises;
  int jobs;
  const std::string& format;
  // --output FORMAT=DIR: each submission's report in FORMAT, in DIR.
  std::vector<std::pair<std::string, fs::path>> outputs;
  std::vector<uint64_t> seeds;  // --seeds: each submission on each (empty: once)
};

// A class or a batch: its items (this shard's), graded in parallel, their
// result files and the shard's manifest, then one table or JSON array.
int grade_many(ManyRequest request, grader::GradeOptions options);

// `grade merge RESULTS... --gradebook DIR`: exit 0 when the gradebook is
// complete, 3 (a grading fault, never a learner's) when something is missing.
int merge(const std::vector<std::string>& results, const std::string& gradebook_dir);

}  // namespace grader::cli
