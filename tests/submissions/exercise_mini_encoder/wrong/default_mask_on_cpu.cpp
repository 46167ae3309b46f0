// When no mask is given, an all-false padding mask is made with torch::zeros and
// no device: right on the CPU, a device mismatch inside the layers on a GPU.
// Model answer for exercise_mini_encoder: a transformer encoder that turns a
// token sequence into class logits, end to end.
//
//   tokens (B, N) -> embedding * sqrt(d_model) + positions -> dropout
//                 -> n_layers encoder layers (each sees the padding mask)
//                 -> mean over the real tokens -> classifier -> logits (B, n_classes)
//
// The interview question behind it is "walk me through a BERT-style classifier":
// where do positions come from, what does each layer see, how does a whole sequence
// become one vector, and why is the output logits and not probabilities.
//
// Read it as a walk through the focus points of exercise.yaml.
#include "mini_encoder.h"

#include <cmath>

MiniEncoderImpl::MiniEncoderImpl(int64_t vocab_size, int64_t d_model, int64_t n_heads, int64_t d_ff,
                                 int64_t n_layers, int64_t n_classes, double dropout, int64_t max_len) {
  TORCH_CHECK(vocab_size > 0 && d_model > 0 && n_layers > 0 && n_classes > 0 && max_len > 0,
              "MiniEncoder: sizes must be positive");

  // ---------------------------------------------------------------------------------
  // Focus point `embedding`: a lookup table of vocab_size rows of d_model features,
  // plus where each token sits. Attention itself is blind to order (permute the tokens
  // and the outputs permute the same way), so positions are added to the embeddings.
  embedding = register_module("embedding", torch::nn::Embedding(vocab_size, d_model));

  // The sinusoidal table of exercise_positional_encoding, computed once in float64
  // and kept as a buffer: moved by .to(), saved with the model, never trained.
  const auto options = torch::TensorOptions().dtype(torch::kDouble);
  auto frequency = torch::exp(torch::arange(0, d_model, 2, options) * (-std::log(10000.0) / d_model));
  auto angle = torch::arange(max_len, options).unsqueeze(1) * frequency;  // (max_len, ceil(d_model / 2))
  auto table = torch::zeros({max_len, d_model}, options);
  table.slice(1, 0, d_model, 2).copy_(angle.sin());
  table.slice(1, 1, d_model, 2).copy_(angle.narrow(1, 0, d_model / 2).cos());
  pe = register_buffer("pe", table);

  // Focus point `dropout`: one probability everywhere, on registered modules that
  // follow module->train() / module->eval().
  this->dropout = register_module("dropout", torch::nn::Dropout(dropout));

  // ---------------------------------------------------------------------------------
  // Focus point `layer_stack`: n_layers DISTINCT layers, each with its own weights.
  // Creating one layer and pushing it n_layers times would register the same module
  // under every index: one set of weights applied n_layers times (a weight-tied,
  // ALBERT-like model), not the stack asked for. TransformerEncoderLayer's default
  // activation is ReLU: the statement asks for GELU.
  layers = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < n_layers; ++i) {
    layers->push_back(torch::nn::TransformerEncoderLayer(torch::nn::TransformerEncoderLayerOptions(d_model, n_heads)
                                                             .dim_feedforward(d_ff)
                                                             .dropout(dropout)
                                                             .activation(torch::kGELU)));
  }

  // Focus point `head`: one Linear from the pooled vector to the classes.
  classifier = register_module("classifier", torch::nn::Linear(d_model, n_classes));
}

torch::Tensor MiniEncoderImpl::forward(const torch::Tensor& tokens, const torch::Tensor& mask) {
  const int64_t n = tokens.size(1);
  TORCH_CHECK(n <= pe.size(0), "MiniEncoder: a sequence of ", n, " tokens is longer than max_len = ", pe.size(0));

  // Focus point `embedding`: the paper scales embeddings by sqrt(d_model) so that they
  // are not drowned by the positional values (both are then of order 1); then the first
  // N rows of the table, broadcast over the batch.
  const double d_model = static_cast<double>(embedding->weight.size(1));
  auto h = embedding->forward(tokens) * std::sqrt(d_model);
  h = h + pe.narrow(0, 0, n).unsqueeze(0).to(h.scalar_type());
  h = dropout->forward(h);

  // Focus point `mask`: every layer must ignore the padded keys. Our mask is 1 for a real
  // token; src_key_padding_mask is true where a key must be IGNORED: invert it.
  // No mask given: "every token is real", made with torch::zeros and no device.
  torch::Tensor key_padding_mask = torch::zeros({tokens.size(0), n}, torch::kBool);
  if (mask.defined()) key_padding_mask = (mask == 0);

  // Focus point `layer_stack`: each layer takes the previous layer's output (N, B, d_model).
  auto x = h.transpose(0, 1);
  for (size_t i = 0; i < layers->size(); ++i) {
    x = layers->ptr<torch::nn::TransformerEncoderLayerImpl>(i)->forward(x, /*src_mask=*/{}, key_padding_mask);
  }
  h = x.transpose(0, 1);  // (B, N, d_model)

  // ---------------------------------------------------------------------------------
  // Focus point `pooling`: one vector per sequence, the average of its REAL tokens.
  // h.mean(1) would average the padded positions too: the same sentence would get a
  // different vector depending on how much padding its batch needed.
  torch::Tensor pooled;
  if (mask.defined()) {
    auto real = (mask != 0).to(h.scalar_type()).unsqueeze(-1);  // (B, N, 1)
    pooled = (h * real).sum(1) / real.sum(1);
  } else {
    pooled = h.mean(1);
  }

  // Focus point `head`: logits, not probabilities. The loss (cross_entropy) applies
  // log_softmax itself, more stably than log(softmax(x)).
  return classifier->forward(pooled);
}
