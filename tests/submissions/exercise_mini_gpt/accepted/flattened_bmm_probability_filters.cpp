// Accepted: heads folded into the batch for bmm ((B*H, T, hd)), a large
// negative number (-1e9) instead of -inf for the future keys, a hand-written
// stable softmax; the sampler filters in the probability domain (zero what is
// cut, renormalise by the kept mass), which is the softmax of what is left;
// the draw takes the first index whose CDF passes u with argmax.
#include "mini_gpt.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <cmath>

namespace {
torch::Tensor stable_softmax(const torch::Tensor& s) {
  auto e = (s - std::get<0>(s.max(-1, true))).exp();
  return e / e.sum(-1, true);
}
}  // namespace

GPTAttentionImpl::GPTAttentionImpl(int64_t dim_, int64_t heads_)
    : dim(dim_), num_heads(heads_), head_dim(heads_ ? dim_ / heads_ : 0) {
  TORCH_CHECK(heads_ > 0 && head_dim * heads_ == dim_, "cannot split dim ", dim_, " into ", heads_, " heads");
  q_proj = torch::nn::Linear(dim, dim);
  k_proj = torch::nn::Linear(dim, dim);
  v_proj = torch::nn::Linear(dim, dim);
  out_proj = torch::nn::Linear(dim, dim);
  register_module("q_proj", q_proj);
  register_module("k_proj", k_proj);
  register_module("v_proj", v_proj);
  register_module("out_proj", out_proj);
}

void GPTAttentionImpl::reset_cache() {
  k_cache = torch::Tensor();
  v_cache = torch::Tensor();
}

torch::Tensor GPTAttentionImpl::forward(const torch::Tensor& x, bool use_cache) {
  const int64_t B = x.size(0), T = x.size(1), H = num_heads, hd = head_dim;
  auto shape = [&](const torch::Tensor& t) { return t.view({B, T, H, hd}).transpose(1, 2); };  // (B, H, T, hd)
  auto q = shape(q_proj(x)), k = shape(k_proj(x)), v = shape(v_proj(x));
  const int64_t P = (use_cache && k_cache.defined()) ? k_cache.size(2) : 0;
  if (use_cache) {
    if (P > 0) {
      k = torch::cat({k_cache, k}, 2);
      v = torch::cat({v_cache, v}, 2);
    }
    k_cache = k;
    v_cache = v;
  }
  const int64_t S = P + T;
  auto qf = q.reshape({B * H, T, hd});
  auto kf = k.reshape({B * H, S, hd});
  auto vf = v.reshape({B * H, S, hd});
  auto scores = torch::bmm(qf, kf.transpose(1, 2)).div(std::sqrt(double(hd)));  // (B*H, T, S)
  auto row = torch::arange(T, x.options().dtype(torch::kLong)).unsqueeze(1) + P;
  auto col = torch::arange(S, x.options().dtype(torch::kLong)).unsqueeze(0);
  scores = scores.masked_fill((col > row).unsqueeze(0), -1e9);
  auto ctx = torch::bmm(stable_softmax(scores), vf).view({B, H, T, hd});
  return out_proj(ctx.permute({0, 2, 1, 3}).contiguous().view({B, T, dim}));
}

GPTBlockImpl::GPTBlockImpl(int64_t dim, int64_t num_heads) {
  ln1 = register_module("ln1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim}).elementwise_affine(true)));
  attn = register_module("attn", GPTAttention(dim, num_heads));
  ln2 = register_module("ln2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim}).elementwise_affine(true)));
  fc1 = register_module("fc1", torch::nn::Linear(dim, 4 * dim));
  fc2 = register_module("fc2", torch::nn::Linear(4 * dim, dim));
}

torch::Tensor GPTBlockImpl::forward(const torch::Tensor& x, bool use_cache) {
  auto a = attn->forward(ln1->forward(x), use_cache);
  auto h = x + a;
  auto m = fc2->forward(torch::gelu(fc1->forward(ln2->forward(h)), "none"));
  return h + m;
}

MiniGPTImpl::MiniGPTImpl(int64_t vocab_size_, int64_t max_len_, int64_t dim_, int64_t num_heads_,
                         int64_t num_layers_)
    : vocab_size(vocab_size_), max_len(max_len_), dim(dim_), num_heads(num_heads_), num_layers(num_layers_) {
  TORCH_CHECK(num_heads > 0 && dim % num_heads == 0, "num_heads (", num_heads, ") must divide dim (", dim, ")");
  tok_emb = register_module("tok_emb", torch::nn::Embedding(torch::nn::EmbeddingOptions(vocab_size, dim)));
  pos_emb = register_module("pos_emb", torch::nn::Embedding(torch::nn::EmbeddingOptions(max_len, dim)));
  blocks = register_module("blocks", torch::nn::ModuleList());
  for (int64_t i = 0; i < num_layers; ++i) blocks->push_back(GPTBlock(dim, num_heads));
  ln_f = register_module("ln_f", torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim})));
}

torch::Tensor MiniGPTImpl::forward(const torch::Tensor& tokens) {
  auto pos = torch::arange(tokens.size(1), tokens.options());
  auto h = tok_emb(tokens) + pos_emb(pos);
  for (const auto& b : *blocks) h = b->as<GPTBlockImpl>()->forward(h, /*use_cache=*/false);
  h = ln_f(h);
  return torch::matmul(h, tok_emb->weight.t());
}

torch::Tensor MiniGPTImpl::forward_cached(const torch::Tensor& tokens) {
  int64_t past = 0;
  for (const auto& b : *blocks) {
    const auto& kc = b->as<GPTBlockImpl>()->attn->k_cache;
    past = kc.defined() ? kc.size(2) : 0;
    break;
  }
  auto pos = torch::arange(past, past + tokens.size(1), tokens.options());
  auto h = tok_emb(tokens) + pos_emb(pos);
  for (const auto& b : *blocks) h = b->as<GPTBlockImpl>()->forward(h, /*use_cache=*/true);
  return torch::matmul(ln_f(h), tok_emb->weight.t());
}

void MiniGPTImpl::reset_cache() {
  for (const auto& b : *blocks) b->as<GPTBlockImpl>()->attn->reset_cache();
}

torch::Tensor MiniGPTImpl::generate(const torch::Tensor& prompt, int64_t max_new_tokens, double temperature,
                                    int64_t top_k, double top_p, uint64_t seed) {
  torch::NoGradGuard nograd;
  auto g = at::make_generator<at::CPUGeneratorImpl>(seed);
  const int64_t target = prompt.size(1) + std::min(max_new_tokens, max_len - prompt.size(1));
  reset_cache();
  auto out = prompt.clone();
  auto next_logits = forward_cached(prompt).select(1, prompt.size(1) - 1);
  while (out.size(1) < target) {
    torch::Tensor tok;
    if (temperature == 0) {
      tok = next_logits.argmax(-1).view({-1, 1});
    } else {
      auto probs = next_token_probs(next_logits, temperature, top_k, top_p).cpu().to(torch::kDouble);
      const int64_t V = probs.size(1);
      auto u = torch::rand({probs.size(0), 1}, g, torch::kFloat64);
      auto past_u = probs.cumsum(1) > u;  // true from the drawn token on
      auto first = past_u.to(torch::kLong).argmax(1, true);
      tok = torch::where(past_u.any(1, true), first, torch::full_like(first, V - 1)).to(prompt.device());
    }
    out = torch::cat({out, tok}, 1);
    if (out.size(1) < target) next_logits = forward_cached(tok).select(1, 0);
  }
  return out;
}

torch::Tensor next_token_probs(const torch::Tensor& logits, double temperature, int64_t top_k, double top_p) {
  const int64_t V = logits.size(-1);
  if (temperature == 0) {
    return torch::nn::functional::one_hot(logits.argmax(-1), V).to(logits.scalar_type());
  }
  auto probs = stable_softmax(logits / temperature);
  if (top_k > 0 && top_k < V) {
    auto kth = std::get<0>(probs.topk(top_k, -1)).narrow(-1, top_k - 1, 1);  // softmax keeps the order
    probs = probs * (probs >= kth).to(probs.scalar_type());
    probs = probs / probs.sum(-1, true);
  }
  if (top_p < 1) {
    auto sorted = probs.sort(-1, /*descending=*/true);
    auto sp = std::get<0>(sorted);
    auto mass_before = sp.cumsum(-1) - sp;
    auto keep_sorted = (mass_before < top_p).to(probs.scalar_type());
    auto keep = torch::empty_like(keep_sorted).scatter_(-1, std::get<1>(sorted), keep_sorted);
    probs = probs * keep;
    probs = probs / probs.sum(-1, true);
  }
  return probs;
}
