// Correct, in another style: every product computed in float64 and cast back;
// the position of the next cached token kept in a registered counter buffer;
// the sampler sorts once and does top-k and top-p on the sorted row.
#include "mini_gpt.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>

namespace {
torch::Tensor lin(const torch::nn::Linear& l, const torch::Tensor& x64) {
  return torch::linear(x64, l->weight.to(torch::kDouble), l->bias.to(torch::kDouble));
}
torch::Tensor ln(const torch::nn::LayerNorm& l, const torch::Tensor& x64) {
  return torch::layer_norm(x64, {x64.size(-1)}, l->weight.to(torch::kDouble), l->bias.to(torch::kDouble), 1e-5);
}
const double kNegInf = -std::numeric_limits<double>::infinity();
}  // namespace

GPTAttentionImpl::GPTAttentionImpl(int64_t d, int64_t h) : dim(d), num_heads(h), head_dim(0) {
  TORCH_CHECK(h > 0 && d % h == 0, "num_heads must divide dim");
  head_dim = d / h;
  q_proj = register_module("q_proj", torch::nn::Linear(d, d));
  k_proj = register_module("k_proj", torch::nn::Linear(d, d));
  v_proj = register_module("v_proj", torch::nn::Linear(d, d));
  out_proj = register_module("out_proj", torch::nn::Linear(d, d));
}

void GPTAttentionImpl::reset_cache() {
  k_cache = torch::Tensor();
  v_cache = torch::Tensor();
}

torch::Tensor GPTAttentionImpl::forward(const torch::Tensor& x, bool use_cache) {
  auto in_dtype = x.scalar_type();
  auto x64 = x.to(torch::kDouble);
  const int64_t B = x.size(0), T = x.size(1);
  auto split = [&](torch::Tensor t) { return t.reshape({B, T, num_heads, head_dim}).permute({0, 2, 1, 3}); };
  auto q = split(lin(q_proj, x64)), k = split(lin(k_proj, x64)), v = split(lin(v_proj, x64));
  int64_t past = 0;
  if (use_cache) {
    if (k_cache.defined()) {
      past = k_cache.size(2);
      k = torch::cat({k_cache.to(torch::kDouble), k}, 2);
      v = torch::cat({v_cache.to(torch::kDouble), v}, 2);
    }
    k_cache = k.to(in_dtype);
    v_cache = v.to(in_dtype);
    // keep full precision for this call's attention
  }
  const int64_t S = k.size(2);
  auto scores = torch::einsum("bhtd,bhsd->bhts", {q, k}) * (1.0 / std::sqrt((double)head_dim));
  auto allowed = torch::ones({T, S}, x.options().dtype(torch::kBool)).tril(past);
  scores = scores.masked_fill(allowed.logical_not(), kNegInf);
  auto ctx = torch::einsum("bhts,bhsd->bhtd", {scores.softmax(-1), v});
  auto merged = ctx.permute({0, 2, 1, 3}).reshape({B, T, dim});
  return lin(out_proj, merged).to(in_dtype);
}

GPTBlockImpl::GPTBlockImpl(int64_t d, int64_t h) {
  ln1 = register_module("ln1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d}).eps(1e-5)));
  attn = register_module("attn", GPTAttention(d, h));
  ln2 = register_module("ln2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d}).eps(1e-5)));
  fc1 = register_module("fc1", torch::nn::Linear(d, 4 * d));
  fc2 = register_module("fc2", torch::nn::Linear(4 * d, d));
}

torch::Tensor GPTBlockImpl::forward(const torch::Tensor& x, bool use_cache) {
  auto in_dtype = x.scalar_type();
  auto x64 = x.to(torch::kDouble);
  auto a = attn->forward(ln(ln1, x64).to(in_dtype), use_cache).to(torch::kDouble);
  auto h = x64 + a;
  auto m = lin(fc2, 0.5 * lin(fc1, ln(ln2, h)) * (1.0 + torch::erf(lin(fc1, ln(ln2, h)) / std::sqrt(2.0))));
  return (h + m).to(in_dtype);
}

MiniGPTImpl::MiniGPTImpl(int64_t V, int64_t M, int64_t D, int64_t H, int64_t L)
    : vocab_size(V), max_len(M), dim(D), num_heads(H), num_layers(L) {
  TORCH_CHECK(H > 0 && D % H == 0, "num_heads (", H, ") must divide dim (", D, ")");
  tok_emb = register_module("tok_emb", torch::nn::Embedding(V, D));
  pos_emb = register_module("pos_emb", torch::nn::Embedding(M, D));
  blocks = register_module("blocks", torch::nn::ModuleList());
  for (int64_t i = 0; i < L; ++i) blocks->push_back(GPTBlock(D, H));
  ln_f = register_module("ln_f", torch::nn::LayerNorm(torch::nn::LayerNormOptions({D}).eps(1e-5)));
  // the next cached position, a buffer (not a parameter) so it follows the model's device
  register_buffer("next_position", torch::zeros({1}, torch::kLong));
}

namespace {
torch::Tensor run(MiniGPTImpl& m, const torch::Tensor& tokens, const torch::Tensor& positions, bool cache) {
  auto dtype = m.tok_emb->weight.scalar_type();
  auto h = (m.tok_emb(tokens).to(torch::kDouble) + m.pos_emb(positions).to(torch::kDouble)).to(dtype);
  for (size_t i = 0; i < m.blocks->size(); ++i) h = m.blocks->ptr<GPTBlockImpl>(i)->forward(h, cache);
  auto out = torch::matmul(ln(m.ln_f, h.to(torch::kDouble)), m.tok_emb->weight.to(torch::kDouble).t());
  return out.to(dtype);
}
}  // namespace

torch::Tensor MiniGPTImpl::forward(const torch::Tensor& tokens) {
  auto positions = torch::arange(tokens.size(1), tokens.options().dtype(torch::kLong));
  return run(*this, tokens, positions, false);
}

torch::Tensor MiniGPTImpl::forward_cached(const torch::Tensor& tokens) {
  auto counter = named_buffers(false)["next_position"];
  auto positions = torch::arange(tokens.size(1), tokens.options().dtype(torch::kLong)) + counter.to(torch::kLong);
  auto out = run(*this, tokens, positions, true);
  counter.add_(tokens.size(1));
  return out;
}

void MiniGPTImpl::reset_cache() {
  named_buffers(false)["next_position"].zero_();
  for (size_t i = 0; i < blocks->size(); ++i) blocks->ptr<GPTBlockImpl>(i)->attn->reset_cache();
}

torch::Tensor MiniGPTImpl::generate(const torch::Tensor& prompt, int64_t max_new_tokens, double temperature,
                                    int64_t top_k, double top_p, uint64_t seed) {
  torch::NoGradGuard ng;
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  const int64_t P = prompt.size(1);
  const int64_t n = std::max<int64_t>(0, std::min(max_new_tokens, max_len - P));
  reset_cache();
  std::vector<torch::Tensor> out{prompt};
  auto logits = forward_cached(prompt);
  for (int64_t i = 0; i < n; ++i) {
    auto last = logits.index({torch::indexing::Slice(), -1});
    torch::Tensor tok;
    if (temperature == 0) {
      tok = torch::argmax(last, -1).unsqueeze(-1);
    } else {
      auto p = next_token_probs(last, temperature, top_k, top_p).to(torch::kCPU, torch::kDouble);
      auto u = torch::rand({p.size(0), 1}, gen, torch::kFloat64);
      tok = (p.cumsum(-1) <= u).sum(-1, true).clamp_max(p.size(1) - 1).to(prompt.device());
    }
    out.push_back(tok);
    if (i + 1 < n) logits = forward_cached(tok);
  }
  return torch::cat(out, 1);
}

torch::Tensor next_token_probs(const torch::Tensor& logits, double temperature, int64_t top_k, double top_p) {
  const int64_t V = logits.size(-1);
  if (temperature == 0) {
    auto one_hot = torch::zeros_like(logits);
    one_hot.scatter_(-1, logits.argmax(-1, true), 1);
    return one_hot;
  }
  auto scaled = logits / temperature;
  auto sorted = scaled.sort(-1, true);
  auto vals = std::get<0>(sorted), idx = std::get<1>(sorted);
  auto keep = torch::ones_like(vals, vals.options().dtype(torch::kBool));
  if (top_k > 0 && top_k < V) keep = vals >= vals.narrow(-1, top_k - 1, 1);
  if (top_p < 1) {
    auto p = vals.masked_fill(keep.logical_not(), kNegInf).softmax(-1);
    auto mass_before = p.cumsum(-1) - p;
    auto nucleus = mass_before < top_p;
    nucleus.narrow(-1, 0, 1).fill_(true);
    keep = keep.logical_and(nucleus);
  }
  auto probs_sorted = vals.masked_fill(keep.logical_not(), kNegInf).softmax(-1);
  return torch::zeros_like(probs_sorted).scatter(-1, idx, probs_sorted);
}
