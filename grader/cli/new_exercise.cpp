#include "cli/new_exercise.h"
#include "exercise/questions.h"

#include <algorithm>
#include <fstream>
#include <regex>

#include "base/errors.h"
#include "base/text.h"
#include "exercise/exercise.h"
#include "learner/learner.h"

namespace grader::cli {
namespace fs = std::filesystem;
namespace {

std::string replaced(std::string text, const std::vector<std::pair<std::string, std::string>>& values) {
  for (const auto& [key, value] : values) text = replace_all(std::move(text), key, value);
  return text;
}

std::string read_template(const fs::path& file) {
  auto text = read_whole(file);
  if (!text) throw GraderFault("cannot read the template " + file.string());
  return *text;
}

}  // namespace

std::vector<fs::path> new_exercise(const fs::path& root, const std::string& id) {
  if (!std::regex_match(id, std::regex("exercise_[a-z][a-z0-9_]*"))) {
    throw UsageError("new-exercise: '" + id +
                     "' is not an exercise id: exercise_ then lower-case letters, digits and underscores "
                     "(exercise_layer_norm)");
  }
  const std::string name = id.substr(std::string("exercise_").size());
  const fs::path templates = root / "templates" / "new-exercise";
  // Where each folder of the templates goes; the starter also to .starter/.
  const std::vector<std::pair<std::string, std::vector<fs::path>>> places = {
      {"exercise", {root / "exercises" / id}},
      {"checks", {root / "grader" / "checks" / id}},
      {"solution", {root / "solutions" / id}},
      {"corpus", {root / "tests" / "submissions" / id}},
  };
  for (const auto& [from, to] : places) {
    if (fs::exists(to.front())) {
      throw UsageError("new-exercise: " + fs::relative(to.front(), root).string() +
                       " exists already; nothing was written (choose another id, or remove it)");
    }
  }
  int order = 0;
  for (const auto& exercise : load_exercises_in_order(root / "exercises")) order = std::max(order, exercise.order);
  const std::vector<std::pair<std::string, std::string>> values = {
      {"@ID@", id}, {"@NAME@", name}, {"@ORDER@", std::to_string(order + 1)}};

  std::vector<fs::path> written;
  for (const auto& [from, to] : places) {
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(templates / from)) {
      if (entry.is_regular_file()) files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
    for (const auto& file : files) {
      const auto text = replaced(read_template(file), values);
      const auto filename = replaced(file.filename().string(), values);
      std::vector<fs::path> targets = {to.front() / filename};
      if (from == "exercise" && filename == name + ".cpp") targets.push_back(to.front() / ".starter" / filename);
      // The follow-up questions hold their answers: with the grader's data.
      if (from == "exercise" && filename == fs::path(kQuestionsFile).filename().string()) {
        targets = {to.front() / kQuestionsFile};
      }
      for (const auto& target : targets) {
        fs::create_directories(target.parent_path());
        std::ofstream out(target, std::ios::binary);
        out << text;
        if (!out.flush()) throw GraderFault("cannot write " + target.string());
        written.push_back(fs::relative(target, root));
      }
    }
  }
  return written;
}

}  // namespace grader::cli
