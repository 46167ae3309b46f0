// Fixed interface for exercise_rope. Do not edit: the grader compiles your
// rope.cpp against this header.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <tuple>

// Rotary position embeddings (RoPE, Su et al. 2021) in the convention of
// GPT-NeoX (the one Hugging Face's LLaMA code uses), with the standard base
// of 10000.
//
// x: (B, H, N, d), already split into heads, d even. offset is the position
// of x's first token; the tokens of x sit at consecutive positions. Returns a
// tensor of x's shape, dtype and device.
torch::Tensor apply_rope(const torch::Tensor& x, int64_t offset);

// Scaled dot-product attention with rotary position embeddings. query_offset
// is the position of the first query token, key_offset that of the first key
// (and value) token; they may differ, as when new tokens attend to a cache.
//
//   query: (B, H, Nq, d)    key: (B, H, Nk, d)    value: (B, H, Nk, d_v)
//
// Returns (output (B, H, Nq, d_v), attention_weights (B, H, Nq, Nk)). No mask.
std::tuple<torch::Tensor, torch::Tensor> rope_attention(const torch::Tensor& query, const torch::Tensor& key,
                                                        const torch::Tensor& value, int64_t query_offset,
                                                        int64_t key_offset);
