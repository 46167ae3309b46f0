// Accepted: q, k and v from one fused linear (the three weights concatenated),
// heads through einsum, the causal mask from triu, the cache grown with cat;
// the sampler's top-p in the Hugging Face style (sorted down, cumulative sum,
// the removal mask shifted right by one); the draw through searchsorted.
#include "mini_gpt.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>

namespace F = torch::nn::functional;

GPTAttentionImpl::GPTAttentionImpl(int64_t dim_, int64_t num_heads_) : dim(dim_), num_heads(num_heads_) {
  TORCH_CHECK(num_heads > 0 && dim % num_heads == 0, "num_heads must divide dim");
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
  const auto B = x.size(0), T = x.size(1);
  auto w = torch::cat({q_proj->weight, k_proj->weight, v_proj->weight}, 0);
  auto b = torch::cat({q_proj->bias, k_proj->bias, v_proj->bias}, 0);
  auto qkv = F::linear(x, w, b).view({B, T, 3, num_heads, head_dim}).permute({2, 0, 3, 1, 4});
  auto q = qkv[0], k = qkv[1], v = qkv[2];  // (B, H, T, hd)

  int64_t P = 0;
  if (use_cache) {
    if (k_cache.defined()) {
      P = k_cache.size(2);
      k = torch::cat({k_cache, k}, 2);
      v = torch::cat({v_cache, v}, 2);
    }
    k_cache = k;
    v_cache = v;
  }
  const auto S = k.size(2);
  auto att = torch::einsum("bhqd,bhkd->bhqk", {q, k}) * (1.0 / std::sqrt((double)head_dim));
  auto future = torch::ones({T, S}, x.options().dtype(torch::kBool)).triu(P + 1);
  att = att.masked_fill(future, -std::numeric_limits<double>::infinity()).softmax(-1);
  auto y = torch::einsum("bhqk,bhkd->bqhd", {att, v}).reshape({B, T, dim});
  return out_proj(y);
}

GPTBlockImpl::GPTBlockImpl(int64_t dim, int64_t num_heads) {
  ln1 = register_module("ln1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim}).eps(1e-5)));
  attn = register_module("attn", GPTAttention(dim, num_heads));
  ln2 = register_module("ln2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim}).eps(1e-5)));
  fc1 = register_module("fc1", torch::nn::Linear(dim, 4 * dim));
  fc2 = register_module("fc2", torch::nn::Linear(4 * dim, dim));
}

torch::Tensor GPTBlockImpl::forward(const torch::Tensor& x, bool use_cache) {
  auto y = x + attn->forward(ln1(x), use_cache);
  return y + fc2(F::gelu(fc1(ln2(y))));
}

MiniGPTImpl::MiniGPTImpl(int64_t V, int64_t L, int64_t D, int64_t H, int64_t N)
    : vocab_size(V), max_len(L), dim(D), num_heads(H), num_layers(N) {
  TORCH_CHECK(H > 0 && D % H == 0, "dim ", D, " is not divisible by num_heads ", H);
  tok_emb = register_module("tok_emb", torch::nn::Embedding(V, D));
  pos_emb = register_module("pos_emb", torch::nn::Embedding(L, D));
  blocks = register_module("blocks", torch::nn::ModuleList());
  for (int64_t i = 0; i < N; ++i) blocks->push_back(GPTBlock(D, H));
  ln_f = register_module("ln_f", torch::nn::LayerNorm(torch::nn::LayerNormOptions({D})));
}

static torch::Tensor logits_from(MiniGPTImpl& m, const torch::Tensor& tokens, int64_t start, bool cache) {
  auto pos = torch::arange(start, start + tokens.size(1), tokens.options().dtype(torch::kLong));
  auto h = m.tok_emb(tokens) + m.pos_emb(pos).unsqueeze(0);
  for (size_t i = 0; i < m.blocks->size(); ++i) h = m.blocks->ptr<GPTBlockImpl>(i)->forward(h, cache);
  return torch::einsum("btd,vd->btv", {m.ln_f(h), m.tok_emb->weight});
}

torch::Tensor MiniGPTImpl::forward(const torch::Tensor& tokens) { return logits_from(*this, tokens, 0, false); }

torch::Tensor MiniGPTImpl::forward_cached(const torch::Tensor& tokens) {
  int64_t P = 0;
  if (blocks->size() > 0) {
    auto& kc = blocks->ptr<GPTBlockImpl>(0)->attn->k_cache;
    if (kc.defined()) P = kc.size(2);
  }
  return logits_from(*this, tokens, P, true);
}

void MiniGPTImpl::reset_cache() {
  for (size_t i = 0; i < blocks->size(); ++i) blocks->ptr<GPTBlockImpl>(i)->attn->reset_cache();
}

torch::Tensor MiniGPTImpl::generate(const torch::Tensor& prompt, int64_t max_new_tokens, double temperature,
                                    int64_t top_k, double top_p, uint64_t seed) {
  torch::NoGradGuard guard;
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  const int64_t n = std::max<int64_t>(0, std::min(max_new_tokens, max_len - prompt.size(1)));
  reset_cache();
  auto out = prompt;
  if (n == 0) return out;
  auto logits = forward_cached(prompt).select(1, -1);
  for (int64_t i = 0; i < n; ++i) {
    torch::Tensor next;
    if (temperature == 0) {
      next = torch::argmax(logits, -1).unsqueeze(-1);
    } else {
      auto p = next_token_probs(logits, temperature, top_k, top_p).to(torch::kCPU, torch::kFloat64);
      auto u = torch::rand({p.size(0), 1}, gen, torch::kFloat64);
      // inverse CDF: the first index whose running sum exceeds u
      auto cdf = p.cumsum(-1).contiguous();
      next = torch::searchsorted(cdf, u, /*out_int32=*/false, /*right=*/true).clamp_max(p.size(-1) - 1);
      next = next.to(prompt.device());
    }
    out = torch::cat({out, next}, 1);
    if (i + 1 < n) logits = forward_cached(next).select(1, -1);
  }
  return out;
}

torch::Tensor next_token_probs(const torch::Tensor& logits, double temperature, int64_t top_k, double top_p) {
  if (temperature == 0) return F::one_hot(logits.argmax(-1), logits.size(-1)).to(logits.options());
  const double ninf = -std::numeric_limits<double>::infinity();
  auto z = logits / temperature;
  const int64_t V = z.size(-1);
  if (top_k > 0 && top_k < V) {
    auto kth = std::get<0>(torch::topk(z, top_k, -1)).select(-1, top_k - 1).unsqueeze(-1);
    z = z.masked_fill(z < kth, ninf);
  }
  if (top_p < 1.0) {
    auto [sorted, idx] = torch::sort(z, -1, /*descending=*/true);
    auto cum = sorted.softmax(-1).cumsum(-1);
    auto remove = cum > top_p;
    // shift right: the token that crosses top_p stays, the first always does
    remove = torch::cat({torch::zeros_like(remove.narrow(-1, 0, 1)), remove.narrow(-1, 0, V - 1)}, -1);
    z = z.masked_fill(remove.scatter(-1, idx, remove), ninf);
  }
  return z.softmax(-1);
}
