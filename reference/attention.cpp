#include "attention.h"

#include <ATen/ATen.h>

#include <cmath>
#include <limits>

namespace reference {
namespace {

at::Tensor apply_mask_to_scores(const at::Tensor& scores, const at::Tensor& mask, MaskStage stage) {
  const double neg_inf = -std::numeric_limits<double>::infinity();
  switch (stage) {
    case MaskStage::before_softmax:
      return scores.masked_fill(mask == 0, neg_inf);
    case MaskStage::inverted:
      return scores.masked_fill(mask != 0, neg_inf);
    case MaskStage::fill_zero:
      return scores.masked_fill(mask == 0, 0.0);
    case MaskStage::added:
      return scores + mask.to(scores.scalar_type());
    case MaskStage::after_softmax:
    case MaskStage::ignored:
      return scores;
  }
  return scores;
}

at::Tensor linear(const at::Tensor& x, const Parameters& parameters, const std::string& name) {
  return at::linear(x, parameters.at(name + ".weight"), parameters.at(name + ".bias"));
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> scaled_dot_product_attention(const at::Tensor& query, const at::Tensor& key,
                                                                const at::Tensor& value, const at::Tensor& mask,
                                                                const SdpaVariant& variant) {
  const auto d_k = query.size(-1);
  const double scale = variant.scale.value_or(1.0 / std::sqrt(static_cast<double>(d_k)));
  auto key_t = key.transpose(-2, -1);
  if (variant.key_reshaped) key_t = key.reshape(key_t.sizes());
  auto scores = at::matmul(query, key_t) * scale;
  if (mask.defined()) scores = apply_mask_to_scores(scores, mask, variant.mask_stage);
  auto weights = at::softmax(scores, variant.softmax_dim);
  if (mask.defined() && variant.mask_stage == MaskStage::after_softmax) weights = weights.masked_fill(mask == 0, 0.0);
  auto output = at::matmul(weights, value);
  if (variant.weights_before_softmax) weights = scores;
  return {output, weights};
}

MhsaResult multi_head_self_attention(const at::Tensor& x, const Parameters& parameters, int64_t num_heads,
                                     const MhsaVariant& variant) {
  TORCH_CHECK(x.dim() == 3, "reference MHSA expects (B, N, D), got ", x.sizes());
  const auto batch = x.size(0), tokens = x.size(1), dim = x.size(2);
  TORCH_CHECK(num_heads > 0 && dim % num_heads == 0, "dim ", dim, " is not divisible by num_heads ", num_heads);
  const auto head_dim = dim / num_heads;

  auto split = [&](const at::Tensor& t) {
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
    if (!variant.merge_transposes) return t.reshape({batch, tokens, dim});
    if (variant.split == HeadSplit::interleaved) return t.permute({0, 2, 3, 1}).reshape({batch, tokens, dim});
    return t.transpose(1, 2).reshape({batch, tokens, dim});
  };

  auto q = split(linear(x, parameters, "q_proj"));
  auto k = split(linear(x, parameters, variant.key_uses_query_projection ? "q_proj" : "k_proj"));
  auto v = split(variant.value_projection ? linear(x, parameters, "v_proj") : x);

  auto attention = variant.attention;
  if (!attention.scale) attention.scale = 1.0 / std::sqrt(static_cast<double>(head_dim));
  auto [heads, weights] = scaled_dot_product_attention(q, k, v, {}, attention);
  auto merged = merge(heads);
  auto output = variant.output_projection ? linear(merged, parameters, "out_proj") : merged;
  return {output, weights};
}

const std::vector<std::string>& mhsa_parameter_names() {
  static const std::vector<std::string> names = {"q_proj.weight", "q_proj.bias", "k_proj.weight",   "k_proj.bias",
                                                 "v_proj.weight", "v_proj.bias", "out_proj.weight", "out_proj.bias"};
  return names;
}

}  // namespace reference
