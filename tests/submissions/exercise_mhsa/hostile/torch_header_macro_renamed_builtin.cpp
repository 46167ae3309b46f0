// Hostile: the macro renaming of macro_renamed_inline_builtin.cpp in a file
// that includes <torch/torch.h> first, which the grader compiles against
// LibTorch's API module: the prelude's poisoned name must hold through the
// module's import as it does in a precompiled header.
#include <torch/torch.h>
#include "mhsa.h"

#define multi_head_attention_forward attention_helper
#include <torch/nn/functional/activation.h>
#undef multi_head_attention_forward

MultiHeadSelfAttentionImpl::MultiHeadSelfAttentionImpl(int64_t dim, int64_t num_heads, double dropout)
    : dim(dim), num_heads(num_heads), head_dim(dim / num_heads) {
  TORCH_CHECK(dim % num_heads == 0, "dim must be divisible by num_heads");
  q_proj = register_module("q_proj", torch::nn::Linear(dim, dim));
  k_proj = register_module("k_proj", torch::nn::Linear(dim, dim));
  v_proj = register_module("v_proj", torch::nn::Linear(dim, dim));
  out_proj = register_module("out_proj", torch::nn::Linear(dim, dim));
  this->dropout = register_module("dropout", torch::nn::Dropout(dropout));
}

torch::Tensor MultiHeadSelfAttentionImpl::forward(const torch::Tensor& x) {
  namespace F = torch::nn::functional;
  auto in_weight = torch::cat({q_proj->weight, k_proj->weight, v_proj->weight});
  auto in_bias = torch::cat({q_proj->bias, k_proj->bias, v_proj->bias});
  auto seq_first = x.transpose(0, 1);
  auto result = F::attention_helper(
      seq_first, seq_first, seq_first,
      F::MultiheadAttentionForwardFuncOptions(dim, num_heads, in_weight, in_bias, {}, {}, false,
                                              dropout->options.p(), out_proj->weight, out_proj->bias)
          .training(is_training())
          .need_weights(false));
  return std::get<0>(result).transpose(0, 1);
}
