// Fixed interface for exercise_flash_attention. Do not edit: the grader
// compiles your flash_attention.cpp against this header.
#pragma once

#include <torch/types.h>

#include <cstdint>

// Exact scaled dot-product attention of query, key and value, computed the
// FlashAttention way: the keys (and values) are visited block_size at a time,
// so that the full (Nq, Nk) score matrix is never formed. No tensor made during
// the call may be as large as that matrix; the grader measures the largest one.
//
//   query (B, H, Nq, d), key (B, H, Nk, d), value (B, H, Nk, d_v)
//   returns (B, H, Nq, d_v), with the input's dtype and device
//
// causal: each query attends only to the keys at or before its own position;
// the queries are the last Nq tokens of the Nk-token sequence (as when a chunk
// of new tokens attends to a cache). The grader only asks for causal attention
// with Nq <= Nk.
// block_size >= 1 keys per block; Nk need not be a multiple of it.
torch::Tensor flash_attention(const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
                              bool causal, int64_t block_size);
