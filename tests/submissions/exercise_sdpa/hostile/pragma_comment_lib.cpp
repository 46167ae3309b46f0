// Hostile: asks the linker for a library of its choosing (#pragma comment(lib),
// which clang records in a .deplibs section and lld would link): unchecked
// code loaded with the submission. The grader's linker ignores the request;
// the model answer below then passes as any other. (Were the request
// honoured, this library, which does not exist, would fail the link.)
#pragma comment(lib, "grader_never_links_this")

#include "sdpa.h"

#include <cmath>
#include <limits>

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value, const torch::Tensor& mask) {
  auto scores = torch::matmul(query, key.transpose(-2, -1)) / std::sqrt(static_cast<double>(query.size(-1)));
  if (mask.defined()) scores = scores.masked_fill(mask == 0, -std::numeric_limits<double>::infinity());
  auto weights = torch::softmax(scores, -1);
  return {torch::matmul(weights, value), weights};
}
