#include "judge/include_policy.h"

#include <algorithm>
#include <string_view>

#include "judge/compile_step.h"

namespace grader {
namespace fs = std::filesystem;

std::vector<std::string> depfile_headers(const fs::path& depfile, const std::vector<fs::path>& compiled) {
  const auto text = read_file(depfile);
  auto colon = text.find(": ");
  std::vector<std::string> headers;
  if (colon == std::string::npos) return headers;
  std::set<std::string> ours;
  for (const auto& file : compiled) ours.insert({file.string(), file.filename().string()});
  std::string word;
  auto flush = [&] {
    if (!word.empty() && !ours.count(word)) headers.push_back(word);
    word.clear();
  };
  for (size_t i = colon + 2; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\\' && i + 1 < text.size() && text[i + 1] == ' ') {
      word += ' ';
      ++i;
    } else if (c == '\\' && i + 1 < text.size() && text[i + 1] == '\n') {  // a continued line
      flush();
      ++i;
    } else if (c == '$' && i + 1 < text.size() && text[i + 1] == '$') {
      word += '$';
      ++i;
    } else if (c == ' ' || c == '\n' || c == '\t' || c == '\r') {
      flush();
    } else {
      word += c;
    }
  }
  flush();
  return headers;
}

IncludePolicy::IncludePolicy(const Toolchain& toolchain, const Exercise& exercise, const fs::path& pch) {
  for (const auto& file : {exercise.dir / exercise.interface_header, pch, fs::path(toolchain.prelude),
                           fs::path(toolchain.pch_support)}) {
    if (!file.empty()) files_.insert(file.lexically_normal());
  }
  // LibTorch's API module: its map, and what it is built from, read with it.
  if (!pch.empty() && pch == fs::path(toolchain.torch_module)) {
    for (const auto& file : {toolchain.torch_module_map, toolchain.torch_api_header}) {
      if (!file.empty()) files_.insert(fs::path(file).lexically_normal());
    }
  }
  std::vector<fs::path> dirs = {"/usr/include", "/usr/lib", "/usr/local/include"};
  // The CUDA Toolkit's own headers (for a .cu; under /usr/local/cuda, say),
  // by the configured path or the one its links lead to.
  if (!toolchain.cuda_root.empty()) {
    dirs.push_back(toolchain.cuda_root);
    std::error_code error;
    auto real = fs::weakly_canonical(toolchain.cuda_root, error);
    if (!error) dirs.push_back(real);
  }
  dirs.insert(dirs.end(), toolchain.system_include_dirs.begin(), toolchain.system_include_dirs.end());
  for (const auto& dir : dirs) {
    auto text = dir.lexically_normal().string();
    while (text.size() > 1 && text.back() == '/') text.pop_back();
    dirs_.push_back(text);
  }
}

bool IncludePolicy::allows(const std::string& header) const {
  const fs::path path = fs::path(header).lexically_normal();
  const std::string& file = path.string();
  return files_.count(path) || std::any_of(dirs_.begin(), dirs_.end(), [&file](const std::string& dir) {
           return file.size() > dir.size() && file.compare(0, dir.size(), dir) == 0 && file[dir.size()] == '/';
         });
}

bool includes_all_of_libtorch(const std::string& text) {
  auto names_all_of_libtorch = [](std::string_view line) {
    auto skip_blanks = [&line] {
      while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    };
    auto take = [&line](std::string_view word) {
      if (line.substr(0, word.size()) != word) return false;
      line.remove_prefix(word.size());
      return true;
    };
    skip_blanks();
    if (!take("#")) return false;
    skip_blanks();
    if (!take("include")) return false;
    skip_blanks();
    if (!take("<") && !take("\"")) return false;
    return (take("torch/torch.h") || take("torch/all.h")) && (take(">") || take("\""));
  };
  const std::string_view all(text);
  for (size_t start = 0; start < all.size();) {
    const size_t end = std::min(all.find('\n', start), all.size());
    if (names_all_of_libtorch(all.substr(start, end - start))) return true;
    start = end + 1;
  }
  return false;
}

}  // namespace grader
