// The grader's trusted decoder self-attention with a key/value cache
// (exercise_kv_cache): bias-free q/k/v/out projections, heads of head_dim =
// dim / num_heads, rotate-half RoPE (rotary.h) on queries and keys at their
// positions in the sequence, causal softmax attention scaled by
// 1/sqrt(head_dim), heads merged and projected.
//
// causal_self_attention() is the whole sequence in one pass; cached_decoding()
// replays the calls a decoder makes (a previous sequence, a reset, then the
// sequence in chunks) with a cache, and with its variant's fields bent it
// replays a known learner mistake. With no field bent it equals
// causal_self_attention() for every schedule (tests/reference_test.cpp).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "rotary.h"

namespace reference {

using Parameters = std::map<std::string, at::Tensor>;  // q_proj.weight, k_proj.weight, v_proj.weight, out_proj.weight

// x (B, N, D) -> (B, N, D): token n at position n sees tokens 0..n.
at::Tensor causal_self_attention(const at::Tensor& x, const Parameters& parameters, int64_t num_heads);

// The output of token `token` of x (B, 1, D) as causal_self_attention()
// computes it, but with that token's query turned at `position` (its keys and
// the earlier ones at their own positions): where a learner puts the queries
// is read by matching it.
at::Tensor output_with_query_at(const at::Tensor& x, const Parameters& parameters, int64_t num_heads, int64_t token,
                                int64_t position);

// What a correct cache holds after the whole sequence x (B, N, D), each
// (B, H, N, head_dim): the keys after RoPE, the values; and the keys as
// k_proj made them, before RoPE (what a key cached unrotated looks like).
struct CacheContents {
  at::Tensor keys, values, projected_keys;
};
CacheContents cache_contents(const at::Tensor& x, const Parameters& parameters, int64_t num_heads);

struct KvCacheVariant {
  bool positions_restart = false;      // every call's tokens at positions 0..T-1, not after the cache
  bool cache_replaced = false;         // each call keeps only its own keys and values (no append)
  bool chunk_unmasked = false;         // no causal mask among a call's own tokens
  bool chunk_mask_top_left = false;    // call token i sees keys j <= i of [cache, new], not j <= cached + i
  bool chunk_mask_prompt_only = false; // the mask only in a call to an empty cache (the prompt), none after
  bool diagonal_hidden = false;        // a token does not see its own key (j < cached + i): NaN for the first
  bool diagonal_hidden_first_kept = false;  // as diagonal_hidden, but the token at position 0 sees key 0
  bool diagonal_hidden_first_open = false;  // as diagonal_hidden, but the token at position 0 is not masked at all
  bool reset_ignored = false;          // reset_cache() leaves the previous sequence in the cache
  bool cached_keys_unrotated = false;  // keys cached before RoPE and never rotated afterwards
  bool values_rotated = false;         // RoPE applied to the values as well
  bool no_rope = false;                // no rotation at all
  bool keys_unrotated = false;         // RoPE on the queries only
  RopeVariant rope;                    // the rotation's convention (interleaved pairs, frequencies)
  std::optional<double> scale;         // multiplies the scores; default 1/sqrt(head_dim)
};

// The calls of one case: `previous` (B, R, D), when defined and R > 0, fed in
// one call and followed by reset_cache(); then x (B, N, D) in calls of
// `first` tokens and then `step` tokens (the last call takes what is left).
// Returns the outputs of x's calls concatenated, (B, N, D).
at::Tensor cached_decoding(const at::Tensor& x, const at::Tensor& previous, const Parameters& parameters,
                           int64_t num_heads, int64_t first, int64_t step, const KvCacheVariant& variant = {});

}  // namespace reference
