// Hostile: a global object whose constructor spins forever, so the process hangs
// while the library is being loaded, before any check runs.
// The grader must stop it at its time limit: verdict timeout.
#include "sdpa.h"

namespace {
struct Spin {
  Spin() {
    volatile unsigned long spin = 0;
    while (true) ++spin;
  }
} spin_forever;
}  // namespace

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value, const torch::Tensor& mask) {
  return {value, key};
}
