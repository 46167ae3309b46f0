// Hostile: adds an LTO symbol-table section that makes nm's plugin abort on
// the compiled object (a grader error once); answers correctly otherwise.
#include "sdpa.h"

#include <cmath>
#include <limits>

__asm__(".globl __gnu_lto_slim\n.comm __gnu_lto_slim,1,1\n.section .gnu.lto_.symtab.0,\"\",@progbits\n"
        ".ascii \"zz\"\n.previous\n");

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value, const torch::Tensor& mask) {
  auto scores = torch::matmul(query, key.transpose(-2, -1)) / std::sqrt(static_cast<double>(query.size(-1)));
  if (mask.defined()) scores = scores.masked_fill(mask == 0, -std::numeric_limits<double>::infinity());
  auto weights = torch::softmax(scores, -1);
  return {torch::matmul(weights, value), weights};
}
