// Wrong (dropout): the model's own Dropout is registered but forward never
// calls it: the embeddings plus positions reach the layers undropped.
#include "mini_encoder.h"

#include <cmath>

MiniEncoderImpl::MiniEncoderImpl(int64_t vocab_size, int64_t d_model, int64_t n_heads, int64_t d_ff,
                                 int64_t n_layers, int64_t n_classes, double dropout, int64_t max_len) {
  embedding = register_module("embedding", torch::nn::Embedding(torch::nn::EmbeddingOptions(vocab_size, d_model)));
  auto table = torch::zeros({max_len, d_model});
  auto acc = table.accessor<float, 2>();
  for (int64_t pos = 0; pos < max_len; ++pos) {
    for (int64_t i = 0; i < d_model; i += 2) {
      const double angle = pos / std::pow(10000.0, static_cast<double>(i) / d_model);
      acc[pos][i] = static_cast<float>(std::sin(angle));
      if (i + 1 < d_model) acc[pos][i + 1] = static_cast<float>(std::cos(angle));
    }
  }
  pe = register_buffer("pe", table);
  this->dropout = register_module("dropout", torch::nn::Dropout(torch::nn::DropoutOptions(dropout)));
  layers = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < n_layers; ++i) {
    torch::nn::TransformerEncoderLayerOptions options(d_model, n_heads);
    options.dim_feedforward(d_ff);
    options.dropout(dropout);
    options.activation(torch::kGELU);
    layers->push_back(torch::nn::TransformerEncoderLayer(options));
  }
  classifier = register_module("classifier", torch::nn::Linear(torch::nn::LinearOptions(d_model, n_classes)));
}

torch::Tensor MiniEncoderImpl::forward(const torch::Tensor& tokens, const torch::Tensor& mask) {
  const auto B = tokens.size(0), N = tokens.size(1);
  const auto D = embedding->options.embedding_dim();
  torch::Tensor x = embedding(tokens) * std::sqrt(static_cast<double>(D));
  x = x + pe.slice(0, 0, N);

  torch::Tensor real = mask.defined() ? mask.to(torch::kBool) : torch::ones({B, N}, tokens.options().dtype(torch::kBool));
  auto padding = real.logical_not();

  x = x.permute({1, 0, 2});
  for (const auto& module : *layers) {
    x = module->as<torch::nn::TransformerEncoderLayer>()->forward(x, torch::Tensor(), padding);
  }
  x = x.permute({1, 0, 2});

  auto summed = x.masked_fill(padding.unsqueeze(-1), 0.0).sum(1);
  auto count = real.sum(1, /*keepdim=*/true).clamp_min(1).to(x.scalar_type());
  return classifier(summed / count);
}
