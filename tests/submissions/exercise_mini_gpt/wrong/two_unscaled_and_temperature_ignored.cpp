// A small GPT with a kv cache, WRONG twice: the attention scores are never
// scaled, and next_token_probs never applies the temperature.
#include "mini_gpt.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>

// ---------------------------------------------------------------------------
// Attention with a cache.
GPTAttentionImpl::GPTAttentionImpl(int64_t dim, int64_t num_heads)
    : dim(dim), num_heads(num_heads), head_dim(num_heads > 0 ? dim / num_heads : 0) {
  TORCH_CHECK(num_heads > 0 && dim % num_heads == 0, "dim (", dim, ") must be divisible by num_heads (", num_heads,
              ")");
  q_proj = register_module("q_proj", torch::nn::Linear(dim, dim));
  k_proj = register_module("k_proj", torch::nn::Linear(dim, dim));
  v_proj = register_module("v_proj", torch::nn::Linear(dim, dim));
  out_proj = register_module("out_proj", torch::nn::Linear(dim, dim));
}

void GPTAttentionImpl::reset_cache() {
  // Focus point `kv_cache`: undefined tensors mean "nothing cached".
  k_cache = torch::Tensor();
  v_cache = torch::Tensor();
}

torch::Tensor GPTAttentionImpl::forward(const torch::Tensor& x, bool use_cache) {
  const int64_t batch = x.size(0), t = x.size(1);
  auto heads = [&](const torch::Tensor& projected) {
    return projected.view({batch, t, num_heads, head_dim}).transpose(1, 2);  // (B, H, T, hd)
  };
  auto q = heads(q_proj(x)), k = heads(k_proj(x)), v = heads(v_proj(x));

  // Focus point `kv_cache`: a cached call only projects its own T tokens and
  // appends them; the earlier keys and values are read from the cache.
  int64_t past = 0;
  if (use_cache) {
    if (k_cache.defined() && k_cache.size(2) > 0) {
      past = k_cache.size(2);
      k = torch::cat({k_cache, k}, 2);
      v = torch::cat({v_cache, v}, 2);
    }
    k_cache = k;
    v_cache = v;
  }

  // Focus point `causal`: the new token t sits at position past + t and sees
  // keys 0..past + t. A single new token sees the whole cache; a prompt or a
  // chunk needs the mask. Made with x's options (device and dtype).
  auto scores = torch::matmul(q, k.transpose(-2, -1));
  const int64_t keys = k.size(2);
  auto query_pos = torch::arange(past, past + t, x.options().dtype(torch::kLong)).unsqueeze(1);
  auto key_pos = torch::arange(keys, x.options().dtype(torch::kLong)).unsqueeze(0);
  scores = scores.masked_fill(key_pos > query_pos, -std::numeric_limits<double>::infinity());
  auto context = torch::matmul(torch::softmax(scores, -1), v);  // (B, H, T, hd)
  return out_proj(context.transpose(1, 2).reshape({batch, t, dim}));
}

// ---------------------------------------------------------------------------
// Focus point `blocks`: GPT-2 normalises BEFORE each sub-layer (pre-LN) and
// adds the sub-layer's output to the unnormalised stream.
GPTBlockImpl::GPTBlockImpl(int64_t dim, int64_t num_heads) {
  ln1 = register_module("ln1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim})));
  attn = register_module("attn", GPTAttention(dim, num_heads));
  ln2 = register_module("ln2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim})));
  fc1 = register_module("fc1", torch::nn::Linear(dim, 4 * dim));
  fc2 = register_module("fc2", torch::nn::Linear(4 * dim, dim));
}

torch::Tensor GPTBlockImpl::forward(const torch::Tensor& x, bool use_cache) {
  auto h = x + attn(ln1(x), use_cache);
  return h + fc2(torch::gelu(fc1(ln2(h))));  // exact (erf) GELU
}

// ---------------------------------------------------------------------------
MiniGPTImpl::MiniGPTImpl(int64_t vocab_size, int64_t max_len, int64_t dim, int64_t num_heads, int64_t num_layers)
    : vocab_size(vocab_size), max_len(max_len), dim(dim), num_heads(num_heads), num_layers(num_layers) {
  TORCH_CHECK(num_heads > 0 && dim % num_heads == 0, "dim (", dim, ") must be divisible by num_heads (", num_heads,
              ")");
  tok_emb = register_module("tok_emb", torch::nn::Embedding(vocab_size, dim));
  // Focus point `embeddings`: learned positions, one row per position up to max_len.
  pos_emb = register_module("pos_emb", torch::nn::Embedding(max_len, dim));
  blocks = register_module("blocks", torch::nn::ModuleList());
  for (int64_t i = 0; i < num_layers; ++i) blocks->push_back(GPTBlock(dim, num_heads));
  ln_f = register_module("ln_f", torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim})));
  // Focus point `tied_output`: no lm_head. The output projection IS tok_emb's
  // weight, so a token's embedding and its output row are one vector.
}

namespace {

// Runs the stack on tokens placed at positions start .. start + T - 1.
torch::Tensor run(MiniGPTImpl& model, const torch::Tensor& tokens, int64_t start, bool use_cache) {
  const int64_t t = tokens.size(1);
  TORCH_CHECK(start + t <= model.max_len, "a sequence of ", start + t, " tokens is longer than max_len (",
              model.max_len, ")");
  auto positions = torch::arange(start, start + t, tokens.options().dtype(torch::kLong));
  auto h = model.tok_emb(tokens) + model.pos_emb(positions);  // (B, T, D) + (T, D)
  for (const auto& block : *model.blocks) h = block->as<GPTBlockImpl>()->forward(h, use_cache);
  // Focus point `tied_output`: the final LayerNorm, then the embedding matrix transposed.
  return torch::matmul(model.ln_f(h), model.tok_emb->weight.t());
}

int64_t cached_tokens(MiniGPTImpl& model) {
  if (model.blocks->size() == 0) return 0;
  const auto& cache = model.blocks->ptr<GPTBlockImpl>(0)->attn->k_cache;
  return cache.defined() ? cache.size(2) : 0;
}

}  // namespace

torch::Tensor MiniGPTImpl::forward(const torch::Tensor& tokens) { return run(*this, tokens, 0, false); }

torch::Tensor MiniGPTImpl::forward_cached(const torch::Tensor& tokens) {
  // Focus point `kv_cache`: the new tokens continue the sequence at position P.
  return run(*this, tokens, cached_tokens(*this), true);
}

void MiniGPTImpl::reset_cache() {
  for (const auto& block : *blocks) block->as<GPTBlockImpl>()->attn->reset_cache();
}

torch::Tensor MiniGPTImpl::generate(const torch::Tensor& prompt, int64_t max_new_tokens, double temperature,
                                    int64_t top_k, double top_p, uint64_t seed) {
  TORCH_CHECK(prompt.dim() == 2 && prompt.size(1) >= 1 && prompt.size(1) <= max_len,
              "the prompt must be (B, P) with 1 <= P <= max_len (", max_len, "), got ", prompt.sizes());
  torch::NoGradGuard no_grad;
  // Focus point `max_len`: the sequence never grows past the position table.
  const int64_t steps = std::min(max_new_tokens, max_len - prompt.size(1));
  // Focus point `sampling`: one generator per call, seeded once.
  auto generator = at::make_generator<at::CPUGeneratorImpl>(seed);
  reset_cache();
  auto tokens = prompt;
  auto logits = forward_cached(prompt);
  for (int64_t step = 0; step < steps; ++step) {
    auto last = logits.select(1, logits.size(1) - 1);  // (B, V)
    torch::Tensor next;
    if (temperature == 0) {
      next = last.argmax(-1, /*keepdim=*/true);  // focus point `greedy`: no division by zero
    } else {
      // Focus point `sampling`: draw from probabilities, not logits. The
      // inverse CDF: the first token whose running sum passes a uniform u.
      auto probs = next_token_probs(last, temperature, top_k, top_p).to(torch::kCPU, torch::kDouble);
      auto u = torch::rand({probs.size(0), 1}, generator, torch::kFloat64);
      next = (probs.cumsum(-1) <= u).sum(-1, /*keepdim=*/true).clamp_max(probs.size(-1) - 1);
      next = next.to(prompt.device());
    }
    tokens = torch::cat({tokens, next}, 1);
    if (step + 1 < steps) logits = forward_cached(next);  // only the new token goes through the model
  }
  return tokens;
}

torch::Tensor next_token_probs(const torch::Tensor& logits, double temperature, int64_t top_k, double top_p) {
  const int64_t vocab = logits.size(-1);
  if (temperature == 0) {
    // Focus point `greedy`: all the mass on the argmax.
    return torch::zeros_like(logits).scatter_(-1, logits.argmax(-1, true), 1.0);
  }
  // Focus point `temperature`: divide the logits, before the softmax.
  auto scaled = logits.clone();
  const double minus_infinity = -std::numeric_limits<double>::infinity();
  // Focus point `top_k`: the k-th largest logit is the threshold; it is kept.
  if (top_k > 0 && top_k < vocab) {
    auto kth = std::get<0>(scaled.topk(top_k, -1)).narrow(-1, top_k - 1, 1);
    scaled = scaled.masked_fill(scaled < kth, minus_infinity);
  }
  // Focus point `top_p`: sort the probabilities down; a token is kept when the
  // mass BEFORE it is still below p, so the token that crosses p is kept too
  // (and the first token always is).
  if (top_p < 1) {
    auto sorted = scaled.sort(-1, /*descending=*/true);
    auto values = std::get<0>(sorted), order = std::get<1>(sorted);
    auto probs = torch::softmax(values, -1);
    auto before = probs.cumsum(-1) - probs;
    auto drop_sorted = before >= top_p;
    drop_sorted.select(-1, 0).fill_(false);  // even for top_p <= 0
    auto drop = torch::zeros_like(drop_sorted).scatter(-1, order, drop_sorted);
    scaled = scaled.masked_fill(drop, minus_infinity);
  }
  return torch::softmax(scaled, -1);
}
