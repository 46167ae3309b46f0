// Fixed interface for exercise_kv_cache. Do not edit: the grader compiles your
// kv_cache.cpp against this header.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

// The causal multi-head self-attention of a LLaMA-style decoder (rotary
// position embeddings, no biases), built for generation: the sequence arrives
// over several calls of forward (a prompt, then one new token at a time, or
// chunks), and no call redoes the work of an earlier one.
//
// forward(x): x is (B, T, D), the next T >= 1 tokens of the sequence. Returns
// (B, T, D), one output for each of the call's tokens. Feeding a sequence in
// any split of calls gives the same result as feeding it whole, which is
// causal multi-head self-attention over the sequence with RoPE.
// RoPE is the rotate-half convention of exercise_rope, on each head: channel i
// paired with channel i + head_dim/2, a token at position p of the sequence
// turned by p * 10000^(-2i / head_dim).
//
// The constructor registers, under exactly these names, four Linear layers
// without bias, D -> D each: q_proj, k_proj, v_proj, out_proj, and nothing
// else with parameters. It refuses a dim that does not split into num_heads
// heads of even width (RoPE pairs channels).
struct CachedSelfAttentionImpl : torch::nn::Module {
  CachedSelfAttentionImpl(int64_t dim, int64_t num_heads);

  torch::Tensor forward(const torch::Tensor& x);

  // Forgets the cached sequence: the next forward starts a new one.
  void reset_cache();

  int64_t dim;
  int64_t num_heads;
  int64_t head_dim;

  torch::nn::Linear q_proj{nullptr};
  torch::nn::Linear k_proj{nullptr};
  torch::nn::Linear v_proj{nullptr};
  torch::nn::Linear out_proj{nullptr};

  // The cache, read by the grader after every call: (B, H, P, head_dim) each
  // after P tokens of the sequence, oldest first; k_cache holds every token's
  // key as the attention scores use it (no scale folded in), v_cache its
  // value. Undefined (or with P = 0) before the first call and after
  // reset_cache(). Plain members, not buffers.
  torch::Tensor k_cache;
  torch::Tensor v_cache;
};
TORCH_MODULE(CachedSelfAttention);
