// The statement in two layers (grader/exercise/statement.h): which sections are held
// back, and that every exercise's statement has a task to show and checks to hold back.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "project_root.h"
#include "exercise/statement.h"

namespace {
namespace fs = std::filesystem;

TEST(Statement, SpoilerHeadings) {
  const struct {
    const char* heading;
    bool spoiler;
  } rows[] = {
      {"The task", false},
      {"The interface", false},
      {"How the grader runs it", false},
      {"How to run it", false},
      {"What the grader checks", true},
      {"What the grader checks (and why)", true},
      {"Follow-up questions an interviewer asks", true},
      {"", false},
  };
  for (const auto& row : rows) EXPECT_EQ(grader::is_spoiler(row.heading), row.spoiler) << row.heading;
}

TEST(Statement, SectionsAndWhatIsHeldBack) {
  const std::string text =
      "# ex: title\nintro\n## The task\ndo it\n```\n## not a heading\n```\n## What the grader checks\nsecret\n"
      "## How to run it\n./grade ex\n";
  const auto sections = grader::statement_sections(text);
  ASSERT_EQ(sections.size(), 4u);
  EXPECT_EQ(sections[0].heading, "");
  EXPECT_EQ(sections[1].heading, "The task");
  EXPECT_NE(sections[1].text.find("## not a heading"), std::string::npos);
  EXPECT_EQ(sections[2].heading, "What the grader checks");
  const auto shown = grader::statement_text(text, "ex", false);
  EXPECT_EQ(shown.find("secret"), std::string::npos);
  EXPECT_NE(shown.find("do it"), std::string::npos);
  EXPECT_NE(shown.find("./grade ex"), std::string::npos);
  EXPECT_NE(shown.find("./grade show ex --checks"), std::string::npos);
  const auto all = grader::statement_text(text, "ex", true);
  EXPECT_NE(all.find("secret"), std::string::npos);
  EXPECT_EQ(all.find("--checks"), std::string::npos);
}

TEST(Statement, EveryExerciseHasATaskAndHoldsItsChecksBack) {
  for (const auto& entry : fs::directory_iterator(grader::test_support::project_root() / "exercises")) {
    const auto readme = entry.path() / "README.md";
    if (!fs::is_regular_file(readme)) continue;
    std::stringstream text;
    text << std::ifstream(readme).rdbuf();
    bool task = false, held = false;
    for (const auto& section : grader::statement_sections(text.str())) {
      task |= section.heading == "The task";
      held |= grader::is_spoiler(section.heading);
    }
    EXPECT_TRUE(task) << readme << ": no \"## The task\" section";
    EXPECT_TRUE(held) << readme << ": no \"## What the grader checks\" section to hold back";
  }
}

}  // namespace
