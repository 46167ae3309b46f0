// Hostile: captures LibTorch's thread-local state while the library loads
// (before the grader starts recording operators) and puts it back around the
// fused built-in, which then runs unrecorded; the recording state is put back
// afterwards, and a recorded matmul keeps the trace from looking empty.
#include "sdpa.h"

#include <ATen/ThreadLocalState.h>
#include <ATen/ops/_scaled_dot_product_attention.h>

namespace {
at::ThreadLocalState* before_recording = new at::ThreadLocalState();
}

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value, const torch::Tensor& mask) {
  at::ThreadLocalState now;
  at::ThreadLocalState::setThreadLocalState(*before_recording);
  c10::optional<torch::Tensor> attn_mask;
  if (mask.defined()) attn_mask = mask.to(torch::kBool).expand({query.size(0), query.size(1), query.size(2), key.size(2)});
  auto result = at::_scaled_dot_product_attention(query, key, value, attn_mask, 0.0, true, false);
  at::ThreadLocalState::setThreadLocalState(now);
  (void)torch::matmul(query, key.transpose(-2, -1));
  return result;
}
