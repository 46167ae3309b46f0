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
  auto allow_file = [this](const fs::path& file) {
    if (file.empty()) return;
    files_.insert(file.lexically_normal());
    real_files_.insert(real_path(file));
  };
  for (const auto& file : {exercise.dir / exercise.interface_header, pch, fs::path(toolchain.prelude),
                           fs::path(toolchain.pch_support)}) {
    allow_file(file);
  }
  // LibTorch's API module (under the interface precompiled on it, too): the
  // module, its map, and what it is built from, read with it.
  if (on_torch_module(toolchain, pch)) {
    for (const auto& file : {toolchain.torch_module, toolchain.torch_module_map, toolchain.torch_api_header}) {
      allow_file(file);
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
  auto folder_text = [](const fs::path& dir) {
    auto text = dir.string();
    while (text.size() > 1 && text.back() == '/') text.pop_back();
    return text;
  };
  for (const auto& dir : dirs) {
    dirs_.push_back(folder_text(dir.lexically_normal()));
    real_dirs_.push_back(folder_text(real_path(dir)));
  }
}

fs::path IncludePolicy::real_path(const fs::path& path) {
  std::error_code error;
  auto real = fs::weakly_canonical(path, error);
  return error ? path.lexically_normal() : real;
}

bool IncludePolicy::inside(const fs::path& path, const std::set<fs::path>& files, const std::vector<std::string>& dirs) {
  const std::string& file = path.string();
  return files.count(path) || std::any_of(dirs.begin(), dirs.end(), [&file](const std::string& dir) {
           return file.size() > dir.size() && file.compare(0, dir.size(), dir) == 0 && file[dir.size()] == '/';
         });
}

bool IncludePolicy::allows(const std::string& header) const {
  const fs::path path(header);
  if (!inside(path.lexically_normal(), files_, dirs_)) return false;
  // A path that names /proc or /dev on the way is refused before the grader
  // resolves anything: there, the grader's own descriptors would answer for
  // the compiler's.
  for (const auto& part : path) {
    if (part == "proc" || part == "dev") return false;
  }
  // As the file system resolves it too: a path through a link (Debian's
  // /usr/lib/llvm-14/build/Release is "..") can read as an allowed folder's
  // and lead out of it.
  return inside(real_path(path), real_files_, real_dirs_);
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
