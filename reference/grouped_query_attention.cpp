#include "grouped_query_attention.h"

#include <ATen/ATen.h>

#include <cmath>

namespace reference {

GqaResult grouped_query_attention(const at::Tensor& x, const std::map<std::string, at::Tensor>& parameters,
                                  int64_t num_heads, int64_t num_kv_heads, const GqaVariant& variant) {
  TORCH_CHECK(x.dim() == 3, "reference GQA expects (B, N, D), got ", x.sizes());
  const auto batch = x.size(0), tokens = x.size(1), dim = x.size(2);
  TORCH_CHECK(num_heads > 0 && dim % num_heads == 0, "dim ", dim, " is not divisible by num_heads ", num_heads);
  TORCH_CHECK(num_kv_heads > 0 && num_heads % num_kv_heads == 0, "num_heads ", num_heads,
              " is not divisible by num_kv_heads ", num_kv_heads);
  const auto head_dim = dim / num_heads, group = num_heads / num_kv_heads;

  auto project = [&](const std::string& name) { return at::linear(x, parameters.at(name + ".weight")); };
  auto split = [&](const at::Tensor& t, int64_t heads) {
    if (!variant.split_transposes) return t.reshape({batch, heads, tokens, head_dim});
    return t.reshape({batch, tokens, heads, head_dim}).transpose(1, 2);
  };
  // (B, KV, N, hd) -> (B, H, N, hd), query head h reading the kv head the variant says.
  auto share = [&](const at::Tensor& t) {
    if (variant.sharing == KvSharing::tiled) return t.repeat({1, group, 1, 1});
    return t.repeat_interleave(group, 1);
  };

  auto q = split(project("q_proj"), num_heads);
  auto k = share(split(project("k_proj"), num_kv_heads));
  auto v = share(split(project(variant.value_uses_key_projection ? "k_proj" : "v_proj"), num_kv_heads));
  auto attention = variant.attention;
  if (!attention.scale) attention.scale = 1.0 / std::sqrt(static_cast<double>(head_dim));
  auto [heads, weights] = scaled_dot_product_attention(q, k, v, {}, attention);
  auto merged = variant.merge_transposes ? heads.transpose(1, 2).reshape({batch, tokens, dim})
                                         : heads.reshape({batch, tokens, dim});
  auto output = variant.output_projection ? at::linear(merged, parameters.at("out_proj.weight")) : merged;
  return {output, weights};
}

}  // namespace reference
