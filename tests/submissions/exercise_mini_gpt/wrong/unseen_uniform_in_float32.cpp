// Wrong: the uniform numbers of the draw are drawn in float32 (torch::rand's
// default dtype), not float64 as the interface says.
#include "mini_gpt.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>

namespace {
const double kInf = std::numeric_limits<double>::infinity();
}

GPTAttentionImpl::GPTAttentionImpl(int64_t dim, int64_t num_heads) : dim(dim), num_heads(num_heads) {
  TORCH_CHECK(num_heads > 0 && dim % num_heads == 0, "dim must be divisible by num_heads");
  head_dim = dim / num_heads;
  q_proj = register_module("q_proj", torch::nn::Linear(dim, dim));
  k_proj = register_module("k_proj", torch::nn::Linear(dim, dim));
  v_proj = register_module("v_proj", torch::nn::Linear(dim, dim));
  out_proj = register_module("out_proj", torch::nn::Linear(dim, dim));
}

void GPTAttentionImpl::reset_cache() {
  k_cache = torch::Tensor();
  v_cache = torch::Tensor();
}

torch::Tensor GPTAttentionImpl::forward(const torch::Tensor& x, bool use_cache) {
  const int64_t B = x.size(0), T = x.size(1);
  auto q = q_proj(x).view({B, T, num_heads, head_dim}).transpose(1, 2);
  auto k = k_proj(x).view({B, T, num_heads, head_dim}).transpose(1, 2);
  auto v = v_proj(x).view({B, T, num_heads, head_dim}).transpose(1, 2);

  int64_t past = 0;
  if (use_cache) {
    if (k_cache.defined()) {
      past = k_cache.size(2);
      k = torch::cat({k_cache, k}, 2);
      v = torch::cat({v_cache, v}, 2);
    }
    k_cache = k;
    v_cache = v;
  }
  const int64_t S = k.size(2);

  auto scores = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt((double)head_dim);
  auto mask = torch::ones({T, S}, x.options().dtype(torch::kBool)).triu(past + 1);
  scores = scores.masked_fill(mask, -kInf);
  auto out = torch::matmul(torch::softmax(scores, -1), v);
  return out_proj(out.transpose(1, 2).reshape({B, T, dim}));
}

GPTBlockImpl::GPTBlockImpl(int64_t dim, int64_t num_heads) {
  ln1 = register_module("ln1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim})));
  attn = register_module("attn", GPTAttention(dim, num_heads));
  ln2 = register_module("ln2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim})));
  fc1 = register_module("fc1", torch::nn::Linear(dim, 4 * dim));
  fc2 = register_module("fc2", torch::nn::Linear(4 * dim, dim));
}

torch::Tensor GPTBlockImpl::forward(const torch::Tensor& x, bool use_cache) {
  auto h = x + attn(ln1(x), use_cache);
  return h + fc2(torch::gelu(fc1(ln2(h))));
}

MiniGPTImpl::MiniGPTImpl(int64_t vocab_size, int64_t max_len, int64_t dim, int64_t num_heads, int64_t num_layers)
    : vocab_size(vocab_size), max_len(max_len), dim(dim), num_heads(num_heads), num_layers(num_layers) {
  TORCH_CHECK(num_heads > 0 && dim % num_heads == 0, "dim must be divisible by num_heads");
  tok_emb = register_module("tok_emb", torch::nn::Embedding(vocab_size, dim));
  pos_emb = register_module("pos_emb", torch::nn::Embedding(max_len, dim));
  blocks = register_module("blocks", torch::nn::ModuleList());
  for (int64_t i = 0; i < num_layers; ++i) blocks->push_back(GPTBlock(dim, num_heads));
  ln_f = register_module("ln_f", torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim})));
}

torch::Tensor MiniGPTImpl::forward(const torch::Tensor& tokens) {
  auto pos = torch::arange(tokens.size(1), tokens.options());
  auto h = tok_emb(tokens) + pos_emb(pos);
  for (auto& block : *blocks) h = block->as<GPTBlockImpl>()->forward(h, false);
  return torch::matmul(ln_f(h), tok_emb->weight.t());
}

torch::Tensor MiniGPTImpl::forward_cached(const torch::Tensor& tokens) {
  int64_t past = 0;
  if (!blocks->is_empty()) {
    auto& cache = blocks->ptr<GPTBlockImpl>(0)->attn->k_cache;
    if (cache.defined()) past = cache.size(2);
  }
  auto pos = torch::arange(past, past + tokens.size(1), tokens.options());
  auto h = tok_emb(tokens) + pos_emb(pos);
  for (auto& block : *blocks) h = block->as<GPTBlockImpl>()->forward(h, true);
  return torch::matmul(ln_f(h), tok_emb->weight.t());
}

void MiniGPTImpl::reset_cache() {
  for (auto& block : *blocks) block->as<GPTBlockImpl>()->attn->reset_cache();
}

torch::Tensor MiniGPTImpl::generate(const torch::Tensor& prompt, int64_t max_new_tokens, double temperature,
                                    int64_t top_k, double top_p, uint64_t seed) {
  torch::NoGradGuard no_grad;
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  const int64_t n = std::min(max_new_tokens, max_len - prompt.size(1));
  reset_cache();
  auto seq = prompt;
  auto logits = forward_cached(prompt);
  for (int64_t i = 0; i < n; ++i) {
    auto last = logits.select(1, logits.size(1) - 1);
    torch::Tensor next;
    if (temperature == 0) {
      next = last.argmax(-1, true);
    } else {
      auto probs = next_token_probs(last, temperature, top_k, top_p).to(torch::kCPU, torch::kDouble);
      auto u = torch::rand({probs.size(0), 1}, gen).to(torch::kDouble);
      next = (probs.cumsum(-1) <= u).sum(-1, true).clamp_max(probs.size(-1) - 1).to(prompt.device());
    }
    seq = torch::cat({seq, next}, 1);
    if (i + 1 < n) logits = forward_cached(next);
  }
  return seq;
}

torch::Tensor next_token_probs(const torch::Tensor& logits, double temperature, int64_t top_k, double top_p) {
  if (temperature == 0) return torch::zeros_like(logits).scatter_(-1, logits.argmax(-1, true), 1.0);
  auto z = logits / temperature;
  const int64_t V = z.size(-1);
  if (top_k > 0 && top_k < V) {
    auto kth = std::get<0>(z.topk(top_k, -1)).narrow(-1, top_k - 1, 1);
    z = z.masked_fill(z < kth, -kInf);
  }
  if (top_p < 1) {
    auto sorted = z.sort(-1, true);
    auto p = torch::softmax(std::get<0>(sorted), -1);
    auto drop_sorted = (p.cumsum(-1) - p) >= top_p;
    auto drop = torch::zeros_like(drop_sorted).scatter(-1, std::get<1>(sorted), drop_sorted);
    z = z.masked_fill(drop, -kInf);
  }
  return torch::softmax(z, -1);
}
