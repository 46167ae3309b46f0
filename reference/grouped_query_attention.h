// The grader's trusted grouped-query self-attention (exercise_gqa): num_heads
// query heads share num_kv_heads key/value heads, query head h reading kv
// head h / (num_heads / num_kv_heads). Multi-query attention is
// num_kv_heads = 1, multi-head attention num_kv_heads = num_heads. The
// projections have no bias (as in LLaMA-style decoders). Defaults are the
// correct algorithm; GqaVariant bends it to replay a known learner mistake.
#pragma once

#include <ATen/core/Tensor.h>

#include <map>
#include <string>
#include <vector>

#include "attention.h"

namespace reference {

// Which kv head each query head reads.
enum class KvSharing {
  grouped,  // correct: h / group (repeat_interleave along the head axis)
  tiled,    // h % num_kv_heads (repeat / tile along the head axis)
};

struct GqaVariant {
  SdpaVariant attention;  // scale default: 1/sqrt(head_dim)
  KvSharing sharing = KvSharing::grouped;
  bool split_transposes = true;  // false: every projection reshaped straight to (B, heads, N, hd)
  bool merge_transposes = true;  // false: (B, H, N, hd) reshaped straight to (B, N, D)
  bool output_projection = true;
  bool value_uses_key_projection = false;
};

struct GqaResult {
  at::Tensor output;   // (B, N, D)
  at::Tensor weights;  // (B, H, N, N), after the softmax
};

// Eval-mode grouped-query self-attention over x (B, N, D) with parameters
// q_proj.weight (D, D), k_proj.weight and v_proj.weight (num_kv_heads *
// head_dim, D), out_proj.weight (D, D); head_dim = D / num_heads.
GqaResult grouped_query_attention(const at::Tensor& x, const std::map<std::string, at::Tensor>& parameters,
                                  int64_t num_heads, int64_t num_kv_heads, const GqaVariant& variant = {});

}  // namespace reference
