#include "report/formats.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cctype>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/errors.h"
#include "judge/stop.h"
#include "report/platforms/platforms.h"

namespace grader {

std::string json_text(const nlohmann::ordered_json& json) {
  return json.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

namespace {

std::string text_report(const GradeReport& report, bool color) { return render_text(report, color); }
std::string json_report(const GradeReport& report, bool) { return render_json(report); }
std::string html_report(const GradeReport& report, bool) { return render_html(report); }
template <std::string (*Render)(const GradeReport&)>
std::string platform_report(const GradeReport& report, bool) {
  return Render(report);
}

}  // namespace

const std::vector<ReportFormat>& report_format_table() {
  static const std::vector<ReportFormat> table = {
      {"text", text_report, false, false, "text", ".txt"},
      {"json", json_report, false, true, "json", ".json"},
      {"exercism", platform_report<platforms::exercism>, false, true, "json", ".exercism.json"},
      {"gradescope", platform_report<platforms::gradescope>, false, true, "json", ".gradescope.json"},
      {"prairielearn", platform_report<platforms::prairielearn>, true, true, "json", ".prairielearn.json"},
      {"junit", platform_report<platforms::junit>, false, true, "xml", ".xml"},
      {"html", html_report, true, false, "html", ".html"},
      {"classroom", platform_report<platforms::classroom>, false, true, "json", ".classroom.json"},
  };
  return table;
}

const ReportFormat* find_report_format(const std::string& name) {
  const auto& table = report_format_table();
  auto found = std::find_if(table.begin(), table.end(), [&](const ReportFormat& f) { return f.name == name; });
  return found == table.end() ? nullptr : &*found;
}

bool draws_figures(const std::string& format) {
  const auto* found = find_report_format(format);
  return found && found->draws_figures;
}

const std::vector<std::string>& report_formats() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& format : report_format_table()) out.push_back(format.name);
    return out;
  }();
  return names;
}

OutputTarget output_target(const std::string& value, const std::string& format_option) {
  const auto& formats = report_formats();
  const auto known = [&](const std::string& name) {
    return std::find(formats.begin(), formats.end(), name) != formats.end();
  };
  const auto equals = value.find('=');
  if (equals != std::string::npos) {
    const auto name = value.substr(0, equals);
    if (known(name)) {
      if (equals + 1 == value.size()) throw UsageError("--output '" + value + "': no FILE after '='");
      return {name, value.substr(equals + 1), false};
    }
    // A word before '=' was meant as a format (a file named so: html=a=b.html).
    if (name.find('/') == std::string::npos) {
      throw UsageError(fmt::format("--output '{}': '{}' is not a format; expected FORMAT=FILE with FORMAT one of {}",
                                   value, name, fmt::join(formats, ", ")));
    }
  }
  if (value.empty()) throw UsageError("--output: an empty FILE");
  static const std::map<std::string, std::string> by_extension = {
      {".html", "html"}, {".htm", "html"}, {".json", "json"}, {".xml", "junit"}, {".txt", "text"}};
  std::string extension = std::filesystem::path(value).extension().string();
  std::transform(extension.begin(), extension.end(), extension.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  auto found = by_extension.find(extension);
  if (!format_option.empty()) {
    // What kind of file each format writes: a name that says another kind is a slip.
    auto kind = [](const std::string& format) { return std::string(find_report_format(format)->file_kind); };
    if (found != by_extension.end() && kind(found->second) != kind(format_option)) {
      throw UsageError(fmt::format("--output '{}': the name says {} but --format is {}; write FORMAT=FILE", value,
                                   found->second, format_option));
    }
    return {format_option, value, true};
  }
  if (found == by_extension.end()) {
    throw UsageError("--output '" + value + "': cannot tell the format from the name; write FORMAT=FILE (FORMAT one of " +
                     fmt::format("{}", fmt::join(formats, ", ")) + ") or give --format");
  }
  return {found->second, value, false};
}

bool errors_on_stdout(const std::string& format) {
  const auto* found = find_report_format(format);
  return !found || found->errors_on_stdout;
}

std::string render(const GradeReport& report, const std::string& format, bool color) {
  const auto* found = find_report_format(format);
  if (!found) throw UsageError("unknown report format '" + format + "'");
  return found->render(report, color);
}

void write_report_file(const std::filesystem::path& path, const std::string& text) {
  if (stop_requested()) return;  // a grade stopped from outside writes nothing more (stop.h)
  // Beside it under a short name of its own: a name made longer than the
  // file's (a student id of 240 bytes) could pass the 255-byte limit.
  const auto partial = path.parent_path() /
                       (".partial-" + std::to_string(::getpid()) + "-" +
                        std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id())) + "-" +
                        std::to_string(std::hash<std::string>{}(path.filename().string())));
  // Synced before the rename: after a crash (even of the machine) the file
  // is the old one or the new one, whole.
  int fd = ::open(partial.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  bool ok = fd >= 0;
  for (size_t done = 0; ok && done < text.size();) {
    ssize_t wrote = ::write(fd, text.data() + done, text.size() - done);
    if (wrote < 0 && errno == EINTR) continue;
    ok = wrote > 0;
    done += ok ? static_cast<size_t>(wrote) : 0;
  }
  ok = ok && ::fsync(fd) == 0;
  if (fd >= 0) ok = ::close(fd) == 0 && ok;
  std::error_code error;
  if (ok) std::filesystem::rename(partial, path, error);
  if (!ok || error) {
    std::filesystem::remove(partial, error);
    throw UsageError("cannot write " + path.string());
  }
  int dir = ::open(path.has_parent_path() ? path.parent_path().c_str() : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

std::string render_error(const std::string& exercise, const std::string& verdict, const std::string& message,
                         const std::string& format) {
  if (format == "json") return render_json_error(exercise, verdict, message);
  GradeReport report;
  report.exercise = exercise;
  report.verdict = Verdict::grader_error;
  report.summary = (verdict == "usage_error"          ? "usage error: "
                    : verdict == "invalid_submission" ? "invalid submission: "
                                                      : "grader error: ") +
                   message;
  return render(report, format);
}

}  // namespace grader
