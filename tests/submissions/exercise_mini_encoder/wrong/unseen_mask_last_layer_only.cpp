// Wrong (not in the mistake list as written): the padding mask is given to
// the last layer only, "where it matters for the pooled states"; every
// earlier layer lets real tokens attend to the padding.
#include "mini_encoder.h"

#include <cmath>

MiniEncoderImpl::MiniEncoderImpl(int64_t vocab_size, int64_t d_model, int64_t n_heads, int64_t d_ff,
                                 int64_t n_layers, int64_t n_classes, double dropout, int64_t max_len) {
  embedding = register_module("embedding", torch::nn::Embedding(vocab_size, d_model));
  auto pos = torch::arange(max_len, torch::kDouble).unsqueeze(1);
  auto inv_freq = torch::pow(10000.0, -torch::arange(0, d_model, 2, torch::kDouble) / static_cast<double>(d_model));
  auto pe_table = torch::zeros({max_len, d_model}, torch::kDouble);
  pe_table.index_put_({torch::indexing::Slice(), torch::indexing::Slice(0, torch::indexing::None, 2)},
                      torch::sin(pos * inv_freq));
  pe_table.index_put_({torch::indexing::Slice(), torch::indexing::Slice(1, torch::indexing::None, 2)},
                      torch::cos(pos * inv_freq).narrow(1, 0, d_model / 2));
  pe = register_buffer("pe", pe_table);
  this->dropout = register_module("dropout", torch::nn::Dropout(dropout));
  layers = register_module("layers", torch::nn::ModuleList());
  for (int64_t l = 0; l < n_layers; ++l) {
    auto options = torch::nn::TransformerEncoderLayerOptions(d_model, n_heads)
                       .dim_feedforward(d_ff)
                       .dropout(dropout)
                       .activation(torch::kGELU);
    layers->push_back(torch::nn::TransformerEncoderLayer(options));
  }
  classifier = register_module("classifier", torch::nn::Linear(d_model, n_classes));
}

torch::Tensor MiniEncoderImpl::forward(const torch::Tensor& tokens, const torch::Tensor& mask) {
  const int64_t length = tokens.size(1);
  auto table = embedding->weight;
  auto x = embedding->forward(tokens) * std::sqrt(static_cast<double>(table.size(1))) +
           pe.narrow(0, 0, length).to(table.dtype()).unsqueeze(0);
  x = dropout->forward(x).transpose(0, 1);
  torch::Tensor padding;
  if (mask.defined()) padding = mask.eq(0);
  const auto last = layers->size() - 1;
  for (size_t l = 0; l < layers->size(); ++l) {
    auto layer = layers->ptr<torch::nn::TransformerEncoderLayerImpl>(l);
    x = l == last ? layer->forward(x, {}, padding) : layer->forward(x);
  }
  x = x.transpose(0, 1);
  if (!mask.defined()) return classifier->forward(x.mean(1));
  auto real = mask.ne(0).unsqueeze(-1).to(x.dtype());
  return classifier->forward((x * real).sum(1) / real.sum(1));
}
