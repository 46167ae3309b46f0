// Fixed interface for exercise_rope. Do not edit: the grader compiles your
// rope.cpp against this header.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <tuple>

// Rotary position embeddings (RoPE, Su et al. 2021) in the "rotate-half"
// convention of GPT-NeoX and LLaMA: channel i of the head dimension d (even)
// is paired with channel i + d/2 (NOT with its neighbour i + 1, the paper's
// interleaved layout), and each pair is turned by the angle p * theta_i, where
// p is the token's position:
//
//   theta_i = 10000^(-2i / d)                       i = 0 .. d/2 - 1
//   out[i]       = x[i]       * cos(p theta_i) - x[i + d/2] * sin(p theta_i)
//   out[i + d/2] = x[i + d/2] * cos(p theta_i) + x[i]       * sin(p theta_i)
//
// x: (B, H, N, d), already split into heads. Token n of x sits at position
// offset + n (offset > 0 when decoding after a prefix). Returns a tensor of
// x's shape, dtype and device.
torch::Tensor apply_rope(const torch::Tensor& x, int64_t offset);

// Attention with rotary positions: RoPE on query (positions query_offset + i)
// and on key (positions key_offset + j), never on value; then
// softmax(q_rot k_rot^T / sqrt(d)) over the keys, times value.
//
//   query: (B, H, Nq, d)    key: (B, H, Nk, d)    value: (B, H, Nk, d_v)
//
// Returns (output (B, H, Nq, d_v), attention_weights (B, H, Nq, Nk)). No mask.
std::tuple<torch::Tensor, torch::Tensor> rope_attention(const torch::Tensor& query, const torch::Tensor& key,
                                                        const torch::Tensor& value, int64_t query_offset,
                                                        int64_t key_offset);
