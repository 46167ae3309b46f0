// WRONG (outside the known mistakes): correct numbers, but one attention per
// query head in a loop, each slicing its kv head: the work grows with the
// number of heads.
#include "gqa.h"

#include <cmath>
#include <vector>

GroupedQueryAttentionImpl::GroupedQueryAttentionImpl(int64_t dim, int64_t num_heads, int64_t num_kv_heads)
    : dim(dim), num_heads(num_heads), num_kv_heads(num_kv_heads), head_dim(num_heads > 0 ? dim / num_heads : 0) {
  TORCH_CHECK(num_heads > 0 && dim % num_heads == 0, "dim must be divisible by num_heads");
  TORCH_CHECK(num_kv_heads > 0 && num_heads % num_kv_heads == 0, "num_heads must be divisible by num_kv_heads");
  auto options = [](int64_t in, int64_t out) { return torch::nn::LinearOptions(in, out).bias(false); };
  q_proj = register_module("q_proj", torch::nn::Linear(options(dim, dim)));
  k_proj = register_module("k_proj", torch::nn::Linear(options(dim, num_kv_heads * head_dim)));
  v_proj = register_module("v_proj", torch::nn::Linear(options(dim, num_kv_heads * head_dim)));
  out_proj = register_module("out_proj", torch::nn::Linear(options(dim, dim)));
}

torch::Tensor GroupedQueryAttentionImpl::forward(const torch::Tensor& x) {
  auto q = q_proj(x), k = k_proj(x), v = v_proj(x);
  const auto group = num_heads / num_kv_heads;
  std::vector<torch::Tensor> heads;
  for (int64_t h = 0; h < num_heads; ++h) {
    const auto g = h / group;
    auto qh = q.narrow(-1, h * head_dim, head_dim);
    auto kh = k.narrow(-1, g * head_dim, head_dim);
    auto vh = v.narrow(-1, g * head_dim, head_dim);
    auto w = torch::softmax(torch::bmm(qh, kh.transpose(1, 2)) / std::sqrt(double(head_dim)), -1);
    heads.push_back(torch::bmm(w, vh));
  }
  return out_proj(torch::cat(heads, -1));
}
