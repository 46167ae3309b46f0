#include "judge/error_place.h"

#include <map>
#include <sstream>

#include "judge/process.h"

namespace grader {
namespace fs = std::filesystem;

namespace {

// A frame line the runner sent: hex digits only, a few of them.
std::optional<uint64_t> offset_of(const std::string& text) {
  if (text.empty() || text.size() > 16 || text.find_first_not_of("0123456789abcdef") != std::string::npos)
    return std::nullopt;
  return std::stoull(text, nullptr, 16);
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

}  // namespace

std::vector<std::string> parse_addr2line(const std::string& output, size_t count) {
  const auto lines = lines_of(output);
  std::vector<std::string> places;
  for (size_t i = 0; i < count; ++i) {
    if (2 * i + 1 >= lines.size()) {
      places.emplace_back();
      continue;
    }
    auto function = lines[2 * i];
    const auto& where = lines[2 * i + 1];
    // "path/mhsa.cpp:23" or "path/mhsa.cpp:23 (discriminator 2)"; "??:0" or "??:?" when unknown.
    auto colon = where.rfind(':');
    const auto space = where.find(" (", colon == std::string::npos ? 0 : colon);
    if (colon == std::string::npos || where.compare(0, 2, "??") == 0) {
      places.emplace_back();
      continue;
    }
    const auto line = where.substr(colon + 1, space == std::string::npos ? std::string::npos : space - colon - 1);
    if (line.empty() || line == "?" || line == "0") {
      places.emplace_back();
      continue;
    }
    const auto file = fs::path(where.substr(0, colon)).filename().string();
    // Arguments left out: "MultiHeadSelfAttentionImpl::forward(at::Tensor const&)" reads as its name.
    if (auto paren = function.find('('); paren != std::string::npos && paren > 0) function.resize(paren);
    places.push_back(file + ":" + line + (function == "??" ? "" : " in " + function));
  }
  return places;
}

std::vector<std::string> error_places(const std::string& addr2line, const fs::path& object,
                                      const std::string& learner_file,
                                      const std::vector<std::optional<std::string>>& frames) {
  std::vector<std::string> places(frames.size());
  std::error_code error;
  const auto size = fs::file_size(object, error);
  if (error || addr2line.empty() || !fs::exists(addr2line, error)) return places;
  // Every case's offsets, asked once: a crash that every case shares is one line.
  std::vector<uint64_t> asked;
  std::map<uint64_t, size_t> index;
  std::vector<std::vector<uint64_t>> per_case(frames.size());
  for (size_t i = 0; i < frames.size(); ++i) {
    if (!frames[i]) continue;
    for (const auto& line : lines_of(*frames[i])) {
      const auto offset = offset_of(line);
      if (!offset || *offset >= size || per_case[i].size() >= 4) continue;
      per_case[i].push_back(*offset);
      if (index.emplace(*offset, asked.size()).second) asked.push_back(*offset);
    }
  }
  if (asked.empty()) return places;
  ChildSpec spec;
  spec.argv = {addr2line, "-f", "-C", "-e", object.string()};
  for (auto offset : asked) {
    std::ostringstream hex;
    hex << "0x" << std::hex << offset;
    spec.argv.push_back(hex.str());
  }
  spec.limits.wall_seconds = 10;
  spec.limits.cpu_seconds = 10;
  spec.limits.output_bytes = 1024 * 1024;
  const auto outcome = run_child(spec);
  if (!outcome.started || outcome.timed_out || outcome.exit_code != 0) return places;
  const auto found = parse_addr2line(outcome.stdout_text, asked.size());
  for (size_t i = 0; i < frames.size(); ++i) {
    std::string path;
    for (auto offset : per_case[i]) {
      const auto& place = found[index.at(offset)];
      if (place.rfind(learner_file + ":", 0) != 0) continue;
      path += (path.empty() ? "" : ", called from ") + place;
    }
    places[i] = path;
  }
  return places;
}

}  // namespace grader
