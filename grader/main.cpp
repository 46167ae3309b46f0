// grade: the command line. Parses arguments, runs one grade or a batch (in
// parallel with --jobs), or lists the exercises, or reports the sandbox;
// prints the report(s), and turns errors into messages and exit codes.
#include <fmt/format.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <csignal>
#include <iostream>
#include <thread>

#include "errors.h"
#include "exercise.h"
#include "grade.h"
#include "process.h"
#include "report.h"
#include "toolchain.h"

namespace {
namespace fs = std::filesystem;

// Each --submission value: a file, or a folder whose *.cpp files are graded.
std::vector<fs::path> expand_submissions(const std::vector<std::string>& values) {
  std::vector<fs::path> files;
  for (const auto& value : values) {
    if (fs::is_directory(value)) {
      std::vector<fs::path> found;
      for (const auto& entry : fs::directory_iterator(value)) {
        if (entry.path().extension() != ".cpp") continue;
        // Links are refused, not followed (as for a single submission).
        if (entry.is_symlink()) {
          throw grader::UsageError(entry.path().string() +
                                   " is a symbolic link: a batch grades the files in the folder, not what links "
                                   "point to (remove the link or copy the file)");
        }
        if (entry.is_regular_file()) found.push_back(fs::absolute(entry.path()));
      }
      if (found.empty()) throw grader::UsageError("no .cpp files in the folder " + value);
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else {
      files.push_back(fs::absolute(value));
    }
  }
  return files;
}

struct BatchItem {
  fs::path submission;
  std::optional<grader::GradeReport> report;
  std::string error;  // a grader or usage error for this submission
  int exit_code = 0;
};

// Grades every item with `jobs` workers; each grade is its own set of child
// processes, sandboxed like a single grade, so one cannot affect another.
void grade_batch(std::vector<BatchItem>& items, const grader::GradeOptions& base, int jobs) {
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < items.size(); i = next++) {
      auto options = base;
      options.submission = items[i].submission;
      try {
        items[i].report = grader::grade(options);
        items[i].exit_code = grader::exit_code_for(items[i].report->verdict);
      } catch (const grader::Error& error) {
        items[i].error = error.what();
        items[i].exit_code = error.exit_code();
      } catch (const std::exception& error) {
        items[i].error = std::string("internal error: ") + error.what();
        items[i].exit_code = grader::kExitGraderFault;
      }
    }
  };
  std::vector<std::thread> workers;
  for (int j = 0; j < std::max(1, jobs); ++j) workers.emplace_back(worker);
  for (auto& thread : workers) thread.join();
}

std::string batch_table(const std::vector<BatchItem>& items) {
  size_t width = 10;
  for (const auto& item : items) width = std::max(width, grader::printable(item.submission.filename().string()).size());
  std::string out = fmt::format("{:<{}}  {:<14} {:>7}  {:>6}  {}\n", "submission", width, "verdict", "checks", "time",
                                "missed focus points / reason");
  size_t passed = 0;
  // Every cell that comes from a submission (its file name, its messages) is made printable.
  for (const auto& item : items) {
    auto name = grader::printable(item.submission.filename().string());
    if (!item.report) {
      out += fmt::format("{:<{}}  {:<14} {:>7}  {:>6}  {}\n", name, width,
                         item.exit_code == grader::kExitGraderFault ? "grader_error" : "usage_error", "-", "-",
                         grader::printable(item.error));
      continue;
    }
    const auto& report = *item.report;
    passed += report.verdict == grader::Verdict::passed;
    size_t ok = std::count_if(report.checks.begin(), report.checks.end(),
                              [](const auto& c) { return c.status == grader::CheckStatus::passed; });
    std::string missed;
    for (const auto& focus : report.focus_points) {
      if (focus.status == grader::FocusStatus::missed) missed += (missed.empty() ? "" : ", ") + focus.point.id;
    }
    if (missed.empty() && report.verdict != grader::Verdict::passed) {
      missed = grader::printable(grader::capped(report.summary, 100));
    }
    out += fmt::format("{:<{}}  {:<14} {:>7}  {:>5.1f}s  {}\n", name, width, grader::verdict_name(report.verdict),
                       report.checks.empty() ? "-" : fmt::format("{}/{}", ok, report.checks.size()),
                       report.total_seconds, missed);
  }
  out += fmt::format("{} of {} passed\n", passed, items.size());
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);  // a child that closes its pipe early must not kill the grader
  prctl(PR_SET_DUMPABLE, 0);      // learner code must not read or trace the grader's memory
  grader::become_subreaper();     // what a child leaves behind is reaped here, not left as a zombie
  CLI::App app{
      "Grades a LibTorch implementation of a transformer building block.\n"
      "  grade EXERCISE                  grade the learner file in exercises/EXERCISE/\n"
      "  grade EXERCISE --submission F   grade any file\n"
      "  grade EXERCISE --submission DIR --jobs N\n"
      "                                  grade many files in parallel: one table (or JSON array)\n"
      "  grade list                      list the exercises\n"
      "  grade sandbox                   say what isolates learner code here (exit 0: complete)"};
  app.name("grade");
  grader::GradeOptions options;
  std::vector<std::string> submissions;
  std::string format = "text", color = "auto", sandbox_mode = "auto";
  int jobs = 1;
  uint64_t seed = 0;
  std::string root = ".", build = "build";
  app.add_option("exercise", options.exercise, "exercise id (see: grade list), or 'list' or 'sandbox'")->required();
  app.add_option("--submission", submissions,
                 "a learner file to grade (default: the one in exercises/); repeat it, or give a folder, for a batch");
  app.add_option("--jobs", jobs, "grade a batch with this many grades in parallel")->check(CLI::Range(1, 64));
  app.add_option("--format", format, "report format")->check(CLI::IsMember({"text", "json"}));
  auto* seed_option = app.add_option("--seed", seed, "replay the random inputs of an earlier grade");
  app.add_option("--color", color, "colour the text report")->check(CLI::IsMember({"auto", "always", "never"}));
  app.add_option("--root", root, "the project folder (holds exercises/)");
  app.add_option("--build-dir", build, "the build folder (holds toolchain.txt)");
  double time_limit = 0;
  auto* time_option = app.add_option("--time-limit", time_limit, "seconds the checks may run (default: the exercise's)")
                          ->check(CLI::Range(1.0, 3600.0));
  double memory_limit = 0, output_limit = 0;
  auto* memory_option = app.add_option("--memory-limit", memory_limit, "MB of memory the checks may use")
                            ->check(CLI::Range(64.0, 1048576.0));
  auto* output_option = app.add_option("--output-limit", output_limit, "KB the checks may print, per stream")
                            ->check(CLI::Range(1.0, 1048576.0));
  app.add_option("--sandbox", sandbox_mode,
                 "auto: isolate where the machine allows, else limits only with a notice; strict: refuse to grade "
                 "without full isolation (for CI); off: limits only")
      ->check(CLI::IsMember({"auto", "strict", "off"}));
  app.add_flag("--keep-scratch", options.keep_scratch, "keep the scratch folder of this grade for inspection");
  bool no_cache = false;
  app.add_flag("--no-cache", no_cache, "compile even an unchanged submission again");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    int code = app.exit(error);
    if (code == 0) return 0;
    // A CI job that asked for JSON gets JSON, whichever option was wrong.
    for (int i = 1; i < argc; ++i) {
      std::string arg = argv[i];
      if (arg == "--format=json" || (arg == "--format" && i + 1 < argc && std::string(argv[i + 1]) == "json")) {
        std::cout << grader::render_json_error(options.exercise, "usage_error", error.what());
        break;
      }
    }
    return grader::kExitUsage;
  }

  try {
    options.project_root = std::filesystem::absolute(root);
    options.build_dir = std::filesystem::absolute(build);
    options.use_cache = !no_cache;
    if (options.exercise == "list") {
      for (const auto& id : grader::list_exercises(options.project_root / "exercises")) {
        auto exercise = grader::load_exercise(options.project_root / "exercises" / id);
        std::cout << id << "  " << exercise.title << "\n";
      }
      return 0;
    }
    if (*seed_option) options.seed = seed;
    if (*time_option) options.run_seconds = time_limit;
    if (*memory_option) options.memory_mb = memory_limit;
    if (*output_option) options.output_kb = output_limit;

    auto toolchain = grader::load_toolchain(options.build_dir / "toolchain.txt");
    options.sandbox = grader::detect_sandbox(grader::parse_sandbox_mode(sandbox_mode), toolchain.seccomp);
    if (options.exercise == "sandbox") {
      std::cout << options.sandbox.describe() << "\n";
      return options.sandbox.isolating() ? 0 : 1;
    }
    if (!options.sandbox.isolating()) {
      if (options.sandbox.mode == grader::SandboxMode::strict) {
        throw grader::GraderFault("--sandbox strict: cannot isolate learner code here: " + options.sandbox.describe() +
                                  " (README: Sandbox)");
      }
      std::cerr << "grade: notice: " << options.sandbox.describe() << "\n";
    }

    auto files = expand_submissions(submissions);
    bool batch = files.size() > 1 || std::any_of(submissions.begin(), submissions.end(),
                                                 [](const std::string& s) { return fs::is_directory(s); });
    if (batch) {
      std::vector<BatchItem> items;
      for (const auto& file : files) {
        items.push_back({file, std::nullopt, "", 0});
        options.hide.push_back(file.parent_path());  // no submission may read another
      }
      std::sort(options.hide.begin(), options.hide.end());
      options.hide.erase(std::unique(options.hide.begin(), options.hide.end()), options.hide.end());
      grade_batch(items, options, jobs);
      grader::reap_orphans();  // no grade is running now: whatever is left can go
      int exit_code = 0;
      if (format == "json") {
        std::cout << "[\n";
        for (size_t i = 0; i < items.size(); ++i) {
          const auto& item = items[i];
          if (item.report) {
            std::cout << grader::render_json(*item.report);
          } else {
            std::cout << grader::render_json_error(
                options.exercise, item.exit_code == grader::kExitGraderFault ? "grader_error" : "usage_error",
                item.submission.string() + ": " + item.error);
          }
          if (i + 1 < items.size()) std::cout << ",\n";
        }
        std::cout << "]\n";
      } else {
        std::cout << batch_table(items);
      }
      for (const auto& item : items) exit_code = std::max(exit_code, item.exit_code);
      return exit_code;
    }
    if (!files.empty()) options.submission = files.front();
    auto report = grader::grade(options);
    if (format == "json") {
      std::cout << grader::render_json(report);
    } else {
      bool use_color = color == "always" || (color == "auto" && isatty(STDOUT_FILENO));
      std::cout << grader::render_text(report, use_color);
    }
    return grader::exit_code_for(report.verdict);
  } catch (const grader::Error& error) {
    std::cerr << "grade: " << error.what() << "\n";
    if (format == "json") {
      auto verdict = error.exit_code() == grader::kExitGraderFault ? "grader_error" : "usage_error";
      std::cout << grader::render_json_error(options.exercise, verdict, error.what());
    }
    return error.exit_code();
  } catch (const std::exception& error) {
    std::cerr << "grade: internal error: " << error.what() << "\n";
    if (format == "json") {
      std::cout << grader::render_json_error(options.exercise, "grader_error",
                                             std::string("internal error: ") + error.what());
    }
    return grader::kExitGraderFault;
  }
}
