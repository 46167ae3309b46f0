// Hostile: tries to leave files outside its scratch directory: one in /tmp, a
// HACKED.txt in the project root (the first directory above the working
// directory that holds a `solutions` folder), and one in the home directory.
// Failures are ignored and the result is correct. The sandbox only lets the run
// write to its scratch directory: verdict passed, and none of the files exists.
#include "sdpa.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

namespace {

void try_create(const std::string& path) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  const char text[] = "a submission wrote here\n";
  ssize_t wrote = write(fd, text, sizeof(text) - 1);
  (void)wrote;
  close(fd);
}

void leave_marks() {
  try_create("/tmp/grader-hostile-wrote-here.txt");
  char cwd[PATH_MAX];
  if (getcwd(cwd, sizeof(cwd))) {
    std::string dir = cwd;
    while (!dir.empty()) {
      struct stat info {};
      if (stat((dir + "/solutions").c_str(), &info) == 0 && S_ISDIR(info.st_mode)) {
        try_create(dir + "/HACKED.txt");
        break;
      }
      if (dir == "/") break;
      auto slash = dir.find_last_of('/');
      dir = slash == 0 ? "/" : dir.substr(0, slash == std::string::npos ? 0 : slash);
    }
  }
  if (const char* home = std::getenv("HOME")) try_create(std::string(home) + "/.bashrc-grader-hostile");
}

}  // namespace

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value, const torch::Tensor& mask) {
  leave_marks();
  auto scores = torch::matmul(query, key.transpose(-2, -1)) / std::sqrt(static_cast<double>(query.size(-1)));
  if (mask.defined()) scores = scores.masked_fill(mask == 0, -std::numeric_limits<double>::infinity());
  auto weights = torch::softmax(scores, -1);
  return {torch::matmul(weights, value), weights};
}
