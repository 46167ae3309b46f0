// The note on a compile that including all of LibTorch's API made slow
// (grader/judge/compile_note.h): when it is given, and the timings it rests on.
#include "judge/compile_note.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

namespace grader {
namespace {
namespace fs = std::filesystem;

TEST(CompileNote, OnlyWhereTheWholeApiMadeItSlow) {
  struct Row {
    bool whole_api;
    double seconds;
    std::optional<double> header_only;
    bool noted;
  };
  const Row rows[] = {
      {true, 5.0, 0.6, true},            // the case the note is for
      {false, 5.0, 0.6, false},          // slow, but not for its include
      {true, 5.0, std::nullopt, false},  // nothing to compare with on this machine yet
      {true, 1.1, 0.6, false},           // under twice as slow
      {true, 1.5, 0.6, false},           // twice as slow, but under a second more
      {true, 1.8, 0.7, true},            // both
      {true, 0.2, 0.05, false},          // four times, but moments
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(::testing::Message() << row.whole_api << " " << row.seconds);
    const auto note = include_note(row.whole_api, row.seconds, row.header_only, "mhsa.h");
    EXPECT_EQ(!note.empty(), row.noted) << note;
    if (!note.empty()) {
      EXPECT_NE(note.find("\"mhsa.h\""), std::string::npos) << note;
      EXPECT_NE(note.find("<torch/torch.h>"), std::string::npos) << note;
    }
  }
}

TEST(CompileNote, TimesAreKeptPerExerciseAndInclude) {
  const auto dir = fs::temp_directory_path() / ("grader-compile-note-" + std::to_string(getpid()));
  fs::remove_all(dir);
  const auto file = dir / "cache" / "compile-times.json";
  EXPECT_FALSE(load_compile_times(file, "exercise_mhsa").header_only);  // no file yet
  record_compile_time(file, "exercise_mhsa", false, 0.5);
  record_compile_time(file, "exercise_mhsa", true, 3.0);
  record_compile_time(file, "exercise_sdpa", false, 0.4);
  record_compile_time(file, "exercise_mhsa", false, 0.6);  // the latest wins
  const auto mhsa = load_compile_times(file, "exercise_mhsa");
  EXPECT_EQ(mhsa.header_only, 0.6);
  EXPECT_EQ(mhsa.whole_api, 3.0);
  EXPECT_EQ(load_compile_times(file, "exercise_sdpa").header_only, 0.4);
  EXPECT_FALSE(load_compile_times(file, "exercise_sdpa").whole_api);
  std::ofstream(file) << "{ not json";  // a damaged memo is nothing known, and is replaced
  EXPECT_FALSE(load_compile_times(file, "exercise_mhsa").header_only);
  record_compile_time(file, "exercise_mhsa", false, 0.7);
  EXPECT_EQ(load_compile_times(file, "exercise_mhsa").header_only, 0.7);
  EXPECT_EQ(std::distance(fs::directory_iterator(file.parent_path()), fs::directory_iterator()), 1);  // no leftovers
  fs::remove_all(dir);
}

}  // namespace
}  // namespace grader
