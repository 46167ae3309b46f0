// Accepted: causality without a mask (each query attends over a narrow() of
// the keys up to its own position, one query at a time); generate keeps the
// tokens of each row in a std::vector and walks the CDF by hand; the sampler
// finds top-k's threshold with kthvalue and top-p's nucleus with a plain loop
// over each sorted row.
#include "mini_gpt.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>
#include <vector>

using torch::Tensor;

GPTAttentionImpl::GPTAttentionImpl(int64_t dim, int64_t num_heads) : dim(dim), num_heads(num_heads) {
  TORCH_CHECK(num_heads >= 1, "need at least one head");
  TORCH_CHECK(dim % num_heads == 0, "dim must be a multiple of num_heads");
  head_dim = dim / num_heads;
  q_proj = register_module("q_proj", torch::nn::Linear(torch::nn::LinearOptions(dim, dim).bias(true)));
  k_proj = register_module("k_proj", torch::nn::Linear(torch::nn::LinearOptions(dim, dim).bias(true)));
  v_proj = register_module("v_proj", torch::nn::Linear(torch::nn::LinearOptions(dim, dim).bias(true)));
  out_proj = register_module("out_proj", torch::nn::Linear(torch::nn::LinearOptions(dim, dim).bias(true)));
}

void GPTAttentionImpl::reset_cache() {
  k_cache.reset();
  v_cache.reset();
}

Tensor GPTAttentionImpl::forward(const Tensor& x, bool use_cache) {
  const int64_t B = x.size(0), T = x.size(1);
  auto to_heads = [&](Tensor t) { return t.reshape({B, T, num_heads, head_dim}).transpose(1, 2).contiguous(); };
  Tensor q = to_heads(q_proj(x));
  Tensor k = to_heads(k_proj(x));
  Tensor v = to_heads(v_proj(x));
  int64_t offset = 0;
  if (use_cache) {
    if (k_cache.defined() && k_cache.numel() > 0) {
      offset = k_cache.size(2);
      k = torch::cat({k_cache, k}, /*dim=*/2);
      v = torch::cat({v_cache, v}, /*dim=*/2);
    }
    k_cache = k;
    v_cache = v;
  }
  const double inv_sqrt = 1.0 / std::sqrt(double(head_dim));
  std::vector<Tensor> rows;
  rows.reserve(T);
  for (int64_t t = 0; t < T; ++t) {
    const int64_t visible = offset + t + 1;                         // keys 0 .. offset + t
    auto qt = q.narrow(2, t, 1);                                     // (B, H, 1, hd)
    auto kt = k.narrow(2, 0, visible), vt = v.narrow(2, 0, visible);  // (B, H, visible, hd)
    auto w = torch::softmax(torch::matmul(qt, kt.transpose(2, 3)) * inv_sqrt, -1);
    rows.push_back(torch::matmul(w, vt));
  }
  Tensor ctx = torch::cat(rows, 2);  // (B, H, T, hd)
  return out_proj(ctx.transpose(1, 2).reshape({B, T, dim}));
}

GPTBlockImpl::GPTBlockImpl(int64_t dim, int64_t num_heads) {
  ln1 = register_module("ln1", torch::nn::LayerNorm(std::vector<int64_t>{dim}));
  ln2 = register_module("ln2", torch::nn::LayerNorm(std::vector<int64_t>{dim}));
  attn = register_module("attn", GPTAttention(dim, num_heads));
  fc1 = register_module("fc1", torch::nn::Linear(dim, dim * 4));
  fc2 = register_module("fc2", torch::nn::Linear(dim * 4, dim));
}

Tensor GPTBlockImpl::forward(const Tensor& x, bool use_cache) {
  Tensor residual = x;
  residual = residual + attn(ln1(residual), use_cache);
  Tensor m = fc1(ln2(residual));
  m = 0.5 * m * (1.0 + torch::erf(m / std::sqrt(2.0)));  // exact GELU by hand
  return residual + fc2(m);
}

MiniGPTImpl::MiniGPTImpl(int64_t vocab_size, int64_t max_len, int64_t dim, int64_t num_heads, int64_t num_layers)
    : vocab_size(vocab_size), max_len(max_len), dim(dim), num_heads(num_heads), num_layers(num_layers) {
  TORCH_CHECK(num_heads >= 1 && dim % num_heads == 0, "dim must be a multiple of num_heads");
  tok_emb = register_module("tok_emb", torch::nn::Embedding(vocab_size, dim));
  pos_emb = register_module("pos_emb", torch::nn::Embedding(max_len, dim));
  blocks = register_module("blocks", torch::nn::ModuleList());
  for (int64_t l = 0; l < num_layers; ++l) blocks->push_back(GPTBlock(dim, num_heads));
  ln_f = register_module("ln_f", torch::nn::LayerNorm(std::vector<int64_t>{dim}));
}

namespace {
Tensor embed(MiniGPTImpl& m, const Tensor& tokens, int64_t first_position) {
  const int64_t T = tokens.size(1);
  Tensor positions = torch::arange(first_position, first_position + T, torch::dtype(torch::kLong).device(tokens.device()));
  return m.tok_emb->forward(tokens) + m.pos_emb->forward(positions).unsqueeze(0).expand({tokens.size(0), T, m.dim});
}
Tensor head(MiniGPTImpl& m, const Tensor& h) { return torch::matmul(m.ln_f->forward(h), m.tok_emb->weight.t()); }
}  // namespace

Tensor MiniGPTImpl::forward(const Tensor& tokens) {
  Tensor h = embed(*this, tokens, 0);
  for (size_t i = 0; i < blocks->size(); ++i) h = blocks[i]->as<GPTBlock>()->forward(h, false);
  return head(*this, h);
}

Tensor MiniGPTImpl::forward_cached(const Tensor& tokens) {
  int64_t P = 0;
  if (!blocks->is_empty()) {
    const Tensor& kc = blocks[0]->as<GPTBlock>()->attn->k_cache;
    P = kc.defined() ? kc.size(2) : 0;
  }
  Tensor h = embed(*this, tokens, P);
  for (size_t i = 0; i < blocks->size(); ++i) h = blocks[i]->as<GPTBlock>()->forward(h, true);
  return head(*this, h);
}

void MiniGPTImpl::reset_cache() {
  for (size_t i = 0; i < blocks->size(); ++i) blocks[i]->as<GPTBlock>()->attn->reset_cache();
}

Tensor MiniGPTImpl::generate(const Tensor& prompt, int64_t max_new_tokens, double temperature, int64_t top_k,
                             double top_p, uint64_t seed) {
  torch::NoGradGuard ng;
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  const int64_t B = prompt.size(0), P = prompt.size(1);
  const int64_t budget = std::min(max_new_tokens, max_len - P);

  Tensor cpu_prompt = prompt.to(torch::kCPU).to(torch::kLong).contiguous();
  std::vector<std::vector<int64_t>> seqs(B);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < P; ++t) seqs[b].push_back(cpu_prompt[b][t].item<int64_t>());

  reset_cache();
  Tensor logits = forward_cached(prompt);
  for (int64_t step = 0; step < budget; ++step) {
    Tensor last = logits.index({torch::indexing::Slice(), -1});  // (B, V)
    std::vector<int64_t> chosen(B);
    if (temperature == 0) {
      Tensor am = last.argmax(-1).to(torch::kCPU);
      for (int64_t b = 0; b < B; ++b) chosen[b] = am[b].item<int64_t>();
    } else {
      Tensor probs = next_token_probs(last, temperature, top_k, top_p).to(torch::kCPU, torch::kDouble).contiguous();
      Tensor u = torch::rand({B, 1}, gen, torch::kFloat64);
      auto pa = probs.accessor<double, 2>();
      auto ua = u.accessor<double, 2>();
      const int64_t V = probs.size(1);
      for (int64_t b = 0; b < B; ++b) {
        double running = 0;
        int64_t idx = 0;
        for (; idx < V - 1; ++idx) {
          running += pa[b][idx];
          if (running > ua[b][0]) break;
        }
        chosen[b] = idx;
      }
    }
    for (int64_t b = 0; b < B; ++b) seqs[b].push_back(chosen[b]);
    if (step + 1 < budget) {
      Tensor next = torch::tensor(chosen, torch::dtype(torch::kLong)).view({B, 1}).to(prompt.device());
      logits = forward_cached(next);
    }
  }
  std::vector<int64_t> flat;
  for (auto& s : seqs) flat.insert(flat.end(), s.begin(), s.end());
  return torch::tensor(flat, torch::dtype(torch::kLong)).view({B, P + budget}).to(prompt.device());
}

Tensor next_token_probs(const Tensor& logits, double temperature, int64_t top_k, double top_p) {
  const int64_t V = logits.size(-1);
  if (temperature == 0) {
    Tensor hot = torch::zeros_like(logits);
    hot.scatter_(-1, logits.argmax(-1).unsqueeze(-1), torch::ones_like(logits).narrow(-1, 0, 1));
    return hot;
  }
  const double minf = -std::numeric_limits<double>::infinity();
  Tensor s = logits / temperature;
  if (top_k > 0 && top_k < V) {
    // k-th largest = (V - k + 1)-th smallest
    Tensor threshold = std::get<0>(s.kthvalue(V - top_k + 1, -1, /*keepdim=*/true));
    s = torch::where(s >= threshold, s, torch::full_like(s, minf));
  }
  if (top_p < 1) {
    Tensor p = torch::softmax(s, -1).to(torch::kCPU, torch::kDouble).contiguous();
    auto sorted = p.sort(-1, true);
    Tensor sp = std::get<0>(sorted).contiguous(), order = std::get<1>(sorted).contiguous();
    Tensor keep = torch::zeros({p.size(0), V}, torch::kBool);
    auto spa = sp.accessor<double, 2>();
    auto oa = order.accessor<int64_t, 2>();
    auto ka = keep.accessor<bool, 2>();
    for (int64_t r = 0; r < p.size(0); ++r) {
      double mass_before = 0;
      for (int64_t j = 0; j < V; ++j) {
        if (j > 0 && mass_before >= top_p) break;
        ka[r][oa[r][j]] = true;
        mass_before += spa[r][j];
      }
    }
    s = s.masked_fill(keep.logical_not().to(s.device()), minf);
  }
  return torch::softmax(s, -1);
}
