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

// GPT-2's causal multi-head self-attention, with a kv cache. x: (B, T, D) ->
//   (B, T, D), with H heads of head_dim.
// use_cache false: x is a whole sequence (positions 0..T-1); the cache is
//   neither read nor changed.
// use_cache true: x holds the next T tokens of the cached sequence, which the
//   cache then holds too: k_cache and v_cache are (B, H, P, head_dim) each
//   after P cached tokens.
struct GPTAttentionImpl : torch::nn::Module {
  GPTAttentionImpl(int64_t dim, int64_t num_heads);
  torch::Tensor forward(const torch::Tensor& x, bool use_cache);
  void reset_cache();  // the next cached call starts a new sequence

  int64_t dim, num_heads, head_dim;
  torch::nn::Linear q_proj{nullptr}, k_proj{nullptr}, v_proj{nullptr}, out_proj{nullptr};  // D -> D, with bias
  torch::Tensor k_cache, v_cache;  // undefined (or 0 tokens) when empty
};
TORCH_MODULE(GPTAttention);

// A GPT-2 block: attn with its LayerNorm ln1, and the MLP fc2(GELU(fc1(.)))
// with its LayerNorm ln2; fc1: D -> 4D, fc2: 4D -> D, exact GELU (erf).
// ln1, ln2: LayerNorm over D (eps 1e-5, with weight and bias). No dropout.
// use_cache is passed on to attn.
struct GPTBlockImpl : torch::nn::Module {
  GPTBlockImpl(int64_t dim, int64_t num_heads);
  torch::Tensor forward(const torch::Tensor& x, bool use_cache);

  torch::nn::LayerNorm ln1{nullptr}, ln2{nullptr};
  GPTAttention attn{nullptr};
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
};
TORCH_MODULE(GPTBlock);

// The model, GPT-2's architecture with these modules. tokens: (B, T) int64 ids
// in [0, V) -> logits (B, T, V), the next token's at every position.
// Registered under exactly these names, and nothing else with parameters:
// tok_emb (V x D, the token table), pos_emb (max_len x D, the learned
// positions), blocks (a ModuleList of num_layers GPTBlocks), ln_f (LayerNorm
// over D, GPT-2's final one). The constructor refuses a dim that num_heads
// does not divide.
struct MiniGPTImpl : torch::nn::Module {
  MiniGPTImpl(int64_t vocab_size, int64_t max_len, int64_t dim, int64_t num_heads, int64_t num_layers);

  // A whole sequence at positions 0..T-1 (T <= max_len): logits (B, T, V).
  // The cache is neither read nor changed.
  torch::Tensor forward(const torch::Tensor& tokens);

  // The next T tokens of the cached sequence (P + T <= max_len, P the tokens
  // already cached): their logits (B, T, V). Feeding a sequence in any split
  // of calls gives forward's logits, and no call redoes an earlier one's work.
  torch::Tensor forward_cached(const torch::Tensor& tokens);
  void reset_cache();  // forgets the cached sequence in every block

  // prompt: (B, P) int64, 1 <= P <= max_len. Returns (B, P + n): the prompt
  // followed by n new tokens, max_new_tokens of them unless the sequence would
  // grow past max_len, where generation stops (without an error). It does not
  // run the whole sequence again for every new token. Each new token of a row
  // is chosen from the last position's logits (B, V):
  //   temperature == 0: the greedy token, with no random draw;
  //   otherwise: drawn from next_token_probs(logits, temperature, top_k,
  //     top_p), by this draw, so that a seed gives one answer on every machine
  //     and LibTorch version:
  //     the random numbers of a call come from a CPU generator made from the
  //       seed, at::make_generator<at::CPUGeneratorImpl>(seed)
  //       (#include <ATen/CPUGeneratorImpl.h>);
  //     each sampling step makes exactly one draw for the whole batch,
  //       u = torch::rand({B, 1}, generator, torch::kFloat64);
  //     the token of a row is the inverse-CDF pick on its probabilities, taken
  //       to the CPU in float64: the first index whose cumulative probability
  //       exceeds u, at most V - 1 (torch::multinomial's draw differs between
  //       LibTorch versions, so it is not used here).
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
//   temperature == 0: greedy decoding; each row puts probability 1 on the
//     chosen token (of equal logits, the lowest index) and 0 elsewhere; top_k
//     and top_p unused.
//   temperature > 0: the temperature and the two filters below, combined the
//     standard way (as Hugging Face transformers' sampling combines them):
//     top-k, on when 0 < top_k < V (top_k == 0 or >= V keeps every token):
//       keeps the top_k most likely tokens, and any token whose logit equals
//       that of the last one kept;
//     top-p (nucleus), on when top_p < 1 (top_p >= 1 keeps every token).
//     Filtered tokens get probability 0.
torch::Tensor next_token_probs(const torch::Tensor& logits, double temperature, int64_t top_k, double top_p);
