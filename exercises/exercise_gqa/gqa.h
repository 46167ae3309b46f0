// Fixed interface for exercise_gqa. Do not edit: the grader compiles your
// gqa.cpp against this header.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

// Grouped-query self-attention over a (B, N, D) input: num_heads query heads
// share num_kv_heads key/value heads, in groups of num_heads / num_kv_heads
// query heads per kv head, laid out as in standard GQA checkpoints.
// num_kv_heads = 1 is multi-query attention; num_kv_heads = num_heads is
// ordinary multi-head attention.
//
// The constructor must register, under exactly these names (the grader loads
// weights by name), four Linear layers without bias:
//   q_proj   D -> D                          (num_heads * head_dim)
//   k_proj   D -> num_kv_heads * head_dim
//   v_proj   D -> num_kv_heads * head_dim
//   out_proj D -> D
// with head_dim = dim / num_heads, and nothing else with parameters. It must
// refuse a dim that num_heads does not divide and a num_heads that
// num_kv_heads does not divide.
struct GroupedQueryAttentionImpl : torch::nn::Module {
  GroupedQueryAttentionImpl(int64_t dim, int64_t num_heads, int64_t num_kv_heads);

  // x: (B, N, D) -> (B, N, D), in x's dtype and on x's device. No mask: every
  // token attends to every token.
  torch::Tensor forward(const torch::Tensor& x);

  int64_t dim;
  int64_t num_heads;
  int64_t num_kv_heads;
  int64_t head_dim;

  torch::nn::Linear q_proj{nullptr};
  torch::nn::Linear k_proj{nullptr};
  torch::nn::Linear v_proj{nullptr};
  torch::nn::Linear out_proj{nullptr};
};
TORCH_MODULE(GroupedQueryAttention);
