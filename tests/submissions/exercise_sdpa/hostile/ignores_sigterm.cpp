// Hostile: ignores SIGTERM and SIGINT, then loops forever, hoping the grader only
// ever asks politely. The grader must still stop it (SIGKILL): verdict timeout.
#include "sdpa.h"

#include <csignal>

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value, const torch::Tensor& mask) {
  std::signal(SIGTERM, SIG_IGN);
  std::signal(SIGINT, SIG_IGN);
  volatile unsigned long spin = 0;
  while (true) ++spin;
}
