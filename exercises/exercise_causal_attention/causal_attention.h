// Fixed interface for exercise_causal_attention. Do not edit: the grader
// compiles your causal_attention.cpp against this header.
#pragma once

#include <torch/types.h>

#include <tuple>

// Causal (decoder) self-attention: position i may attend to positions
// 0, 1, ..., i (itself included) and never to a later one.
//
//   query: (B, H, N, d_k)    key: (B, H, N, d_k)    value: (B, H, N, d_v)
//   in any floating dtype (float64, float32, bfloat16, float16) on any device
//
// Returns (output, attention_weights), in the inputs' dtype and on their device:
//   output: (B, H, N, d_v)    attention_weights: (B, H, N, N), zero above the diagonal
std::tuple<torch::Tensor, torch::Tensor> causal_self_attention(const torch::Tensor& query, const torch::Tensor& key,
                                                               const torch::Tensor& value);
