// Fixed interface for exercise_mhsa. Do not edit: the grader compiles your
// mhsa.cpp against this header.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

// Multi-head self-attention over a (B, N, D) input, written the LibTorch way.
//
// The constructor must register, under exactly these names (the grader loads
// weights by name): q_proj, k_proj, v_proj, out_proj (each Linear(dim, dim)
// with bias) and dropout (a Dropout with probability `dropout`). It must refuse
// a dim that num_heads does not divide.
struct MultiHeadSelfAttentionImpl : torch::nn::Module {
  explicit MultiHeadSelfAttentionImpl(int64_t dim, int64_t num_heads = 8, double dropout = 0.1);

  // x: (B, N, D) -> (B, N, D), float32 or float64 (the result keeps x's dtype).
  // Dropout is active only in training mode; in eval mode forward is deterministic.
  torch::Tensor forward(const torch::Tensor& x);

  int64_t dim;
  int64_t num_heads;
  int64_t head_dim;

  torch::nn::Linear q_proj{nullptr};
  torch::nn::Linear k_proj{nullptr};
  torch::nn::Linear v_proj{nullptr};
  torch::nn::Linear out_proj{nullptr};
  torch::nn::Dropout dropout{nullptr};
};
TORCH_MODULE(MultiHeadSelfAttention);
