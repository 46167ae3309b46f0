// Hostile: pulls the grader's trusted reference into the submission to copy it.
#include "sdpa.h"

// Aimed at a copy compiled in <build>/scratch/grade-XXXXXX/ (three levels below the project),
// where the grader once compiled; scratch folders now live under <temp>/attention-grader-<uid>/,
// and the compile's sandbox hides the project wherever they are.
#include "../../../reference/attention.h"

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value, const torch::Tensor& mask) {
  return reference::scaled_dot_product_attention(query, key, value, mask);
}
