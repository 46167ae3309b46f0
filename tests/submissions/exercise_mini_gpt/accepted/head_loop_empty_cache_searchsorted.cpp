// Correct, in another style: heads handled one at a time in a loop, the cache
// emptied to a 0-token tensor (not undefined), queries answered one position at
// a time over a growing key prefix, the draw by searchsorted.
#include "mini_gpt.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>

using torch::indexing::Slice;

GPTAttentionImpl::GPTAttentionImpl(int64_t d, int64_t h) : dim(d), num_heads(h), head_dim(h ? d / h : 0) {
  if (h <= 0 || d % h != 0) TORCH_CHECK(false, "bad heads");
  q_proj = register_module("q_proj", torch::nn::Linear(d, d));
  k_proj = register_module("k_proj", torch::nn::Linear(d, d));
  v_proj = register_module("v_proj", torch::nn::Linear(d, d));
  out_proj = register_module("out_proj", torch::nn::Linear(d, d));
}

void GPTAttentionImpl::reset_cache() {
  if (k_cache.defined()) {
    k_cache = k_cache.narrow(2, 0, 0);
    v_cache = v_cache.narrow(2, 0, 0);
  }
}

torch::Tensor GPTAttentionImpl::forward(const torch::Tensor& x, bool use_cache) {
  const int64_t B = x.size(0), T = x.size(1);
  auto q = q_proj(x), k = k_proj(x), v = v_proj(x);  // (B, T, D)
  std::vector<torch::Tensor> kh, vh, outs;
  for (int64_t h = 0; h < num_heads; ++h) {
    kh.push_back(k.narrow(2, h * head_dim, head_dim).unsqueeze(1));
    vh.push_back(v.narrow(2, h * head_dim, head_dim).unsqueeze(1));
  }
  auto K = torch::cat(kh, 1), Vv = torch::cat(vh, 1);  // (B, H, T, hd)
  int64_t past = 0;
  if (use_cache) {
    if (k_cache.defined() && k_cache.numel() > 0) {
      past = k_cache.size(2);
      K = torch::cat({k_cache, K}, 2);
      Vv = torch::cat({v_cache, Vv}, 2);
    }
    k_cache = K;
    v_cache = Vv;
  }
  const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim));
  for (int64_t h = 0; h < num_heads; ++h) {
    auto qh = q.narrow(2, h * head_dim, head_dim);  // (B, T, hd)
    auto Kh = K.select(1, h), Vh = Vv.select(1, h);  // (B, S, hd)
    std::vector<torch::Tensor> rows;
    for (int64_t t = 0; t < T; ++t) {
      const int64_t seen = past + t + 1;
      auto s = torch::bmm(qh.narrow(1, t, 1), Kh.narrow(1, 0, seen).transpose(1, 2)) * scale;  // (B, 1, seen)
      rows.push_back(torch::bmm(torch::softmax(s, -1), Vh.narrow(1, 0, seen)));
    }
    outs.push_back(torch::cat(rows, 1));  // (B, T, hd)
  }
  return out_proj(torch::cat(outs, 2));
}

GPTBlockImpl::GPTBlockImpl(int64_t d, int64_t h) {
  ln1 = register_module("ln1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})));
  ln2 = register_module("ln2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})));
  attn = register_module("attn", GPTAttention(d, h));
  fc1 = register_module("fc1", torch::nn::Linear(d, 4 * d));
  fc2 = register_module("fc2", torch::nn::Linear(4 * d, d));
}

torch::Tensor GPTBlockImpl::forward(const torch::Tensor& x, bool use_cache) {
  auto y = x + attn->forward(ln1->forward(x), use_cache);
  auto hidden = fc1->forward(ln2->forward(y));
  return y + fc2->forward(torch::nn::functional::gelu(hidden, torch::nn::functional::GELUFuncOptions().approximate("none")));
}

MiniGPTImpl::MiniGPTImpl(int64_t V, int64_t M, int64_t D, int64_t H, int64_t L)
    : vocab_size(V), max_len(M), dim(D), num_heads(H), num_layers(L) {
  TORCH_CHECK(H > 0 && D % H == 0, "dim % num_heads != 0");
  tok_emb = register_module("tok_emb", torch::nn::Embedding(torch::nn::EmbeddingOptions(V, D)));
  pos_emb = register_module("pos_emb", torch::nn::Embedding(torch::nn::EmbeddingOptions(M, D)));
  blocks = register_module("blocks", torch::nn::ModuleList());
  for (int64_t l = 0; l < L; ++l) blocks->push_back(GPTBlock(D, H));
  ln_f = register_module("ln_f", torch::nn::LayerNorm(torch::nn::LayerNormOptions({D})));
}

static torch::Tensor logits_of(MiniGPTImpl& m, torch::Tensor h) {
  return torch::nn::functional::linear(m.ln_f->forward(h), m.tok_emb->weight);
}

torch::Tensor MiniGPTImpl::forward(const torch::Tensor& tokens) {
  auto pos = torch::arange(tokens.size(1), tokens.options());
  auto h = tok_emb->forward(tokens) + pos_emb->forward(pos).unsqueeze(0);
  for (auto& b : *blocks) h = b->as<GPTBlock>()->forward(h, false);
  return logits_of(*this, h);
}

torch::Tensor MiniGPTImpl::forward_cached(const torch::Tensor& tokens) {
  int64_t P = 0;
  for (auto& b : *blocks) {
    auto& kc = b->as<GPTBlock>()->attn->k_cache;
    if (kc.defined() && kc.dim() == 4) P = std::max(P, kc.size(2));
  }
  auto pos = torch::arange(P, P + tokens.size(1), tokens.options());
  auto h = tok_emb->forward(tokens) + pos_emb->forward(pos).unsqueeze(0);
  for (auto& b : *blocks) h = b->as<GPTBlock>()->forward(h, true);
  return logits_of(*this, h);
}

void MiniGPTImpl::reset_cache() {
  for (auto& b : *blocks) b->as<GPTBlock>()->attn->reset_cache();
}

torch::Tensor MiniGPTImpl::generate(const torch::Tensor& prompt, int64_t max_new_tokens, double temperature,
                                    int64_t top_k, double top_p, uint64_t seed) {
  torch::NoGradGuard guard;
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  reset_cache();
  int64_t remaining = std::min(max_new_tokens, max_len - prompt.size(1));
  auto seq = prompt.clone();
  auto next_logits = forward_cached(prompt).select(1, -1);
  while (remaining-- > 0) {
    torch::Tensor tok;
    if (temperature == 0) {
      tok = torch::argmax(next_logits, 1, true);
    } else {
      auto probs = next_token_probs(next_logits, temperature, top_k, top_p).to(torch::kCPU, torch::kDouble);
      auto u = torch::rand({probs.size(0), 1}, gen, torch::kFloat64);
      auto cdf = probs.cumsum(-1).contiguous();
      tok = torch::searchsorted(cdf, u, /*out_int32=*/false, /*right=*/true).clamp_max(probs.size(1) - 1);
      tok = tok.to(prompt.device());
    }
    seq = torch::cat({seq, tok}, 1);
    if (remaining > 0) next_logits = forward_cached(tok).select(1, -1);
  }
  return seq;
}

torch::Tensor next_token_probs(const torch::Tensor& logits, double temperature, int64_t top_k, double top_p) {
  const int64_t V = logits.size(1);
  if (temperature == 0) return torch::one_hot(logits.argmax(1), V).to(logits.options());
  auto z = logits / temperature;
  const auto ninf = -std::numeric_limits<double>::infinity();
  if (top_k > 0 && top_k < V) {
    auto kth = std::get<0>(torch::topk(z, top_k, 1, true, true)).select(1, top_k - 1).unsqueeze(1);
    z = torch::where(z >= kth, z, torch::full_like(z, ninf));
  }
  if (top_p < 1) {
    auto p = torch::softmax(z, 1);
    auto sp = torch::sort(p, 1, true);
    auto vals = std::get<0>(sp), order = std::get<1>(sp);
    auto before = torch::cumsum(vals, 1) - vals;
    auto keep_sorted = before < top_p;
    keep_sorted.index_put_({Slice(), 0}, true);
    auto keep = torch::empty_like(keep_sorted).scatter_(1, order, keep_sorted);
    z = z.masked_fill(keep.logical_not(), ninf);
  }
  return torch::softmax(z, 1);
}
