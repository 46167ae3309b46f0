#include "learner/progress.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/errors.h"
#include "report/formats.h"

namespace grader {
namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

std::string utc_now() {
  std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

namespace {

constexpr int kProgressVersion = 1;

// Held for one read-modify-write, so two grades at once (watch and a manual
// grade) cannot drop each other's update.
class FileLock {
 public:
  explicit FileLock(const fs::path& file) {
    fd_ = ::open((file.string() + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ >= 0) ::flock(fd_, LOCK_EX);
  }
  ~FileLock() {
    if (fd_ >= 0) ::close(fd_);  // closing releases the lock
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

Progress from_json(const Json& json) {
  if (!json.is_object() || json.value("version", 0) != kProgressVersion || !json["exercises"].is_object()) {
    throw std::runtime_error("not a progress file of version " + std::to_string(kProgressVersion));
  }
  Progress progress;
  for (const auto& [id, entry] : json["exercises"].items()) {
    ExerciseProgress item;
    item.status = entry.at("status").get<std::string>();
    if (item.status != "passed" && item.status != "failing" && item.status != "not_assessed" && !item.status.empty()) {
      throw std::runtime_error("unknown status " + item.status);
    }
    item.hints_seen = entry.value("hints_seen", std::map<std::string, int>{});
    item.missed = entry.value("missed", std::vector<std::string>{});
    item.last_graded = entry.value("last_graded", "");
    item.first_passed = entry.value("first_passed", "");
    item.grades = entry.value("grades", 0);
    progress.exercises[id] = item;
  }
  for (const auto& entry : json.value("interviews", Json::array())) {
    InterviewRecord record;
    record.exercise = entry.at("exercise").get<std::string>();
    record.started = entry.value("started", "");
    record.minutes = entry.value("minutes", 0.0);
    record.seconds_used = entry.value("seconds_used", 0.0);
    record.timed_out = entry.value("timed_out", false);
    record.verdict = entry.value("verdict", "");
    record.missed = entry.value("missed", std::vector<std::string>{});
    record.met = entry.value("met", std::vector<std::string>{});
    for (const auto& answer : entry.value("answers", Json::array())) {
      record.answers.push_back({answer.at("question").get<std::string>(), answer.at("focus_point").get<std::string>(),
                                answer.value("answered", false), answer.value("right", false)});
    }
    progress.interviews.push_back(std::move(record));
  }
  return progress;
}

Json to_json(const Progress& progress) {
  Json json;
  json["version"] = kProgressVersion;
  json["exercises"] = Json::object();
  for (const auto& [id, item] : progress.exercises) {
    json["exercises"][id] = {{"status", item.status},           {"missed", item.missed},
                             {"last_graded", item.last_graded}, {"first_passed", item.first_passed},
                             {"grades", item.grades},           {"hints_seen", item.hints_seen}};
  }
  if (!progress.interviews.empty()) {
    json["interviews"] = Json::array();
    for (const auto& record : progress.interviews) {
      Json answers = Json::array();
      for (const auto& a : record.answers) {
        answers.push_back(
            {{"question", a.question}, {"focus_point", a.focus_point}, {"answered", a.answered}, {"right", a.right}});
      }
      json["interviews"].push_back({{"exercise", record.exercise},
                                    {"started", record.started},
                                    {"minutes", record.minutes},
                                    {"seconds_used", record.seconds_used},
                                    {"timed_out", record.timed_out},
                                    {"verdict", record.verdict},
                                    {"missed", record.missed},
                                    {"met", record.met},
                                    {"answers", answers}});
    }
  }
  return json;
}

}  // namespace

bool Progress::ever_passed(const std::string& exercise) const {
  auto found = exercises.find(exercise);
  return found != exercises.end() && !found->second.first_passed.empty();
}

fs::path progress_file(const fs::path& project_root) {
  const char* chosen = std::getenv("GRADE_PROGRESS");
  if (chosen && *chosen) return fs::absolute(chosen);
  return project_root / ".learner" / "progress.json";
}

Progress load_progress(const fs::path& file, std::string* notice) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return {};
  std::stringstream text;
  text << in.rdbuf();
  try {
    return from_json(Json::parse(text.str()));
  } catch (const std::exception& error) {
    // Kept, not overwritten: the learner may want it back.
    auto aside = file;
    aside += ".unreadable-" + utc_now();
    std::error_code ignored;
    fs::rename(file, aside, ignored);
    if (notice) {
      *notice = file.string() + " could not be read (" + error.what() + "); it was moved to " + aside.string() +
                " and progress starts again";
    }
    return {};
  }
}

namespace {

// One read-modify-write of the file under its lock; returns the notice of
// load_progress (an unreadable file moved aside), or nothing.
std::string update(const fs::path& file, const std::function<void(Progress&)>& change) {
  std::error_code error;
  fs::create_directories(file.parent_path(), error);
  if (error) throw UsageError("cannot keep your progress in " + file.parent_path().string() + ": " + error.message());
  FileLock lock(file);
  std::string notice;
  auto progress = load_progress(file, &notice);
  change(progress);
  write_report_file(file, to_json(progress).dump(2) + "\n");
  return notice;
}

}  // namespace

int take_hint(const fs::path& file, const std::string& exercise, const std::string& focus_point, int available) {
  int shown = 0;
  update(file, [&](Progress& progress) {
    int& seen = progress.exercises[exercise].hints_seen[focus_point];
    shown = std::min(seen, available - 1);
    seen = std::min(seen + 1, available);
  });
  return shown;
}

std::string record_interview(const fs::path& file, const InterviewRecord& record) {
  return update(file, [&](Progress& progress) { progress.interviews.push_back(record); });
}

std::string record_grade(const fs::path& file, const GradeReport& report) {
  if (report.verdict == Verdict::grader_error) return "";
  return update(file, [&](Progress& progress) {
    auto& item = progress.exercises[report.exercise];
    const auto now = utc_now();
    // The starter as given is not an attempt: the exercise stays not started
    // (or passed). Not assessed here (a CUDA kernel without a GPU) says
    // nothing against an earlier pass, and is not failing.
    if (report.starter) {
      if (item.status != "passed") item.status.clear();
    } else if (report.verdict != Verdict::not_assessed) {
      item.status = report.verdict == Verdict::passed ? "passed" : "failing";
    } else if (item.status != "passed") {
      item.status = "not_assessed";
    }
    item.missed.clear();
    for (const auto& focus : report.focus_points) {
      if (focus.status == FocusStatus::missed && !report.starter) item.missed.push_back(focus.point.id);
    }
    item.last_graded = now;
    if (report.verdict == Verdict::passed && item.first_passed.empty()) item.first_passed = now;
    ++item.grades;
  });
}

}  // namespace grader
