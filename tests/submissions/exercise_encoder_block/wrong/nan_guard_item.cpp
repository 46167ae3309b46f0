// A NaN guard in forward that reads a value back with .item(): right numbers,
// but on a GPU every call waits for the device.
// Model answer for exercise_encoder_block: a post-LayerNorm transformer encoder
// block, the order of "Attention Is All You Need":
//
//   x = norm1(x + dropout1(self_attn(x, x, x, mask)))
//   x = norm2(x + dropout2(linear2(dropout(GELU(linear1(x))))))
//
// The interview question is "why residual + LayerNorm at each sub-layer?". The
// residual path (x + ...) lets information and gradients pass straight through a deep
// stack: each layer only has to learn a correction. LayerNorm keeps each token's
// features at zero mean and unit variance so that the sums do not grow layer after
// layer and the next sub-layer sees inputs on a stable scale. Where LayerNorm sits is a
// design choice: here after the sum (post-LN, the paper's); pre-LN (x + f(norm(x)),
// GPT-2 and later) trains more stably in deep stacks without warm-up.
//
// Read it as a walk through the focus points of exercise.yaml.
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
  // Defensive check, read back to the host on every call.
  TORCH_CHECK(!torch::isnan(x).any().item<bool>(), "EncoderBlock: NaN in the input");
  // Focus point `mask`: our mask is (B, 1, 1, N) with 1 for a token; MultiheadAttention's
  // key_padding_mask is (B, N) and true where a key must be IGNORED: invert and reshape.
  torch::Tensor key_padding_mask;
  if (mask.defined()) key_padding_mask = (mask == 0).reshape({x.size(0), x.size(1)});

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
