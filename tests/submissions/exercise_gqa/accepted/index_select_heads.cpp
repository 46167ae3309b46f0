// Accepted: each query head's kv head looked up with index_select, the
// indices h / G made on the input's device; einsum for the products.
#include "gqa.h"

#include <cmath>

GroupedQueryAttentionImpl::GroupedQueryAttentionImpl(int64_t dim, int64_t num_heads, int64_t num_kv_heads)
    : dim(dim), num_heads(num_heads), num_kv_heads(num_kv_heads), head_dim(num_heads > 0 ? dim / num_heads : 0) {
  TORCH_CHECK(num_heads > 0 && dim % num_heads == 0, "num_heads (", num_heads, ") must divide dim (", dim, ")");
  TORCH_CHECK(num_kv_heads > 0 && num_heads % num_kv_heads == 0, "num_kv_heads (", num_kv_heads,
              ") must divide num_heads (", num_heads, ")");
  using torch::nn::Linear;
  using torch::nn::LinearOptions;
  q_proj = register_module("q_proj", Linear(LinearOptions(dim, num_heads * head_dim).bias(false)));
  k_proj = register_module("k_proj", Linear(LinearOptions(dim, num_kv_heads * head_dim).bias(false)));
  v_proj = register_module("v_proj", Linear(LinearOptions(dim, num_kv_heads * head_dim).bias(false)));
  out_proj = register_module("out_proj", Linear(LinearOptions(num_heads * head_dim, dim).bias(false)));
}

torch::Tensor GroupedQueryAttentionImpl::forward(const torch::Tensor& x) {
  const auto B = x.size(0), N = x.size(1);
  auto split = [&](const torch::Tensor& t, int64_t heads) {
    return t.reshape({B, N, heads, head_dim}).transpose(1, 2);
  };
  auto q = split(q_proj(x), num_heads);
  auto kv_index = torch::arange(num_heads, torch::TensorOptions().dtype(torch::kLong).device(x.device()))
                      .div(num_heads / num_kv_heads, "floor");
  auto k = split(k_proj(x), num_kv_heads).index_select(1, kv_index);
  auto v = split(v_proj(x), num_kv_heads).index_select(1, kv_index);
  auto scores = torch::einsum("bhid,bhjd->bhij", {q, k}) * (1.0 / std::sqrt(static_cast<double>(head_dim)));
  auto weights = scores.softmax(-1);
  auto heads = torch::einsum("bhij,bhjd->bihd", {weights, v});
  return out_proj(heads.reshape({B, N, dim}));
}
