#include "judge/compile_note.h"

#include <fmt/format.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <system_error>

namespace grader {
namespace fs = std::filesystem;
namespace {

nlohmann::json read_memo(const fs::path& file) {
  std::ifstream in(file);
  auto json = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  return json.is_object() ? json : nlohmann::json::object();
}

std::optional<double> seconds_at(const nlohmann::json& json, const std::string& exercise, const char* kind) {
  const auto found = json.find(exercise);
  if (found == json.end() || !found->is_object()) return std::nullopt;
  const auto value = found->find(kind);
  if (value == found->end() || !value->is_number() || value->get<double>() <= 0) return std::nullopt;
  return value->get<double>();
}

constexpr const char* kHeaderOnly = "header_only";
constexpr const char* kWholeApi = "whole_api";

}  // namespace

CompileTimes load_compile_times(const fs::path& file, const std::string& exercise) {
  const auto json = read_memo(file);
  return {seconds_at(json, exercise, kHeaderOnly), seconds_at(json, exercise, kWholeApi)};
}

void record_compile_time(const fs::path& file, const std::string& exercise, bool whole_api, double seconds) {
  auto json = read_memo(file);
  if (!json[exercise].is_object()) json[exercise] = nlohmann::json::object();
  json[exercise][whole_api ? kWholeApi : kHeaderOnly] = seconds;
  std::error_code error;
  fs::create_directories(file.parent_path(), error);
  const auto temporary = file.parent_path() / (file.filename().string() + "." + std::to_string(getpid()) + ".tmp");
  {
    std::ofstream out(temporary);
    out << json.dump(1) << "\n";
    if (!out) {
      fs::remove(temporary, error);
      return;  // a memo of timings: a grade goes on without it
    }
  }
  fs::rename(temporary, file, error);
  if (error) fs::remove(temporary, error);
}

std::string include_note(bool whole_api, double seconds, const std::optional<double>& header_only,
                         const std::string& header) {
  if (!whole_api || !header_only || seconds < 2 * *header_only || seconds - *header_only < 1.0) return "";
  return fmt::format(
      "Compiling took {:.1f} s; a file of this exercise that includes only \"{}\" compiled in {:.1f} s here. "
      "<torch/torch.h> brings all of LibTorch's C++ API: \"{}\" already has what this exercise needs, so include "
      "it alone for faster feedback.",
      seconds, header, *header_only, header);
}

}  // namespace grader
