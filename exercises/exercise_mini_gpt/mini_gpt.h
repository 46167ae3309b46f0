// Fixed interface for exercise_mini_gpt. Do not edit: the grader compiles your
// mini_gpt.cpp against this header.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

#include <cstdint>

// A small GPT (decoder-only, GPT-2 layout) that generates text with a kv cache.
//
// Shapes: B batch, T tokens of a call, D = dim, H = num_heads, head_dim = D / H,
// V = vocab_size; max_len is the longest sequence (the position table's rows).

// Causal multi-head self-attention with a kv cache. x: (B, T, D).
//   q, k, v = q_proj(x), k_proj(x), v_proj(x), split into H heads (B, H, T, head_dim)
//   scores = q k^T / sqrt(head_dim), the token at position p seeing positions 0..p
//   output = out_proj(softmax(scores) v, heads merged back to (B, T, D))
// use_cache false: x is a whole sequence (positions 0..T-1); the cache is
//   neither read nor changed.
// use_cache true: x continues the cached sequence (positions P..P+T-1, P the
//   cached tokens); its keys and values are appended to k_cache and v_cache,
//   (B, H, P + T, head_dim) each afterwards, and its queries attend over them.
struct GPTAttentionImpl : torch::nn::Module {
  GPTAttentionImpl(int64_t dim, int64_t num_heads);
  torch::Tensor forward(const torch::Tensor& x, bool use_cache);
  void reset_cache();  // the next cached call starts a new sequence

  int64_t dim, num_heads, head_dim;
  torch::nn::Linear q_proj{nullptr}, k_proj{nullptr}, v_proj{nullptr}, out_proj{nullptr};  // D -> D, with bias
  torch::Tensor k_cache, v_cache;  // undefined (or 0 tokens) when empty
};
TORCH_MODULE(GPTAttention);

// A pre-LN block (GPT-2):
//   x = x + attn(ln1(x), use_cache)
//   x = x + fc2(GELU(fc1(ln2(x))))      fc1: D -> 4D, fc2: 4D -> D, exact GELU (erf)
// ln1, ln2: LayerNorm over D (eps 1e-5, with weight and bias). No dropout.
struct GPTBlockImpl : torch::nn::Module {
  GPTBlockImpl(int64_t dim, int64_t num_heads);
  torch::Tensor forward(const torch::Tensor& x, bool use_cache);

  torch::nn::LayerNorm ln1{nullptr}, ln2{nullptr};
  GPTAttention attn{nullptr};
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
};
TORCH_MODULE(GPTBlock);

// The model. tokens: (B, T) int64 ids in [0, V).
//   h = tok_emb(tokens) + pos_emb(positions)      learned positions
//   h = blocks[0..num_layers-1](h)
//   logits = ln_f(h) tok_emb.weight^T             the output projection is TIED
//                                                 to the token embedding: (B, T, V)
// Registered under exactly these names, and nothing else with parameters:
// tok_emb (V x D), pos_emb (max_len x D), blocks (a ModuleList of num_layers
// GPTBlocks), ln_f (LayerNorm over D). The constructor refuses a dim that
// num_heads does not divide.
struct MiniGPTImpl : torch::nn::Module {
  MiniGPTImpl(int64_t vocab_size, int64_t max_len, int64_t dim, int64_t num_heads, int64_t num_layers);

  // A whole sequence at positions 0..T-1 (T <= max_len): logits (B, T, V).
  // The cache is neither read nor changed.
  torch::Tensor forward(const torch::Tensor& tokens);

  // The next T tokens of the cached sequence, at positions P..P+T-1 (P the
  // tokens already cached; P + T <= max_len): their logits (B, T, V). Feeding
  // a sequence in any split of calls gives forward's logits.
  torch::Tensor forward_cached(const torch::Tensor& tokens);
  void reset_cache();  // forgets the cached sequence in every block

  // prompt: (B, P) int64, 1 <= P <= max_len. Returns (B, P + n): the prompt
  // followed by n = min(max_new_tokens, max_len - P) new tokens (it stops at
  // max_len). Starts with reset_cache(), feeds the prompt once through
  // forward_cached, then each new token alone whose logits are still needed
  // (the cache is what makes a new token cheap). Each step chooses the next token of every row from the
  // last position's logits (B, V):
  //   temperature == 0: greedy, the index of the largest logit (torch::argmax);
  //   otherwise: probs = next_token_probs(logits, temperature, top_k, top_p),
  //     moved to the CPU in float64, and the inverse-CDF draw: one uniform
  //     number per row, from ONE call per step,
  //       u = torch::rand({B, 1}, generator, torch::kFloat64)
  //     and the token is the first index whose running sum of probs exceeds u,
  //       (probs.cumsum(-1) <= u).sum(-1), at most V - 1,
  //     with one generator per generate call, made at its start by
  //       at::make_generator<at::CPUGeneratorImpl>(seed)
  //     (#include <ATen/CPUGeneratorImpl.h>), so a seed gives one answer on
  //     every machine and LibTorch version (torch::multinomial's draw differs
  //     between versions, so it is not used here).
  torch::Tensor generate(const torch::Tensor& prompt, int64_t max_new_tokens, double temperature, int64_t top_k,
                         double top_p, uint64_t seed);

  int64_t vocab_size, max_len, dim, num_heads, num_layers;
  torch::nn::Embedding tok_emb{nullptr}, pos_emb{nullptr};
  torch::nn::ModuleList blocks{nullptr};
  torch::nn::LayerNorm ln_f{nullptr};
};
TORCH_MODULE(MiniGPT);

// The distribution the next token is drawn from: logits (B, V) -> probs (B, V),
// each row summing to 1, in the logits' dtype and device.
//   temperature == 0: greedy, 1 at the index of the largest logit (the first
//     of equal ones, as torch::argmax), 0 elsewhere; top_k and top_p unused.
//   otherwise, in this order:
//   1. scaled = logits / temperature;
//   2. top_k > 0: keep the top_k largest scaled logits of each row (every logit
//      >= the k-th largest), the others become -inf; top_k == 0 or >= V keeps all;
//   3. top_p < 1: over the distribution left by 1 and 2 (softmax), sorted from
//      the most probable down, keep the smallest prefix whose probabilities sum
//      to at least top_p (the token that crosses top_p is kept; the most
//      probable token always is), the others become -inf; top_p >= 1 keeps all;
//   4. probs = softmax of what is left.
torch::Tensor next_token_probs(const torch::Tensor& logits, double temperature, int64_t top_k, double top_p);
