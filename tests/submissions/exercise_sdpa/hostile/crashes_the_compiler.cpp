// Hostile: crashes the compiler on purpose. Clang then writes a preprocessed
// copy of the source (24 MB with LibTorch's headers) and a script naming the
// build's paths into the temporary folder: the machine's /tmp without the
// sandbox, never removed. The grader compiles with -fno-crash-diagnostics and
// TMPDIR inside the grade's scratch folder.
#include "sdpa.h"

#pragma clang __debug crash

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value, const torch::Tensor& mask) {
  return {query, key};
}
