// Accepted: attention computed head by head in a loop; the kv cache is a
// buffer preallocated to max_len with a length counter (kept in a side table,
// since the header's struct has no room for one), k_cache/v_cache are views
// of its filled part; the causal mask is an additive bias from comparing
// aranges. Sampler: top-k with topk's k-th value as the threshold, top-p in the
// ascending-sort style (remove what stays below 1 - top_p).
#include "mini_gpt.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>
#include <unordered_map>

namespace {
struct CacheSlot {
  torch::Tensor k, v;    // (B, H, capacity, hd)
  int64_t length = 0;    // tokens cached
  int64_t capacity = 0;  // 0: unknown (grow as needed)
};
std::unordered_map<const GPTAttentionImpl*, CacheSlot>& slots() {
  static std::unordered_map<const GPTAttentionImpl*, CacheSlot> table;
  return table;
}
constexpr double kNegInf = -std::numeric_limits<double>::infinity();
}  // namespace

GPTAttentionImpl::GPTAttentionImpl(int64_t d, int64_t h) : dim(d), num_heads(h), head_dim(0) {
  if (h <= 0 || d % h != 0) TORCH_CHECK(false, "GPTAttention: dim=", d, " not divisible by num_heads=", h);
  head_dim = d / h;
  q_proj = register_module("q_proj", torch::nn::Linear(d, d));
  k_proj = register_module("k_proj", torch::nn::Linear(d, d));
  v_proj = register_module("v_proj", torch::nn::Linear(d, d));
  out_proj = register_module("out_proj", torch::nn::Linear(d, d));
  slots()[this] = CacheSlot{};
}

void GPTAttentionImpl::reset_cache() {
  auto& s = slots()[this];
  s.length = 0;
  k_cache = torch::Tensor();
  v_cache = torch::Tensor();
}

torch::Tensor GPTAttentionImpl::forward(const torch::Tensor& x, bool use_cache) {
  const int64_t B = x.size(0), T = x.size(1);
  auto q = q_proj->forward(x), k = k_proj->forward(x), v = v_proj->forward(x);  // (B, T, D)

  int64_t past = 0;
  torch::Tensor keys_all, values_all;  // (B, H, S, hd)
  auto split = [&](const torch::Tensor& t) { return t.view({B, T, num_heads, head_dim}).permute({0, 2, 1, 3}); };
  if (use_cache) {
    auto& s = slots()[this];
    past = s.length;
    int64_t cap = s.capacity > 0 ? s.capacity : 0;
    if (cap < past + T) cap = std::max<int64_t>(2 * (past + T), 8);
    if (!s.k.defined() || s.k.size(0) != B || s.k.size(2) < past + T || s.k.scalar_type() != x.scalar_type() ||
        s.k.device() != x.device()) {
      auto nk = torch::zeros({B, num_heads, cap, head_dim}, x.options());
      auto nv = torch::zeros({B, num_heads, cap, head_dim}, x.options());
      if (past > 0) {
        nk.narrow(2, 0, past).copy_(s.k.narrow(2, 0, past));
        nv.narrow(2, 0, past).copy_(s.v.narrow(2, 0, past));
      }
      s.k = nk;
      s.v = nv;
    }
    s.k.narrow(2, past, T).copy_(split(k));
    s.v.narrow(2, past, T).copy_(split(v));
    s.length = past + T;
    k_cache = s.k.narrow(2, 0, s.length);
    v_cache = s.v.narrow(2, 0, s.length);
    keys_all = k_cache;
    values_all = v_cache;
  } else {
    keys_all = split(k);
    values_all = split(v);
  }
  const int64_t S = keys_all.size(2);

  // additive causal bias: query i (position past + i) may read key j <= past + i
  auto qi = torch::arange(T, x.options().dtype(torch::kLong)).view({T, 1}) + past;
  auto kj = torch::arange(S, x.options().dtype(torch::kLong)).view({1, S});
  auto bias = torch::zeros({T, S}, x.options()).masked_fill(kj > qi, kNegInf);

  const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim));
  std::vector<torch::Tensor> outs;
  for (int64_t h = 0; h < num_heads; ++h) {
    auto qh = q.narrow(2, h * head_dim, head_dim);  // (B, T, hd)
    auto kh = keys_all.select(1, h);                // (B, S, hd)
    auto vh = values_all.select(1, h);
    auto w = torch::softmax(torch::bmm(qh, kh.transpose(1, 2)) * scale + bias, -1);
    outs.push_back(torch::bmm(w, vh));  // (B, T, hd)
  }
  return out_proj->forward(torch::cat(outs, -1));
}

GPTBlockImpl::GPTBlockImpl(int64_t dim, int64_t num_heads)
    : ln1(torch::nn::LayerNormOptions({dim})),
      ln2(torch::nn::LayerNormOptions({dim})),
      attn(dim, num_heads),
      fc1(dim, 4 * dim),
      fc2(4 * dim, dim) {
  register_module("ln1", ln1);
  register_module("attn", attn);
  register_module("ln2", ln2);
  register_module("fc1", fc1);
  register_module("fc2", fc2);
}

torch::Tensor GPTBlockImpl::forward(const torch::Tensor& x, bool use_cache) {
  torch::Tensor out = x + attn->forward(ln1->forward(x), use_cache);
  auto hidden = torch::gelu(fc1->forward(ln2->forward(out)));
  return out + fc2->forward(hidden);
}

MiniGPTImpl::MiniGPTImpl(int64_t vocab_size, int64_t max_len, int64_t dim, int64_t num_heads, int64_t num_layers)
    : vocab_size(vocab_size), max_len(max_len), dim(dim), num_heads(num_heads), num_layers(num_layers) {
  TORCH_CHECK(num_heads > 0 && dim % num_heads == 0, "MiniGPT: num_heads must divide dim");
  tok_emb = register_module("tok_emb", torch::nn::Embedding(vocab_size, dim));
  pos_emb = register_module("pos_emb", torch::nn::Embedding(max_len, dim));
  blocks = register_module("blocks", torch::nn::ModuleList());
  for (int64_t i = 0; i < num_layers; ++i) {
    GPTBlock block(dim, num_heads);
    slots()[block->attn.get()].capacity = max_len;  // preallocate to the longest sequence
    blocks->push_back(block);
  }
  ln_f = register_module("ln_f", torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim})));
}

torch::Tensor MiniGPTImpl::forward(const torch::Tensor& tokens) {
  const int64_t T = tokens.size(1);
  TORCH_CHECK(T <= max_len, "sequence longer than max_len");
  auto x = tok_emb->forward(tokens) + pos_emb->forward(torch::arange(T, tokens.options().dtype(torch::kLong)));
  for (auto& m : *blocks) x = m->as<GPTBlock>()->forward(x, false);
  return torch::matmul(ln_f->forward(x), tok_emb->weight.transpose(0, 1));
}

torch::Tensor MiniGPTImpl::forward_cached(const torch::Tensor& tokens) {
  const int64_t T = tokens.size(1);
  const int64_t start = blocks->size() ? slots()[blocks->ptr<GPTBlockImpl>(0)->attn.get()].length : 0;
  TORCH_CHECK(start + T <= max_len, "cached sequence longer than max_len");
  auto pos = torch::arange(start, start + T, tokens.options().dtype(torch::kLong));
  auto x = tok_emb->forward(tokens) + pos_emb->forward(pos);
  for (auto& m : *blocks) x = m->as<GPTBlock>()->forward(x, true);
  return torch::matmul(ln_f->forward(x), tok_emb->weight.transpose(0, 1));
}

void MiniGPTImpl::reset_cache() {
  for (auto& m : *blocks) m->as<GPTBlock>()->attn->reset_cache();
}

torch::Tensor MiniGPTImpl::generate(const torch::Tensor& prompt, int64_t max_new_tokens, double temperature,
                                    int64_t top_k, double top_p, uint64_t seed) {
  torch::NoGradGuard no_grad;
  auto generator = at::make_generator<at::CPUGeneratorImpl>(seed);
  reset_cache();
  int64_t todo = std::min(max_new_tokens, max_len - prompt.size(1));
  torch::Tensor seq = prompt;
  torch::Tensor feed = prompt;
  while (todo-- > 0) {
    auto last = forward_cached(feed).select(1, -1);
    torch::Tensor choice;
    if (temperature == 0.0) {
      choice = torch::argmax(last, 1, true);
    } else {
      auto probs = next_token_probs(last, temperature, top_k, top_p).to(torch::kCPU).to(torch::kDouble);
      auto u = torch::rand({probs.size(0), 1}, generator, torch::kFloat64);
      choice = (probs.cumsum(1) <= u).sum(1, true).clamp_max(probs.size(1) - 1).to(prompt.device());
    }
    seq = torch::cat({seq, choice}, 1);
    feed = choice;
  }
  return seq;
}

torch::Tensor next_token_probs(const torch::Tensor& logits, double temperature, int64_t top_k, double top_p) {
  const int64_t V = logits.size(1);
  if (temperature == 0.0) {
    auto out = torch::zeros_like(logits);
    out.scatter_(1, torch::argmax(logits, 1, true), 1.0);
    return out;
  }
  torch::Tensor scaled = logits / temperature;
  if (top_k > 0 && top_k < V) {
    // Every logit >= the k-th largest stays (ties at the k-th included).
    auto kth = std::get<0>(torch::topk(scaled, top_k, 1)).select(1, top_k - 1).unsqueeze(1);
    scaled = scaled.masked_fill(scaled < kth, kNegInf);
  }
  if (top_p < 1.0) {
    // ascending: drop the low tail whose total mass stays within 1 - top_p
    auto sorted = torch::sort(scaled, 1, /*descending=*/false);
    auto asc_probs = torch::softmax(std::get<0>(sorted), 1);
    auto tail = asc_probs.cumsum(1) <= (1.0 - top_p);
    tail.select(1, V - 1).fill_(false);  // the most probable token always stays
    auto drop = torch::zeros_like(tail).scatter(1, std::get<1>(sorted), tail);
    scaled = scaled.masked_fill(drop, kNegInf);
  }
  return torch::softmax(scaled, 1);
}
