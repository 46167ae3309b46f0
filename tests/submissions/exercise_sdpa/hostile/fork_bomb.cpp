// Hostile: a fork bomb inside the function. Creating processes is a forbidden
// system call: the seccomp filter kills the process on the first fork, verdict
// forbidden. (Bounded, and the children end on their own, so that a grader
// without the filter does not take the machine down; they are named so the test
// can check that none survives.)
#include "sdpa.h"

#include <sys/prctl.h>
#include <unistd.h>

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value, const torch::Tensor& mask) {
  for (int i = 0; i < 256; ++i) {
    if (fork() == 0) {
      prctl(PR_SET_NAME, "grader-forkbomb", 0, 0, 0);
      sleep(30);
      _exit(0);
    }
  }
  return {value, key};
}
