// Wrong (not in the mistake list as written): the first layer is called on
// its own with the padding mask, and the loop over the remaining layers
// forgets to pass it on.
#include "mini_encoder.h"

#include <cmath>

MiniEncoderImpl::MiniEncoderImpl(int64_t vocab_size, int64_t d_model, int64_t n_heads, int64_t d_ff,
                                 int64_t n_layers, int64_t n_classes, double dropout, int64_t max_len) {
  embedding = register_module("embedding", torch::nn::Embedding(vocab_size, d_model));
  auto even = torch::arange(0, d_model, 2, torch::kDouble);
  auto angle = torch::arange(max_len, torch::kDouble).unsqueeze(1) / torch::pow(10000.0, even / d_model);
  auto table = torch::stack({angle.sin(), angle.cos()}, -1).flatten(1).narrow(1, 0, d_model);
  pe = register_buffer("pe", table.contiguous());
  this->dropout = register_module("dropout", torch::nn::Dropout(dropout));
  layers = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < n_layers; ++i) {
    layers->push_back(torch::nn::TransformerEncoderLayer(torch::nn::TransformerEncoderLayerOptions(d_model, n_heads)
                                                             .dim_feedforward(d_ff)
                                                             .dropout(dropout)
                                                             .activation(torch::kGELU)));
  }
  classifier = register_module("classifier", torch::nn::Linear(d_model, n_classes));
}

torch::Tensor MiniEncoderImpl::forward(const torch::Tensor& tokens, const torch::Tensor& mask) {
  const auto scale = std::sqrt(static_cast<double>(embedding->weight.size(1)));
  auto h = embedding(tokens) * scale + pe.slice(0, 0, tokens.size(1)).to(embedding->weight.dtype());
  h = dropout(h).transpose(0, 1);
  torch::Tensor kpm;
  if (mask.defined()) kpm = mask == 0;
  h = layers->ptr<torch::nn::TransformerEncoderLayerImpl>(0)->forward(h, {}, kpm);
  for (size_t i = 1; i < layers->size(); ++i) h = layers->ptr<torch::nn::TransformerEncoderLayerImpl>(i)->forward(h);
  h = h.transpose(0, 1);
  torch::Tensor weights = mask.defined() ? (mask != 0).to(h.dtype()) : torch::ones(tokens.sizes(), h.options());
  auto pooled = (h * weights.unsqueeze(-1)).sum(1) / weights.sum(1, /*keepdim=*/true);
  return classifier(pooled);
}
