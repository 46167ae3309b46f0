// The statement in two layers (grader/exercise/statement.h): which sections are held
// back, and that every exercise's statement has a task to show and checks to hold back.
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "project_root.h"
#include "exercise/exercise.h"
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
      {"The steps", true},
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

// What the statement shows (its task and interface) and the interface header
// state the contract, not the answers (issue 50): no focus point's giveaway
// phrase (exercise.yaml) appears in them, compared without case, without
// backticks and with runs of blanks as one space; and every exercise lists some phrases to check.
std::string normalised(const std::string& text) {
  std::string out;
  bool blank = false;
  for (char c : text) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      blank = true;
      continue;
    }
    if (c == '`') continue;  // "hide key `j`" says what "hide key j" says
    if (blank && !out.empty()) out += ' ';
    blank = false;
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

TEST(Statement, TaskInterfaceAndHeaderGiveNoAnswerAway) {
  const auto root = grader::test_support::project_root() / "exercises";
  for (const auto& id : grader::list_exercises(root)) {
    const auto exercise = grader::load_exercise(root / id);
    std::stringstream readme, header;
    readme << std::ifstream(exercise.dir / "README.md").rdbuf();
    header << std::ifstream(exercise.dir / exercise.interface_header).rdbuf();
    std::string shown;
    for (const auto& section : grader::statement_sections(readme.str())) {
      if (section.heading == "The task" || section.heading == "The interface") shown += section.text;
    }
    const auto places = std::vector<std::pair<std::string, std::string>>{
        {"README.md (task and interface)", normalised(shown)}, {exercise.interface_header, normalised(header.str())}};
    size_t phrases = 0;
    for (const auto& point : exercise.focus_points) {
      for (const auto& phrase : point.giveaways) {
        ++phrases;
        for (const auto& [where, text] : places) {
          EXPECT_EQ(text.find(normalised(phrase)), std::string::npos)
              << id << ": " << where << " gives away " << point.id << " (\"" << phrase << "\")";
        }
      }
    }
    EXPECT_GT(phrases, 0u) << id << ": no focus point lists its giveaways in exercise.yaml";
  }
}

}  // namespace
