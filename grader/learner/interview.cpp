#include "learner/interview.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <thread>

#include "base/errors.h"
#include "exercise/exercise.h"
#include "report/formats.h"
#include "learner/learner.h"
#include "exercise/questions.h"
#include "exercise/statement.h"

namespace grader {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

// The learner's lines: from a file (non-interactive), or from standard input,
// waiting at most until a deadline.
class Lines {
 public:
  explicit Lines(const std::optional<fs::path>& file) {
    if (!file) return;
    file_.open(*file);
    if (!file_) throw UsageError("interview: cannot read the answers file " + file->string());
  }
  bool from_file() const { return file_.is_open(); }
  // The next line; nothing at end of input or when `until` passes first.
  std::optional<std::string> next(std::optional<Clock::time_point> until = std::nullopt) {
    std::string line;
    if (file_.is_open()) {
      if (until && Clock::now() >= *until) return std::nullopt;  // the deadline wins over the next line
      if (std::getline(file_, line)) return trim(line);
      ended_ = true;
      return std::nullopt;
    }
    while (true) {
      if (std::cin.rdbuf()->in_avail() > 0) break;  // a line already read ahead into the buffer
      int timeout = -1;
      if (until) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*until - Clock::now()).count();
        if (left <= 0) return std::nullopt;
        timeout = static_cast<int>(std::min<long long>(left, 1000));
      }
      pollfd fd{STDIN_FILENO, POLLIN, 0};
      int ready = ::poll(&fd, 1, timeout);
      if (ready < 0 && errno == EINTR) continue;
      if (ready > 0) break;
      if (until && Clock::now() >= *until) return std::nullopt;
      if (on_tick) on_tick();
    }
    if (!std::getline(std::cin, line)) {
      ended_ = true;
      return std::nullopt;
    }
    return trim(line);
  }
  bool ended() const { return ended_; }
  std::function<void()> on_tick;  // about once a second while waiting on a terminal

 private:
  static std::string trim(std::string text) {
    text.erase(0, text.find_first_not_of(" \t\r\n"));
    text.erase(text.find_last_not_of(" \t\r\n") + 1);
    return text;
  }
  std::ifstream file_;
  bool ended_ = false;
};

std::string clock_text(double seconds) {
  const auto whole = static_cast<int64_t>(std::max(0.0, std::floor(seconds + 1e-6)));  // as a countdown shows it
  return fmt::format("{}:{:02}", whole / 60, whole % 60);
}

// The statement as an interview shows it: its title, the task and the
// interface (statement.h), nothing of the steps or the checks.
std::string statement_of(const Exercise& exercise) {
  std::string shown;
  for (const auto& section : statement_sections(read_whole(exercise.dir / "README.md").value_or(""))) {
    if (section.heading.empty() || section.heading == "The task" || section.heading == "The interface")
      shown += section.text;
  }
  return shown;
}

// A fresh copy of the exercise's starter for one interview, in
// <progress folder>/interviews/<exercise>-<date>-<time>/.
fs::path start_attempt(const fs::path& record_file, const Exercise& exercise) {
  const auto& name = exercise.learner_files.front();
  const auto starter = exercise.dir / ".starter" / name;
  const auto text = read_whole(starter);
  if (!text) throw GraderFault("no starter to start the interview from: " + starter.string() + " is missing");
  const auto stamp = local_stamp();
  const auto base = record_file.parent_path() / "interviews";
  auto folder = base / (exercise.id + "-" + stamp);
  for (int n = 2; fs::exists(folder); ++n) folder = base / fmt::format("{}-{}-{}", exercise.id, stamp, n);
  std::error_code error;
  fs::create_directories(folder, error);
  if (error) throw UsageError("cannot make the interview's folder " + folder.string() + ": " + error.message());
  // The signatures, not the steps; naming this file, not the learner's own.
  write_report_file(folder / name, interview_starter(exercise, blank_starter(*text), folder / name));
  return folder / name;
}

// An attempt still the starter, byte for byte, goes with its folder (a quit
// interview leaves nothing behind).
void remove_if_untouched(const std::optional<fs::path>& attempt, const Exercise& exercise) {
  if (!attempt) return;
  const auto text = read_whole(*attempt);
  if (!text || !is_starter(exercise, attempt->filename().string(), *text, *attempt)) return;
  std::error_code error;
  fs::remove_all(attempt->parent_path(), error);
}

// After an interview from a blank page: the attempt becomes the learner's
// file only when they say so, their file saved to a backup first.
void offer_to_keep(const fs::path& attempt, const Exercise& exercise, const fs::path& root, Lines& input,
                   std::ostream& out) {
  const auto mine = exercise.learner_file();
  out << "\nKeep this attempt as your " << mine.string() << "? Your file is saved to a backup first. [y/N] "
      << std::flush;
  auto answer = input.next();
  if (answer && input.from_file()) out << *answer << "\n";
  if (!answer || (*answer != "y" && *answer != "yes")) {
    out << "Your attempt stays in " << attempt.string() << "; your own file is untouched.\n";
    return;
  }
  const auto text = read_whole(attempt);
  if (!text) {  // removed meanwhile: nothing to keep, and nothing of the learner's is replaced by it
    out << "Your attempt " << attempt.string() << " cannot be read; your own file is untouched.\n";
    return;
  }
  if (const auto old_text = read_whole(mine)) {
    out << "Your file is saved as " << save_backup(root, exercise, mine.filename().string(), *old_text).string()
        << "\n";
  }
  write_report_file(mine, own_from_interview(exercise, *text, attempt));
  out << "Your attempt is now " << mine.string() << ".\n";
}

// Per focus point of one exercise, across its interviews (oldest first).
struct Readiness {
  int interviews = 0, missed = 0, asked = 0, right = 0;
  std::string last_seen;
  bool last_missed = false, last_wrong = false, missed_before = false;
  std::string verdict() const {
    if (last_missed || last_wrong) return "still weak";
    if (missed_before) return "improving";
    return asked ? "solid" : "met";  // solid: met, and its follow-ups answered right
  }
};

std::map<std::string, std::map<std::string, Readiness>> readiness_of(const Progress& progress) {
  std::map<std::string, std::map<std::string, Readiness>> table;
  for (const auto& record : progress.interviews) {
    auto& points = table[record.exercise];
    std::map<std::string, std::pair<int, int>> answers;  // focus point -> asked, right
    for (const auto& a : record.answers) {
      auto& [asked, right] = answers[a.focus_point];
      ++asked;
      right += a.right;
    }
    auto touch = [&](const std::string& id, bool missed) {
      auto& r = points[id];
      r.missed_before |= r.last_missed || r.last_wrong;
      ++r.interviews;
      r.missed += missed;
      r.last_seen = record.started;
      r.last_missed = missed;
      auto found = answers.find(id);
      r.last_wrong = found != answers.end() && found->second.second < found->second.first;
      if (found != answers.end()) {
        r.asked += found->second.first;
        r.right += found->second.second;
      }
    };
    for (const auto& id : record.missed) touch(id, true);
    for (const auto& id : record.met) touch(id, false);
  }
  return table;
}

// suggest_exercise() among exercises already loaded, in learning order.
std::string suggest_among(const std::vector<Exercise>& exercises, const Progress& progress, std::string& why) {
  if (exercises.empty()) throw ConfigError("there are no exercises to suggest");
  const auto table = readiness_of(progress);
  const Exercise* best = nullptr;
  size_t most = 0;
  for (const auto& exercise : exercises) {
    std::vector<std::string> weak;
    auto found = table.find(exercise.id);
    if (found != table.end()) {
      for (const auto& [id, r] : found->second) {
        if (r.verdict() == "still weak") weak.push_back(id);
      }
    }
    auto graded = progress.exercises.find(exercise.id);
    if (graded != progress.exercises.end()) {
      for (const auto& id : graded->second.missed) {
        if (std::find(weak.begin(), weak.end(), id) == weak.end()) weak.push_back(id);
      }
    }
    if (weak.size() > most) {
      most = weak.size();
      best = &exercise;
      why = fmt::format("{} focus point(s) still weak in your record: {}", weak.size(), fmt::join(weak, ", "));
    }
  }
  if (best) return best->id;
  for (const auto& exercise : exercises) {
    if (!progress.ever_passed(exercise.id)) {
      why = "the first exercise in learning order you have not passed yet";
      return exercise.id;
    }
  }
  why = "every exercise passed and nothing weak in your record: the first one again";
  return exercises.front().id;
}

}  // namespace

std::string suggest_exercise(const fs::path& root, const Progress& progress, std::string& why) {
  return suggest_among(load_exercises_in_order(root / "exercises"), progress, why);
}

int interview(GradeOptions options, const InterviewOptions& how, std::ostream& out) {
  const auto record_file = progress_file(options.project_root);
  std::string notice;
  auto progress = load_progress(record_file, &notice);
  if (!notice.empty()) std::cerr << "grade: " << notice << "\n";
  if (options.exercise.empty()) {
    std::string why;
    options.exercise = suggest_exercise(options.project_root, progress, why);
    out << "Suggested: " << options.exercise << " (" << why << ")\n";
  }
  const auto exercise = load_exercise(find_exercise_dir(options.project_root / "exercises", options.exercise));
  const auto bank = load_questions(exercise);
  // A blank page: the interview's own copy of the starter, the learner's file untouched.
  std::optional<fs::path> attempt;
  if (!options.submission && !how.resume) {
    attempt = start_attempt(record_file, exercise);
    options.submission = *attempt;
  }
  const auto file = options.submission ? *options.submission : exercise.learner_file();

  Lines input(how.answers);
  const auto started = Clock::now();
  const auto deadline = started + std::chrono::milliseconds(static_cast<int64_t>(how.minutes * 60000));
  InterviewRecord record;
  record.exercise = exercise.id;
  record.started = utc_now();
  record.minutes = how.minutes;

  out << "\n== Mock interview: " << exercise.title << " (" << exercise.id << ") ==\n"
      << statement_of(exercise) << "\n"
      << (attempt ? "Your file for this interview: " + file.string() +
                        "\n(the blank starter: the interface without the steps; your own " +
                        exercise.learner_file().string() +
                        " is untouched, and --resume works on it instead)\n\n"
                  : "Your file: " + file.string() + "\n\n")
      << fmt::format("You have {}. Type 'submit' when you are ready, 'time' for the time left, 'quit' to stop.\n",
                     clock_text(how.minutes * 60))
      << std::flush;

  // ---- the clock ----
  std::vector<int> warnings = {300, 60};  // seconds left worth a word
  input.on_tick = [&] {
    const double left = std::chrono::duration<double>(deadline - Clock::now()).count();
    while (!warnings.empty() && left <= warnings.front()) {
      if (how.minutes * 60 > warnings.front()) out << clock_text(warnings.front()) << " left.\n" << std::flush;
      warnings.erase(warnings.begin());
    }
  };
  while (true) {
    auto line = input.next(deadline);
    if (!line) {
      if (Clock::now() >= deadline) {
        record.timed_out = true;
        out << "Time is up: grading what you have.\n";
      } else if (input.ended()) {
        out << "(end of input: submitting)\n";
      }
      break;
    }
    if (*line == "submit") break;
    if (*line == "quit") {
      remove_if_untouched(attempt, exercise);
      out << "Interview stopped; nothing recorded.\n";
      return 0;
    }
    if (*line == "wait" && input.from_file()) {  // a script letting the clock run out
      std::this_thread::sleep_until(deadline);
      continue;
    }
    if (*line == "time") {
      out << clock_text(std::chrono::duration<double>(deadline - Clock::now()).count()) << " left.\n" << std::flush;
      continue;
    }
    if (!line->empty()) out << "Type 'submit', 'time' or 'quit'.\n" << std::flush;
  }
  record.seconds_used = std::min(std::chrono::duration<double>(Clock::now() - started).count(), how.minutes * 60);

  // ---- the grade ----
  auto report = grade(options);
  if (how.record_grade) {
    auto said = record_grade(record_file, report);
    if (!said.empty()) std::cerr << "grade: " << said << "\n";
  }
  out << "\n" << render(report, "text", how.color);
  record.verdict = verdict_name(report.verdict);
  for (const auto& focus : report.focus_points) {
    if (focus.status == FocusStatus::missed) record.missed.push_back(focus.point.id);
    if (focus.status == FocusStatus::met) record.met.push_back(focus.point.id);
  }

  // ---- the follow-ups ----
  const auto chosen = select_follow_ups(bank, report, report.seed);
  if (bank.empty()) out << "\nNo follow-up questions for " << exercise.id << " yet.\n";
  size_t right = 0, number = 0;
  for (const auto* q : chosen) {
    const auto& point = exercise.focus_point(q->focus_point);
    const bool was_missed = std::find(record.missed.begin(), record.missed.end(), q->focus_point) != record.missed.end();
    out << fmt::format("\n-- Follow-up {} of {} ({}{}) --\n", ++number, chosen.size(), point.title,
                       was_missed ? ", missed in your code" : "")
        << q->prompt() << std::flush;
    InterviewAnswer answer{q->id, q->focus_point, false, false};
    auto given = input.next();
    if (!given) {
      out << "\n(no answer)\n";
    } else {
      if (input.from_file()) out << *given << "\n";
      answer.answered = true;
      answer.right = q->accepts(*given);
      right += answer.right;
      out << (answer.right ? "Right. " : "Not quite: the answer is " + q->right_answer() + ". ") << q->explain << "\n";
    }
    record.answers.push_back(answer);
  }

  auto said = record_interview(record_file, record);
  if (!said.empty()) std::cerr << "grade: " << said << "\n";
  out << fmt::format("\n== Interview over: {} in {} of {}{}; follow-ups {} of {} right ==\n", record.verdict,
                     clock_text(record.seconds_used), clock_text(how.minutes * 60),
                     record.timed_out ? " (time ran out)" : "", right, chosen.size())
      << "Recorded in " << record_file.string() << "; 'grade interview --report' shows your readiness.\n";
  if (attempt) offer_to_keep(*attempt, exercise, options.project_root, input, out);
  return exit_code_for(report.verdict);
}

int interview_report(const fs::path& root, std::ostream& out, const std::string& format) {
  std::string notice;
  const auto progress = load_progress(progress_file(root), &notice);
  if (!notice.empty()) std::cerr << "grade: " << notice << "\n";
  const bool html = format == "html";
  if (!html && format != "text") throw UsageError("interview --report: --format text or html");

  // What both forms show: per exercise interviewed, its focus points seen, in order.
  struct Section {
    std::string exercise;
    int interviews = 0;
    std::vector<std::pair<std::string, Readiness>> points;  // focus point title, readiness
  };
  std::vector<Section> sections;
  std::string next, why;
  if (!progress.interviews.empty()) {
    const auto exercises = load_exercises_in_order(root / "exercises");
    const auto table = readiness_of(progress);
    for (const auto& exercise : exercises) {
      auto found = table.find(exercise.id);
      if (found == table.end()) continue;
      Section section{exercise.id, 0, {}};
      for (const auto& record : progress.interviews) section.interviews += record.exercise == exercise.id;
      for (const auto& point : exercise.focus_points) {
        auto r = found->second.find(point.id);
        if (r != found->second.end()) section.points.emplace_back(point.title, r->second);
      }
      sections.push_back(std::move(section));
    }
    next = suggest_among(exercises, progress, why);
  }

  if (!html) {
    if (progress.interviews.empty()) {
      out << "No interviews yet: start one with 'grade interview'.\n";
      return 0;
    }
    for (const auto& section : sections) {
      out << fmt::format("{} ({} interview(s))\n", section.exercise, section.interviews);
      out << fmt::format("  {:<11} {:<58} {:>11} {:>10}  {}\n", "readiness", "focus point", "code missed",
                         "follow-ups", "last seen");
      for (const auto& [title, x] : section.points) {
        out << fmt::format("  {:<11} {:<58} {:>11} {:>10}  {}\n", x.verdict(), title.substr(0, 58),
                           fmt::format("{}/{}", x.missed, x.interviews),
                           x.asked ? fmt::format("{}/{} right", x.right, x.asked) : "-", x.last_seen);
      }
    }
    out << "Next: " << next << " (" << why << ")\n";
    return 0;
  }

  // The same as one self-contained page, with every interview listed.
  auto esc = html_escape;
  std::string page = html_page_start("Interview readiness") + "<h1>Interview readiness</h1>";
  if (progress.interviews.empty()) {
    page += "<p>No interviews yet: start one with <code>grade interview</code>.</p>";
  } else {
    page += "<p>Next: <strong>" + esc(next) + "</strong> <span class=\"meta\">(" + esc(why) + ")</span></p>";
    auto css = [](const std::string& verdict) {
      return verdict == "still weak" ? "missed" : verdict == "improving" ? "not_assessed" : "met";
    };
    for (const auto& section : sections) {
      page += fmt::format("<h2>{} <span class=\"meta\">({} interview(s))</span></h2>", esc(section.exercise),
                          section.interviews);
      page += "<table><tr><th>readiness</th><th>focus point</th><th>code missed</th><th>follow-ups right</th>"
              "<th>last seen</th></tr>";
      for (const auto& [title, x] : section.points) {
        page += fmt::format("<tr><td class=\"status {}\">{}</td><td>{}</td><td>{}/{}</td><td>{}</td><td>{}</td></tr>",
                            css(x.verdict()), esc(x.verdict()), esc(title), x.missed, x.interviews,
                            x.asked ? fmt::format("{}/{}", x.right, x.asked) : "-", esc(x.last_seen));
      }
      page += "</table>";
    }
    page += "<h2>Interviews</h2><table><tr><th>started</th><th>exercise</th><th>verdict</th><th>time used</th>"
            "<th>follow-ups right</th></tr>";
    for (auto it = progress.interviews.rbegin(); it != progress.interviews.rend(); ++it) {
      const auto right = std::count_if(it->answers.begin(), it->answers.end(), [](const auto& a) { return a.right; });
      page += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{} of {}{}</td><td>{}/{}</td></tr>",
                          esc(it->started), esc(it->exercise), esc(it->verdict), clock_text(it->seconds_used),
                          clock_text(it->minutes * 60), it->timed_out ? " (time ran out)" : "", right,
                          it->answers.size());
    }
    page += "</table>";
  }
  out << page << "</body></html>\n";
  return 0;
}

}  // namespace grader
