// Forbidden: the whole block is LibTorch's TransformerEncoderLayer, its
// parameters re-registered under the expected names.
#include "encoder_block.h"

#include <torch/nn/modules/transformerlayer.h>

namespace {
torch::nn::TransformerEncoderLayer layer_for(int64_t d_model, int64_t num_heads, int64_t d_ff, double dropout) {
  return torch::nn::TransformerEncoderLayer(torch::nn::TransformerEncoderLayerOptions(d_model, num_heads)
                                                .dim_feedforward(d_ff)
                                                .dropout(dropout)
                                                .activation(torch::kGELU));
}
}  // namespace

EncoderBlockImpl::EncoderBlockImpl(int64_t d_model, int64_t num_heads, int64_t d_ff, double dropout) {
  auto layer = register_module("layer", layer_for(d_model, num_heads, d_ff, dropout));
  self_attn = register_module("self_attn", layer->self_attn);
  linear1 = register_module("linear1", layer->linear1);
  linear2 = register_module("linear2", layer->linear2);
  norm1 = register_module("norm1", layer->norm1);
  norm2 = register_module("norm2", layer->norm2);
  this->dropout = register_module("dropout", layer->dropout);
  dropout1 = register_module("dropout1", layer->dropout1);
  dropout2 = register_module("dropout2", layer->dropout2);
}

torch::Tensor EncoderBlockImpl::forward(const torch::Tensor& x, const torch::Tensor& mask) {
  torch::Tensor kpm;
  if (mask.defined()) kpm = (mask == 0).reshape({x.size(0), x.size(1)});
  auto layer = std::dynamic_pointer_cast<torch::nn::TransformerEncoderLayerImpl>(named_children()["layer"]);
  return layer->forward(x.transpose(0, 1), {}, kpm).transpose(0, 1);
}
