// Hostile: tries to leave a process behind. It forks; the child starts a new
// session (escaping the grader's process group) and forks again; the grandchild
// renames itself "grader-orphan" and sleeps "forever" (15 minutes, so a grader
// without the sandbox does not collect orphans for good); then the function
// returns a correct result. fork() is a forbidden system call: the seccomp filter
// kills the process at the first fork, verdict forbidden, and no orphan survives.
#include "sdpa.h"

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <limits>

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value, const torch::Tensor& mask) {
  pid_t child = fork();
  if (child == 0) {
    setsid();
    if (fork() == 0) {
      prctl(PR_SET_NAME, "grader-orphan", 0, 0, 0);
      for (int i = 0; i < 900; ++i) sleep(1);
    }
    _exit(0);
  }
  if (child > 0) waitpid(child, nullptr, 0);
  auto scores = torch::matmul(query, key.transpose(-2, -1)) / std::sqrt(static_cast<double>(query.size(-1)));
  if (mask.defined()) scores = scores.masked_fill(mask == 0, -std::numeric_limits<double>::infinity());
  auto weights = torch::softmax(scores, -1);
  return {torch::matmul(weights, value), weights};
}
