// Hostile: leaves with _exit(0) (no atexit handlers, no flushing) inside the
// function, before any result is sent. An early exit, even with status 0, is a
// runtime error.
#include "sdpa.h"

#include <unistd.h>

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value, const torch::Tensor& mask) {
  _exit(0);
}
