// Accepted: a functional style (torch::layer_norm and linear with the
// modules' weights), attention scores and softmax computed in float64 and
// cast back to the input's dtype, an additive mask from full(-inf).triu; the
// output of generate preallocated to (B, P + n) and filled column by column;
// top-k's threshold read from a descending sort, top-p's mask brought back to
// vocabulary order with gather through the inverse permutation.
#include "mini_gpt.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>

static const double NEG_INF = -std::numeric_limits<double>::infinity();

GPTAttentionImpl::GPTAttentionImpl(int64_t dim, int64_t num_heads) : dim(dim), num_heads(num_heads), head_dim(1) {
  TORCH_CHECK(num_heads > 0, "num_heads must be positive");
  TORCH_CHECK(dim % num_heads == 0, "dim % num_heads != 0");
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
  const auto sizes = x.sizes();
  const int64_t T = sizes[1];
  auto proj = [&](torch::nn::Linear& l) {
    return torch::linear(x, l->weight, l->bias).unflatten(-1, {num_heads, head_dim}).transpose(1, 2);
  };
  torch::Tensor q = proj(q_proj), k = proj(k_proj), v = proj(v_proj);
  int64_t cached = 0;
  if (use_cache) {
    if (k_cache.defined() && k_cache.size(2) > 0) {
      cached = k_cache.size(2);
      k_cache = torch::cat({k_cache, k}, 2);
      v_cache = torch::cat({v_cache, v}, 2);
    } else {
      k_cache = k;
      v_cache = v;
    }
    k = k_cache;
    v = v_cache;
  }
  const int64_t S = k.size(2);
  auto wide = x.options().dtype(torch::kDouble);
  auto scores = torch::matmul(q.to(torch::kDouble), k.to(torch::kDouble).transpose(-1, -2)) /
                std::sqrt(static_cast<double>(head_dim));
  scores = scores + torch::full({T, S}, NEG_INF, wide).triu(cached + 1);
  auto probs = torch::softmax(scores, -1).to(x.scalar_type());
  auto ctx = torch::matmul(probs, v).transpose(1, 2).flatten(2);  // (B, T, D)
  return torch::linear(ctx, out_proj->weight, out_proj->bias);
}

GPTBlockImpl::GPTBlockImpl(int64_t dim, int64_t num_heads) {
  ln1 = register_module("ln1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim})));
  attn = register_module("attn", GPTAttention(dim, num_heads));
  ln2 = register_module("ln2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim})));
  fc1 = register_module("fc1", torch::nn::Linear(dim, 4 * dim));
  fc2 = register_module("fc2", torch::nn::Linear(4 * dim, dim));
}

static torch::Tensor norm(const torch::nn::LayerNorm& ln, const torch::Tensor& x) {
  return torch::layer_norm(x, {x.size(-1)}, ln->weight, ln->bias, 1e-5);
}

torch::Tensor GPTBlockImpl::forward(const torch::Tensor& x, bool use_cache) {
  auto stream = x + attn->forward(norm(ln1, x), use_cache);
  auto inner = torch::gelu(torch::linear(norm(ln2, stream), fc1->weight, fc1->bias));
  return stream + torch::linear(inner, fc2->weight, fc2->bias);
}

MiniGPTImpl::MiniGPTImpl(int64_t vocab_size, int64_t max_len, int64_t dim, int64_t num_heads, int64_t num_layers)
    : vocab_size(vocab_size), max_len(max_len), dim(dim), num_heads(num_heads), num_layers(num_layers) {
  TORCH_CHECK(num_heads > 0 && dim % num_heads == 0, "dim % num_heads != 0");
  tok_emb = register_module("tok_emb", torch::nn::Embedding(vocab_size, dim));
  pos_emb = register_module("pos_emb", torch::nn::Embedding(max_len, dim));
  blocks = register_module("blocks", torch::nn::ModuleList());
  for (int64_t i = 0; i < num_layers; i++) blocks->push_back(GPTBlock(dim, num_heads));
  ln_f = register_module("ln_f", torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim})));
}

static torch::Tensor run_stack(MiniGPTImpl& self, const torch::Tensor& tokens, int64_t offset, bool cache) {
  auto idx = torch::arange(offset, offset + tokens.size(1), tokens.options());
  auto h = torch::embedding(self.tok_emb->weight, tokens) + torch::embedding(self.pos_emb->weight, idx);
  for (auto& blk : self.blocks->children()) h = std::dynamic_pointer_cast<GPTBlockImpl>(blk)->forward(h, cache);
  return torch::matmul(norm(self.ln_f, h), self.tok_emb->weight.t());
}

torch::Tensor MiniGPTImpl::forward(const torch::Tensor& tokens) { return run_stack(*this, tokens, 0, false); }

torch::Tensor MiniGPTImpl::forward_cached(const torch::Tensor& tokens) {
  int64_t offset = 0;
  if (num_layers > 0) {
    auto first = blocks->ptr<GPTBlockImpl>(0);
    if (first->attn->k_cache.defined()) offset = first->attn->k_cache.size(2);
  }
  return run_stack(*this, tokens, offset, true);
}

void MiniGPTImpl::reset_cache() {
  for (auto& blk : blocks->children()) std::dynamic_pointer_cast<GPTBlockImpl>(blk)->attn->reset_cache();
}

torch::Tensor MiniGPTImpl::generate(const torch::Tensor& prompt, int64_t max_new_tokens, double temperature,
                                    int64_t top_k, double top_p, uint64_t seed) {
  at::NoGradGuard no_grad;
  auto rng = at::make_generator<at::CPUGeneratorImpl>(seed);
  const int64_t B = prompt.size(0), P = prompt.size(1);
  const int64_t n = std::min(max_new_tokens, max_len - P);
  auto result = torch::empty({B, P + n}, prompt.options());
  result.narrow(1, 0, P).copy_(prompt);
  reset_cache();
  auto logits = forward_cached(prompt);
  for (int64_t i = 0; i < n; i++) {
    auto last = logits.narrow(1, logits.size(1) - 1, 1).squeeze(1);
    torch::Tensor pick;
    if (temperature == 0) {
      pick = last.argmax(-1);
    } else {
      auto p = next_token_probs(last, temperature, top_k, top_p).to(at::TensorOptions().device(torch::kCPU).dtype(torch::kDouble));
      auto u = torch::rand({B, 1}, rng, torch::kFloat64);
      pick = p.cumsum(-1).le(u).sum(-1).clamp_max(p.size(-1) - 1);
    }
    result.select(1, P + i).copy_(pick);
    if (i + 1 < n) logits = forward_cached(result.narrow(1, P + i, 1));
  }
  return result;
}

torch::Tensor next_token_probs(const torch::Tensor& logits, double temperature, int64_t top_k, double top_p) {
  if (temperature == 0) {
    auto probs = torch::zeros_like(logits);
    probs.scatter_(1, logits.argmax(1, true), 1);
    return probs;
  }
  auto x = logits.div(temperature);
  const int64_t V = x.size(1);
  if (top_k > 0 && top_k < V) {
    auto desc = std::get<0>(x.sort(1, true));
    x = x.masked_fill(x.lt(desc.narrow(1, top_k - 1, 1)), NEG_INF);
  }
  if (top_p < 1) {
    auto sorted = x.sort(1, true);
    auto values = std::get<0>(sorted), order = std::get<1>(sorted);
    auto p = values.softmax(1);
    auto cut = (p.cumsum(1) - p).ge(top_p);             // in sorted order
    auto inverse = order.argsort(/*dim=*/1, /*descending=*/false);                     // position of each token in the sorted order
    x = x.masked_fill(cut.gather(1, inverse), NEG_INF);  // back to vocabulary order
  }
  return x.softmax(1);
}
