// Accepted: the classifier runs on every token and the logits are averaged
// over the real tokens: the same numbers, since a Linear commutes with a mean.
// The embedding is a one-hot product with the table, and the layer outputs
// are collected in a vector (only the last is used).
#include "mini_encoder.h"

#include <cmath>
#include <vector>

namespace {
torch::Tensor sinusoid(int64_t length, int64_t d) {
  auto position = torch::arange(length, torch::kDouble).unsqueeze(1);
  auto index = torch::arange(d, torch::kDouble);
  auto pair = torch::floor(index / 2) * 2;
  auto angle = position * torch::pow(10000.0, -pair / d);
  auto even = (torch::arange(d) % 2 == 0);
  return torch::where(even, torch::sin(angle), torch::cos(angle));
}
}  // namespace

MiniEncoderImpl::MiniEncoderImpl(int64_t vocab_size, int64_t d_model, int64_t n_heads, int64_t d_ff,
                                 int64_t n_layers, int64_t n_classes, double dropout, int64_t max_len)
    : embedding(register_module("embedding", torch::nn::Embedding(vocab_size, d_model))),
      dropout(register_module("dropout", torch::nn::Dropout(dropout))),
      layers(register_module("layers", torch::nn::ModuleList())),
      classifier(register_module("classifier", torch::nn::Linear(d_model, n_classes))) {
  pe = register_buffer("pe", sinusoid(max_len, d_model));
  for (int64_t i = 0; i < n_layers; ++i) {
    auto layer = torch::nn::TransformerEncoderLayer(torch::nn::TransformerEncoderLayerOptions(d_model, n_heads)
                                                        .dim_feedforward(d_ff)
                                                        .dropout(dropout)
                                                        .activation(torch::kGELU));
    layers->push_back(layer);
  }
}

torch::Tensor MiniEncoderImpl::forward(const torch::Tensor& tokens, const torch::Tensor& mask) {
  const auto& table = embedding->weight;
  auto one_hot = torch::one_hot(tokens, table.size(0)).to(table.scalar_type());
  auto h = one_hot.matmul(table) * std::sqrt(static_cast<double>(table.size(1)));
  h = dropout->forward(h + pe.index({torch::indexing::Slice(0, tokens.size(1))}).to(h.scalar_type()));

  torch::Tensor ignore = mask.defined() ? mask.eq(0) : torch::Tensor();
  std::vector<torch::Tensor> outputs{h.transpose(0, 1)};
  for (const auto& layer : layers->children()) {
    outputs.push_back(layer->as<torch::nn::TransformerEncoderLayerImpl>()->forward(outputs.back(), {}, ignore));
  }
  auto states = outputs.back().transpose(0, 1);  // (B, N, D)

  auto logits = classifier->forward(states);  // (B, N, C)
  if (!mask.defined()) return logits.mean(1);
  auto weight = mask.ne(0).to(logits.scalar_type()).unsqueeze(-1);
  return (logits * weight).sum(1) / weight.sum(1);
}
