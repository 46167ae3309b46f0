// Wrong: the softmax is taken in float32 "for stability" and cast back, so a
// float64 call carries float32 rounding in every weight.
#include "sdpa.h"

#include <cmath>
#include <limits>

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(const torch::Tensor& query,
                                                                      const torch::Tensor& key,
                                                                      const torch::Tensor& value,
                                                                      const torch::Tensor& mask) {
  auto scores = torch::matmul(query, key.transpose(-2, -1)) / std::sqrt(static_cast<double>(query.size(-1)));
  if (mask.defined()) scores = scores.masked_fill(mask == 0, -std::numeric_limits<double>::infinity());
  auto weights = torch::softmax(scores.to(torch::kFloat), -1).to(query.scalar_type());
  return {torch::matmul(weights, value), weights};
}
