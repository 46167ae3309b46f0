// The grader's trusted small GPT (GPT-2 layout, pre-LN, tied output) and its
// sampler, in float64:
//
//   h = tok_emb[tokens] + pos_emb[positions]
//   h = h + attn(ln1(h));  h = h + fc2(GELU(fc1(ln2(h))))   per block
//   logits = ln_f(h) tok_emb^T
//
// Parameters by the names the learner's module registers: tok_emb.weight,
// pos_emb.weight, blocks.<i>.{ln1, attn.q_proj, attn.k_proj, attn.v_proj,
// attn.out_proj, ln2, fc1, fc2}.{weight, bias}, ln_f.{weight, bias}.
//
// The logits are always computed from the whole sequence at once (no cache):
// a cached decoding must give the same numbers, so the reference has one path
// and the grader compares the learner's cached calls against it; generate
// runs the whole sequence again at every step. Tested in
// tests/reference_test.cpp against a per-position loop written separately.
// The variants default to the correct model; the grader bends one field at a
// time to replay a known learner mistake.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <string>

namespace reference {

using GptParameters = std::map<std::string, at::Tensor>;

struct GptShape {
  int64_t num_heads = 1;
  int64_t num_layers = 1;
};

struct GptVariant {
  bool causal = true;         // each position sees no later one
  bool pre_ln = true;         // false: post-LN, h = ln(h + sublayer(h))
  bool final_norm = true;     // ln_f before the output projection
  bool gelu_tanh = false;     // GELU's tanh approximation instead of the exact one
  bool positions = true;      // the learned positions are added
  bool scale_by_dim = false;  // scores divided by sqrt(D) instead of sqrt(head_dim)
  bool unscaled = false;      // scores never scaled
  // Tolerated: 1/sqrt(head_dim) rounded to float32 (1), or sqrt(head_dim) rounded and divided by (2).
  int float32_scale = 0;
  bool diagonal_hidden = false;  // each token hidden from its own key too (j >= i masked)
  // Cached decoding whose causal mask ignores the cache: new token t of a call
  // hides key j when j > t (its calls as below).
  bool cached_mask_top_left = false;
  // Cached decoding that places every call's tokens from position 0 (the
  // calls: `first` tokens, then `step` at a time; first 0: one call).
  bool positions_restart = false;
  int64_t first = 0, step = 0;
};

// Logits (B, T, V) of tokens (B, T) int64.
at::Tensor gpt_logits(const at::Tensor& tokens, const GptParameters& p, const GptShape& shape,
                      const GptVariant& variant = {});

struct SamplerVariant {
  bool temperature_after_softmax = false;  // filter the raw logits, return softmax(...) / temperature
  bool temperature_ignored = false;        // no temperature at all
  int64_t top_k_shift = 0;                 // keeps top_k + shift tokens
  bool top_p_drops_crossing = false;       // the token whose probability crosses top_p is dropped
  bool top_p_before_temperature = false;   // the nucleus chosen on the unscaled logits (top-k applied), before the temperature
  bool top_p_before_top_k = false;         // the nucleus chosen on the whole distribution, then top-k
};

// The next token's distribution (B, V) from the last position's logits (B, V)
// (mini_gpt.h: next_token_probs).
at::Tensor next_token_probs(const at::Tensor& logits, double temperature, int64_t top_k, double top_p,
                            const SamplerVariant& variant = {});

struct GenerationSettings {
  int64_t max_len = 0;
  int64_t max_new_tokens = 0;
  double temperature = 0;
  int64_t top_k = 0;
  double top_p = 1;
  uint64_t seed = 0;
};

struct DrawVariant {
  bool argmax_when_sampling = false;  // the most probable token even when temperature > 0
  bool generator_per_step = false;    // a generator seeded afresh at every step
  bool multinomial = false;           // torch::multinomial(probs, 1, false, generator) instead of the inverse CDF
};

// prompt (B, P) followed by the generated tokens (mini_gpt.h: generate).
at::Tensor generate(const at::Tensor& prompt, const GptParameters& p, const GptShape& shape,
                    const GenerationSettings& settings, const GptVariant& model = {},
                    const SamplerVariant& sampler = {}, const DrawVariant& draw = {});

}  // namespace reference
