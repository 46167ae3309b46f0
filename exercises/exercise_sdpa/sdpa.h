// Fixed interface for exercise_sdpa. Do not edit: the grader compiles your
// sdpa.cpp against this header.
#pragma once

#include <torch/types.h>

#include <tuple>

// Scaled dot-product attention.
//
//   query: (B, H, Nq, d_k)    key: (B, H, Nk, d_k)    value: (B, H, Nk, d_v)
//   mask:  optional (an undefined tensor means "no mask"); bool or integer,
//          broadcastable to (B, H, Nq, Nk). Where mask == 0 the query must not
//          attend to that key: its attention weight is exactly 0.
//   float32 or float64; the results keep the inputs' dtype.
//
// Returns (output, attention_weights):
//   output: (B, H, Nq, d_v)    attention_weights: (B, H, Nq, Nk), the weights
//   output was computed from ([b][h][i][j]: how much query i attends to key j)
std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
    const torch::Tensor& mask = {});
