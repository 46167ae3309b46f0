// Fixed interface for exercise_kv_cache. Do not edit: the grader compiles your
// kv_cache.cpp against this header.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

// The self-attention of a decoder (LLaMA-style), built for generation: the
// sequence arrives over several calls of forward (a prompt, then one new
// token at a time, or chunks), and the keys and values of every token seen so
// far are kept in a cache so that no call recomputes them.
//
// One call, x: (B, T, D) holding the next T >= 1 tokens of the sequence
// (positions P .. P + T - 1, where P tokens are cached already):
//   q, k, v = q_proj(x), k_proj(x), v_proj(x), split into num_heads heads of
//             head_dim = D / num_heads: (B, H, T, head_dim)
//   rotary position embedding on q and k (never v), in the rotate-half
//   convention of exercise_rope: channel i paired with i + head_dim/2, token
//   at position p turned by p * 10000^(-2i / head_dim)
//   k_cache, v_cache grow by the T new keys (after RoPE) and values
//   each new token attends causally: the token at position P + t sees the
//   cached keys and the new keys up to itself (positions 0 .. P + t), scores
//   scaled by 1/sqrt(head_dim), softmax over the keys
//   heads merged back to (B, T, D), then out_proj
// Returns (B, T, D). Feeding a sequence in any split of calls gives the same
// result as feeding it whole (causal self-attention over the sequence).
//
// The constructor registers, under exactly these names, four Linear layers
// without bias, D -> D each: q_proj, k_proj, v_proj, out_proj, and nothing
// else with parameters. It refuses a dim that does not split into num_heads
// heads of even width (RoPE pairs channels).
struct CachedSelfAttentionImpl : torch::nn::Module {
  CachedSelfAttentionImpl(int64_t dim, int64_t num_heads);

  torch::Tensor forward(const torch::Tensor& x);

  // Forgets the cached sequence: the next forward starts a new one at position 0.
  void reset_cache();

  int64_t dim;
  int64_t num_heads;
  int64_t head_dim;

  torch::nn::Linear q_proj{nullptr};
  torch::nn::Linear k_proj{nullptr};
  torch::nn::Linear v_proj{nullptr};
  torch::nn::Linear out_proj{nullptr};

  // The cache, (B, H, P, head_dim) each after P tokens: keys after RoPE,
  // values as projected. Undefined (or with P = 0) before the first call and
  // after reset_cache(). Plain members, not buffers: the grader reads them
  // after every call.
  torch::Tensor k_cache;
  torch::Tensor v_cache;
};
TORCH_MODULE(CachedSelfAttention);
