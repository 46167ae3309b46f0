// exercise_mini_gpt: a small GPT that generates text with a kv cache.
// Read README.md in this folder, then run:  ./grade exercise_mini_gpt
#include "mini_gpt.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

GPTAttentionImpl::GPTAttentionImpl(int64_t dim, int64_t num_heads) {
  // 1. refuse a dim that num_heads does not divide; set dim, num_heads, head_dim.
  // 2. register q_proj, k_proj, v_proj, out_proj: Linear D -> D with bias.
  TORCH_CHECK(false, "not implemented yet: GPTAttentionImpl (edit exercises/exercise_mini_gpt/mini_gpt.cpp)");
}

void GPTAttentionImpl::reset_cache() {
  // 1. forget k_cache and v_cache.
  TORCH_CHECK(false, "not implemented yet: GPTAttentionImpl::reset_cache");
}

torch::Tensor GPTAttentionImpl::forward(const torch::Tensor& x, bool use_cache) {
  // 1. project x and split into heads: (B, H, T, head_dim).
  // 2. use_cache: P = the cached tokens; append k and v to the cache and attend over all of it.
  // 3. scores scaled by 1/sqrt(head_dim); the query at position P + t sees keys 0..P + t.
  // 4. softmax over the keys, times v, heads merged back, out_proj.
  TORCH_CHECK(false, "not implemented yet: GPTAttentionImpl::forward");
}

GPTBlockImpl::GPTBlockImpl(int64_t dim, int64_t num_heads) {
  // 1. register ln1, attn, ln2, fc1 (D -> 4D), fc2 (4D -> D) under the header's names.
  TORCH_CHECK(false, "not implemented yet: GPTBlockImpl");
}

torch::Tensor GPTBlockImpl::forward(const torch::Tensor& x, bool use_cache) {
  // 1. pre-LN: x + attn(ln1(x)), then + fc2(GELU(fc1(ln2(.)))).
  TORCH_CHECK(false, "not implemented yet: GPTBlockImpl::forward");
}

MiniGPTImpl::MiniGPTImpl(int64_t vocab_size, int64_t max_len, int64_t dim, int64_t num_heads, int64_t num_layers) {
  // 1. keep the sizes; register tok_emb (V x D), pos_emb (max_len x D), blocks (num_layers GPTBlocks), ln_f.
  // 2. no separate output layer: the output projection is tok_emb's weight.
  TORCH_CHECK(false, "not implemented yet: MiniGPTImpl");
}

torch::Tensor MiniGPTImpl::forward(const torch::Tensor& tokens) {
  // 1. token embeddings plus the positions 0..T-1; the blocks without the cache.
  // 2. ln_f, then the tied projection: logits (B, T, V).
  TORCH_CHECK(false, "not implemented yet: MiniGPTImpl::forward");
}

torch::Tensor MiniGPTImpl::forward_cached(const torch::Tensor& tokens) {
  // 1. as forward, but the positions start at P (the tokens cached) and the blocks use the cache.
  TORCH_CHECK(false, "not implemented yet: MiniGPTImpl::forward_cached");
}

void MiniGPTImpl::reset_cache() {
  // 1. reset every block's attention cache.
  TORCH_CHECK(false, "not implemented yet: MiniGPTImpl::reset_cache");
}

torch::Tensor MiniGPTImpl::generate(const torch::Tensor& prompt, int64_t max_new_tokens, double temperature,
                                    int64_t top_k, double top_p, uint64_t seed) {
  // 1. n = min(max_new_tokens, max_len - P); one generator for the call, from the seed.
  // 2. reset the cache and feed the prompt once.
  // 3. each step: the last position's logits -> argmax (temperature 0) or a draw from next_token_probs;
  //    append the token, feed it alone.
  TORCH_CHECK(false, "not implemented yet: MiniGPTImpl::generate");
}

torch::Tensor next_token_probs(const torch::Tensor& logits, double temperature, int64_t top_k, double top_p) {
  // 1. temperature 0: all the mass on the argmax.
  // 2. divide by the temperature; top-k; top-p (keep the token that crosses p); softmax.
  TORCH_CHECK(false, "not implemented yet: next_token_probs");
}
