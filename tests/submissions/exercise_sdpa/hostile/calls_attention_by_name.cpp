// Hostile: runs LibTorch's fused attention through the dispatcher, by an
// operator name put together at run time and with a boxed re-dispatch (which
// the operator recording does not see), so that no forbidden name is linked
// and none is recorded.
#include "sdpa.h"

#include <ATen/core/dispatch/Dispatcher.h>

#include <string>

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value, const torch::Tensor& mask) {
  const std::string name = std::string("aten::_scaled_") + "dot_product" + "_attention";
  auto op = c10::Dispatcher::singleton().findSchemaOrThrow(name.c_str(), "");
  c10::optional<torch::Tensor> attn_mask;
  if (mask.defined()) attn_mask = mask.to(torch::kBool).expand({query.size(0), query.size(1), query.size(2), key.size(2)});
  std::vector<c10::IValue> stack = {query, key, value, attn_mask, 0.0, true, false};
  op.redispatchBoxed(c10::DispatchKeySet(query.is_cuda() ? c10::DispatchKey::CUDA : c10::DispatchKey::CPU), &stack);
  return {stack[0].toTensor(), stack[1].toTensor()};
}
