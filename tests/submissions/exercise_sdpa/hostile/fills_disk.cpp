// Hostile: tries to fill the disk (1 MB files in its working folder, /tmp and
// /var/tmp, up to 2 GB) so that other grades' compilers fail, then answers
// correctly. Every file creation is refused.
#include "sdpa.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value, const torch::Tensor& mask) {
  static bool done = false;
  if (!done) {
    done = true;
    std::vector<char> block(1 << 20, 'x');
    for (const char* dir : {".", "/tmp", "/var/tmp"}) {
      for (int i = 0; i < 700; ++i) {
        FILE* file = std::fopen((std::string(dir) + "/filler-" + std::to_string(i)).c_str(), "wb");
        if (!file) break;
        bool ok = std::fwrite(block.data(), 1, block.size(), file) == block.size();
        std::fclose(file);
        if (!ok) break;
      }
    }
  }
  auto scores = torch::matmul(query, key.transpose(-2, -1)) / std::sqrt(static_cast<double>(query.size(-1)));
  if (mask.defined()) scores = scores.masked_fill(mask == 0, -std::numeric_limits<double>::infinity());
  auto weights = torch::softmax(scores, -1);
  return {torch::matmul(weights, value), weights};
}
