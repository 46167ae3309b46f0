// Wrong: the (B, 1, 1, N) mask made (B, N) with squeeze(), which also drops the
// batch axis when B = 1: a single padded sentence is refused by LibTorch's attention.
#include "encoder_block.h"

EncoderBlockImpl::EncoderBlockImpl(int64_t d_model, int64_t num_heads, int64_t d_ff, double dropout) {
  // Focus point `sublayers`: LibTorch's modules, registered under the names the
  // grader (and TransformerEncoderLayer) uses, so that their weights are found,
  // trained, moved by .to() and saved.
  self_attn = register_module(
      "self_attn", torch::nn::MultiheadAttention(torch::nn::MultiheadAttentionOptions(d_model, num_heads)));
  linear1 = register_module("linear1", torch::nn::Linear(d_model, d_ff));
  linear2 = register_module("linear2", torch::nn::Linear(d_ff, d_model));
  // Focus point `layernorm`: over the last dimension (each token's d_model features),
  // with LibTorch's default epsilon 1e-5 (BERT uses 1e-12: a different function).
  norm1 = register_module("norm1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d_model}).eps(1e-5)));
  norm2 = register_module("norm2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d_model}).eps(1e-5)));
  // Focus point `dropout`: three places, one probability, registered modules that
  // follow module->train() / module->eval().
  this->dropout = register_module("dropout", torch::nn::Dropout(dropout));
  dropout1 = register_module("dropout1", torch::nn::Dropout(dropout));
  dropout2 = register_module("dropout2", torch::nn::Dropout(dropout));
}

torch::Tensor EncoderBlockImpl::forward(const torch::Tensor& x, const torch::Tensor& mask) {
  // Focus point `mask`: our mask is (B, 1, 1, N) with 1 for a token; MultiheadAttention's
  // key_padding_mask is (B, N) and true where a key must be IGNORED: invert and reshape.
  torch::Tensor key_padding_mask;
  if (mask.defined()) key_padding_mask = mask.squeeze() == 0;  // (B, 1, 1, N) -> (B, N)

  // Focus point `sublayers`: MultiheadAttention works in (N, B, d_model) and returns
  // (output, weights); we keep the output and go back to (B, N, d_model).
  auto seq_first = x.transpose(0, 1);
  auto attended = std::get<0>(self_attn->forward(seq_first, seq_first, seq_first, key_padding_mask)).transpose(0, 1);

  // Focus points `residuals` and `layernorm`: add the sub-layer's input back, then
  // normalise the sum (post-LN). dropout1 acts on the sub-layer's output before the sum.
  auto h = norm1->forward(x + dropout1->forward(attended));

  // The FFN: Linear, exact GELU, dropout on the hidden activations, Linear.
  auto ffn = linear2->forward(dropout->forward(torch::gelu(linear1->forward(h))));
  return norm2->forward(h + dropout2->forward(ffn));
}
