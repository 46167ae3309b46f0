// Accepted: generate has a single path for every temperature: it always asks
// next_token_probs for the distribution and draws by the inverse CDF (at
// temperature 0 the distribution is one-hot, so the draw returns the argmax
// whatever u is). Queries are scaled before the product, the mask is
// tril(ones) compared with 0, and the cached length is read from the LAST
// block's value cache.
#include "mini_gpt.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>

GPTAttentionImpl::GPTAttentionImpl(int64_t dim, int64_t num_heads)
    : dim(dim), num_heads(num_heads), head_dim(num_heads > 0 ? dim / num_heads : 0) {
  TORCH_CHECK(num_heads > 0 && head_dim * num_heads == dim, "GPTAttention(", dim, ", ", num_heads,
              "): heads must split dim evenly");
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
  const int64_t batch = x.size(0), len = x.size(1);
  auto split_heads = [&](const torch::Tensor& t) {
    return t.reshape({batch, len, num_heads, head_dim}).permute({0, 2, 1, 3});
  };
  auto q = split_heads(q_proj(x)) * (1.0 / std::sqrt(static_cast<double>(head_dim)));
  auto k = split_heads(k_proj(x));
  auto v = split_heads(v_proj(x));
  const bool have_past = use_cache && k_cache.defined() && k_cache.size(2) > 0;
  const int64_t past = have_past ? k_cache.size(2) : 0;
  if (have_past) {
    k = torch::cat({k_cache, k}, -2);
    v = torch::cat({v_cache, v}, -2);
  }
  if (use_cache) {
    k_cache = k;
    v_cache = v;
  }
  const int64_t total = past + len;
  // row r (position past + r) may read columns 0 .. past + r: lower triangle shifted by past
  auto allowed = torch::ones({len, total}, x.options().dtype(torch::kInt)).tril(past);
  auto scores = torch::matmul(q, k.transpose(-1, -2));
  scores = scores.masked_fill(allowed == 0, -std::numeric_limits<double>::infinity());
  auto mixed = torch::matmul(scores.softmax(-1), v);  // (B, H, T, hd)
  return out_proj(mixed.permute({0, 2, 1, 3}).reshape({batch, len, dim}));
}

GPTBlockImpl::GPTBlockImpl(int64_t dim, int64_t num_heads) {
  ln1 = register_module("ln1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim}).eps(1e-5)));
  attn = register_module("attn", GPTAttention(dim, num_heads));
  ln2 = register_module("ln2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim}).eps(1e-5)));
  fc1 = register_module("fc1", torch::nn::Linear(dim, 4 * dim));
  fc2 = register_module("fc2", torch::nn::Linear(4 * dim, dim));
}

torch::Tensor GPTBlockImpl::forward(const torch::Tensor& x, bool use_cache) {
  torch::Tensor h = x;
  h = h + attn(ln1(h), use_cache);
  h = h + fc2(torch::nn::functional::gelu(fc1(ln2(h)), torch::nn::functional::GELUFuncOptions().approximate("none")));
  return h;
}

MiniGPTImpl::MiniGPTImpl(int64_t vocab_size, int64_t max_len, int64_t dim, int64_t num_heads, int64_t num_layers)
    : vocab_size(vocab_size), max_len(max_len), dim(dim), num_heads(num_heads), num_layers(num_layers) {
  TORCH_CHECK(num_heads > 0 && dim % num_heads == 0, "MiniGPT: dim ", dim, " % num_heads ", num_heads, " != 0");
  tok_emb = register_module("tok_emb", torch::nn::Embedding(vocab_size, dim));
  pos_emb = register_module("pos_emb", torch::nn::Embedding(max_len, dim));
  blocks = register_module("blocks", torch::nn::ModuleList());
  for (int64_t i = 0; i < num_layers; ++i) blocks->push_back(GPTBlock(dim, num_heads));
  ln_f = register_module("ln_f", torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim})));
}

namespace {
torch::Tensor stack_logits(MiniGPTImpl& model, const torch::Tensor& tokens, int64_t from, bool use_cache) {
  TORCH_CHECK(from + tokens.size(1) <= model.max_len, "positions past max_len");
  auto where = torch::arange(from, from + tokens.size(1), tokens.options().dtype(torch::kLong));
  auto h = model.tok_emb(tokens) + model.pos_emb(where);
  for (size_t i = 0; i < model.blocks->size(); ++i) h = model.blocks->ptr<GPTBlockImpl>(i)->forward(h, use_cache);
  return model.ln_f(h).matmul(model.tok_emb->weight.t());
}
}  // namespace

torch::Tensor MiniGPTImpl::forward(const torch::Tensor& tokens) { return stack_logits(*this, tokens, 0, false); }

torch::Tensor MiniGPTImpl::forward_cached(const torch::Tensor& tokens) {
  int64_t seen = 0;
  if (blocks->size() > 0) {
    const auto& vc = blocks->ptr<GPTBlockImpl>(blocks->size() - 1)->attn->v_cache;
    if (vc.defined()) seen = vc.size(2);
  }
  return stack_logits(*this, tokens, seen, true);
}

void MiniGPTImpl::reset_cache() {
  for (size_t i = 0; i < blocks->size(); ++i) blocks->ptr<GPTBlockImpl>(i)->attn->reset_cache();
}

torch::Tensor MiniGPTImpl::generate(const torch::Tensor& prompt, int64_t max_new_tokens, double temperature,
                                    int64_t top_k, double top_p, uint64_t seed) {
  torch::NoGradGuard no_grad;
  auto generator = at::make_generator<at::CPUGeneratorImpl>(seed);
  const int64_t room = max_len - prompt.size(1);
  const int64_t count = max_new_tokens < room ? max_new_tokens : room;
  reset_cache();
  torch::Tensor sequence = prompt;
  torch::Tensor input = prompt;
  for (int64_t made = 0; made < count; ++made) {
    auto logits = forward_cached(input);
    auto last = logits.select(1, logits.size(1) - 1);
    auto probs = next_token_probs(last, temperature, top_k, top_p).to(torch::kCPU, torch::kFloat64);
    auto u = torch::rand({probs.size(0), 1}, generator, torch::kFloat64);
    auto chosen = (probs.cumsum(-1) <= u).sum(-1, true).clamp_max(probs.size(-1) - 1);
    input = chosen.to(prompt.device());
    sequence = torch::cat({sequence, input}, 1);
  }
  return sequence;
}

torch::Tensor next_token_probs(const torch::Tensor& logits, double temperature, int64_t top_k, double top_p) {
  const int64_t V = logits.size(-1);
  const double neg_inf = -std::numeric_limits<double>::infinity();
  if (temperature == 0) {
    auto best = logits.argmax(-1, true);
    return torch::zeros_like(logits).scatter(-1, best, torch::ones_like(best, logits.options()));
  }
  auto scaled = logits / temperature;
  if (top_k > 0 && top_k < V) {
    auto values = std::get<0>(scaled.sort(-1, true));
    scaled = torch::where(scaled >= values.select(-1, top_k - 1).unsqueeze(-1), scaled,
                          torch::full_like(scaled, neg_inf));
  }
  if (top_p < 1) {
    auto ordered = scaled.sort(-1, true);
    auto p = std::get<0>(ordered).softmax(-1);
    auto exclusive = p.cumsum(-1) - p;
    auto keep_sorted = exclusive < top_p;
    auto keep = torch::zeros_like(keep_sorted).scatter(-1, std::get<1>(ordered), keep_sorted);
    scaled = scaled.masked_fill(keep.logical_not(), neg_inf);
  }
  return scaled.softmax(-1);
}
