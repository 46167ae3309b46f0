// Fixed interface for exercise_mha. Do not edit: the grader compiles your
// mha.cpp against this header.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

// Multi-head attention with separate query, key and value inputs (so it also
// serves as cross-attention: the keys and values may come from another
// sequence, of another length) and an optional mask.
//
// The constructor must register, under exactly these names (the grader loads
// weights by name): q_linear, k_linear, v_linear and out_linear, each a
// Linear(d_model, d_model) with bias. It must refuse a d_model that num_heads
// does not divide.
struct MultiHeadAttentionImpl : torch::nn::Module {
  MultiHeadAttentionImpl(int64_t d_model, int64_t num_heads);

  // query: (B, Nq, d_model); key and value: (B, Nk, d_model); Nk may differ from Nq.
  // mask: undefined (no mask) or broadcastable to (B, num_heads, Nq, Nk), bool
  // or integer; where mask == 0 the query must not attend to the key (its
  // attention weight is exactly 0).
  // float32 or float64. Returns (B, Nq, d_model), in the inputs' dtype.
  torch::Tensor forward(const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
                        const torch::Tensor& mask = {});

  int64_t d_model;
  int64_t num_heads;
  int64_t d_k;

  torch::nn::Linear q_linear{nullptr};
  torch::nn::Linear k_linear{nullptr};
  torch::nn::Linear v_linear{nullptr};
  torch::nn::Linear out_linear{nullptr};
};
TORCH_MODULE(MultiHeadAttention);
