#include "mini_encoder_reference.h"

#include <ATen/ATen.h>

#include <cmath>

#include "encoder_block_reference.h"
#include "sinusoidal_encoding.h"

namespace reference {

at::Tensor mini_encoder_states(const at::Tensor& tokens, const at::Tensor& mask,
                               const std::map<std::string, at::Tensor>& p, int64_t num_heads, int64_t num_layers,
                               const MiniEncoderVariant& variant) {
  TORCH_CHECK(tokens.dim() == 2, "mini_encoder: tokens must be (B, N)");
  TORCH_CHECK(num_layers >= 1, "mini_encoder: at least one layer");
  const auto& table = p.at("embedding.weight");
  const int64_t b = tokens.size(0), n = tokens.size(1), d = table.size(1);
  auto h = at::embedding(table, tokens);
  if (variant.embedding_scaled) h = h * std::sqrt(static_cast<double>(d));
  if (variant.positions) h = h + sinusoidal_table(n, d).to(h.scalar_type()).unsqueeze(0);
  if (variant.drop_embeddings) h = at::zeros_like(h);
  const auto attention_mask = mask.defined() ? mask.reshape({b, 1, 1, n}) : at::Tensor();
  EncoderBlockVariant block;
  block.mask_stage = variant.mask_stage;
  block.activation = variant.activation;
  auto layer_params = [&](int64_t i) {
    const auto prefix = "layers." + std::to_string(i) + ".";
    std::map<std::string, at::Tensor> own;
    for (const auto& [name, tensor] : p) {
      if (name.rfind(prefix, 0) == 0) own[name.substr(prefix.size())] = tensor;
    }
    return own;
  };
  const auto embedded = h;
  for (int64_t i = 0; i < num_layers; ++i) {
    const bool reached = variant.mask_reach == MaskReach::every_layer ||
                         (variant.mask_reach == MaskReach::first_layer_only ? i == 0 : i > 0);
    block.mask_stage = reached ? variant.mask_stage : MaskStage::ignored;
    const auto weights = layer_params(variant.layers == LayerStack::shared_last ? num_layers - 1 : i);
    h = encoder_block(variant.layers == LayerStack::unchained ? embedded : h, attention_mask, weights, num_heads,
                      block);
  }
  return h;
}

at::Tensor mini_encoder(const at::Tensor& tokens, const at::Tensor& mask, const std::map<std::string, at::Tensor>& p,
                        int64_t num_heads, int64_t num_layers, const MiniEncoderVariant& variant) {
  auto h = mini_encoder_states(tokens, mask, p, num_heads, num_layers, variant);
  const int64_t n = h.size(1);
  // (B, N, 1): 1 for a token the pooling counts.
  auto real = mask.defined() ? (mask != 0).to(h.scalar_type()).unsqueeze(-1) : at::ones_like(h.select(-1, 0)).unsqueeze(-1);
  at::Tensor pooled;
  switch (variant.pooling) {
    case Pooling::masked_mean: pooled = (h * real).sum(1) / real.sum(1); break;
    case Pooling::mean_all: pooled = h.mean(1); break;
    case Pooling::sum_over_n: pooled = (h * real).sum(1) / static_cast<double>(n); break;
    case Pooling::first_token: pooled = h.select(1, 0); break;
  }
  auto logits = at::linear(pooled, p.at("classifier.weight"), p.at("classifier.bias"));
  return variant.softmax_head ? at::softmax(logits, -1) : logits;
}

}  // namespace reference
