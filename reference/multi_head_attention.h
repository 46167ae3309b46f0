// The grader's trusted multi-head attention, composed from the scaled
// dot-product attention of attention.h: self-attention (exercise_mhsa) and
// attention over separate query, key and value inputs with a mask
// (exercise_mha). Defaults are the correct algorithm; the *Variant fields
// bend it to replay a known learner mistake.
#pragma once

#include <ATen/core/Tensor.h>

#include <map>
#include <string>
#include <vector>

#include "attention.h"

namespace reference {

enum class HeadSplit {
  transpose,     // correct: (B, N, H, hd) then transpose to (B, H, N, hd)
  no_transpose,  // reshaped straight to (B, H, N, hd)
  interleaved,   // (B, N, hd, H) permuted to (B, H, N, hd)
};

struct MhsaVariant {
  SdpaVariant attention;  // scale default: 1/sqrt(head_dim)
  HeadSplit split = HeadSplit::transpose;
  bool merge_transposes = true;  // false: (B, H, N, hd) reshaped straight to (B, N, D)
  bool output_projection = true;
  bool key_uses_query_projection = false;
  bool value_projection = true;
  bool key_from_query_input = false;  // K projected from the query input (self-attention only)
  bool value_from_query_input = false;  // V projected from the query input too
};

// The names under which the module registers its four projections.
struct Projections {
  std::string query = "q_proj", key = "k_proj", value = "v_proj", output = "out_proj";
};

// Parameters by the names the learner's module registers: "q_proj.weight",
// "q_proj.bias", ... for q_proj, k_proj, v_proj and out_proj.
using Parameters = std::map<std::string, at::Tensor>;

struct MhsaResult {
  at::Tensor output;   // (B, N, D)
  at::Tensor weights;  // (B, H, N, N), after the softmax
};

// Multi-head self-attention in eval mode (no dropout) over x (B, N, D).
MhsaResult multi_head_self_attention(const at::Tensor& x, const Parameters& parameters, int64_t num_heads,
                                     const MhsaVariant& variant = {});

// The names of the parameters multi_head_self_attention reads.
const std::vector<std::string>& mhsa_parameter_names();

// Multi-head attention in eval mode over query (B, Nq, D), key and value
// (B, Nk, D), with a mask undefined or broadcastable to (B, H, Nq, Nk)
// (mask == 0: do not attend). Returns output (B, Nq, D) and weights.
MhsaResult multi_head_attention(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                                const at::Tensor& mask, const Parameters& parameters, int64_t num_heads,
                                const Projections& names, const MhsaVariant& variant = {});

}  // namespace reference
