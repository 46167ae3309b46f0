// Hostile: the forbidden TransformerEncoder does the stacking, and its own
// ModuleList is registered as "layers" so that every weight loads by name.
#include "mini_encoder.h"

#include <torch/nn/modules/transformer.h>
#include <torch/nn/modules/transformercoder.h>

#include <cmath>

namespace {
torch::nn::TransformerEncoder g_encoder{nullptr};
}

MiniEncoderImpl::MiniEncoderImpl(int64_t vocab_size, int64_t d_model, int64_t n_heads, int64_t d_ff,
                                 int64_t n_layers, int64_t n_classes, double dropout, int64_t max_len) {
  embedding = register_module("embedding", torch::nn::Embedding(vocab_size, d_model));
  auto opts = torch::TensorOptions().dtype(torch::kDouble);
  auto freq = torch::exp(torch::arange(0, d_model, 2, opts) * (-std::log(10000.0) / d_model));
  auto angle = torch::arange(max_len, opts).unsqueeze(1) * freq;
  auto table = torch::zeros({max_len, d_model}, opts);
  table.slice(1, 0, d_model, 2).copy_(angle.sin());
  table.slice(1, 1, d_model, 2).copy_(angle.narrow(1, 0, d_model / 2).cos());
  pe = register_buffer("pe", table);
  this->dropout = register_module("dropout", torch::nn::Dropout(dropout));
  g_encoder = torch::nn::TransformerEncoder(torch::nn::TransformerEncoderOptions(
      torch::nn::TransformerEncoderLayerOptions(d_model, n_heads).dim_feedforward(d_ff).dropout(dropout).activation(
          torch::kGELU),
      n_layers));
  layers = register_module("layers", g_encoder->layers);
  classifier = register_module("classifier", torch::nn::Linear(d_model, n_classes));
}

torch::Tensor MiniEncoderImpl::forward(const torch::Tensor& tokens, const torch::Tensor& mask) {
  auto h = embedding->forward(tokens) * std::sqrt(static_cast<double>(embedding->weight.size(1)));
  h = dropout->forward(h + pe.narrow(0, 0, tokens.size(1)).unsqueeze(0).to(h.scalar_type()));
  g_encoder->train(is_training());
  auto x = g_encoder->forward(h.transpose(0, 1), {}, mask.defined() ? (mask == 0) : torch::Tensor()).transpose(0, 1);
  if (!mask.defined()) return classifier->forward(x.mean(1));
  auto m = (mask != 0).to(x.scalar_type()).unsqueeze(-1);
  return classifier->forward((x * m).sum(1) / m.sum(1));
}
