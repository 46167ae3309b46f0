// The grader's trusted scaled dot-product attention, the building block the
// larger references (multi_head_attention.h, ...) compose.
//
// Every function takes tensors of any floating dtype (the grader runs them in
// float64) and is tested in tests/reference_test.cpp against LibTorch's own
// built-ins. The *Variant structs default to the correct algorithm; the grader
// bends one field at a time to replay a known learner mistake when it diagnoses
// a wrong answer. Nothing here is linked into the process that runs learner code.
#pragma once

#include <ATen/core/Tensor.h>

#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace reference {

enum class MaskStage {
  before_softmax,  // correct: masked scores become -inf before the softmax
  after_softmax,   // weights zeroed after the softmax, no renormalisation
  inverted,        // -inf where mask != 0
  ignored,         // mask never used
  fill_zero,       // masked scores set to 0 instead of -inf
  added,           // the 0/1 mask added to the scores
};

struct SdpaVariant {
  std::optional<double> scale;  // multiplies the scores; default 1/sqrt(d_k)
  int64_t softmax_dim = -1;
  MaskStage mask_stage = MaskStage::before_softmax;
  bool weights_before_softmax = false;  // return the (masked) scores as the weights
  bool key_reshaped = false;            // key reshaped to (..., d_k, Nk) instead of transposed
};

// query (B, H, Nq, d_k), key (B, H, Nk, d_k), value (B, H, Nk, d_v); mask
// undefined or broadcastable to (B, H, Nq, Nk), mask == 0 meaning "do not attend".
// Returns (output (B, H, Nq, d_v), weights (B, H, Nq, Nk)).
std::tuple<at::Tensor, at::Tensor> scaled_dot_product_attention(const at::Tensor& query, const at::Tensor& key,
                                                                const at::Tensor& value, const at::Tensor& mask = {},
                                                                const SdpaVariant& variant = {});

}  // namespace reference
