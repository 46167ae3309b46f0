// WRONG twice: the embeddings are not scaled by sqrt(d_model), and the pooling
// averages every position, padded ones included.
#include "mini_encoder.h"

#include <cmath>

MiniEncoderImpl::MiniEncoderImpl(int64_t vocab_size, int64_t d_model, int64_t n_heads, int64_t d_ff,
                                 int64_t n_layers, int64_t n_classes, double dropout, int64_t max_len) {
  embedding = register_module("embedding", torch::nn::Embedding(vocab_size, d_model));
  auto opts = torch::TensorOptions().dtype(torch::kDouble);
  auto freq = torch::exp(torch::arange(0, d_model, 2, opts) * (-std::log(10000.0) / d_model));
  auto angle = torch::arange(max_len, opts).unsqueeze(1) * freq;
  auto table = torch::zeros({max_len, d_model}, opts);
  table.slice(1, 0, d_model, 2).copy_(angle.sin());
  table.slice(1, 1, d_model, 2).copy_(angle.narrow(1, 0, d_model / 2).cos());
  pe = register_buffer("pe", table.to(torch::kFloat));
  this->dropout = register_module("dropout", torch::nn::Dropout(dropout));
  layers = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < n_layers; ++i) {
    layers->push_back(torch::nn::TransformerEncoderLayer(
        torch::nn::TransformerEncoderLayerOptions(d_model, n_heads).dim_feedforward(d_ff).dropout(dropout).activation(
            torch::kGELU)));
  }
  classifier = register_module("classifier", torch::nn::Linear(d_model, n_classes));
}

torch::Tensor MiniEncoderImpl::forward(const torch::Tensor& tokens, const torch::Tensor& mask) {
  const int64_t n = tokens.size(1);
  auto h = embedding->forward(tokens);
  h = dropout->forward(h + pe.narrow(0, 0, n).unsqueeze(0));
  torch::Tensor kpm;
  if (mask.defined()) kpm = (mask == 0);
  auto x = h.transpose(0, 1);
  for (size_t i = 0; i < layers->size(); ++i) {
    x = layers->ptr<torch::nn::TransformerEncoderLayerImpl>(i)->forward(x, {}, kpm);
  }
  h = x.transpose(0, 1);
  auto pooled = h.mean(1);
  return classifier->forward(pooled);
}
