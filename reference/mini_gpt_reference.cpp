#include "mini_gpt_reference.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <cmath>
#include <limits>
#include <string>

namespace reference {
namespace {

constexpr double kMinusInfinity = -std::numeric_limits<double>::infinity();

at::Tensor gpt_norm(const at::Tensor& x, const GptParameters& p, const std::string& name) {
  return at::layer_norm(x, {x.size(-1)}, p.at(name + ".weight"), p.at(name + ".bias"), 1e-5);
}

at::Tensor gpt_linear(const at::Tensor& x, const GptParameters& p, const std::string& name) {
  return at::linear(x, p.at(name + ".weight"), p.at(name + ".bias"));
}

// For every token, where the cached call that fed it starts (0 for all
// when the sequence is fed at once).
at::Tensor gpt_call_starts(int64_t t, const GptVariant& variant) {
  auto starts = at::zeros({t}, at::kLong);
  if (variant.first <= 0) return starts;
  for (int64_t begin = 0; begin < t;) {
    const int64_t count = std::min(begin == 0 ? variant.first : variant.step, t - begin);
    starts.narrow(0, begin, count).fill_(begin);
    begin += count;
  }
  return starts;
}

// For every token, the last token of the call that fed it (T - 1 for all
// when the sequence is fed at once).
at::Tensor gpt_call_ends(int64_t t, const GptVariant& variant) {
  auto ends = at::full({t}, t - 1, at::kLong);
  if (variant.first <= 0) return ends;
  for (int64_t begin = 0; begin < t;) {
    const int64_t count = std::min(begin == 0 ? variant.first : variant.step, t - begin);
    ends.narrow(0, begin, count).fill_(begin + count - 1);
    begin += count;
  }
  return ends;
}

// The position of every token: 0..T-1, or from 0 again at each cached call.
at::Tensor gpt_positions(int64_t t, const GptVariant& variant, const at::TensorOptions& options) {
  auto positions = at::arange(t, options);
  if (variant.positions_restart) positions = positions - gpt_call_starts(t, variant).to(options.device());
  return positions;
}

at::Tensor gpt_attention(const at::Tensor& x, const GptParameters& p, const std::string& name, int64_t heads,
                     const GptVariant& variant) {
  const int64_t b = x.size(0), t = x.size(1), d = x.size(2), hd = d / heads;
  auto split = [&](const at::Tensor& y) { return y.reshape({b, t, heads, hd}).transpose(1, 2); };
  auto q = split(gpt_linear(x, p, name + ".q_proj")), k = split(gpt_linear(x, p, name + ".k_proj")),
       v = split(gpt_linear(x, p, name + ".v_proj"));
  auto scores = at::matmul(q, k.transpose(-2, -1));
  if (variant.float32_scale == 1) {
    scores = scores * static_cast<double>(1.0f / std::sqrt(static_cast<float>(hd)));
  } else if (variant.float32_scale == 2) {
    scores = scores / static_cast<double>(std::sqrt(static_cast<float>(hd)));
  } else if (!variant.unscaled) {
    scores = scores / std::sqrt(static_cast<double>(variant.scale_by_dim ? d : hd));
  }
  const auto options = x.options().dtype(at::kLong);
  auto query = at::arange(t, options).unsqueeze(1), key = at::arange(t, options).unsqueeze(0);
  at::Tensor hidden;
  if (!variant.causal) {
    // No mask: each token sees the whole of its own call and what was cached
    // before it (all of the sequence when it is fed at once).
    hidden = key > gpt_call_ends(t, variant).unsqueeze(1);
  } else if (variant.cached_mask_top_left) {
    // Top-left within each cached call: query i of a call starting at s sees j <= i - s.
    hidden = key > query - gpt_call_starts(t, variant).unsqueeze(1);
  } else if (variant.diagonal_hidden) {
    hidden = key >= query;  // the first position sees no key at all: NaN
  } else {
    hidden = key > query;
  }
  scores = scores.masked_fill(hidden, kMinusInfinity);
  auto context = at::matmul(at::softmax(scores, -1), v).transpose(1, 2).reshape({b, t, d});
  return gpt_linear(context, p, name + ".out_proj");
}

}  // namespace

at::Tensor gpt_logits(const at::Tensor& tokens, const GptParameters& p, const GptShape& shape,
                      const GptVariant& variant) {
  TORCH_CHECK(tokens.dim() == 2, "gpt_logits: tokens must be (B, T)");
  const auto& embedding = p.at("tok_emb.weight");
  const int64_t b = tokens.size(0), t = tokens.size(1), d = embedding.size(1);
  auto h = embedding.index_select(0, tokens.reshape({-1})).reshape({b, t, d});
  if (variant.positions) {
    h = h + p.at("pos_emb.weight").index_select(0, gpt_positions(t, variant, tokens.options().dtype(at::kLong)));
  }
  for (int64_t layer = 0; layer < shape.num_layers; ++layer) {
    const auto block = "blocks." + std::to_string(layer);
    auto mlp = [&](const at::Tensor& x) {
      return gpt_linear(at::gelu(gpt_linear(x, p, block + ".fc1"), variant.gelu_tanh ? "tanh" : "none"), p, block + ".fc2");
    };
    if (variant.pre_ln) {
      h = h + gpt_attention(gpt_norm(h, p, block + ".ln1"), p, block + ".attn", shape.num_heads, variant);
      h = h + mlp(gpt_norm(h, p, block + ".ln2"));
    } else {
      h = gpt_norm(h + gpt_attention(h, p, block + ".attn", shape.num_heads, variant), p, block + ".ln1");
      h = gpt_norm(h + mlp(h), p, block + ".ln2");
    }
  }
  if (variant.final_norm) h = gpt_norm(h, p, "ln_f");
  return at::matmul(h, embedding.t());
}

at::Tensor next_token_probs(const at::Tensor& logits, double temperature, int64_t top_k, double top_p,
                            const SamplerVariant& variant) {
  const int64_t vocab = logits.size(-1);
  if (temperature == 0) return at::zeros_like(logits).scatter_(-1, logits.argmax(-1, true), 1.0);
  const bool scale_first = !variant.temperature_after_softmax && !variant.temperature_ignored;
  auto scaled = scale_first ? logits / temperature : logits.clone();
  auto keep_top_k = [&](at::Tensor& values) {
    const int64_t k = top_k + variant.top_k_shift;
    if (top_k <= 0 || k >= vocab || k <= 0) return;
    auto kth = std::get<0>(values.topk(k, -1)).narrow(-1, k - 1, 1);
    values = values.masked_fill(values < kth, kMinusInfinity);
  };
  // The tokens outside the nucleus of `basis` (a bool mask over the vocabulary).
  auto outside_nucleus = [&](const at::Tensor& basis) {
    auto sorted = basis.sort(-1, /*descending=*/true);
    auto probs = at::softmax(std::get<0>(sorted), -1);
    auto before = probs.cumsum(-1) - probs;
    auto drop_sorted = variant.top_p_drops_crossing ? (probs.cumsum(-1) > top_p) : (before >= top_p);
    drop_sorted.select(-1, 0).fill_(false);  // the most probable token always stays
    return at::zeros_like(drop_sorted).scatter(-1, std::get<1>(sorted), drop_sorted);
  };
  if (top_p < 1 && variant.top_p_before_top_k) scaled = scaled.masked_fill(outside_nucleus(scaled), kMinusInfinity);
  keep_top_k(scaled);
  if (top_p < 1 && !variant.top_p_before_top_k) {
    // Before the temperature: the nucleus of the unscaled logits top-k left.
    const auto basis = variant.top_p_before_temperature ? scaled * temperature : scaled;
    scaled = scaled.masked_fill(outside_nucleus(basis), kMinusInfinity);
  }
  auto probs = at::softmax(scaled, -1);
  return variant.temperature_after_softmax ? probs / temperature : probs;
}

at::Tensor generate(const at::Tensor& prompt, const GptParameters& p, const GptShape& shape,
                    const GenerationSettings& settings, const GptVariant& model, const SamplerVariant& sampler,
                    const DrawVariant& draw) {
  TORCH_CHECK(prompt.dim() == 2 && prompt.size(1) >= 1, "generate: the prompt must be (B, P), P >= 1");
  const int64_t steps = std::max<int64_t>(0, std::min(settings.max_new_tokens, settings.max_len - prompt.size(1)));
  auto generator = at::make_generator<at::CPUGeneratorImpl>(settings.seed);
  auto tokens = prompt;
  for (int64_t step = 0; step < steps; ++step) {
    auto logits = gpt_logits(tokens, p, shape, model);
    auto last = logits.select(1, logits.size(1) - 1);
    at::Tensor next;
    if (settings.temperature == 0 || draw.argmax_when_sampling) {
      next = last.argmax(-1, true);
    } else {
      auto probs = next_token_probs(last, settings.temperature, settings.top_k, settings.top_p, sampler)
                       .to(at::kCPU, at::kDouble);
      if (draw.generator_per_step) generator = at::make_generator<at::CPUGeneratorImpl>(settings.seed);
      if (draw.multinomial) {
        next = at::multinomial(probs, 1, false, generator);
      } else {
        auto u = at::rand({probs.size(0), 1}, generator, at::kDouble);
        next = (probs.cumsum(-1) <= u).sum(-1, true).clamp_max(probs.size(-1) - 1);
      }
      next = next.to(prompt.device());
    }
    tokens = at::cat({tokens, next}, 1);
  }
  return tokens;
}

}  // namespace reference
