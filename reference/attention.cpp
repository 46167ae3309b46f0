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

}  // namespace reference
