// What the corpus, batch and stress tests share: grading a file with the real
// command line and reading its JSON report.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <cstdlib>
#include <limits>
#include <regex>
#include <string>
#include <vector>

namespace corpus {
namespace fs = std::filesystem;

inline const fs::path kRoot = GRADER_SOURCE_DIR;
inline const fs::path kBuild = GRADER_BINARY_DIR;

// The exercises: every folder of exercises/ with an exercise.yaml, sorted.
inline std::vector<std::string> exercise_ids() {
  std::vector<std::string> ids;
  for (const auto& item : fs::directory_iterator(kRoot / "exercises")) {
    if (fs::exists(item.path() / "exercise.yaml")) ids.push_back(item.path().filename().string());
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

// The focus points a label (or a block of one) says must be reported missed.
inline std::set<std::string> labelled_missed(const YAML::Node& label) {
  std::set<std::string> points;
  for (const auto& point : label["missed"]) points.insert(point.as<std::string>());
  return points;
}

struct Entry {
  std::string exercise;
  std::string kind;  // accepted, wrong, hostile, solution, starter
  fs::path file;
  std::string name() const {
    auto text = exercise + "_" + kind + "_" + file.stem().string();
    std::replace_if(
        text.begin(), text.end(), [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); }, '_');
    return text;
  }
};

// Shown by GoogleTest instead of the bytes of an Entry.
inline void PrintTo(const Entry& entry, std::ostream* out) { *out << entry.file.string(); }

struct Graded {
  int exit_code = -1;
  nlohmann::json report;
  std::string raw;
};

inline std::string quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Hostile submissions may hang or hoard memory: these limits keep the suite
// quick (filling 1 GB takes seconds on some virtual machines).
inline const std::vector<std::string> kHostileLimits = {"--time-limit", "5", "--memory-limit", "384"};

// The grade command line, up to the exercise.
inline std::string grade_command() {
  return quote((kBuild / "grader" / "grade").string()) + " --root " + quote(kRoot.string()) + " --build-dir " +
         quote(kBuild.string());
}

// Runs `command`; its standard output is parsed when `json`.
inline Graded run_command(const std::string& command, bool json) {
  Graded graded;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return graded;
  std::array<char, 65536> buffer;
  size_t got;
  while ((got = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) graded.raw.append(buffer.data(), got);
  int status = pclose(pipe);
  graded.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (json) graded.report = nlohmann::json::parse(graded.raw, nullptr, /*allow_exceptions=*/false);
  return graded;
}

// format "json" (the report is parsed) or "text" (raw only).
inline Graded run_grade(const Entry& entry, const std::vector<std::string>& extra, const std::string& format = "json") {
  std::string command = grade_command() + " " + entry.exercise + " --submission " + quote(entry.file.string()) +
                        " --format " + format + " --color never";
  for (const auto& arg : extra) command += " " + quote(arg);
  return run_command(command, format == "json");
}

// A batch: `files` of one exercise graded by one grade command (a JSON array
// on standard output, the worst exit status).
inline Graded run_batch(const std::string& exercise, const std::vector<fs::path>& files,
                        const std::vector<std::string>& extra) {
  std::string command = grade_command() + " " + exercise + " --format json --color never";
  for (const auto& file : files) command += " --submission " + quote(file.string());
  for (const auto& arg : extra) command += " " + quote(arg);
  return run_command(command, true);
}

inline std::set<std::string> focus_points_with(const nlohmann::json& report, const std::string& status) {
  std::set<std::string> ids;
  for (const auto& point : report["focus_points"]) {
    if (point["status"] == status) ids.insert(point["id"].get<std::string>());
  }
  return ids;
}

// The focus points with a check that was skipped, or passed without some of
// its cases, here: never met.
inline std::set<std::string> points_not_shown_here(const nlohmann::json& report) {
  // A point shown on every case this machine can run may be met (issue 50):
  // a check passed without the cases this LibTorch cannot run, or the GPU's
  // confirmation of a CPU check skipped without a GPU, leaves it shown.
  std::set<std::string> ids;
  for (const auto& check : report["checks"]) {
    if (check.value("status", "") == "skipped" && !check.value("gpu_confirmation", false))
      ids.insert(check.value("focus_point", ""));
  }
  return ids;
}

// A number in `text` no measurement of a grade can produce: a denormal or
// tinier value (4.658e-310, read from memory that was never written). Empty:
// none; otherwise the first such number.
inline std::string garbage_number(const std::string& text) {
  for (size_t at = text.find("e-"); at != std::string::npos; at = text.find("e-", at + 2)) {
    size_t end = at + 2;
    while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
    if (end == at + 2 || at == 0 || !std::isdigit(static_cast<unsigned char>(text[at - 1]))) continue;
    size_t start = at;
    while (start > 0 && (std::isdigit(static_cast<unsigned char>(text[start - 1])) || text[start - 1] == '.')) --start;
    // A softmax of large logits legitimately gives 2.9e-303: only what lies
    // below the smallest normal double is garbage.
    const double value = std::strtod(text.substr(start, end - start).c_str(), nullptr);
    if (value == 0 || value >= std::numeric_limits<double>::min()) continue;
    return text.substr(start, end - start);
  }
  return "";
}

// The operations a report's sentence says the learner's code calls, by their
// last name ("sub_", "repeat"): any call right after "your" or "look at"
// ("your repeat(", "look at k.repeat("), and a call on an object or in a
// namespace right after "rather than", "instead of" or "what" ("rather than
// x.sub_(mean)"). A bare call there is the formula ("divided by d_k instead of
// sqrt(d_k)"), and advice to use an operation ("use masked_fill(") is no claim
// about the code.
inline std::vector<std::string> claimed_calls(const std::string& text) {
  static const std::regex pointed(R"((?:look at|your)\s+`?(?:[A-Za-z_]\w*(?:\.|::|->))*([A-Za-z_]\w*)\()");
  static const std::regex contrasted(
      R"((?:rather than|instead of|what)\s+`?(?:[A-Za-z_]\w*(?:\.|::|->))+([A-Za-z_]\w*)\()");
  std::vector<std::pair<size_t, std::string>> found;
  for (const auto* pattern : {&pointed, &contrasted}) {
    for (auto it = std::sregex_iterator(text.begin(), text.end(), *pattern); it != std::sregex_iterator(); ++it)
      found.emplace_back(it->position(), (*it)[1].str());
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> names;
  for (const auto& [at, name] : found) names.push_back(name);
  return names;
}

// Whether the source text holds `name` as a whole word.
inline bool mentions(const std::string& source, const std::string& name) {
  for (size_t at = source.find(name); at != std::string::npos; at = source.find(name, at + 1)) {
    auto word = [&](size_t i) { return i < source.size() && (std::isalnum(static_cast<unsigned char>(source[i])) || source[i] == '_'); };
    if ((at == 0 || !word(at - 1)) && !word(at + name.size())) return true;
  }
  return false;
}

inline std::string describe(const Graded& graded) {
  std::string text = "exit " + std::to_string(graded.exit_code) + "\n";
  if (graded.report.is_discarded()) return text + graded.raw.substr(0, 4000);
  text += "verdict: " + graded.report.value("verdict", "?") + " — " + graded.report.value("summary", "") + "\n";
  for (const auto& check : graded.report["checks"]) {
    if (check["status"] == "passed") continue;
    text += "  " + check["status"].get<std::string>() + " " + check["id"].get<std::string>() + " [" +
            check["focus_point"].get<std::string>() + "]: " + check["message"].get<std::string>() + "\n";
    for (const auto& line : check["evidence"]) text += "      " + line.get<std::string>() + "\n";
  }
  auto compiler = graded.report.value("compiler_output", "");
  if (!compiler.empty()) text += "compiler:\n" + compiler.substr(0, 3000);
  return text;
}

// Whether this machine's sandbox isolates fully (`grade sandbox` exits 0).
inline bool sandbox_isolates() {
  static const bool isolates = [] {
    std::string command = grade_command() + " sandbox >/dev/null 2>&1";
    return std::system(command.c_str()) == 0;
  }();
  return isolates;
}

// Why grades with --sandbox off cannot run here ("" when they can): as root,
// the runner drops to nobody, who must be able to walk to the checkout (a
// private folder such as mktemp -d's is closed to it, and the grader says so
// as a grader error). Found once, by grading the sdpa model solution.
inline std::string unsandboxed_grading_blocked() {
  static const std::string why = [] {
    Entry solution{"exercise_sdpa", "probe", kRoot / "solutions/exercise_sdpa/sdpa.cpp"};
    auto graded = run_grade(solution, {"--sandbox", "off"});
    if (graded.report.is_discarded()) return std::string("the grade printed no report: ") + graded.raw.substr(0, 300);
    if (graded.report.value("verdict", "") == "passed") return std::string();
    return graded.report.value("verdict", "") + ": " + graded.report.value("summary", "");
  }();
  return why;
}

// Processes whose name (comm) is `name`.
inline std::vector<int> processes_named(const std::string& name) {
  std::vector<int> pids;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    auto pid = entry.path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream comm(entry.path() / "comm");
    std::string text;
    if (std::getline(comm, text) && text == name) pids.push_back(std::stoi(pid));
  }
  return pids;
}

}  // namespace corpus

namespace corpus {

// Raw control characters, C1 controls, bidirectional controls and bytes that
// are not UTF-8: what a terminal report must never print as is. Returns a
// description of the first one found, or "".
inline std::string first_unsafe_character(const std::string& text) {
  for (size_t i = 0; i < text.size();) {
    auto c = static_cast<unsigned char>(text[i]);
    size_t length = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
    if (length == 0 || i + length > text.size()) return "a byte that is not UTF-8 at " + std::to_string(i);
    uint32_t point = length == 1 ? c : c & (0x7f >> length);
    for (size_t k = 1; k < length; ++k) {
      auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xc0) != 0x80) return "a byte that is not UTF-8 at " + std::to_string(i);
      point = (point << 6) | (next & 0x3f);
    }
    bool control = (point < 0x20 && point != '\n' && point != '\t') || (point >= 0x7f && point <= 0x9f);
    bool bidi = point == 0x061c || point == 0x200e || point == 0x200f || (point >= 0x202a && point <= 0x202e) ||
                (point >= 0x2066 && point <= 0x2069);
    if (control || bidi) return "character U+" + std::to_string(point) + " at " + std::to_string(i);
    i += length;
  }
  return "";
}

}  // namespace corpus
