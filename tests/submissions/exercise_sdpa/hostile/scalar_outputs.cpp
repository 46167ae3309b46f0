// Hostile: both results are 0-dim tensors (a scalar each): a failed shape
// check, never a grader fault.
#include "sdpa.h"

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(const torch::Tensor& query,
                                                                       const torch::Tensor&, const torch::Tensor&,
                                                                       const torch::Tensor&) {
  return {query.sum(), query.mean()};
}
