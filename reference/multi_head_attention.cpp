#include "multi_head_attention.h"

#include <ATen/ATen.h>

#include <cmath>

namespace reference {
namespace {

at::Tensor linear(const at::Tensor& x, const Parameters& parameters, const std::string& name) {
  return at::linear(x, parameters.at(name + ".weight"), parameters.at(name + ".bias"));
}

}  // namespace

MhsaResult multi_head_attention(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                                const at::Tensor& mask, const Parameters& parameters, int64_t num_heads,
                                const Projections& names, const MhsaVariant& variant) {
  TORCH_CHECK(query.dim() == 3 && key.dim() == 3 && value.dim() == 3, "reference MHA expects (B, N, D) inputs");
  TORCH_CHECK(key.sizes() == value.sizes(), "key and value must have the same shape");
  const auto batch = query.size(0), dim = query.size(2);
  TORCH_CHECK(num_heads > 0 && dim % num_heads == 0, "dim ", dim, " is not divisible by num_heads ", num_heads);
  const auto head_dim = dim / num_heads;

  auto split = [&](const at::Tensor& t) {
    const auto tokens = t.size(1);
    switch (variant.split) {
      case HeadSplit::transpose:
        return t.reshape({batch, tokens, num_heads, head_dim}).transpose(1, 2);
      case HeadSplit::no_transpose:
        return t.reshape({batch, num_heads, tokens, head_dim});
      case HeadSplit::interleaved:
        return t.reshape({batch, tokens, head_dim, num_heads}).permute({0, 3, 1, 2});
    }
    return t;
  };
  auto merge = [&](const at::Tensor& t) {
    const auto tokens = t.size(2);
    if (!variant.merge_transposes) return t.reshape({batch, tokens, dim});
    if (variant.split == HeadSplit::interleaved) return t.permute({0, 2, 3, 1}).reshape({batch, tokens, dim});
    return t.transpose(1, 2).reshape({batch, tokens, dim});
  };

  auto q = split(linear(query, parameters, names.query));
  const auto& key_input = variant.key_from_query_input ? query : key;
  auto k = split(linear(key_input, parameters, variant.key_uses_query_projection ? names.query : names.key));
  const auto& value_input = variant.value_from_query_input ? query : value;
  auto v = split(variant.value_projection ? linear(value_input, parameters, names.value) : value_input);

  auto attention = variant.attention;
  if (!attention.scale) attention.scale = 1.0 / std::sqrt(static_cast<double>(head_dim));
  auto [heads, weights] = scaled_dot_product_attention(q, k, v, mask, attention);
  auto merged = merge(heads);
  auto output = variant.output_projection ? linear(merged, parameters, names.output) : merged;
  return {output, weights};
}

MhsaResult multi_head_self_attention(const at::Tensor& x, const Parameters& parameters, int64_t num_heads,
                                     const MhsaVariant& variant) {
  TORCH_CHECK(x.dim() == 3, "reference MHSA expects (B, N, D), got ", x.sizes());
  return multi_head_attention(x, x, x, {}, parameters, num_heads, Projections{}, variant);
}

const std::vector<std::string>& mhsa_parameter_names() {
  static const std::vector<std::string> names = {"q_proj.weight", "q_proj.bias", "k_proj.weight",   "k_proj.bias",
                                                 "v_proj.weight", "v_proj.bias", "out_proj.weight", "out_proj.bias"};
  return names;
}

}  // namespace reference
